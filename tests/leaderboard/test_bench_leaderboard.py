"""`bench_leaderboard` end to end at small sizes (docs/performance-history.md, "Pages at that
size"),
and the system and compare pages' numbers from per-dialogue sums against the unit values."""

import json
import math
from collections import defaultdict
from io import StringIO

import pytest
from django.core.management import call_command

from evaluation.lib.stats.clustered import cluster_mean
from evaluation.lib.stats.comparison import compare_systems
from evaluation.models import Benchmark, Run, Submission, System, UnitScore
from leaderboard.models import RankSnapshot, RunClusterStats
from leaderboard.selectors.compare import systems_compare
from leaderboard.selectors.systems import dialogue_metrics, system_run_dialogues, tier_metrics
from leaderboard.services import run_cluster_stats_ensure

PAGES = {"leaderboard", "leaderboard ?columns=all", "leaderboard HTMX sort",
         "leaderboard JSON export", "system page (dialogues page 2)", "per-turn drill-down",
         "compare"}


@pytest.mark.django_db(transaction=True)
def test_the_bench_measures_every_page_and_their_statements_do_not_grow(tmp_path, media_root):
    out, figures = StringIO(), tmp_path / "figures.json"
    call_command("bench_leaderboard", systems=6, dialogues=60, small=2, small_dialogues=25,
                 repeat=2, json_path=str(figures), stdout=out)
    result = json.loads(figures.read_text())
    assert set(result["pages"]) == PAGES
    for label, row in result["pages"].items():
        counts = row["statements"]
        assert counts["big"] == counts["small"] > 0, (label, counts)
        assert row["constant"] and 0 < row["min_ms"] <= row["median_ms"] <= row["p95_ms"]
    assert "NOT constant" not in out.getvalue()
    assert len(result["load_average"]) == 3
    # rolled back, and the submission files it stored are deleted
    assert not (System.objects.exists() or Benchmark.objects.exists()
                or Submission.objects.exists() or RankSnapshot.objects.exists())
    assert not [p for p in media_root.rglob("*") if p.is_file()]


def _values(run, metrics):
    by_metric = defaultdict(lambda: ([], []))
    rows = UnitScore.objects.filter(run=run).exclude(value=None)
    if metrics is not None:
        rows = rows.filter(metric__in=metrics)
    for metric, dialogue_id, value in rows.values_list("metric", "dialogue_id", "value"):
        by_metric[metric][0].append(value)
        by_metric[metric][1].append(dialogue_id)
    return by_metric


@pytest.mark.django_db
@pytest.mark.parametrize("stored", [False, True], ids=["aggregated now", "stored sums"])
def test_tiers_and_dialogue_list_from_sums_equal_those_of_the_unit_values(board_world, stored):
    _submission, run = board_world["runs"]["echo"]
    if stored:
        run_cluster_stats_ensure(run_ids=[run.pk])
    assert RunClusterStats.objects.filter(run=run).exists() == stored
    benchmark = run.submission.benchmark
    tiers, dialogues = system_run_dialogues(run_id=run.pk, benchmark=benchmark)
    difficulty = dict(benchmark.dialogues.exclude(split="hidden")
                      .values_list("external_id", "difficulty"))
    values = _values(run, tier_metrics())
    for row in tiers["table"]:
        units, clusters = values[row["metric"]]
        for tier, cell in zip(tiers["tiers"], row["cells"], strict=True):
            kept = [(v, c) for v, c in zip(units, clusters, strict=True)
                    if difficulty.get(c) == tier]
            reference = cluster_mean([v for v, _ in kept], [c for _, c in kept])
            assert cell["text"] == f"{reference.value:.3f}"
            assert cell["dialogues"] == len({c for _, c in kept})
    means = defaultdict(dict)
    for metric, (units, clusters) in _values(run, dialogue_metrics()).items():
        grouped = defaultdict(list)
        for value, cluster in zip(units, clusters, strict=True):
            grouped[cluster].append(value)
        for cluster, group in grouped.items():
            if cluster in difficulty:
                means[cluster][metric] = sum(group) / len(group)
    assert [row["id"] for row in dialogues[:]] == sorted(means)
    for row in dialogues[0:len(dialogues)]:
        assert row["values"] == [f"{means[row['id']][m]:.3f}" if m in means[row["id"]] else "—"
                                 for m in dialogue_metrics()]


@pytest.mark.django_db
@pytest.mark.parametrize("stored", [False, True], ids=["aggregated now", "stored sums"])
def test_compare_from_sums_equals_compare_from_the_unit_values(board_world, stored):
    (_, run_a), (_, run_b) = board_world["runs"]["echo"], board_world["runs"]["base"]
    if stored:
        run_cluster_stats_ensure(run_ids=[run_a.pk, run_b.pk])
    run_a, run_b = Run.objects.get(pk=run_a.pk), Run.objects.get(pk=run_b.pk)
    rows = systems_compare(run_a=run_a, run_b=run_b, all_metrics=True)["rows"]
    values_a, values_b = _values(run_a, None), _values(run_b, None)
    assert len(rows) > 20
    for row in rows:
        reference = compare_systems("A", *values_a[row["metric"]], "B", *values_b[row["metric"]])
        difference = reference.difference
        for ours, theirs in ((row["difference"], difference.value),
                             (row["ci"][0], difference.ci_low), (row["ci"][1], difference.ci_high),
                             (row["t_test"]["p_value"], reference.t_test.p_value)):
            assert (ours is None and theirs is None) or math.isclose(
                ours, theirs, rel_tol=1e-9, abs_tol=1e-12) or (
                math.isnan(ours) and math.isnan(theirs)), row["metric"]
        assert row["significant"] == reference.significant
        assert row["shared_dialogues"] == difference.n["shared_clusters"]


@pytest.mark.django_db
def test_the_default_columns_read_only_their_summaries_and_say_there_are_more(board_world):
    from django.contrib.auth.models import AnonymousUser

    from evaluation.lib.columns import headline
    from leaderboard.selectors.boards import leaderboard

    benchmark = board_world["runs"]["echo"][0].benchmark
    default = leaderboard(benchmark=benchmark, protocol="turn", user=AnonymousUser())
    full = leaderboard(benchmark=benchmark, protocol="turn", user=AnonymousUser(),
                       all_columns=True)
    assert default.has_more_columns and not full.has_more_columns
    assert [c.key for c in default.columns] == [c.key for c in full.columns
                                                if c.metric in headline("trace")]
    index = {c.key: i for i, c in enumerate(full.columns)}
    by_system = {row.run.slug: row for row in full.rows}
    assert len(default.rows) == len(full.rows) >= 2
    for row in default.rows:
        other = by_system[row.run.slug]
        assert (row.non_answers, row.answer_turns) == (other.non_answers, other.answer_turns)
        for column, cell in zip(default.columns, row.cells, strict=True):
            twin = other.cells[index[column.key]]
            assert (cell.text, cell.ci, cell.rank, cell.rule) == (twin.text, twin.ci, twin.rank,
                                                                  twin.rule)
    assert any(cell.rule for row in default.rows for cell in row.cells)  # T2R's no-hit rule
