"""Rank snapshots: which run is significantly better than which, per metric, stored per
leaderboard and evaluator (`RankSnapshot`) and recomputed only when the set of runs it covers
changed."""

from __future__ import annotations

from evaluation.models import MetricSummary, Run

from ..models import RankSnapshot
from .runs import RunChoice, board_runs


def rank_snapshots(*, benchmark, protocol: str, choice: RunChoice,
                   evaluators: list[str]) -> dict[str, RankSnapshot]:
    """The fresh snapshot of every evaluator; a stale or missing one is recomputed here (the
    slow path: a background task normally does it right after a run finishes or a submission
    is published)."""
    from ..services import rank_snapshot_refresh

    stored = {s.evaluator: s for s in RankSnapshot.objects.filter(
        benchmark=benchmark, protocol=protocol, evaluator__in=evaluators)}
    for evaluator in evaluators:
        candidates = choice.candidates(evaluator)
        snapshot = stored.get(evaluator)
        if snapshot is None or snapshot.run_ids != candidates:
            directions, bootstrap = _rank_inputs(candidates)
            stored[evaluator] = rank_snapshot_refresh(
                benchmark_id=benchmark.pk, protocol=protocol, evaluator=evaluator,
                run_ids=candidates, directions=directions, bootstrap=bootstrap)
    return stored


def _rank_inputs(run_ids: list[int]) -> tuple[dict[str, str], dict]:
    directions = dict(MetricSummary.objects.filter(run_id__in=run_ids)
                      .values_list("metric", "direction").distinct())
    config = Run.objects.filter(pk__in=run_ids[:1]).values_list("config", flat=True).first()
    return directions, (config or {}).get("bootstrap", {})


def rank_snapshots_refresh(*, benchmark, protocol: str) -> list[RankSnapshot]:
    """Bring every evaluator's snapshot of one leaderboard up to date (the background task)."""
    choice = RunChoice.of(board_runs(benchmark=benchmark, protocol=protocol))
    evaluators = sorted({key[1] for key in choice.latest})
    return list(rank_snapshots(benchmark=benchmark, protocol=protocol, choice=choice,
                               evaluators=evaluators).values())
