"""Rank snapshots: which run is significantly better than which, per metric, per leaderboard
and evaluator (`RankSnapshot`).

Reads never write. A page uses the stored snapshot when it covers exactly the runs the
leaderboard may show; when it is missing or stale (a run finished or a submission was published
and the refresh task has not run yet, or it was computed by another version of the test), the
ranks are computed for that request only, in memory, from the stored per-run sums (or, for a
run that has none yet, one grouped query over its unit values), and nothing is stored.
Snapshots and per-run sums are stored only by `leaderboard.services.rank_snapshots_refresh`:
the `refresh_ranks_job` task that `evaluation.signals.results_changed` triggers, the
`refresh_ranks` command and `recompute_intervals`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from django.db import NotSupportedError
from django.db.models import BinaryField, Count, F, Func, Sum, Value

from evaluation.models import MetricSummary, UnitScore
from evaluation.selectors.run_chunks import chunked_runs_cluster_sums
from leaderboard.lib import rank_tables

from ..models import RankSnapshot, RunClusterStats
from .runs import RunChoice


def rank_snapshots(*, benchmark, protocol: str, coverage: str, choice: RunChoice,
                   evaluators: list[str]) -> dict[str, RankSnapshot]:
    """Every evaluator's snapshot of the runs of one COVERAGE (CHOICE holds only those): the
    stored one when fresh, else an unsaved one computed now (the slow path, until the
    background refresh has stored it)."""
    stored = {s.evaluator: s for s in RankSnapshot.objects.filter(
        benchmark=benchmark, protocol=protocol, splits=coverage, evaluator__in=evaluators)}
    for evaluator in evaluators:
        candidates = choice.candidates(evaluator)
        snapshot = stored.get(evaluator)
        if snapshot is None or snapshot.run_ids != candidates or not snapshot.is_current:
            stored[evaluator] = rank_snapshot_compute(
                benchmark_id=benchmark.pk, protocol=protocol, evaluator=evaluator,
                coverage=coverage, run_ids=candidates,
                tables=cluster_tables_read(run_ids=candidates))
    return stored


def rank_inputs(run_ids: Sequence[int]) -> dict[str, str]:
    """The metrics' directions to rank with."""
    return dict(MetricSummary.objects.filter(run_id__in=run_ids)
                .values_list("metric", "direction").distinct())


def cluster_rows(run_ids: Sequence[int]) -> list[tuple]:
    """(run id, metric, dialogue id, sum, count) of the runs' unit values: from the chunks'
    stored reductions for runs scored in chunks, one grouped query for the others."""
    chunked = chunked_runs_cluster_sums(run_ids=run_ids)
    rows = [(run_id, metric, dialogue_id, total, n)
            for run_id, sums in chunked.items()
            for metric, (clusters, totals, counts, _) in sums.items()
            for dialogue_id, total, n in zip(clusters, totals, counts, strict=True)]
    others = [run_id for run_id in run_ids if run_id not in chunked]
    if others:
        rows += (UnitScore.objects.filter(run_id__in=others).exclude(value=None)
                 .values_list("run_id", "metric", "dialogue_id")
                 .annotate(total=Sum("value"), n=Count("value")).order_by())
    return rows


