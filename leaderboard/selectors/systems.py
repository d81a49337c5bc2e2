"""The system page: the boards a system is on, its results by axis with a radar, its results by
difficulty tier, its dialogues, and its submissions."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from django.db.models import Max
from django.urls import reverse

from evaluation.lib import charts
from evaluation.lib import columns as shown
from evaluation.lib.metrics.suite import SUITE_NAME
from evaluation.lib.metrics.types import DIALOGUES, TIERS
from evaluation.lib.simulators.simulators import simulated_protocol
from evaluation.lib.stats.cluster_sums import cluster_mean_from_sums
from evaluation.lib.stats.clustered import mean_method
from evaluation.models import Benchmark, Dialogue, Job, Run, Simulation, Split, Submission

from .columns import (
    board_columns,
    ci_text,
    fmt,
    metric_bounds,
    metric_rule,
    metric_summaries,
)
from .ranks import cluster_tables_read
from .runs import BoardRun
from .trust import column_trust

TIER_ORDER = {"easy": 0, "medium": 1, "hard": 2}


def tier_metrics() -> tuple[str, ...]:
    """The Trace metrics the system page shows by difficulty tier (their specs say so)."""
    return shown.shown_on(SUITE_NAME, TIERS)


def dialogue_metrics() -> tuple[str, ...]:
    """The Trace metrics of each dialogue in the system page's list (their specs say so)."""
    return shown.shown_on(SUITE_NAME, DIALOGUES)


def system_boards(*, system, user) -> list[tuple[object, str]]:
    """(benchmark, protocol) pairs on which the viewer can see a succeeded run of SYSTEM."""
    from evaluation.access import benchmarks_for_user

    runs = Run.objects.filter(submission__system=system, job__status=Job.Status.SUCCEEDED,
                              submission__benchmark__in=benchmarks_for_user(user))
    if not (user.is_staff or (user.is_authenticated and system.owner_id == user.pk)
            or system.is_baseline):
        runs = runs.filter(submission__is_public=True)
    # The boards `board_runs` puts these runs on: a simulation's run on its simulator's board,
    # other runs on their submission's protocol, and a simulated log's other runs on none.
    simulated = Simulation.objects.exclude(submission=None).values("submission_id")
    pairs = [(False, b, protocol, latest) for b, protocol, latest in (
        runs.exclude(submission_id__in=simulated)
        .values_list("submission__benchmark", "submission__protocol")
        .annotate(latest=Max("created_at")))]
    pairs += [(True, b, simulated_protocol(simulator), latest) for b, simulator, latest in (
        runs.filter(simulation__isnull=False)
        .values_list("submission__benchmark", "simulation__simulator")
        .annotate(latest=Max("created_at")))]
    pairs.sort(key=lambda p: (p[0], -p[3].timestamp()))  # submission boards first, newest first
    benchmarks = Benchmark.objects.in_bulk([b for _, b, _, _ in pairs])
    return [(benchmarks[b], protocol) for _, b, protocol, _ in pairs]


def system_results(*, runs: list[BoardRun], benchmark=None, user=None
                   ) -> list[tuple[str, list[dict], list[dict]]]:
    """The system's metrics grouped by axis — (axis, all rows, headline rows) — each with its
    CI, a link to the run that produced it and, given BENCHMARK and USER, its trust (best
    measured agreement with human labels, `selectors.trust`)."""
    summaries = metric_summaries([r.run_id for r in runs])
    columns, _ = board_columns(runs, summaries, all_columns=True)
    trust = column_trust(benchmark=benchmark, columns=columns, user=user) \
        if benchmark is not None and user is not None else {}
    by_evaluator = {r.evaluator: r for r in runs}
    groups: dict[str, list[dict]] = defaultdict(list)
    for column in columns:
        run = by_evaluator[column.evaluator]
        _axis, direction, value, low, high, n, reason, current = \
            summaries[run.run_id][column.metric]
        groups[column.axis].append({
            "metric": column.metric, "evaluator": column.evaluator, "arrow": column.arrow,
            "direction": direction, "value": value, "text": fmt(value),
            "ci": ci_text(low, high, current), "n": n, "reason": reason,
            "headline": shown.is_headline(column.evaluator, column.metric),
            "href": reverse("run_detail", args=[run.run_id]) + column.anchor,
            "rule": metric_rule(run, column.metric, summaries),
            "trust": trust.get(column.key),
        })
    return [(axis, rows, [r for r in rows if r["headline"]]) for axis, rows in groups.items()]


def system_radar(results: list[tuple[str, list[dict], list[dict]]]) -> dict | None:
    """Radar of the axes: each axis is the mean of its headline metrics normalised to [0, 1]
    by their declared range and direction (charts.normalise); open-range metrics left out."""
    axes = []
    for axis, _rows, headline in results:
        shares = [charts.normalise(m["value"], metric_bounds(m["evaluator"], m["metric"]),
                                   m["direction"] == "higher") for m in headline]
        shares = [s for s in shares if s is not None]
        if shares:
            axes.append((axis, sum(shares) / len(shares)))
    return charts.radar(axes) if len(axes) >= 3 else None


def _public_dialogues(benchmark) -> dict[str, str | None]:
    """external id -> difficulty of the dialogues whose per-turn values may be shown (never
    the hidden split: its per-unit values would reveal the gold)."""
    return dict(Dialogue.objects.filter(benchmark=benchmark).exclude(split=Split.HIDDEN)
                .values_list("external_id", "difficulty"))


