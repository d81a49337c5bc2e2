"""The metric leaderboard's system-level columns and its sort control (issue 32, item 3):
evaluators are rankable by pairwise accuracy, soft pairwise accuracy and tie-calibrated
accuracy as by correlation, and the exports carry the three statistics."""

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.urls import reverse

from annotation import report_selectors
from annotation.lib import exports, reports
from annotation.report_bench import synthetic_report_study


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def generated(db):
    staff = User.objects.create_user("board-staff", is_staff=True)
    return synthetic_report_study(slug="sysmeta", author=staff, labels=600, systems=4,
                                  annotators=3, scored_factor=2, seed=3), staff


def test_every_board_row_has_the_three_system_level_statistics(generated):
    study, _ = generated
    board = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                      include_private=True)
    assert board["rows"]
    for row in board["rows"]:
        level = row["system_level"]
        assert level["n_systems"] == 4 and level["n_pairs"] == 6
        for name in ("pairwise_accuracy", "soft_pairwise_accuracy", "tie_calibrated_accuracy"):
            part = level[name]
            assert 0.0 <= part["value"] <= 1.0
            assert part["ci_low"] <= part["ci_high"]
    table = exports.metric_board_table(board)
    assert {"pa", "spa", "tc", "pa_low", "spa_high", "epsilon"} <= {k for k, _ in table.columns}
    assert table.rows[0]["spa"] == board["rows"][0]["system_level"][
        "soft_pairwise_accuracy"]["value"]
    csv = exports.render(board, [table], "csv")
    assert ",spa,spa_low,spa_high," in csv


def test_the_sort_control_orders_evaluators_by_the_chosen_statistic(client, generated):
    study, staff = generated
    client.force_login(staff)
    url = reverse("annotation:metric_board", args=[study.slug])
    board = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                      include_private=True)
    for order in ("soft_pairwise_accuracy", "pairwise_accuracy", "tie_calibrated_accuracy"):
        html = client.get(url, {"aspect": "overall", "sort": order}).content.decode()
        assert 'id="board-order"' in html and f"sort={order}" in html
        expected = reports.order_metric_board(board, order)
        values = [row["system_level"][order]["value"] for row in expected]
        assert values == sorted(values, reverse=True)
        labels = [f"<td>{row['evaluator']}</td><td>{row['metric']}</td>" for row in expected]
        positions = [html.index(label) for label in labels]
        assert positions == sorted(positions)
    assert client.get(url, {"aspect": "overall", "sort": "nonsense"}).status_code == 404
    html = client.get(url, {"aspect": "overall"}).content.decode()
    assert 'id="system-level-method"' in html and "Soft pairwise accuracy" in html


def test_an_llm_judge_of_a_ranked_systems_family_is_flagged(client, generated):
    """Issue 32 item 4 beside the evaluator: the judge's runs use gpt-4o and one ranked system
    is a GPT system, so the judge's rows carry the self-preference flag."""
    from evaluation.models import Run, System

    study, staff = generated
    Run.objects.filter(submission__benchmark=study.benchmark, evaluator="external:judge").update(
        evaluator="trace_judge", config={"model": {"model": "openai/gpt-4o", "profile": "x"}})
    System.objects.filter(name="Generated system 01").update(description="answers by GPT-4o")
    board = report_selectors.study_metric_leaderboard(study=study, aspect="overall",
                                                      include_private=True)
    judged = [row for row in board["rows"] if row["evaluator"] == "trace_judge"]
    assert judged and all(row["self_preference"]["flag"] for row in judged)
    check = judged[0]["self_preference"]["checks"][0]
    assert check["systems"] == ["Generated system 01"] and check["model"] == "openai/gpt-4o"
    assert not any("self_preference" in row for row in board["rows"]
                   if row["evaluator"] != "trace_judge")
    client.force_login(staff)
    html = client.get(reverse("annotation:metric_board", args=[study.slug]),
                      {"aspect": "overall"}).content.decode()
    assert "self-preference risk" in html
