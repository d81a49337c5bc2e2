"""The metric columns of leaderboards and system pages: which metrics are shown by default, in
which order (by axis), their declared ranges, and how a number is printed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from django.db.models import Q
from django.utils.text import slugify

from evaluation.lib.metrics import ievalm
from evaluation.lib.metrics.recovery import no_hit_note
from evaluation.lib.metrics.suite import HEADLINE_METRICS, NON_ANSWER, SUITE_NAME, metric_specs
from evaluation.lib.simulators.simulators import SIMULATORS
from evaluation.lib.simulators.trace import IEVALM_AXIS, PEPPER_STYLE_AXIS
from evaluation.lib.stats.methods import interval_is_current
from evaluation.models import MetricSummary

from .runs import BoardRun

AXIS_ORDER = ("Accuracy", "Grounding", "Recovery", "Practical value", "Text", "LLM judge",
              "Human", "preference elicitation", IEVALM_AXIS, PEPPER_STYLE_AXIS)
# The columns shown by default; `columns=all` adds every sensitivity variant. Evaluators not
# listed here show all their metrics.
HEADLINE = {
    SUITE_NAME: HEADLINE_METRICS,
    # a simulated-… board (docs/simulation.md): PC_T@K, PCIR_avg@K and Recall@K; `all metrics`
    # adds K = 1 and 20
    **{f"simulation.{name}": tuple(f"{m}@{k}" for m in ("pc", "pcir_avg", "recall")
                                   for k in (5, 10, 50))
       for name in SIMULATORS},
    # iEvaLM's own numbers (Rec_eval.py); its PEPPER-style curves are under `all metrics`
    "simulation.ievalm": (*(f"{ievalm.RECALL}@{k}" for k in ievalm.IEVALM_KS),
                          ievalm.PERSUASIVENESS),
}


@lru_cache(maxsize=1)
def _trace_bounds() -> dict[str, tuple[float | None, float | None]]:
    return {spec.name: spec.range for spec in metric_specs()}


def metric_bounds(evaluator: str, metric: str) -> tuple[float | None, float | None]:
    """A metric's declared range (low, high; None = open) when the evaluator declares one."""
    if evaluator == SUITE_NAME:
        return _trace_bounds().get(metric, (None, None))
    if evaluator.startswith("simulation."):
        return ievalm.simulation_metric_range(metric)  # shares of the targets; persuasiveness
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
        by_evaluator[run.evaluator if run.evaluator in HEADLINE else ""].append(run.run_id)
    fetch, more = Q(run_id__in=by_evaluator.pop("", [])), Q(pk__in=[])
    for evaluator, run_ids in by_evaluator.items():
        fetch |= Q(run_id__in=run_ids, metric__in=[*HEADLINE[evaluator], *ROW_METRICS])
        more |= Q(run_id__in=run_ids) & ~Q(metric__in=HEADLINE[evaluator])
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
    headlined = {c.evaluator for c in columns if c.metric in HEADLINE.get(c.evaluator, ())}
    shown = [c for c in columns
             if all_columns or c.evaluator not in headlined or c.metric in HEADLINE[c.evaluator]]
    order = {key: i for i, key in enumerate(seen)}

    def position(column: Column):
        headline = HEADLINE.get(column.evaluator, ())
        within = headline.index(column.metric) if column.metric in headline else len(headline)
        axis = AXIS_ORDER.index(column.axis) if column.axis in AXIS_ORDER else len(AXIS_ORDER)
        return axis, column.axis, within, order[(column.evaluator, column.metric)]

    return sorted(shown, key=position), len(shown) < len(columns)


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
