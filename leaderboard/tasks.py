"""Celery tasks of the leaderboard app: thin wrappers that take ids and call one function."""

from celery import shared_task

from evaluation.models import Benchmark

from .services import intervals_recompute, rank_snapshots_refresh


@shared_task(acks_late=True)
def refresh_ranks_job(benchmark_id: int, protocol: str) -> None:
    """Recompute a leaderboard's rank snapshots after a run finished or a submission was
    published or withdrawn (idempotent: an up-to-date snapshot is left alone)."""
    benchmark = Benchmark.objects.filter(pk=benchmark_id).first()
    if benchmark is not None:
        rank_snapshots_refresh(benchmark=benchmark, protocol=protocol)


@shared_task(acks_late=True)
def recompute_intervals_job() -> None:
    """Recompute the intervals stored with an older method (queued after `migrate`)."""
    intervals_recompute()
