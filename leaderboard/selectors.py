"""Reads for leaderboards, system pages, comparisons and the per-turn drill-down.

Which run a leaderboard shows: per (system, evaluator), the newest succeeded run of the
benchmark and protocol that the viewer may see — a published submission or a reference
baseline for everyone, any submission for the system's owner and staff (marked private).

A leaderboard renders in a constant number of queries whatever the number of systems: the
runs (one query), their metric summaries (one), the rank snapshots (one). Ranks come from the
stored snapshot (`RankSnapshot`), recomputed only when the set of runs it covers changed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from django.db.models import Max
from django.urls import reverse
from django.utils.text import slugify

from evaluation.lib import charts
from evaluation.lib.formats.submission import iter_turn_records
from evaluation.lib.highlight import span_segments
from evaluation.lib.metrics import grounding
from evaluation.lib.metrics.quotes import scan
from evaluation.lib.metrics.suite import SUITE_NAME, metric_specs
from evaluation.lib.stats.bootstrap import cluster_bootstrap_mean
from evaluation.models import (
    Benchmark,
    Dialogue,
    Item,
    Job,
    MetricSummary,
    Review,
    Run,
    Split,
    Submission,
    TurnItem,
    UnitScore,
)
from evaluation.selectors.benchmarks import runs_compare
from leaderboard.lib import rank_tables

from .models import RankSnapshot

AXIS_ORDER = ("Accuracy", "Grounding", "Recovery", "Practical value", "Text", "LLM judge",
              "Human")
# The columns shown by default; `columns=all` adds every sensitivity variant. Evaluators not
# listed here show all their metrics.
HEADLINE = {
    SUITE_NAME: ("recall@1", "recall@5", "mrr", "mr_recall@1", "gs", "cd", "pc", "cgs",
                 "entailment", "tsr", "t2r", "rejection_recovery", "spatial_coherence",
                 "route_km", "price_alignment", "itinerary_diversity", "bleu4", "rouge_l"),
}
DEFAULT_SORT = f"{SUITE_NAME}:recall@1"
SCATTER_X, SCATTER_Y = f"{SUITE_NAME}:cgs", f"{SUITE_NAME}:recall@1"
TIER_METRICS = ("recall@1", "mrr", "gs", "cgs", "tsr")
DRILLDOWN_METRICS = ("recall@1", "mrr", "gs", "cd", "pc", "cgs", "bleu4")
DIALOGUE_METRICS = ("recall@1", "gs", "cgs")
TIER_ORDER = {"easy": 0, "medium": 1, "hard": 2}


@lru_cache(maxsize=1)
def _trace_bounds() -> dict[str, tuple[float | None, float | None]]:
    return {spec.name: spec.range for spec in metric_specs()}


def metric_bounds(evaluator: str, metric: str) -> tuple[float | None, float | None]:
    """A metric's declared range (low, high; None = open) when the evaluator declares one."""
    if evaluator == SUITE_NAME:
        return _trace_bounds().get(metric, (None, None))
    return (None, None)


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"


# --- which runs a viewer sees ---------------------------------------------------------------


@dataclass(frozen=True)
class BoardRun:
    run_id: int
    evaluator: str
    evaluator_version: str
    config_hash: str
    submission_uuid: str
    public: bool
    system_id: int
    slug: str
    name: str
    family: str
    team: str
    is_baseline: bool
    owner_id: int | None


_RUN_FIELDS = ("pk", "evaluator", "evaluator_version", "config_hash", "submission__uuid",
               "submission__is_public", "submission__system_id", "submission__system__slug",
               "submission__system__name", "submission__system__family",
               "submission__system__team", "submission__system__is_baseline",
               "submission__system__owner_id")


