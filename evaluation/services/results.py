"""Writes of a run's results, shared by every evaluator: unit values and their summaries.

Both are upserted, on (run, metric, unit) and (run, metric), so executing a run (or a chunk of
it) twice leaves exactly the rows of executing it once.
"""

from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from evaluation.lib.metrics.ievalm import simulation_metric_range
from evaluation.lib.progress import Progress
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE
from evaluation.lib.stats.cluster_sums import cluster_mean_from_sums, sample_std
from evaluation.lib.stats.clustered import cluster_mean, mean_method
from evaluation.lib.stats.methods import interval_version
from evaluation.models import MetricSummary, Run, UnitScore
from evaluation.selectors.benchmarks import run_metric_specs
from evaluation.selectors.run_chunks import run_cluster_sums

UPDATED = ["axis", "direction", "value", "ci_low", "ci_high", "std", "n", "undefined_reason",
           "ci_method", "ci_version"]


def _interval_stamp(bounds=None) -> dict:
    """The method and version a summary's interval is computed with (cluster_mean), for a
    metric of range BOUNDS (bounded on both sides: the logit-scale interval)."""
    method = mean_method(bounds)
    return {"ci_method": method, "ci_version": interval_version(method)}


@transaction.atomic
def unit_scores_upsert(run: Run, values) -> None:
    if connection.vendor == "postgresql":
        _unit_scores_copy_upsert(run, values)
        return
    _unit_scores_sqlite_upsert(run, values)


def _unit_scores_sqlite_upsert(run: Run, values) -> None:
    """The same upsert on SQLite: one prepared INSERT … ON CONFLICT run by executemany.

    Building a model instance per value (`bulk_create`) cost more than scoring the run: for
    `load_demo`'s seven baselines (≈ 240,000 values) it was the largest part of first start
    (docs/performance-history.md, "First start")."""
    table = connection.ops.quote_name(UnitScore._meta.db_table)
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (run_id, metric, unit_type, unit_id, dialogue_id, value, "
            "detail) VALUES (%s, %s, %s, %s, %s, %s, '{}') "
            "ON CONFLICT (run_id, metric, unit_type, unit_id) DO UPDATE "
            "SET value = excluded.value, dialogue_id = excluded.dialogue_id",
            [(run.pk, v.metric, v.unit_type, v.unit_id, v.dialogue_id, v.value)
             for v in values])


def _unit_scores_copy_upsert(run: Run, values) -> None:
    """The same upsert through COPY into a temporary table, then one INSERT … ON CONFLICT.

    A chunk of 1,000 answered turns stores about 50,000 values; as model instances through
    `bulk_create` that cost more CPU than scoring them (docs/performance-history.md, "Runs at
    scale").
    """
    table = connection.ops.quote_name(UnitScore._meta.db_table)
    columns = "run_id, metric, unit_type, unit_id, dialogue_id, value, detail"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS unitscore_incoming (run_id bigint, "
            "metric varchar(100), unit_type varchar(10), unit_id varchar(250), "
            "dialogue_id varchar(200), value double precision, detail jsonb) "
            "ON COMMIT DELETE ROWS")
        with cursor.copy(f"COPY unitscore_incoming ({columns}) FROM STDIN") as copy:
            for v in values:
                copy.write_row((run.pk, v.metric, v.unit_type, v.unit_id, v.dialogue_id,
                                v.value, "{}"))
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM unitscore_incoming "
            "ON CONFLICT (run_id, metric, unit_type, unit_id) DO UPDATE "
            "SET value = EXCLUDED.value, dialogue_id = EXCLUDED.dialogue_id")
        cursor.execute("TRUNCATE unitscore_incoming")


def summaries_upsert(run: Run, specs, collected, unavailable, progress: Progress) -> None:
    rows = []
    for done, spec in enumerate(specs, start=1):
        values, clusters = collected.get(spec.name, ([], []))
        estimate, reason = None, unavailable.get(spec.name, "")
        if not reason and not values:
            reason = "no evaluated unit has a value for this metric"
        if not reason:
            estimate = cluster_mean(
                values, clusters, confidence=DEFAULT_CONFIDENCE,
                bounds=getattr(spec, "range", None))
        rows.append(MetricSummary(
            run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
            value=estimate.value if estimate else None,
            ci_low=estimate.ci_low if estimate else None,
            ci_high=estimate.ci_high if estimate else None,
            std=float(np.std(values, ddof=1)) if len(values) > 1 and estimate else None,
            n=len(values) if estimate else 0, undefined_reason=reason[:300],
            **_interval_stamp(getattr(spec, "range", None)),
        ))
        if done % 10 == 0 or done == len(specs):
            progress("bootstrap", done, len(specs))
    MetricSummary.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["run", "metric"], update_fields=UPDATED,
    )


