"""Rank only what is comparable: a leaderboard shows and ranks the runs of one split set (its
coverage, `test` by default), every row says its coverage, and the REST API and the exports
follow the same rule."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from evaluation.models import Benchmark
from leaderboard.models import RankSnapshot
from leaderboard.services import rank_snapshots_refresh
from tests.support.submissions import tiny_lines

pytestmark = pytest.mark.django_db

BOARD = reverse("leaderboard:board", args=["tiny", "turn"])
FULL = "hidden+test+train"  # what board_world's runs cover (the tiny bundle's answered splits)
PARAM = "hidden,test,train"  # how a link names it


def rows(html: str) -> list[str]:
    return re.findall(r'<tr class="lb-row[^"]*" data-system="([^"]+)"', html)


@pytest.fixture
def partial(board_world, finished_submission, researcher):
    """A published system that answered only the test split (d2), and answered it best."""
    from evaluation.services.submissions import system_create

    system = system_create(name="Partial", owner=researcher, family="LLM")
    lines = [line for line in tiny_lines() if line["dialogue_id"] == "d2"]
    submission, run = finished_submission(system, lines, public=True)
    assert run.config["splits"] == ["test"]
    return system, run


def test_a_test_only_submission_is_not_ranked_beside_full_coverage_runs(client, partial):
    page = client.get(BOARD).content.decode()  # default: the test split alone
    assert rows(page) == ["partial"]
    assert "Ranked on <strong>test</strong>" in page
    assert '<td class="coverage" title="evaluated on test">test</td>' in page
    # the full-coverage systems are offered as their own ranking, never mixed in
    assert "hidden + test + train</a> (2 systems)" in page

    full = client.get(BOARD + f"?splits={PARAM}").content.decode()
    assert sorted(rows(full)) == ["baseline-reverse", "echo"]
    assert "partial" not in rows(full)
    assert full.count(f'title="evaluated on {FULL}"') == 2
    # ranks are among the rows of that coverage only: Echo beats the reversed baseline
    ranked = {slug: int(rank) for rank, slug in re.findall(
        r'<td class="num rank sticky-1">(\d+)</td>\s*<td class="system sticky-2">'
        r'<a href="/systems/([^/]+)/', full)}
    assert set(ranked) == {"echo", "baseline-reverse"} and ranked["echo"] == 1


def test_without_a_test_only_run_the_coverage_with_most_systems_is_shown(client, board_world):
    page = client.get(BOARD).content.decode()
    assert sorted(rows(page)) == ["baseline-reverse", "echo"]
    assert "Ranked on <strong>hidden + test + train</strong>" in page


def test_split_parameter_is_order_free_and_unknown_sets_are_refused(client, partial):
    same = client.get(BOARD + "?splits=train%2Btest+hidden").content.decode()
    assert sorted(rows(same)) == ["baseline-reverse", "echo"]
    bad = client.get(BOARD + "?splits=dev")
    assert bad.status_code == 400
    assert "no run on this leaderboard was evaluated on the splits dev" in bad.content.decode()
    api = client.get("/api/leaderboards/tiny/?splits=dev")
    assert api.status_code == 400 and "splits" in api.json()
    export = client.get(reverse("leaderboard:board_export", args=["tiny", "turn", "csv"])
                        + "?splits=dev")
    assert export.status_code == 400


def test_the_api_lists_one_coverage_and_names_the_others(client, partial):
    data = client.get("/api/leaderboards/tiny/").json()
    assert data["splits"] == "test"
    assert [s["slug"] for s in data["systems"]] == ["partial"]
    assert all(s["splits"] == "test" for s in data["systems"])
    assert data["other_splits"] == [{"splits": FULL, "param": PARAM, "systems": 2}]
    full = client.get(f"/api/leaderboards/tiny/?splits={PARAM}").json()
    assert sorted(s["slug"] for s in full["systems"]) == ["baseline-reverse", "echo"]
    assert {s["rank"] for s in full["systems"]} <= {1, 2}


def test_exports_carry_the_coverage_and_never_mix_two(client, partial):
    url = reverse("leaderboard:board_export", args=["tiny", "turn", "csv"])
    records = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    assert {r["system_slug"] for r in records} == {"partial"}
    assert {r["splits"] for r in records} == {"test"}
    data = json.loads(client.get(url.replace(".csv", ".json") + f"?splits={PARAM}").content)
    assert data["splits"] == FULL
    assert {r["system_slug"] for r in data["rows"]} == {"echo", "baseline-reverse"}
    assert {r["splits"] for r in data["rows"]} == {FULL}


def test_rank_snapshots_are_stored_per_coverage(partial):
    benchmark = Benchmark.objects.get(slug="tiny")
    rank_snapshots_refresh(benchmark=benchmark, protocol="turn")
    stored = {s.splits: s for s in RankSnapshot.objects.filter(benchmark=benchmark)}
    assert set(stored) == {"test", FULL}
    assert stored["test"].run_ids == [partial[1].pk]
    assert partial[1].pk not in stored[FULL].run_ids and len(stored[FULL].run_ids) == 3


def test_a_system_with_runs_of_two_coverages_is_ranked_in_each(client, partial,
                                                               finished_submission,
                                                               board_world):
    lines = [line for line in tiny_lines() if line["dialogue_id"] == "d2"]
    finished_submission(board_world["echo"], lines, public=True)  # newer, test only
    test = client.get(BOARD).content.decode()
    assert sorted(rows(test)) == ["echo", "partial"]
    full = client.get(BOARD + f"?splits={PARAM}").content.decode()
    assert sorted(rows(full)) == ["baseline-reverse", "echo"]
    assert "hidden + test + train</a> (2 systems)" in test


@pytest.fixture
def echo_on_test_too(board_world, partial, finished_submission):
    """Echo also answered the test split alone, after its full-coverage run."""
    lines = [line for line in tiny_lines() if line["dialogue_id"] == "d2"]
    _, run = finished_submission(board_world["echo"], lines, public=True)
    return run


def test_the_system_page_shows_one_split_set_at_a_time(client, board_world, echo_on_test_too):
    full_run = board_world["runs"]["echo"][1]
    url = reverse("leaderboard:system_detail", args=["echo"])
    page = client.get(url).content.decode()  # the leaderboard's default: test
    assert "evaluated on <strong>test</strong>" in page
    assert f"run #{echo_on_test_too.pk}<" in page and f"run #{full_run.pk}<" not in page
    assert "evaluated on hidden + test + train</a>" in page  # the other split set's tab
    # Compare offers only systems with a run of the same split set (Partial, not the baseline)
    others = page.split("<h2>Compare</h2>")[1].split("</form>")[0]
    assert '<option value="partial">' in others and "baseline-reverse" not in others
    assert '<input type="hidden" name="splits" value="test">' in others

    full = client.get(url, {"splits": PARAM}).content.decode()
    assert f"evaluated on <strong>{FULL.replace('+', ' + ')}</strong>" in full
    assert f"run #{full_run.pk}<" in full and f"run #{echo_on_test_too.pk}<" not in full
    others = full.split("<h2>Compare</h2>")[1].split("</form>")[0]
    assert '<option value="baseline-reverse">' in others and "partial" not in others
    # an unknown split set is said, and the default shown
    unknown = client.get(url, {"splits": "dev"}).content.decode()
    assert ("Unknown split set: no run on this leaderboard was evaluated on the splits dev"
            in unknown)
    assert "evaluated on <strong>test</strong>" in unknown


def test_compare_pairs_runs_of_one_split_set(client, board_world, echo_on_test_too):
    full_run = board_world["runs"]["echo"][1]
    compare = reverse("leaderboard:compare")
    # Echo has runs on test and on the full set, Partial on test only: test is chosen
    page = client.get(compare, {"benchmark": "tiny", "a": "echo", "b": "partial"}
                      ).content.decode()
    assert "both evaluated on <strong>test</strong>" in page
    assert f"#{echo_on_test_too.pk}</a>" in page and f"#{full_run.pk}</a>" not in page
    # Echo and the baseline share only the full set
    page = client.get(compare, {"benchmark": "tiny", "a": "echo", "b": "baseline-reverse"}
                      ).content.decode()
    assert f"both evaluated on <strong>{FULL.replace('+', ' + ')}</strong>" in page
    assert f"#{full_run.pk}</a>" in page
    # asked for a split set one of them lacks: said so, with the split sets they share
    page = client.get(compare, {"benchmark": "tiny", "a": "partial", "b": "baseline-reverse",
                                "splits": "test"}).content.decode()
    assert ("Both systems need a finished run evaluated on test. They have no split set in "
            "common") in page
    page = client.get(compare, {"benchmark": "tiny", "a": "echo", "b": "baseline-reverse",
                                "splits": "test"}).content.decode()
    assert (f"Both systems need a finished run evaluated on test. Both have one on: "
            f"{FULL.replace('+', ' + ')}.") in page
