"""Two systems side by side: paired differences per metric with CIs and significance."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from django.db.models import Count

from evaluation.lib import charts
from evaluation.lib import columns as shown
from evaluation.lib.metrics.suite import SUITE_NAME
from evaluation.models import Job, Run
from evaluation.selectors.benchmarks import runs_compare

from .columns import Column, fmt, metric_bounds
from .ranks import cluster_tables_read
from .trust import column_trust


def compare_default_benchmark(benchmarks: list) -> str:
    """The benchmark /compare/ opens on: the first of BENCHMARKS (the viewer's, in the list's
    order) on which two systems have published Trace runs, so there is something to compare;
    else the first; "" when there is none."""
    if not benchmarks:
        return ""
    counts = dict(Run.objects.publishable().filter(
        evaluator=SUITE_NAME, job__status=Job.Status.SUCCEEDED, submission__is_public=True,
        submission__benchmark__in=[b.pk for b in benchmarks])
        .values_list("submission__benchmark_id")
        .annotate(systems=Count("submission__system_id", distinct=True)))
    return next((b.slug for b in benchmarks if counts.get(b.pk, 0) >= 2), benchmarks[0].slug)


def systems_compare(*, run_a: Run, run_b: Run, all_metrics: bool = False, user=None) -> dict:
    """Paired differences A − B per metric with CIs and significance (statistics.md), grouped
    by axis, each metric's trust (its best measured agreement with human labels, for USER),
    and a forest plot of the bounded (0–1) headline metrics."""
    headline = shown.headline(run_a.evaluator)
    metrics = None if all_metrics or headline is None else list(headline)
    # Both tests need only per-dialogue sums and counts: the runs' stored ones (RunClusterStats,
    # one row each; only the shown metrics' slices of it), else aggregated by the database
    # now; never every unit value.
    tables = cluster_tables_read(run_ids=[run_a.pk, run_b.pk], metrics=metrics)
    rows = runs_compare(run_a=run_a, run_b=run_b, metrics=metrics,
                        sums=(_by_metric(tables[run_a.pk]), _by_metric(tables[run_b.pk])))
    trust = column_trust(
        benchmark=run_a.submission.benchmark_id, user=user,
        columns=[Column(run_a.evaluator, r["metric"], r["axis"], r["direction"]) for r in rows]
    ) if user is not None else {}
    for row in rows:
        row["trust"] = trust.get(f"{run_a.evaluator}:{row['metric']}")
    headline = headline or ()

    def position(row):
        return (shown.axis_place(row["axis"]),
                shown.headline_place(run_a.evaluator, row["metric"]))

    rows.sort(key=position)
    groups: dict[str, list[dict]] = defaultdict(list)
    forest_rows = []
    for row in rows:
        ci = row["ci"]
        row["text"] = {k: fmt(row[k]) for k in ("mean_a", "mean_b")}
        row["diff_text"] = f"{row['difference']:+.3f}" if row["difference"] is not None else "—"
        row["ci_text"] = (f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci[0] is not None else "")
        p = (row["t_test"] or {}).get("p_value") if isinstance(row["t_test"], dict) else None
        row["p_text"] = "—" if p is None or not math.isfinite(p) else (
            f"{p:.3g}" if p >= 0.001 else "< 0.001")
        row["arrow"] = "↑" if row["direction"] == "higher" else "↓"
        groups[row["axis"]].append(row)
        if metric_bounds(run_a.evaluator, row["metric"]) == (0.0, 1.0) and (
                row["metric"] in headline or all_metrics):
            forest_rows.append((row["metric"], row["difference"], ci[0], ci[1],
                                row["significant"]))
    return {"groups": list(groups.items()), "rows": rows,
            "forest": charts.forest(forest_rows) if forest_rows else None}


def _by_metric(table) -> dict:
    """{metric: (dialogue ids, sums, counts)} of a run's ClusterTable (the ids as one array,
    shared by every metric)."""
    clusters = np.asarray(table.clusters) if table.clusters else np.array([], dtype=str)
    return {metric: (clusters, table.sums[i], table.counts[i])
            for i, metric in enumerate(table.metrics)}
