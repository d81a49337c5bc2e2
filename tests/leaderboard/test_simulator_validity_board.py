"""Simulator validity on the simulated board's trust row and on the simulators page (issue 32
item 5): three systems simulated with one design, an arena on the same benchmark whose votes
rank them, τ_b and Spearman checked against scipy on the same per-system numbers."""

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy import stats

from evaluation.lib.stats import arena as arena_stats
from evaluation.models import Arena, Vote
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from leaderboard.selectors.boards import leaderboard
from leaderboard.selectors.simulated import simulators_page
from tests.evaluation.simulation_fixtures import (
    by_dialogue,
    run_all,
    sim_benchmark,  # noqa: F401
)
from tests.support.live_server import live_server
from tests.test_reads_never_write import WRITE

pytestmark = pytest.mark.django_db(transaction=True)

BOARD = "simulated-template"
# Targets: d1 {r1, r2}, d2 {h1}, d3 {r1}. PC@10 per system: 1, (1/2 + 0 + 1)/3, 0.
RANKINGS = {"Coverer": ["r1", "r2", "h1"], "Half": ["r1"], "Misser": ["a1"]}


def _simulate(benchmark, owner, name):
    answer = by_dialogue(lambda user, body: {"response": "Try these.",
                                             "ranked_item_ids": RANKINGS[name]})
    with live_server(answer) as server:
        system = live_system_create(name=name, owner=owner, endpoint=server.url)
        return run_all(answer.follow(simulation_create(
            benchmark=benchmark, system=system, simulator="template", users=3, turns=2,
            seed=1, user=owner, batch_size=3, enqueue=False)))


def test_trust_cell_and_simulators_page(sim_benchmark, researcher, client):  # noqa: F811
    sims = {name: _simulate(sim_benchmark, researcher, name) for name in RANKINGS}
    systems = {name: sim.system for name, sim in sims.items()}
    # Before any arena: the cell says why nothing is measured.
    board = leaderboard(benchmark=sim_benchmark, protocol=BOARD, user=researcher)
    cell = board.validity["simulation.template:pc@10"]
    assert not cell.chosen and "no arena" in cell.title
    # The arena: Misser beats Half beats Coverer (the reverse of the simulated order) mostly.
    arena = Arena.objects.create(slug=sim_benchmark.slug, name="Sim arena",
                                 benchmark=sim_benchmark)
    strengths = np.array([0.0, 0.4, 0.8])  # Coverer, Half, Misser
    raw = arena_stats.simulated_votes(150, 3, strengths=strengths, seed=3)
    order = ["Coverer", "Half", "Misser"]
    ids = {f"system-{i:03d}": systems[name] for i, name in enumerate(order)}
    Vote.objects.bulk_create(Vote(arena=arena, system_a=ids[a], system_b=ids[b], outcome=o,
                                  position=p) for p, (a, b, o) in enumerate(raw))
    board = leaderboard(benchmark=sim_benchmark, protocol=BOARD, user=researcher)
    cell = board.validity["simulation.template:pc@10"]
    assert cell.chosen, cell.title
    column = board.columns.index(board.column("simulation.template:pc@10"))
    simulated = {row.run.name: row.cells[column].value for row in board.rows}
    assert simulated == pytest.approx({"Coverer": 1.0, "Half": 0.5, "Misser": 0.0})
    bt = arena_stats.bradley_terry_ratings([(systems[order[int(a[-3:])]].pk,
                                             systems[order[int(b[-3:])]].pk, o)
                                            for a, b, o in raw])
    x = [simulated[n] for n in order]
    y = [bt[systems[n].pk] for n in order]
    tau = cell.validity.agreements["kendall_tau_b"]
    assert tau.value == pytest.approx(stats.kendalltau(x, y).statistic)
    assert cell.validity.agreements["spearman"].value == pytest.approx(
        stats.spearmanr(x, y).statistic)
    assert tau.ci_low <= tau.value <= tau.ci_high and tau.n_systems == 3
    assert cell.validity.n_users == 3 and cell.validity.n_human == 150

    client.force_login(researcher)
    page = client.get(reverse("leaderboard:board", args=[sim_benchmark.slug, BOARD]))
    html = page.content.decode()
    assert f"τb vs arena {tau.value:.2f}" in html
    assert reverse("leaderboard:simulators", args=[sim_benchmark.slug]) in html
    export = client.get(reverse("leaderboard:board_export",
                                args=[sim_benchmark.slug, BOARD, "json"])).json()
    row = next(r for r in export["rows"] if r["metric"] == "pc@10")
    assert row["arena_kendall_tau_b"] == pytest.approx(tau.value)

    page = simulators_page(benchmark=sim_benchmark, user=researcher)
    design = next(d for d in page["designs"] if d["protocol"] == BOARD
                  and not d["coverage"].endswith("-both"))
    assert design["systems"] == 3 and design["tau"].value == pytest.approx(tau.value)
    assert design["leaked_share"] == 0.0 and design["dialogues"] == 9
    # The template user's turns, by hand from the stored dialogues.
    words = [len(t["text"].split()) for sim in sims.values() for d in sim.dialogues.all()
             for t in d.turns if t["role"] == "user"]
    assert design["mean_user_words"] == pytest.approx(sum(words) / len(words))
    with CaptureQueriesContext(connection) as queries:  # reads never write
        html = client.get(reverse("leaderboard:simulators", args=[sim_benchmark.slug])
                          ).content.decode()
        client.get(reverse("leaderboard:board", args=[sim_benchmark.slug, BOARD])
                   + "?dialogues=both")
    assert not [q for q in queries.captured_queries if WRITE.match(q["sql"])]
    assert "simulators compared" in html and f"{tau.value:.2f}" in html
