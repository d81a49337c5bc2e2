"""The metric columns of leaderboards and system pages: which metrics are shown by default, in
which order (by axis), their declared ranges, and how a number is printed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from django.utils.text import slugify

from evaluation.lib.metrics.suite import SUITE_NAME, metric_specs
from evaluation.models import MetricSummary

from .runs import BoardRun

AXIS_ORDER = ("Accuracy", "Grounding", "Recovery", "Practical value", "Text", "LLM judge",
              "Human")
# The columns shown by default; `columns=all` adds every sensitivity variant. Evaluators not
# listed here show all their metrics.
HEADLINE = {
    SUITE_NAME: ("recall@1", "recall@5", "mrr", "mr_recall@1", "gs", "cd", "pc", "cgs",
                 "entailment", "tsr", "t2r", "rejection_recovery", "spatial_coherence",
                 "route_km", "price_alignment", "itinerary_diversity", "bleu4", "rouge_l"),
}


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


def metric_summaries(run_ids: list[int]) -> dict[int, dict[str, tuple]]:
    by_run: dict[int, dict[str, tuple]] = defaultdict(dict)
    rows = (MetricSummary.objects.filter(run_id__in=run_ids).order_by("pk")
            .values_list("run_id", "metric", "axis", "direction", "value", "ci_low", "ci_high",
                         "n", "undefined_reason"))
    for run_id, metric, *rest in rows:
        by_run[run_id][metric] = tuple(rest)
    return by_run


def board_columns(runs: list[BoardRun], summaries, all_columns: bool) -> tuple[list[Column], bool]:
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
