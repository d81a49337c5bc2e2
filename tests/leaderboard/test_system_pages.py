"""System page (metrics with CIs, radar, tiers, drill-down with verified quotes), compare page,
and editing a system."""

import re

import pytest
from django.urls import reverse

from leaderboard.selectors.systems import system_radar

pytestmark = pytest.mark.django_db


def test_the_system_page_has_metrics_radar_tiers_and_dialogues(client, board_world):
    page = client.get(reverse("leaderboard:system_detail", args=["echo"])).content.decode()
    assert "Metrics" in page and "95% CI" in page
    radar = page.split('<svg class="radar"')[1].split("</svg>")[0]
    # Accuracy, Grounding, Recovery, Practical value, Text: one vertex each
    assert radar.count('<circle class="vertex"') == 5
    bars = page.split('<svg class="tier-bars"')[1].split("</svg>")[0]
    assert bars.count('<rect class="bar ') == 10  # 5 metrics × tiers easy, hard (d3 hidden)
    assert "easy" in bars and "hard" in bars
    assert re.search(r'href="/submissions/[^"]+/dialogues/d1/"', page)


def test_radar_normalises_by_range_and_direction():
    rows = [("Accuracy", [], [{"metric": "recall@1", "evaluator": "trace", "value": 0.5,
                                "direction": "higher"}]),
            ("Recovery", [], [{"metric": "tsr", "evaluator": "trace", "value": 1.0,
                                "direction": "higher"},
                               {"metric": "t2r", "evaluator": "trace", "value": 3.0,
                                "direction": "lower"}]),  # open range: left out
            ("Accuracy2", [], [{"metric": "out_of_pool_rate", "evaluator": "trace",
                                 "value": 0.25, "direction": "lower"}])]
    radar = system_radar(rows)
    assert [(v["axis"], v["value"]) for v in radar["vertices"]] == [
        ("Accuracy", 0.5), ("Recovery", 1.0), ("Accuracy2", 0.75)]


def test_private_systems_are_hidden_from_strangers(client, board_world, outsider):
    url = reverse("leaderboard:system_detail", args=["draft"])
    assert client.get(url).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert client.get(reverse("leaderboard:system_detail",
                              args=["baseline-reverse"])).status_code == 200


def test_the_drilldown_marks_each_quote_verified_or_not(client, board_world):
    submission, _ = board_world["runs"]["echo"]
    html = client.get(reverse("leaderboard:submission_dialogue",
                              args=[submission.uuid, "d1"])).content.decode()
    # tests/support/submissions.py: two verbatim quotes and one that is not in review v3
    verified = re.findall(r'<mark class="quote verified"[^>]*>([^<]+)</mark>', html)
    unverified = re.findall(r'<mark class="quote unverified"[^>]*>([^<]+)</mark>', html)
    assert verified == ["The crab cakes were incredible", "the broth is rich"]
    assert unverified == ["best dumplings in the whole city"]
    assert "best match 46.9" in html or "best match 47" in html
    assert "Harbor Grill ★" in html  # the gold item of turn 3 is ranked second... and marked
    assert html.count('class="turn turn-system evaluated answer"') == 2


def test_the_drilldown_of_a_private_submission_is_404_for_others(client, board_world,
                                                                 outsider):
    submission, _ = board_world["runs"]["draft"]
    url = reverse("leaderboard:submission_dialogue", args=[submission.uuid, "d1"])
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_compare_shows_paired_differences_with_cis_and_significance(client, board_world):
    url = reverse("leaderboard:compare") + "?benchmark=tiny&a=echo&b=baseline-reverse"
    html = client.get(url).content.decode()
    row = html.split("<td>recall@1 <span")[1].split("</tr>")[0]
    assert "0.750" in row and "0.250" in row and "+0.500" in row and "[" in row  # A − B, CI
    assert ">no<" in row  # three dialogues: not significant
    assert "t-test p" in html and '<svg class="forest"' in html
    assert html.count('<circle class="diff') >= 10


def test_compare_refuses_a_hidden_system(client, board_world):
    url = reverse("leaderboard:compare") + "?benchmark=tiny&a=echo&b=draft"
    assert client.get(url).status_code == 404


def test_the_owner_edits_the_system(client, researcher, board_world, outsider):
    url = reverse("leaderboard:system_edit", args=["echo"])
    client.force_login(outsider)
    assert client.post(url, {"name": "X"}).status_code == 403
    client.force_login(researcher)
    response = client.post(url, {"name": "Echo 2", "team": "Lab B", "family": "LLM",
                                 "description": "", "paper_url": "", "code_url": ""})
    assert response.status_code == 302
    board_world["echo"].refresh_from_db()
    assert (board_world["echo"].name, board_world["echo"].slug) == ("Echo 2", "echo")


def test_a_clear_difference_is_significant_in_the_right_direction():
    from evaluation.models import Run
    from leaderboard.selectors.compare import systems_compare
    from leaderboard.synthetic import synthetic_leaderboard

    synthetic_leaderboard(slug="cmp", systems=3, metrics=5, dialogues=60)
    best = Run.objects.get(submission__system__slug="cmp-s002")
    worst = Run.objects.get(submission__system__slug="cmp-s000")
    result = systems_compare(run_a=best, run_b=worst)
    assert len(result["rows"]) == 5
    assert all(r["significant"] and r["better"] == "A" for r in result["rows"])
    lower = next(r for r in result["rows"] if r["metric"] == "m05")
    assert lower["direction"] == "lower" and lower["difference"] < 0


def test_compare_opens_on_a_benchmark_with_two_evaluated_systems(client, board_world, tmp_path):
    """Issue 34.8: /compare/ without ?benchmark= opens on a benchmark it can compare on, not on
    the first one in the list when that one has no evaluated system."""
    from evaluation.services.benchmarks import benchmark_import
    from tests.support.bundles import tiny_data, write_tiny

    data = tiny_data()
    data["benchmark"].update(slug="aaa-empty", name="AAA empty")  # listed first
    benchmark_import(path=write_tiny(tmp_path / "empty", data))
    html = client.get(reverse("leaderboard:compare")).content.decode()
    assert re.search(r'<option value="tiny"\s+selected', html), html[:2000]
