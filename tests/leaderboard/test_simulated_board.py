"""The `simulated-<simulator>` leaderboards (docs/simulation.md, "Leaderboard"): PC@K, PCIR_avg@K
and Recall@K per system with the calibrated CIs and Holm tie-aware ranks of every leaderboard,
the PC_t-over-turns chart, and the log board that leaves simulations out. Two real HTTP live
systems with scripted rankings; every number computed by hand or by the reference code in
evaluation/lib/stats."""

import re

import pytest
from django.urls import reverse

from evaluation.lib.simulators.simulators import simulation_design
from evaluation.lib.stats.clustered import cluster_mean, rank_systems
from evaluation.models import UnitScore
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from evaluation.services.submissions import submission_set_public
from leaderboard.selectors.boards import leaderboard, leaderboard_pc_chart
from tests.evaluation.simulation_fixtures import (
    by_dialogue,
    run_all,
    sim_benchmark,  # noqa: F401
)
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db(transaction=True)

BOARD = "simulated-template"
# Targets: d1 {r1, r2}, d2 {h1}, d3 {r1}. "Coverer" shows all three at both turns; "Misser"
# shows a1 at turn 1 and r3, r2 at turn 2.
RANKINGS = {"Coverer": [["r1", "r2", "h1"], ["r1", "r2", "h1"]],
            "Misser": [["a1"], ["r3", "r2"]]}
# By hand, per user (d1, d2, d3), K = 10, T = 2:
PC10 = {"Coverer": [1.0, 1.0, 1.0], "Misser": [0.5, 0.0, 0.0]}       # PC_T per user
# Recall@10 averaged over turns; Misser's d1: (0 + 1/2) / 2
RECALL10 = {"Coverer": [1.0, 1.0, 1.0], "Misser": [0.25, 0.0, 0.0]}
CURVE10 = {"Coverer": [1.0, 1.0], "Misser": [0.0, 1 / 6]}            # PC_t@10, t = 1, 2