def _board_runs(*, benchmark, protocol: str, system=None) -> list[BoardRun]:
    """Succeeded runs of the benchmark and protocol, newest first (one query)."""
    runs = Run.objects.filter(submission__benchmark=benchmark, submission__protocol=protocol,
                              job__status=Job.Status.SUCCEEDED)
    if system is not None:
        runs = runs.filter(submission__system=system)
    out = []
    for row in runs.order_by("-created_at", "-pk").values_list(*_RUN_FIELDS):
        (pk, evaluator, version, config, uuid, is_public, system_id, slug, name, family, team,
         is_baseline, owner_id) = row
        out.append(BoardRun(pk, evaluator, version, config, str(uuid), is_public or is_baseline,
                            system_id, slug, name, family, team, is_baseline, owner_id))
    return out


@dataclass
class RunChoice:
    """Per (system, evaluator): the newest run, and the newest public one."""

    latest: dict[tuple[int, str], BoardRun] = field(default_factory=dict)
    latest_public: dict[tuple[int, str], BoardRun] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: list[BoardRun]) -> RunChoice:
        choice = cls()
        for run in runs:  # newest first: keep the first seen
            key = (run.system_id, run.evaluator)
            choice.latest.setdefault(key, run)
            if run.public:
                choice.latest_public.setdefault(key, run)
        return choice

    def for_user(self, user) -> list[BoardRun]:
        shown = []
        for key, run in self.latest.items():
            mine = user.is_authenticated and (user.is_staff or run.owner_id == user.pk)
            chosen = run if mine else self.latest_public.get(key)
            if chosen is not None:
                shown.append(chosen)
        return shown

    def candidates(self, evaluator: str) -> list[int]:
        """Every run this leaderboard may show anyone, in a stable order (the snapshot's)."""
        ids = {r.run_id for k, r in self.latest.items() if k[1] == evaluator}
        ids |= {r.run_id for k, r in self.latest_public.items() if k[1] == evaluator}
        return sorted(ids)


def visible_runs(*, benchmark, protocol: str, user, system=None) -> list[BoardRun]:
    return RunChoice.of(_board_runs(benchmark=benchmark, protocol=protocol,
                                    system=system)).for_user(user)


# --- rank snapshots -------------------------------------------------------------------------


def rank_snapshots(*, benchmark, protocol: str, choice: RunChoice,
                   evaluators: list[str]) -> dict[str, RankSnapshot]:
    """The fresh snapshot of every evaluator; a stale or missing one is recomputed here (the
    slow path: a background task normally does it right after a run finishes or a submission
    is published)."""
    from .services import rank_snapshot_refresh

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
    choice = RunChoice.of(_board_runs(benchmark=benchmark, protocol=protocol))
    evaluators = sorted({key[1] for key in choice.latest})
    return list(rank_snapshots(benchmark=benchmark, protocol=protocol, choice=choice,
                               evaluators=evaluators).values())


# --- the leaderboard ------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    evaluator: str
    metric: str
    axis: str
    direction: str

    @property
    def key(self) -> str:
        return f"{self.evaluator}:{self.metric}"

    @property
    def higher(self) -> bool:
        return self.direction == "higher"

    @property
    def arrow(self) -> str:
        return "↑" if self.higher else "↓"

    @property
    def anchor(self) -> str:
        return f"#metric-{slugify(self.metric)}"


@dataclass
class Cell:
    value: float | None
    text: str
    ci: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    href: str = ""
    rank: int | None = None
    title: str = ""


@dataclass
class Row:
    run: BoardRun  # the system's Trace run (or its first evaluator's): who, and how
    runs: dict[str, BoardRun]  # evaluator -> the run behind that evaluator's cells
    cells: list[Cell]
    private: bool
    rank: int | None = None


@dataclass
class Leaderboard:
    benchmark: object
    protocol: str
    columns: list[Column]
    axes: list[tuple[str, int]]
    rows: list[Row]
    all_rows: int
    sort: str
    order: str
    rank_column: Column | None
    families: list[str]
    bootstrap: dict
    evaluators: list[str]
    has_more_columns: bool

    def column(self, key: str) -> Column | None:
        return next((c for c in self.columns if c.key == key), None)

    def values(self, key: str) -> list[tuple[Row, Cell]]:
        index = next((i for i, c in enumerate(self.columns) if c.key == key), None)
        return [] if index is None else [(row, row.cells[index]) for row in self.rows]


