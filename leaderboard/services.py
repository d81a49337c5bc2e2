"""Writes of the leaderboard app: accounts (the signup page) and rank snapshots.

Rank snapshots are refreshed here, in the background, whenever `evaluation` says a
leaderboard's results changed (a run finished, a submission was published or withdrawn):
`leaderboard.apps` connects `evaluation.signals.results_changed` to `rank_refresh_enqueue`.
"""

import time
from collections.abc import Sequence

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from config.roles import RESEARCHER
from evaluation.services.jobs import task_enqueue
from leaderboard.lib import rank_tables

from .models import RankSnapshot, RunClusterStats


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
    from django.db.models import Count, Sum

    from evaluation.models import UnitScore

    stored = {s.run_id: s for s in RunClusterStats.objects.filter(run_id__in=run_ids)}
    missing = [run_id for run_id in run_ids if run_id not in stored]
    if missing:
        rows = (UnitScore.objects.filter(run_id__in=missing).exclude(value=None)
                .values_list("run_id", "metric", "dialogue_id")
                .annotate(total=Sum("value"), n=Count("value")).order_by())
        tables = rank_tables.cluster_tables(rows, missing)
        created = RunClusterStats.objects.bulk_create(
            [RunClusterStats(run_id=run_id, metrics=table.metrics, clusters=table.clusters,
                             sums=table.sums.tobytes(), counts=table.counts.tobytes())
             for run_id, table in tables.items()],
            ignore_conflicts=True)
        stored.update({s.run_id: s for s in created})
    return stored


def rank_snapshot_refresh(*, benchmark_id: int, protocol: str, evaluator: str,
                          run_ids: Sequence[int], directions: dict[str, str],
                          bootstrap: dict) -> RankSnapshot:
    """Recompute which run is significantly better than which, per metric, and store it."""
    started = time.perf_counter()
    stats = run_cluster_stats_ensure(run_ids=run_ids)
    tables = [rank_tables.ClusterTable.from_bytes(stats[run_id].metrics,
                                                  stats[run_id].clusters,
                                                  stats[run_id].sums, stats[run_id].counts)
              if run_id in stats else rank_tables.ClusterTable.empty() for run_id in run_ids]
    metrics = sorted(directions)
    better = rank_tables.better_matrices(
        tables, metrics, {m: directions[m] == "higher" for m in metrics},
        n_resamples=bootstrap.get("n_resamples", 1000), seed=bootstrap.get("seed", 42),
        confidence=bootstrap.get("confidence", 0.95))
    snapshot, _ = RankSnapshot.objects.update_or_create(
        benchmark_id=benchmark_id, protocol=protocol, evaluator=evaluator,
        defaults={"run_ids": list(run_ids), "metrics": metrics,
                  "better": rank_tables.pack(better), "bootstrap": bootstrap,
                  "seconds": time.perf_counter() - started})
    return snapshot