def _simulate(benchmark, owner, name, *, users=3, turns=2):
    def answer(user, body):
        turn = min((body["turn_index"] - 1) // 2, len(RANKINGS[name]) - 1)
        return {"response": f"Try these ({turn}).", "ranked_item_ids": RANKINGS[name][turn]}

    system_answer = by_dialogue(answer)
    with live_server(system_answer) as server:
        system = live_system_create(name=name, owner=owner, endpoint=server.url)
        return run_all(system_answer.follow(simulation_create(
            benchmark=benchmark, system=system, simulator="template", users=users,
            turns=turns, seed=1, user=owner, batch_size=3, enqueue=False)))


@pytest.fixture
def simulated(sim_benchmark, researcher):  # noqa: F811
    sims = {name: _simulate(sim_benchmark, researcher, name) for name in RANKINGS}
    for sim in sims.values():
        assert sim.run_id, sim.job.error
    return sim_benchmark, sims


def test_board_numbers_cis_and_ranks_match_hand_and_reference(simulated, researcher, client):
    benchmark, sims = simulated
    board = leaderboard(benchmark=benchmark, protocol=BOARD, user=researcher)
    assert board.sort == "simulation.template:pc@10"  # the default
    assert [row.run.name for row in board.rows] == ["Coverer", "Misser"]
    column = board.columns.index(board.column("simulation.template:pc@10"))
    users = ["d1", "d2", "d3"]
    # Reference: the project's calibrated interval and Holm-corrected ranks on the same units.
    reference = {r.system: r for r in rank_systems(
        PC10["Coverer"] + PC10["Misser"], ["Coverer"] * 3 + ["Misser"] * 3, users * 2)}
    for row in board.rows:
        cell = row.cells[column]
        name = row.run.name
        assert cell.value == pytest.approx(sum(PC10[name]) / 3)
        expected = cluster_mean(PC10[name], users, bounds=(0.0, 1.0))
        assert (cell.ci_low, cell.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
        assert cell.rank == reference[name].rank
        assert cell.n == 3
    pcir = board.columns.index(board.column("simulation.template:pcir_avg@10"))
    recall = board.columns.index(board.column("simulation.template:recall@10"))
    assert [r.cells[pcir].value for r in board.rows] == pytest.approx([1 / 2, (0.5 / 3) / 2])
    assert [r.cells[recall].value for r in board.rows] == pytest.approx(
        [1.0, sum(RECALL10["Misser"]) / 3])
    # The units behind the ranks are the simulated users, named by their place in the
    # design's order (the same users in both runs, so the tests pair them), not by dialogue.
    for sim in sims.values():
        places = dict(sim.dialogues.values_list("source_dialogue_id", "position"))
        assert set(UnitScore.objects.filter(run=sim.run, metric="pc@10")
                   .values_list("dialogue_id", "value")) == {
            (f"user-{places[u] + 1:04d}", v) for u, v in zip(users, PC10[sim.system.name],
                                                             strict=True)}

    # The chart: PC_t@10 per system over turns 1..T, from the runs' reports.
    chart = leaderboard_pc_chart(board)
    assert chart["k"] == 10
    for line in chart["lines"]:
        assert [p["value"] for p in line["points"]] == pytest.approx(  # six decimals kept
            CURVE10[line["label"]], abs=1e-6)
    assert len(chart["lines"]) == 2
    # Sorting by a K = 1 column plots K = 1: d1 sees r1 (1/2), d2 nothing, d3 r1 (1).
    board1 = leaderboard(benchmark=benchmark, protocol=BOARD, user=researcher,
                         sort="simulation.template:pc@1", all_columns=True)
    chart1 = leaderboard_pc_chart(board1)
    coverer = next(line for line in chart1["lines"] if line["label"] == "Coverer")
    assert chart1["k"] == 1 and [p["value"] for p in coverer["points"]] == pytest.approx([0.5] * 2)

    # The page, as the owner: both rows, the chart with one line per system.
    client.force_login(researcher)
    page = client.get(reverse("leaderboard:board", args=[benchmark.slug, BOARD])).content.decode()
    assert 'id="pc-chart"' in page and page.count('class="pc-series"') == 2
    assert "simulated-template protocol" in page
    # The log board leaves the simulations' log submissions out.
    log_board = leaderboard(benchmark=benchmark, protocol="log", user=researcher)
    assert log_board.rows == []


def test_private_until_published_and_listed_on_the_index(simulated, researcher, client):
    benchmark, sims = simulated
    url = reverse("leaderboard:board", args=[benchmark.slug, BOARD])
    page = client.get(url).content.decode()  # a stranger: the owner has published nothing
    assert 'data-system="coverer"' not in page and 'id="pc-chart"' not in page
    submission_set_public(submission=sims["Coverer"].submission, user=researcher, public=True)
    page = client.get(url).content.decode()
    assert 'data-system="coverer"' in page and 'data-system="misser"' not in page
    index = client.get(reverse("leaderboard:index")).content.decode()
    assert url in index
    assert re.search(r"simulated-template.{0,400}?\b1\b", index, re.S)
    # The API serves the same board.
    api = client.get(reverse("leaderboard:api_leaderboard", args=[benchmark.slug]),
                     {"protocol": BOARD}).json()
    assert api["protocol"] == BOARD and [s["system"] for s in api["systems"]] == ["Coverer"]
    assert api["systems"][0]["metrics"]["simulation.template:pc@10"]["value"] == 1.0
    # A simulator with no finished simulation has no board.
    assert client.get(reverse("leaderboard:board", args=[benchmark.slug,
                                                         "simulated-pepper"])).status_code == 404


def test_demo_simulations_fill_the_board_once(sim_benchmark, client):  # noqa: F811
    from annotation.management.commands.load_demo import DEMO_SIMULATED
    from evaluation.services.live import live_baselines_ensure
    from evaluation.services.simulations import demo_simulations_ensure

    live = [s for s in live_baselines_ensure() if s.live_adapter in DEMO_SIMULATED]
    first = list(demo_simulations_ensure(benchmark=sim_benchmark, systems=live, users=3,
                                         turns=2))
    assert [created for *_, created in first] == [True] * len(DEMO_SIMULATED)
    assert all(simulation.run_id for _, simulation, _ in first)
    again = list(demo_simulations_ensure(benchmark=sim_benchmark, systems=live, users=3,
                                         turns=2))
    assert [created for *_, created in again] == [False] * len(DEMO_SIMULATED)
    # Baselines are public: a visitor sees every demo row and the chart.
    page = client.get(reverse("leaderboard:board", args=[sim_benchmark.slug, BOARD]))
    text = page.content.decode()
    assert text.count('class="lb-row') == len(DEMO_SIMULATED)
    assert text.count('class="pc-series"') == len(DEMO_SIMULATED)


def test_the_system_page_offers_the_simulated_board_not_an_empty_log_board(simulated, researcher,
                                                                           client):
    from leaderboard.selectors.systems import system_boards

    benchmark, sims = simulated
    system = sims["Coverer"].system
    assert [(b.slug, protocol) for b, protocol in system_boards(system=system, user=researcher)
            ] == [(benchmark.slug, BOARD)]
    client.force_login(researcher)
    page = client.get(reverse("leaderboard:system_detail", args=[system.slug])).content.decode()
    assert "No finished evaluation to show yet" not in page
    assert f"({BOARD} protocol)</a>" in page and "pc@10" in page


def test_only_runs_of_one_design_are_ranked_together(simulated, researcher, client):
    """Issue 34.5: a 2-user × 3-turn run is never ranked beside 3-user × 2-turn runs; the
    board offers one design at a time, by default the one with the most systems."""
    benchmark, sims = simulated
    other = _simulate(benchmark, researcher, "Coverer", users=2, turns=3)  # newer, 1 system
    assert other.run_id, other.job.error
    board = leaderboard(benchmark=benchmark, protocol=BOARD, user=researcher)
    big = simulation_design(sims["Misser"].run.config)
    small = simulation_design(other.run.config)
    assert big.key != small.key and big.key == simulation_design(sims["Coverer"].run.config).key
    assert board.coverage == big.key and board.coverage_label == big.label
    # released: d3 may be a user
    assert big.label == ("template 1.0 · 3 users × 2 turns · seed 1 · pool catalogue · top 4 "
                         "shown · PCIR_avg eq3 · hidden split included")
    assert {row.run.run_id for row in board.rows} == {sims["Coverer"].run_id,
                                                      sims["Misser"].run_id}
    assert [(c.key, c.systems) for c in board.coverages] == [(big.key, 2), (small.key, 1)]
    # The other design, chosen: only its run, ranked alone.
    alone = leaderboard(benchmark=benchmark, protocol=BOARD, user=researcher, splits=small.key)
    assert [row.run.run_id for row in alone.rows] == [other.run_id]
    assert alone.rows[0].cells[alone.columns.index(
        alone.column("simulation.template:pc@10"))].n == 2
    # Two systems each: the design with the newest run is the default.
    assert _simulate(benchmark, researcher, "Misser", users=2, turns=3).run_id
    board = leaderboard(benchmark=benchmark, protocol=BOARD, user=researcher)
    assert board.coverage == small.key
    assert [(c.key, c.systems) for c in board.coverages] == [(small.key, 2), (big.key, 2)]
    # The page, the API and the export carry the design.
    client.force_login(researcher)
    url = reverse("leaderboard:board", args=[benchmark.slug, BOARD])
    page = client.get(url, {"splits": big.key}).content.decode()
    assert f"Ranked on the design <strong>{big.label}</strong>" in page
    assert 'data-system="coverer"' in page and "Runs of other designs are ranked separately" \
        in page
    api = client.get(reverse("leaderboard:api_leaderboard", args=[benchmark.slug]),
                     {"protocol": BOARD, "splits": small.key}).json()
    assert api["design"] == {"key": small.key, "label": small.label}
    assert [s["system"] for s in api["systems"]] == ["Coverer", "Misser"]
    assert [o["splits"] for o in api["other_splits"]] == [big.key]
    assert api["other_splits"][0]["design"] == big.label
    unknown = client.get(reverse("leaderboard:api_leaderboard", args=[benchmark.slug]),
                         {"protocol": BOARD, "splits": "design-000000000000"})
    assert unknown.status_code == 400 and "design design-000000000000" in unknown.text
    export = client.get(reverse("leaderboard:board_export", args=[benchmark.slug, BOARD,
                                                                  "json"]),
                        {"splits": big.key}).json()
    assert export["design"]["key"] == big.key
    assert {row["design"] for row in export["rows"]} == {big.label}
    assert {row["run"] for row in export["rows"]} == {sims["Coverer"].run_id,
                                                      sims["Misser"].run_id}
