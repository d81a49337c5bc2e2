"""Writes of a run's results, shared by every evaluator: unit values and their summaries.

Both are upserted, on (run, metric, unit) and (run, metric), so executing a run (or a chunk of
it) twice leaves exactly the rows of executing it once.
"""

import numpy as np
from django.db import connection, transaction

from evaluation.lib.progress import Progress
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE
from evaluation.lib.stats.cluster_sums import cluster_mean_from_sums, sample_std
from evaluation.lib.stats.clustered import cluster_mean
from evaluation.models import MetricSummary, Run, UnitScore


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
    (docs/performance.md, "First start")."""
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
    `bulk_create` that cost more CPU than scoring them (docs/performance.md, "Runs at scale").
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
    bootstrap = run.config.get("bootstrap", {})
    rows = []
    for done, spec in enumerate(specs, start=1):
        values, clusters = collected.get(spec.name, ([], []))
        estimate, reason = None, unavailable.get(spec.name, "")
        if not reason and not values:
            reason = "no evaluated unit has a value for this metric"
        if not reason:
            estimate = cluster_mean(
                values, clusters, confidence=bootstrap.get("confidence", DEFAULT_CONFIDENCE),
                bounds=getattr(spec, "range", None))
        rows.append(MetricSummary(
            run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
            value=estimate.value if estimate else None,
            ci_low=estimate.ci_low if estimate else None,
            ci_high=estimate.ci_high if estimate else None,
            std=float(np.std(values, ddof=1)) if len(values) > 1 and estimate else None,
            n=len(values) if estimate else 0, undefined_reason=reason[:300],
        ))
        if done % 10 == 0 or done == len(specs):
            progress("bootstrap", done, len(specs))
    MetricSummary.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["run", "metric"],
        update_fields=["axis", "direction", "value", "ci_low", "ci_high", "std", "n",
                       "undefined_reason"],
    )


def summaries_upsert_from_sums(run: Run, specs, sums, unavailable, progress: Progress) -> None:
    """`summaries_upsert` for a run scored in chunks: from per-metric, per-dialogue sums
    (`evaluation.selectors.run_chunks.run_cluster_sums`), same estimates and CIs."""
    bootstrap = run.config.get("bootstrap", {})
    rows = []
    for done, spec in enumerate(specs, start=1):
        clusters, totals, counts, squares = sums.get(spec.name, ([], [], [], 0.0))
        estimate, reason = None, unavailable.get(spec.name, "")
        if not reason and not clusters:
            reason = "no evaluated unit has a value for this metric"
        if not reason:
            estimate = cluster_mean_from_sums(
                clusters, totals, counts,
                confidence=bootstrap.get("confidence", DEFAULT_CONFIDENCE),
                bounds=getattr(spec, "range", None))
        n = sum(counts)
        rows.append(MetricSummary(
            run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
            value=estimate.value if estimate else None,
            ci_low=estimate.ci_low if estimate else None,
            ci_high=estimate.ci_high if estimate else None,
            std=sample_std(sum(totals), squares, n) if estimate else None,
            n=n if estimate else 0, undefined_reason=reason[:300],
        ))
        if done % 10 == 0 or done == len(specs):
            progress("bootstrap", done, len(specs))
    MetricSummary.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["run", "metric"],
        update_fields=["axis", "direction", "value", "ci_low", "ci_high", "std", "n",
                       "undefined_reason"],
    )
