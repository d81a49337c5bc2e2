"""The metric columns of leaderboards and system pages: which metrics are shown by default, in
which order (by axis), their declared ranges, and how a number is printed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from django.utils.text import slugify

from evaluation.lib.metrics.recovery import no_hit_note
from evaluation.lib.metrics.suite import HEADLINE_METRICS, SUITE_NAME, metric_specs
from evaluation.lib.simulators.simulators import SIMULATORS
from evaluation.models import MetricSummary

from .runs import BoardRun

AXIS_ORDER = ("Accuracy", "Grounding", "Recovery", "Practical value", "Text", "LLM judge",
              "Human", "preference elicitation")
# The columns shown by default; `columns=all` adds every sensitivity variant. Evaluators not
# listed here show all their metrics.
HEADLINE = {
    SUITE_NAME: HEADLINE_METRICS,
    # a simulated-… board (docs/simulation.md): PC_T@K, PCIR_avg@K and Recall@K; `all metrics`
    # adds K = 1 and 20
    **{f"simulation.{name}": tuple(f"{m}@{k}" for m in ("pc", "pcir_avg", "recall")
                                   for k in (5, 10, 50))
       for name in SIMULATORS},
}


@lru_cache(maxsize=1)
def _trace_bounds() -> dict[str, tuple[float | None, float | None]]:
    return {spec.name: spec.range for spec in metric_specs()}


def metric_bounds(evaluator: str, metric: str) -> tuple[float | None, float | None]:
    """A metric's declared range (low, high; None = open) when the evaluator declares one."""
    if evaluator == SUITE_NAME:
        return _trace_bounds().get(metric, (None, None))
    if evaluator.startswith("simulation."):
        return (0.0, 1.0)  # shares of the users' targets
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


def metric_rule(run: BoardRun, metric: str, summaries) -> dict | None:
    """A rule the number rests on, to show next to it: for the suite's T2R, what a dialogue
    without a hit gets and how many dialogues that is (`t2r_no_hit`, a 0/1 per dialogue)."""
    if run.evaluator != SUITE_NAME or metric != "t2r":
        return None
    flags = summaries.get(run.run_id, {}).get("t2r_no_hit")
    if flags is None:
        return None
    return no_hit_note(run.t2r_no_hit, flags[2], flags[5])