class MetricSlice(Func):
    """One metric's values in a `RunClusterStats` array (ARRAY: "sums" or "counts"), cut out
    by the database: the array is (metrics, dialogues) float64 in C order, so metric i's values
    are the bytes [i·L, (i+1)·L), L being the array's length over the number of metrics. NULL
    when the run has no such metric. Only those bytes leave the database, and PostgreSQL
    reads little more than them (`substring` of a stored bytea fetches a slice)."""

    output_field = BinaryField()
    # {name}: a compiled source expression; the row length L is computed twice per slice so
    # that every slice stays one expression of its own row (the statement, one per page).
    templates = {
        "postgresql": (
            "substring({array} from ((select e.i - 1 from jsonb_array_elements_text({metrics})"
            " with ordinality as e(m, i) where e.m = {metric})"
            " * (octet_length({array}) / nullif(jsonb_array_length({metrics}), 0)) + 1)::int"
            " for octet_length({array}) / nullif(jsonb_array_length({metrics}), 0))"),
        "sqlite": (
            "substr({array}, (select e.key from json_each({metrics}) as e where e.value = {metric})"
            " * (length({array}) / nullif(json_array_length({metrics}), 0)) + 1,"
            " length({array}) / nullif(json_array_length({metrics}), 0))"),
    }

    def __init__(self, array: str, metric: str):
        super().__init__(F(array), F("metrics"), Value(metric))

    def as_sql(self, compiler, connection, **extra):
        template = self.templates.get(connection.vendor)
        if template is None:
            raise NotSupportedError(f"MetricSlice has no SQL for {connection.vendor}")
        compiled = dict(zip(("array", "metrics", "metric"),
                            (compiler.compile(e) for e in self.get_source_expressions()),
                            strict=True))
        names = re.findall(r"{(\w+)}", template)
        return (template.format(**{name: sql for name, (sql, _) in compiled.items()}),
                [p for name in names for p in compiled[name][1]])


def cluster_tables_read(*, run_ids: Sequence[int], metrics: Sequence[str] | None = None
                        ) -> dict[int, rank_tables.ClusterTable]:
    """Every run's per-dialogue sums: the stored ones, the others aggregated now (not stored).

    Given METRICS, each run's table has only those of them it has (`ClusterTable.select`), and
    of a stored row the database sends only their slices (`MetricSlice`), for every run in the
    same one statement: a page showing 5 of 53 metrics at 10,000 dialogues reads ≈ 0.7 MB of a
    run's arrays instead of 7.6 MB (docs/performance-history.md, "Pages at that size")."""
    stats = RunClusterStats.objects.filter(run_id__in=run_ids)
    if metrics is None:
        tables = {s.run_id: rank_tables.ClusterTable.from_bytes(s.metrics, s.clusters, s.sums,
                                                                s.counts)
                  for s in stats}
    else:
        metrics = list(dict.fromkeys(metrics))
        slices = {f"{array}{i}": MetricSlice(array, metric)
                  for i, metric in enumerate(metrics) for array in ("sums", "counts")}
        tables = {row["run_id"]: rank_tables.ClusterTable.from_slices(
            row["metrics"], row["clusters"],
            {metric: (row[f"sums{i}"], row[f"counts{i}"]) if row[f"sums{i}"] is not None
             else None for i, metric in enumerate(metrics)})
            for row in stats.values("run_id", "metrics", "clusters", **slices)}
    missing = [run_id for run_id in run_ids if run_id not in tables]
    if missing:
        aggregated = rank_tables.cluster_tables(cluster_rows(missing), missing)
        tables.update(aggregated if metrics is None else
                      {run_id: table.select(metrics) for run_id, table in aggregated.items()})
    return tables


def rank_snapshot_compute(*, benchmark_id: int, protocol: str, evaluator: str, coverage: str,
                          run_ids: Sequence[int],
                          tables: dict[int, rank_tables.ClusterTable]) -> RankSnapshot:
    """The snapshot of RUN_IDS as an unsaved model instance (the caller decides to store it)."""
    started = time.perf_counter()
    directions = rank_inputs(run_ids)
    metrics = sorted(directions)
    better = rank_tables.better_matrices(
        [tables.get(run_id) or rank_tables.ClusterTable.empty() for run_id in run_ids], metrics,
        {m: directions[m] == "higher" for m in metrics})
    return RankSnapshot(benchmark_id=benchmark_id, protocol=protocol, evaluator=evaluator,
                        splits=coverage, run_ids=list(run_ids), metrics=metrics,
                        better=rank_tables.pack(better),
                        seconds=time.perf_counter() - started)