def summaries_upsert_from_sums(run: Run, specs, sums, unavailable, progress: Progress) -> None:
    """`summaries_upsert` for a run scored in chunks: from per-metric, per-dialogue sums
    (`evaluation.selectors.run_chunks.run_cluster_sums`), same estimates and CIs."""
    rows = []
    for done, spec in enumerate(specs, start=1):
        clusters, totals, counts, squares = sums.get(spec.name, ([], [], [], 0.0))
        estimate, reason = None, unavailable.get(spec.name, "")
        if not reason and not clusters:
            reason = "no evaluated unit has a value for this metric"
        if not reason:
            estimate = cluster_mean_from_sums(
                clusters, totals, counts,
                confidence=DEFAULT_CONFIDENCE,
                bounds=getattr(spec, "range", None))
        n = sum(counts)
        rows.append(MetricSummary(
            run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
            value=estimate.value if estimate else None,
            ci_low=estimate.ci_low if estimate else None,
            ci_high=estimate.ci_high if estimate else None,
            std=sample_std(sum(totals), squares, n) if estimate else None,
            n=n if estimate else 0, undefined_reason=reason[:300],
            **_interval_stamp(getattr(spec, "range", None)),
        ))
        if done % 10 == 0 or done == len(specs):
            progress("bootstrap", done, len(specs))
    MetricSummary.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["run", "metric"], update_fields=UPDATED,
    )


# --- intervals stored with an older method (statistics.md "Stored intervals and their method")


@dataclass(frozen=True)
class _StoredSpec:
    """A metric as `summaries_upsert_from_sums` needs it, for a run whose evaluator declares
    no specs (imported scores, simulated users): its stored axis and direction."""

    name: str
    axis: str
    direction: str
    range: tuple | None = None


def _recompute_specs(run: Run, stored: list[MetricSummary]) -> list:
    declared = {spec.name: spec for spec in run_metric_specs(run)}
    return [declared.get(row.metric) or _StoredSpec(row.metric, row.axis, row.direction)
            for row in stored]


def _preference_recompute(run: Run, stored: list[MetricSummary]) -> int:
    """A simulation's metrics, as `simulations.simulation_finish_if_done` stores them: the
    interval over the units' values (one per user, or per (user, gold item) pair for iEvaLM's
    recall, in the order stored) clustered by user, cut to the metric's range
    (`simulation_metric_range`), n = users and no standard deviation."""
    for row in stored:
        bounds = simulation_metric_range(row.metric)
        row.ci_method, row.ci_version = _interval_stamp(bounds).values()
        values = list(UnitScore.objects.filter(run=run, metric=row.metric).exclude(value=None)
                      .order_by("pk").values_list("value", "dialogue_id"))
        if not values:
            continue
        estimate = cluster_mean([v for v, _ in values], [c for _, c in values],
                                bounds=bounds)
        row.value, row.ci_low, row.ci_high = estimate.value, estimate.ci_low, estimate.ci_high
        row.n = estimate.n.get("clusters", 0)
        row.undefined_reason = estimate.undefined_reason or ""
    MetricSummary.objects.bulk_update(stored, ["value", "ci_low", "ci_high", "n",
                                               "undefined_reason", "ci_method", "ci_version"])
    return len(stored)


def summaries_recompute(*, run: Run) -> int:
    """Recompute every summary of RUN from its stored unit values with today's interval, as a
    finished run computes them (`run_finalize`: per-dialogue sums, the metric's range; a
    simulation's preference coverage as the simulation does); the number of summaries
    recomputed. A metric none of whose units has a value keeps its reason."""
    stored = list(run.summaries.order_by("pk"))
    if run.evaluator.startswith("simulation."):
        return _preference_recompute(run, stored)
    sums = run_cluster_sums(run=run)
    unavailable = dict(run.unavailable or {})
    unavailable.update({row.metric: row.undefined_reason for row in stored
                        if row.metric not in sums and row.metric not in unavailable
                        and row.undefined_reason})
    summaries_upsert_from_sums(run, _recompute_specs(run, stored), sums, unavailable,
                               lambda stage, done, total: None)
    return len(stored)