def _summaries(run_ids: list[int]) -> dict[int, dict[str, tuple]]:
    by_run: dict[int, dict[str, tuple]] = defaultdict(dict)
    rows = (MetricSummary.objects.filter(run_id__in=run_ids).order_by("pk")
            .values_list("run_id", "metric", "axis", "direction", "value", "ci_low", "ci_high",
                         "n", "undefined_reason"))
    for run_id, metric, *rest in rows:
        by_run[run_id][metric] = tuple(rest)
    return by_run


def _columns(runs: list[BoardRun], summaries, all_columns: bool) -> tuple[list[Column], bool]:
    seen: dict[tuple[str, str], Column] = {}
    for run in runs:
        for metric, (axis, direction, *_rest) in summaries.get(run.run_id, {}).items():
            seen.setdefault((run.evaluator, metric), Column(run.evaluator, metric, axis,
                                                            direction))
    columns = list(seen.values())
    shown = [c for c in columns
             if all_columns or c.evaluator not in HEADLINE or c.metric in HEADLINE[c.evaluator]]
    order = {key: i for i, key in enumerate(seen)}

    def position(column: Column):
        headline = HEADLINE.get(column.evaluator, ())
        within = headline.index(column.metric) if column.metric in headline else len(headline)
        axis = AXIS_ORDER.index(column.axis) if column.axis in AXIS_ORDER else len(AXIS_ORDER)
        return axis, column.axis, within, order[(column.evaluator, column.metric)]

    return sorted(shown, key=position), len(shown) < len(columns)


def leaderboard(*, benchmark, protocol: str, user, sort: str = "", order: str = "",
                family: str = "", baselines: bool = True,
                all_columns: bool = False) -> Leaderboard:
    """The leaderboard as the viewer may see it: columns grouped by axis, one row per system,
    cells with value, 95% CI, link to their run and tie-aware rank."""
    choice = RunChoice.of(_board_runs(benchmark=benchmark, protocol=protocol))
    shown = choice.for_user(user)
    summaries = _summaries([r.run_id for r in shown])
    columns, has_more = _columns(shown, summaries, all_columns)
    evaluators = sorted({r.evaluator for r in shown})
    snapshots = rank_snapshots(benchmark=benchmark, protocol=protocol, choice=choice,
                               evaluators=evaluators) if shown else {}
    rows = _rows(shown, columns, summaries)
    _attach_ranks(rows, columns, snapshots)
    keys = {c.key for c in columns}
    sort = sort if sort in keys or sort in ("system", "family") else (
        DEFAULT_SORT if DEFAULT_SORT in keys else (columns[0].key if columns else "system"))
    rank_column = next((c for c in columns if c.key == sort), None) or next(
        (c for c in columns if c.key == DEFAULT_SORT), columns[0] if columns else None)
    rank_index = columns.index(rank_column) if rank_column else None
    for row in rows:
        row.rank = row.cells[rank_index].rank if rank_index is not None else None
    families = sorted({row.run.family for row in rows if row.run.family})
    total = len(rows)
    rows = [row for row in rows if (baselines or not row.run.is_baseline)
            and (not family or row.run.family == family)]
    order = order if order in ("asc", "desc") else ""
    rows = _sorted(rows, columns, sort, order)
    first = next(iter(snapshots.values()), None)
    return Leaderboard(benchmark, protocol, columns, _axes(columns), rows, total, sort,
                       order or _default_order(columns, sort), rank_column, families,
                       dict(first.bootstrap) if first else {}, evaluators, has_more)


