"""Intervals stored with an older method are never shown silently (docs/statistics.md, "Stored
intervals and their method"): every stored interval records its method and version; pages mark
one of an older version (ranks are recomputed for the request), and `recompute_intervals`
recomputes it to exactly what a fresh computation gives."""

import io

import pytest
from django.core.management import call_command
from django.db.models import F
from django.urls import reverse

from annotation.models import MetricValidation
from annotation.services.validation import metric_validations_refresh
from evaluation.lib.stats.methods import INTERVAL_VERSIONS
from evaluation.models import MetricSummary
from leaderboard.models import RankSnapshot
from leaderboard.selectors.intervals import stale_intervals
from leaderboard.services import intervals_recompute_enqueue, rank_snapshots_refresh
from tests.support.trust import labelled_world

pytestmark = pytest.mark.django_db

FIELDS = ("metric", "axis", "direction", "value", "ci_low", "ci_high", "std", "n",
          "undefined_reason", "ci_method", "ci_version")


def _summaries(run):
    return list(MetricSummary.objects.filter(run=run).order_by("metric").values_list(*FIELDS))


def _as_stored_by_the_old_method(run) -> None:
    """What a row stored before methods were recorded looks like: no method, version 0, and
    the old (different) interval."""
    MetricSummary.objects.filter(run=run, ci_low__isnull=False).update(
        ci_low=F("ci_low") - 0.05, ci_high=F("ci_high") + 0.05)
    MetricSummary.objects.filter(run=run).update(ci_method="", ci_version=0)


def _command(*args) -> str:
    out = io.StringIO()
    call_command("recompute_intervals", *args, "--no-progress", stdout=out)
    return out.getvalue()


def test_an_old_run_summary_is_marked_then_recomputed_to_the_fresh_computation(
        client, board_world, django_capture_on_commit_callbacks):
    _, run = board_world["runs"]["echo"]
    fresh = _summaries(run)
    # a metric bounded on both sides records the logit-scale interval (issue 30), others the
    # plain one; each with its current version
    assert fresh and all(row[-2:] in {("cluster_t_mean", INTERVAL_VERSIONS["cluster_t_mean"]),
                                      ("cluster_t_logit_mean",
                                       INTERVAL_VERSIONS["cluster_t_logit_mean"])}
                         for row in fresh)
    assert {row[-2] for row in fresh} == {"cluster_t_mean", "cluster_t_logit_mean"}
    _as_stored_by_the_old_method(run)
    assert _summaries(run) != fresh

    # The run page and the leaderboard say so next to the interval.
    assert 'class="older-method"' in client.get(
        reverse("run_detail", args=[run.pk])).content.decode()
    client.force_login(board_world["echo"].owner)
    board = client.get(reverse("leaderboard:board", args=[run.submission.benchmark.slug,
                                                          "turn"])).content.decode()
    assert "(older method)" in board
    assert "recompute_intervals" in board  # the cell's title says what updates it

    # migrate's hook queues the recomputation only while something is stale.
    with django_capture_on_commit_callbacks() as queued:
        assert intervals_recompute_enqueue() is True
    assert len(queued) == 1

    assert "summaries of 1 run(s)" in _command("--dry-run")
    assert _summaries(run) != fresh  # a dry run changes nothing
    assert "recomputed: 1 run(s)" in _command()
    assert _summaries(run) == fresh  # exactly what the finished run stored
    assert "summaries of 0 run(s)" in _command()
    assert 'class="older-method"' not in client.get(
        reverse("run_detail", args=[run.pk])).content.decode()
    with django_capture_on_commit_callbacks() as queued:
        assert intervals_recompute_enqueue() is False
    assert not queued


def test_a_rank_snapshot_of_an_older_test_is_stale_and_recomputed(board_world):
    _, run = board_world["runs"]["echo"]
    benchmark = run.submission.benchmark
    fresh = {s.pk: bytes(s.better) for s in rank_snapshots_refresh(benchmark=benchmark,
                                                                   protocol="turn")}
    RankSnapshot.objects.update(method="", method_version=0, better=b"")
    assert stale_intervals().snapshot_ids == sorted(fresh)
    assert "0 run(s)" in _command("--dry-run") and f"{len(fresh)} rank snapshot" in \
        _command("--dry-run")
    _command()
    stored = {s.pk: (bytes(s.better), s.is_current) for s in RankSnapshot.objects.all()}
    assert stored == {pk: (better, True) for pk, better in fresh.items()}


def test_an_old_trust_row_is_marked_then_recomputed(client, author):
    benchmark, study, _pairs = labelled_world(author)
    metric_validations_refresh(study=study)
    columns = ("scope", "evaluator", "metric", "aspect", "value", "ci_low", "ci_high", "units",
               "clusters", "rank", "ci_method", "ci_version")
    fresh = sorted(MetricValidation.objects.values_list(*columns))
    MetricValidation.objects.update(ci_low=F("ci_low") - 0.1, ci_method="", ci_version=0)
    board = client.get(reverse("leaderboard:board", args=[benchmark.slug, "turn"]))
    header = board.content.decode().split('class="trust-row"')[1].split("</tr>")[0]
    assert "older method" in header.split('data-trust-key="synthetic:m01"')[1].split("</th>")[0]
    assert "metric-human correlations of 1 study(ies)" in _command("--dry-run")
    _command()
    assert sorted(MetricValidation.objects.values_list(*columns)) == fresh
    header = client.get(reverse("leaderboard:board", args=[benchmark.slug, "turn"])
                        ).content.decode().split('class="trust-row"')[1].split("</tr>")[0]
    assert "older method" not in header
