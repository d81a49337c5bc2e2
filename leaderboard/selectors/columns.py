"""The metric columns of leaderboards and system pages: the columns the stored summaries give,
the ones shown by default, in which order (by axis), and how a number is printed. Which metrics
are shown, their order and declared ranges come from the metric specs
(evaluation/lib/columns.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q
from django.utils.text import slugify

from evaluation.lib import columns as shown
from evaluation.lib.metrics.recovery import no_hit_note
from evaluation.lib.metrics.suite import NON_ANSWER, SUITE_NAME
from evaluation.lib.stats.methods import interval_is_current
from evaluation.models import MetricSummary

from .runs import BoardRun

metric_bounds = shown.bounds  # a metric's declared range (low, high; None = open)


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"


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


def metric_summaries(run_ids: list[int], where: Q | None = None) -> dict[int, dict[str, tuple]]:
    by_run: dict[int, dict[str, tuple]] = defaultdict(dict)
    rows = (MetricSummary.objects.filter(where if where is not None else Q(run_id__in=run_ids))
            .order_by("pk")
            .values_list("run_id", "metric", "axis", "direction", "value", "ci_low", "ci_high",
                         "n", "undefined_reason", "ci_method", "ci_version"))
    for row in rows:
        # (axis, direction, value, low, high, n, reason, whether the interval is current)
        by_run[row[0]][row[1]] = (*row[2:9], interval_is_current(row[9], row[10]))
    return by_run


def ci_text(low: float | None, high: float | None, current: bool = True) -> str:
    """A stored interval as the pages print it; one stored by an older method says so."""
    if low is None:
        return ""
    return f"[{fmt(low)}, {fmt(high)}]" + ("" if current else " (older method)")


# What a row reads besides its columns: its non-answers and T2R's no-hit share (metric_rule).
ROW_METRICS = (NON_ANSWER, "t2r_no_hit")


def board_summaries(runs: list[BoardRun], all_columns: bool
                    ) -> tuple[dict[int, dict[str, tuple]], bool | None]:
    """The summaries a leaderboard shows and, without ALL_COLUMNS, whether it has more
    columns than the default ones (None: `board_columns` tells). By default the runs of an
    evaluator with headline metrics fetch only those and ROW_METRICS (a third of the rows of
    200 Trace runs), and one EXISTS query says whether they have others."""
    if all_columns:
        return metric_summaries([r.run_id for r in runs]), None
    by_evaluator: dict[str, list[int]] = defaultdict(list)
    for run in runs:
        by_evaluator[run.evaluator if shown.headline(run.evaluator) else ""].append(run.run_id)
    fetch, more = Q(run_id__in=by_evaluator.pop("", [])), Q(pk__in=[])
    for evaluator, run_ids in by_evaluator.items():
        headline = shown.headline(evaluator)
        fetch |= Q(run_id__in=run_ids, metric__in=[*headline, *ROW_METRICS])
        more |= Q(run_id__in=run_ids) & ~Q(metric__in=headline)
    summaries = metric_summaries([], where=fetch)
    return summaries, bool(by_evaluator) and MetricSummary.objects.filter(more).exists()


def board_columns(runs: list[BoardRun], summaries, all_columns: bool) -> tuple[list[Column], bool]:
    seen: dict[tuple[str, str], Column] = {}
    for run in runs:
        for metric, (axis, direction, *_rest) in summaries.get(run.run_id, {}).items():
            if (run.evaluator, metric) not in seen:  # (a Column per summary costs 10 ms)
                seen[(run.evaluator, metric)] = Column(run.evaluator, metric, axis, direction)
    columns = list(seen.values())
    # An evaluator none of whose headline metrics a run has (an iEvaLM 1.0 simulation run,
    # stored before iEvaLM's own metrics) shows all its metrics rather than none.
    headlined = {c.evaluator for c in columns if c.metric in (shown.headline(c.evaluator) or ())}
    chosen = [c for c in columns if all_columns or c.evaluator not in headlined
              or shown.is_headline(c.evaluator, c.metric)]
    order = {key: i for i, key in enumerate(seen)}

    def position(column: Column):
        return (shown.axis_place(column.axis), column.axis,
                shown.headline_place(column.evaluator, column.metric),
                order[(column.evaluator, column.metric)])

    return sorted(chosen, key=position), len(chosen) < len(columns)


RULE_METRICS = ("t2r",)  # the metrics metric_rule may give a rule to


def metric_rule(run: BoardRun, metric: str, summaries) -> dict | None:
    """A rule the number rests on, to show next to it: for the suite's T2R, what a dialogue
    without a hit gets and how many dialogues that is (`t2r_no_hit`, a 0/1 per dialogue)."""
    if run.evaluator != SUITE_NAME or metric not in RULE_METRICS:
        return None
    flags = summaries.get(run.run_id, {}).get("t2r_no_hit")
    if flags is None:
        return None
    return no_hit_note(run.t2r_no_hit, flags[2], flags[5])