def _rows(shown: list[BoardRun], columns: list[Column], summaries) -> list[Row]:
    by_system: dict[int, dict[str, BoardRun]] = defaultdict(dict)
    for run in shown:
        by_system[run.system_id][run.evaluator] = run
    anchors = [column.anchor for column in columns]
    run_url = reverse("run_detail", args=[0]).replace("/0/", "/{}/")  # one reverse() per page
    rows = []
    for runs in by_system.values():
        links = {ev: run_url.format(r.run_id) for ev, r in runs.items()}
        cells = []
        for column, anchor in zip(columns, anchors, strict=True):
            run = runs.get(column.evaluator)
            summary = summaries.get(run.run_id, {}).get(column.metric) if run else None
            if summary is None:
                cells.append(Cell(None, "", title="not evaluated"))
                continue
            _axis, _direction, value, low, high, n, reason = summary
            text = fmt(value)
            ci = f"[{fmt(low)}, {fmt(high)}]" if low is not None else ""
            cells.append(Cell(value, text, ci, low, high, n, links[column.evaluator] + anchor,
                              title=reason or f"{column.metric} {text}, 95% CI {ci}, n = {n}"))
        first = runs[sorted(runs)[0]]
        rows.append(Row(runs.get(SUITE_NAME, first), runs, cells,
                        private=any(not r.public for r in runs.values())))
    return rows


def _attach_ranks(rows: list[Row], columns: list[Column], snapshots) -> None:
    """Tie-aware ranks among the rows the viewer sees (filters do not change them)."""
    for evaluator, snapshot in snapshots.items():
        position = {run_id: i for i, run_id in enumerate(snapshot.run_ids)}
        better = rank_tables.unpack(snapshot.better, len(snapshot.metrics), len(snapshot.run_ids))
        metric_index = {m: i for i, m in enumerate(snapshot.metrics)}
        ranked_rows = [row for row in rows if evaluator in row.runs
                       and row.runs[evaluator].run_id in position]
        for c, column in enumerate(columns):
            if column.evaluator != evaluator or column.metric not in metric_index:
                continue
            present = [row for row in ranked_rows if row.cells[c].value is not None]
            values = rank_tables.ranks(better[metric_index[column.metric]],
                                       [position[row.runs[evaluator].run_id] for row in present])
            for row, rank in zip(present, values, strict=True):
                row.cells[c].rank = rank


def _default_order(columns: list[Column], sort: str) -> str:
    column = next((c for c in columns if c.key == sort), None)
    if column is None:
        return "asc"
    return "desc" if column.higher else "asc"


def _sorted(rows: list[Row], columns: list[Column], sort: str, order: str) -> list[Row]:
    if sort in ("system", "family"):
        key = (lambda r: r.run.name.lower()) if sort == "system" else (
            lambda r: (r.run.family or "~", r.run.name.lower()))
        return sorted(rows, key=key, reverse=order == "desc")
    index = next(i for i, c in enumerate(columns) if c.key == sort)
    descending = (order or _default_order(columns, sort)) == "desc"
    with_value = [r for r in rows if r.cells[index].value is not None]
    without = [r for r in rows if r.cells[index].value is None]
    with_value.sort(key=lambda r: (-r.cells[index].value if descending else r.cells[index].value,
                                   r.run.name.lower()))
    return with_value + sorted(without, key=lambda r: r.run.name.lower())


def _axes(columns: list[Column]) -> list[tuple[str, int]]:
    axes: list[tuple[str, int]] = []
    for column in columns:
        if axes and axes[-1][0] == column.axis:
            axes[-1] = (column.axis, axes[-1][1] + 1)
        else:
            axes.append((column.axis, 1))
    return axes


