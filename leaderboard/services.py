"""Writes of the leaderboard app: accounts (the signup page) and rank snapshots.

Rank snapshots are refreshed here, in the background, whenever `evaluation` says a
leaderboard's results changed (a run finished, a submission was published or withdrawn):
`leaderboard.apps` connects `evaluation.signals.results_changed` to `rank_refresh_enqueue`.
"""

from collections.abc import Sequence

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import DatabaseError, transaction

from annotation.models import Study
from annotation.services.validation import metric_validations_refresh
from core.roles import RESEARCHER
from evaluation.models import Run
from evaluation.services.jobs import task_enqueue
from evaluation.services.results import summaries_recompute
from leaderboard.lib import rank_tables

from .models import RankSnapshot, RunClusterStats
from .selectors.intervals import stale_intervals
from .selectors.ranks import cluster_rows, rank_snapshot_compute
from .selectors.runs import RunChoice, board_runs


def researcher_register(*, username: str, password: str, email: str = ""):
    """A new account with the researcher role (the signup page)."""
    user = get_user_model().objects.create_user(username, email=email, password=password)
    user.groups.add(Group.objects.get_or_create(name=RESEARCHER)[0])
    return user


# --- rank snapshots (statistics.md "Comparing systems": tie-aware ranks) --------------------


def rank_refresh_enqueue(*, benchmark_id: int, protocol: str, **_signal) -> None:
    """Refresh a leaderboard's ranks in the background once the transaction commits (also the
    receiver of `evaluation.signals.results_changed`)."""
    task_enqueue("leaderboard.tasks.refresh_ranks_job", benchmark_id, protocol)


def run_cluster_stats_ensure(*, run_ids: Sequence[int]) -> dict[int, RunClusterStats]:
    """Every finished run in RUN_IDS has its per-dialogue sums stored (computed once, with
    one grouped query for all the runs that lack them)."""
    stored = {s.run_id: s for s in RunClusterStats.objects.filter(run_id__in=run_ids)}
    missing = [run_id for run_id in run_ids if run_id not in stored]
    if missing:
        tables = rank_tables.cluster_tables(cluster_rows(missing), missing)
        created = RunClusterStats.objects.bulk_create(
            [RunClusterStats(run_id=run_id, metrics=table.metrics, clusters=table.clusters,
                             sums=table.sums.tobytes(), counts=table.counts.tobytes())
             for run_id, table in tables.items()],
            ignore_conflicts=True)
        stored.update({s.run_id: s for s in created})
    return stored


def rank_snapshot_refresh(*, benchmark_id: int, protocol: str, evaluator: str, coverage: str,
                          run_ids: Sequence[int]) -> RankSnapshot:
    """Recompute which run is significantly better than which, per metric, and store it."""
    stats = run_cluster_stats_ensure(run_ids=run_ids)
    tables = {run_id: rank_tables.ClusterTable.from_bytes(s.metrics, s.clusters, s.sums,
                                                          s.counts)
              for run_id, s in stats.items()}
    computed = rank_snapshot_compute(benchmark_id=benchmark_id, protocol=protocol,
                                     evaluator=evaluator, coverage=coverage, run_ids=run_ids,
                                     tables=tables)
    snapshot, _ = RankSnapshot.objects.update_or_create(
        benchmark_id=benchmark_id, protocol=protocol, evaluator=evaluator, splits=coverage,
        defaults={field: getattr(computed, field)
                  for field in ("run_ids", "metrics", "better", "bootstrap", "seconds", "method",
                                "method_version")})
    return snapshot


def rank_snapshots_refresh(*, benchmark, protocol: str) -> list[RankSnapshot]:
    """Bring every evaluator's snapshot of one leaderboard up to date, one per coverage (the
    split set the runs were evaluated on); a fresh one is left alone, those of coverages no
    run has any more are deleted (the `refresh_ranks_job` task and the `refresh_ranks`
    command)."""
    runs = board_runs(benchmark=benchmark, protocol=protocol, sanitised=None)
    by_coverage: dict[str, list] = {}
    for run in runs:
        by_coverage.setdefault(run.coverage, []).append(run)
    stored = {(s.splits, s.evaluator): s for s in RankSnapshot.objects.filter(
        benchmark=benchmark, protocol=protocol)}
    snapshots = []
    for coverage, covered in sorted(by_coverage.items()):
        choice = RunChoice.of(covered)
        for evaluator in sorted({key[1] for key in choice.latest}):
            candidates = choice.candidates(evaluator)
            snapshot = stored.get((coverage, evaluator))
            if snapshot is None or snapshot.run_ids != candidates or not snapshot.is_current:
                snapshot = rank_snapshot_refresh(benchmark_id=benchmark.pk, protocol=protocol,
                                                 evaluator=evaluator, coverage=coverage,
                                                 run_ids=candidates)
            snapshots.append(snapshot)
    kept = {(s.splits, s.evaluator) for s in snapshots}
    gone = [s.pk for key, s in stored.items() if key not in kept]
    if gone:
        RankSnapshot.objects.filter(pk__in=gone).delete()
    return snapshots


# --- intervals stored with an older method (statistics.md "Stored intervals and their method")

RECOMPUTE_TASK = "leaderboard.tasks.recompute_intervals_job"


def intervals_recompute(*, progress=None) -> dict[str, int]:
    """Recompute every stored interval whose method or version is not today's: each such run's
    summaries (as the run computed them), each such study's metric–human correlations (its
    trust-column rows) and each such rank snapshot. Idempotent: a second call finds nothing.
    PROGRESS(stage, done, total) is called after every item."""
    stale = stale_intervals()
    report = progress or (lambda stage, done, total: None)
    for done, run in enumerate(Run.objects.filter(pk__in=stale.run_ids).order_by("pk"), 1):
        with transaction.atomic():
            summaries_recompute(run=run)
        report("run summaries", done, len(stale.run_ids))
    studies = Study.objects.filter(pk__in=stale.study_ids).select_related("benchmark")
    for done, study in enumerate(studies.order_by("pk"), 1):
        metric_validations_refresh(study=study, force=True)
        report("metric-human correlations", done, len(stale.study_ids))
    snapshots = RankSnapshot.objects.filter(pk__in=stale.snapshot_ids).order_by("pk")
    for done, snapshot in enumerate(snapshots, 1):
        rank_snapshot_refresh(benchmark_id=snapshot.benchmark_id, protocol=snapshot.protocol,
                              evaluator=snapshot.evaluator, coverage=snapshot.splits,
                              run_ids=snapshot.run_ids)
        report("rank snapshots", done, len(stale.snapshot_ids))
    return {"runs": len(stale.run_ids), "studies": len(stale.study_ids),
            "rank_snapshots": len(stale.snapshot_ids)}


def intervals_recompute_enqueue(**_signal) -> bool:
    """Queue `intervals_recompute` when something is stale (the receiver of `post_migrate`:
    a migration that records methods leaves the older rows to it); True when queued."""
    try:
        if not stale_intervals().total:
            return False
    except DatabaseError:  # a migration backwards left a table out: nothing to recompute
        return False
    task_enqueue(RECOMPUTE_TASK)
    return True