def _tier_key(tier: str):
    return TIER_ORDER.get(tier, 9), tier


def system_run_dialogues(*, run_id: int, benchmark) -> tuple[dict | None, DialogueRows]:
    """The system page's two views of its Trace run, by dialogue: the headline metrics by
    difficulty tier and the list of dialogues to drill into. Both come from the run's
    per-dialogue sums and counts (stored, else aggregated by the database: `ranks.
    cluster_tables_read`), never from its unit values (a million for 10,000 dialogues)."""
    table = cluster_tables_read(run_ids=[run_id],
                                metrics=tier_metrics() + dialogue_metrics())[run_id]
    public = _public_dialogues(benchmark)
    return system_tiers(table=table, dialogues=public), system_dialogues(table=table,
                                                                         dialogues=public)


def _metric_rows(table, metrics) -> dict[str, int]:
    index = {metric: i for i, metric in enumerate(table.metrics)}
    return {metric: index[metric] for metric in metrics if metric in index}


def system_tiers(*, table, dialogues: dict[str, str | None]) -> dict | None:
    """Headline metrics by difficulty tier with studentized cluster CIs (non-hidden dialogues:
    DIALOGUES maps their ids to their difficulty), from a run's per-dialogue sums (TABLE)."""
    tier_of = np.array([dialogues.get(c) or "" for c in table.clusters], dtype=str)
    clusters = np.asarray(table.clusters, dtype=str)  # ascending: cluster_mean_from_sums
    wanted = tier_metrics()
    rows = _metric_rows(table, wanted)                 # takes them as they are
    cells_of: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for metric, row in rows.items():
        present = table.counts[row] > 0
        for tier in set(tier_of[present].tolist()) - {""}:
            mask = present & (tier_of == tier)
            cells_of[(metric, tier)] = (clusters[mask], table.sums[row][mask],
                                        table.counts[row][mask])
    tiers = sorted({tier for _, tier in cells_of}, key=_tier_key)
    metrics = [m for m in wanted if any((m, t) in cells_of for t in tiers)]
    if not tiers or not metrics:
        return None
    table_rows, series = [], []
    for metric in metrics:
        cells = []
        bounds = metric_bounds(SUITE_NAME, metric)  # a bounded metric: logit-scale interval
        for tier in tiers:
            clusters, sums, counts = cells_of.get((metric, tier), ([], [], []))
            estimate = cluster_mean_from_sums(clusters, sums, counts, bounds=bounds) \
                if len(clusters) else None
            cells.append((estimate.value, estimate.ci_low, estimate.ci_high)
                         if estimate and estimate.value is not None else (None, None, None))
        series.append((metric, cells))
        table_rows.append({"metric": metric, "method": mean_method(bounds), "cells": [
            {"text": fmt(v), "ci": f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None else "",
             "dialogues": len(cells_of.get((metric, tier), ([],))[0])}
            for (v, lo, hi), tier in zip(cells, tiers, strict=True)]})
    chart = charts.grouped_bars(tiers, series)
    return {"tiers": tiers, "table": table_rows, "chart": chart}


class DialogueRows:
    """The dialogues a run scored (non-hidden), by id, each with a few per-dialogue means: a
    sequence for the paginator that formats only the rows of the page it slices."""

    def __init__(self, ids: list[str], difficulty: list, means: np.ndarray):
        self.ids, self.difficulty, self.means = ids, difficulty, means  # means: (ids, metrics)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return {"id": self.ids[index], "difficulty": self.difficulty[index],
                "values": [fmt(None if np.isnan(v) else float(v)) for v in self.means[index]]}


def system_dialogues(*, table, dialogues: dict[str, str | None]) -> DialogueRows:
    """Per non-hidden dialogue the run scored (DIALOGUES: their ids and difficulty), the mean
    of each of `dialogue_metrics()` on it, for the drill-down, from the run's per-dialogue
    sums."""
    wanted = dialogue_metrics()
    rows = _metric_rows(table, wanted)
    if not rows:
        return DialogueRows([], [], np.zeros((0, len(wanted))))
    counts = np.stack([table.counts[rows[m]] if m in rows else np.zeros(len(table.clusters))
                       for m in wanted], axis=1)
    sums = np.stack([table.sums[rows[m]] if m in rows else np.zeros(len(table.clusters))
                     for m in wanted], axis=1)
    scored = counts.any(axis=1).tolist()  # one numpy call, not one per dialogue
    keep = [i for i, c in enumerate(table.clusters) if scored[i] and c in dialogues]
    keep.sort(key=lambda i: table.clusters[i])
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts[keep] > 0, sums[keep] / counts[keep], np.nan)
    return DialogueRows([table.clusters[i] for i in keep],
                        [dialogues[table.clusters[i]] for i in keep], means)


def system_submissions(*, system, user) -> list[Submission]:
    """The system's submissions the viewer may see, newest first, with their latest run."""
    submissions = system.submissions.select_related("benchmark").order_by("-created_at")
    if not (user.is_staff or (user.is_authenticated and system.owner_id == user.pk)):
        submissions = submissions.filter(is_public=True)
    submissions = list(submissions[:50])
    runs = {}
    for run in (Run.objects.filter(submission__in=submissions).select_related("job")
                .order_by("created_at", "pk")):
        runs[run.submission_id] = run
    for submission in submissions:
        submission.latest_run = runs.get(submission.pk)
    return submissions