def leaderboard_scatter(board: Leaderboard, x_key: str = SCATTER_X,
                        y_key: str = SCATTER_Y) -> dict | None:
    """The accuracy-vs-grounding scatter of the rows shown (each point with both CIs)."""
    x_col, y_col = board.column(x_key), board.column(y_key)
    if x_col is None or y_col is None:
        return None
    points = []
    for (row, x), (_, y) in zip(board.values(x_key), board.values(y_key), strict=True):
        if x.value is None or y.value is None:
            continue
        points.append(charts.ScatterPoint(
            row.run.name, x.value, y.value, (x.ci_low, x.ci_high), (y.ci_low, y.ci_high),
            highlight=row.run.is_baseline,
            href=reverse("leaderboard:system_detail", args=[row.run.slug])))
    if not points:
        return None
    data = charts.scatter(points, x_label=x_col.metric, y_label=y_col.metric,
                          x_bounds=metric_bounds(x_col.evaluator, x_col.metric),
                          y_bounds=metric_bounds(y_col.evaluator, y_col.metric))
    data.update(x_key=x_key, y_key=y_key)
    return data


def leaderboard_export_rows(board: Leaderboard, request_base: str = "") -> list[dict]:
    """One flat record per (system, metric) shown, every number with its CI, n, rank and the
    run (evaluator, version, configuration hash) that produced it."""
    records = []
    run_url = request_base + reverse("run_detail", args=[0]).replace("/0/", "/{}/")
    for row in board.rows:
        for column, cell in zip(board.columns, row.cells, strict=True):
            run = row.runs.get(column.evaluator)
            if run is None or not cell.href:
                continue
            records.append({
                "benchmark": board.benchmark.slug, "protocol": board.protocol,
                "system": run.name, "system_slug": run.slug, "family": run.family,
                "team": run.team, "baseline": run.is_baseline, "public": run.public,
                "evaluator": run.evaluator, "evaluator_version": run.evaluator_version,
                "config_hash": run.config_hash, "run": run.run_id,
                "run_url": run_url.format(run.run_id),
                "axis": column.axis, "metric": column.metric, "direction": column.direction,
                "value": cell.value, "ci_low": cell.ci_low, "ci_high": cell.ci_high,
                "n": cell.n, "rank": cell.rank,
            })
    return records


def benchmark_leaderboard_counts(benchmarks) -> dict[tuple[int, str], int]:
    """(benchmark id, protocol) -> number of systems with a public succeeded run."""
    rows = Run.objects.filter(submission__benchmark__in=benchmarks,
                              job__status=Job.Status.SUCCEEDED)
    counts: dict[tuple[int, str], set] = defaultdict(set)
    for benchmark_id, protocol, system_id, public, baseline in rows.values_list(
            "submission__benchmark_id", "submission__protocol", "submission__system_id",
            "submission__is_public", "submission__system__is_baseline"):
        if public or baseline:
            counts[(benchmark_id, protocol)].add(system_id)
    return {key: len(value) for key, value in counts.items()}


# --- the system page ------------------------------------------------------------------------


def system_boards(*, system, user) -> list[tuple[object, str]]:
    """(benchmark, protocol) pairs on which the viewer can see a succeeded run of SYSTEM."""
    from evaluation.access import benchmarks_for_user

    runs = Run.objects.filter(submission__system=system, job__status=Job.Status.SUCCEEDED,
                              submission__benchmark__in=benchmarks_for_user(user))
    if not (user.is_staff or (user.is_authenticated and system.owner_id == user.pk)
            or system.is_baseline):
        runs = runs.filter(submission__is_public=True)
    pairs = list(runs.values_list("submission__benchmark", "submission__protocol")
                 .annotate(latest=Max("created_at")).order_by("-latest"))
    benchmarks = Benchmark.objects.in_bulk([b for b, _, _ in pairs])
    return [(benchmarks[b], protocol) for b, protocol, _ in pairs]


def system_results(*, runs: list[BoardRun]) -> list[tuple[str, list[dict], list[dict]]]:
    """The system's metrics grouped by axis — (axis, all rows, headline rows) — each with its
    CI and a link to the run that produced it."""
    summaries = _summaries([r.run_id for r in runs])
    columns, _ = _columns(runs, summaries, all_columns=True)
    by_evaluator = {r.evaluator: r for r in runs}
    groups: dict[str, list[dict]] = defaultdict(list)
    for column in columns:
        run = by_evaluator[column.evaluator]
        _axis, direction, value, low, high, n, reason = summaries[run.run_id][column.metric]
        groups[column.axis].append({
            "metric": column.metric, "evaluator": column.evaluator, "arrow": column.arrow,
            "direction": direction, "value": value, "text": fmt(value),
            "ci": f"[{fmt(low)}, {fmt(high)}]" if low is not None else "", "n": n,
            "reason": reason,
            "headline": column.metric in HEADLINE.get(column.evaluator, (column.metric,)),
            "href": reverse("run_detail", args=[run.run_id]) + column.anchor,
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


def system_tiers(*, run_id: int, benchmark) -> dict | None:
    """Headline metrics by difficulty tier with cluster-bootstrap CIs (non-hidden dialogues)."""
    dialogues = _public_dialogues(benchmark)
    values: dict[tuple[str, str], tuple[list, list]] = defaultdict(lambda: ([], []))
    rows = (UnitScore.objects.filter(run_id=run_id, metric__in=TIER_METRICS)
            .exclude(value=None).values_list("metric", "dialogue_id", "value"))
    for metric, dialogue_id, value in rows.iterator(chunk_size=5000):
        if dialogue_id in dialogues and dialogues[dialogue_id]:
            entry = values[(metric, dialogues[dialogue_id])]
            entry[0].append(value)
            entry[1].append(dialogue_id)
    tiers = sorted({tier for _, tier in values}, key=_tier_key)
    metrics = [m for m in TIER_METRICS if any((m, t) in values for t in tiers)]
    if not tiers or not metrics:
        return None
    table, series = [], []
    for metric in metrics:
        cells = []
        for tier in tiers:
            unit_values, clusters = values.get((metric, tier), ([], []))
            estimate = cluster_bootstrap_mean(unit_values, clusters) if unit_values else None
            cells.append((estimate.value, estimate.ci_low, estimate.ci_high)
                         if estimate and estimate.value is not None else (None, None, None))
        series.append((metric, cells))
        table.append({"metric": metric, "cells": [
            {"text": fmt(v), "ci": f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None else "",
             "dialogues": len(set(values.get((metric, tier), ([], []))[1]))}
            for (v, lo, hi), tier in zip(cells, tiers, strict=True)]})
    chart = charts.grouped_bars(tiers, series)
    return {"tiers": tiers, "table": table, "chart": chart}


def system_dialogues(*, run_id: int, benchmark) -> list[dict]:
    """Per non-hidden dialogue the run scored: a few per-dialogue means, for the drill-down."""
    dialogues = _public_dialogues(benchmark)
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = (UnitScore.objects.filter(run_id=run_id, metric__in=DIALOGUE_METRICS)
            .exclude(value=None).values_list("dialogue_id", "metric", "value"))
    for dialogue_id, metric, value in rows.iterator(chunk_size=5000):
        if dialogue_id in dialogues:
            sums[dialogue_id][metric].append(value)
    out = []
    for dialogue_id in sorted(sums):
        means = {m: (sum(v) / len(v) if v else None) for m, v in sums[dialogue_id].items()}
        out.append({"id": dialogue_id, "difficulty": dialogues[dialogue_id],
                    "values": [fmt(means.get(m)) for m in DIALOGUE_METRICS]})
    return out


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


# --- the per-turn drill-down ----------------------------------------------------------------


def latest_succeeded_run(submission) -> Run | None:
    return (submission.runs.filter(job__status=Job.Status.SUCCEEDED, evaluator=SUITE_NAME)
            .select_related("job").order_by("-created_at", "-pk").first())


def dialogue_drilldown(*, submission, run: Run | None, dialogue: Dialogue) -> dict:
    """Each turn of a (non-hidden) dialogue with the system's answer in place of the reference
    system turn: its quotes marked verified or not against the reviews they cite (the GS
    matcher at the run's threshold), its ranked items with the gold marked, and its values."""
    answers = {int(r["turn_index"]): r for r in _submitted_records(submission, dialogue)}
    turns = list(dialogue.turns.order_by("index"))
    gold = defaultdict(set)
    for turn_id, item_id in (TurnItem.objects.filter(turn__dialogue=dialogue, role="gold")
                             .values_list("turn_id", "item__external_id")):
        gold[turn_id].add(item_id)
    item_ids = {i for r in answers.values() for i in r["ranked_item_ids"]}
    review_ids = {c["review_id"] for r in answers.values() for c in r.get("citations", [])}
    items = {i.external_id: i for i in Item.objects.filter(benchmark=dialogue.benchmark_id,
                                                          external_id__in=item_ids)}
    reviews = {r.external_id: r for r in Review.objects.filter(
        benchmark=dialogue.benchmark_id, external_id__in=review_ids).select_related("item")}
    scores = defaultdict(dict)
    if run is not None:
        for unit_id, metric, value in (UnitScore.objects.filter(
                run=run, dialogue_id=dialogue.external_id, metric__in=DRILLDOWN_METRICS)
                .values_list("unit_id", "metric", "value")):
            scores[unit_id][metric] = value
    threshold = float((run.config.get("suite", {}) if run else {}).get(
        "gs_threshold", grounding.DEFAULT_GS_THRESHOLD))
    views = []
    for turn in turns:
        answer = answers.get(turn.index)
        view = {"turn": turn, "answer": None}
        if answer is not None:
            view["answer"] = _answer_view(answer, items, reviews, gold[turn.pk], threshold,
                                          scores.get(f"{dialogue.external_id}#{turn.index}", {}))
        views.append(view)
    return {"turns": views, "threshold": threshold, "metrics": DRILLDOWN_METRICS}


def _submitted_records(submission, dialogue) -> list[dict]:
    with submission.file.open("rb") as handle:
        return [record for record in iter_turn_records(handle)
                if record["dialogue_id"] == dialogue.external_id]


def _answer_view(answer: dict, items, reviews, gold: set, threshold: float, scores) -> dict:
    response = answer["response"]
    citations = answer.get("citations", [])
    sources: dict[str, list[str]] = defaultdict(list)
    for citation in citations:
        review = reviews.get(citation["review_id"])
        if review is not None:
            sources[citation["label"]].append(grounding.normalize_for_match(review.text))
    quotes, _labels = scan(response)
    verdicts = []
    for quote in quotes:
        match = grounding.match_quote(quote, sources)
        verdicts.append((quote.start, quote.end, {
            "verified": match.passes(threshold), "score": round(match.score, 1),
            "labels": ", ".join(quote.labels) or "no label"}))
    return {
        "segments": span_segments(response, verdicts),
        "quotes": [v for _, _, v in verdicts],
        "citations": [{"label": c["label"], "review": reviews.get(c["review_id"]),
                       "review_id": c["review_id"]} for c in citations],
        "ranked": [{"id": i, "item": items.get(i), "gold": i in gold}
                   for i in answer["ranked_item_ids"][:5]],
        "more_ranked": max(0, len(answer["ranked_item_ids"]) - 5),
        "scores": [(m, fmt(scores.get(m)) if m in scores else "—") for m in DRILLDOWN_METRICS],
    }


# --- comparing two systems ------------------------------------------------------------------


def systems_compare(*, run_a: Run, run_b: Run, all_metrics: bool = False) -> dict:
    """Paired differences A − B per metric with CIs and significance (statistics.md), grouped
    by axis, and a forest plot of the bounded (0–1) headline metrics."""
    metrics = None if all_metrics else list(HEADLINE.get(run_a.evaluator, ())) or None
    rows = runs_compare(run_a=run_a, run_b=run_b, metrics=metrics)
    headline = HEADLINE.get(run_a.evaluator, ())

    def position(row):
        axis = AXIS_ORDER.index(row["axis"]) if row["axis"] in AXIS_ORDER else len(AXIS_ORDER)
        within = headline.index(row["metric"]) if row["metric"] in headline else len(headline)
        return axis, within

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
