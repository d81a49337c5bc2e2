"""Which metrics each page shows, in which order, with which axis, direction and range: read
from the evaluators' metric specs (`MetricSpec.headline` and `MetricSpec.shown`), the one place
that says so (docs/architecture.md, "Where a new metric goes").

The pages: a leaderboard's default columns, its API (`columns=headline`) and exports, the
compare page's default rows, the system page's headline rows and radar, and the agreement
reports' first rows are an evaluator's *headline* metrics; the system page's tiers and
dialogues, a submission's summary, the per-turn drill-down and a simulation's Trace rows are the
`types.SURFACES`. An evaluator whose specs give no metric a headline place (an LLM evaluator, an
imported score) shows all its metrics by default. A page's axes and directions come from the
stored summaries, which were written from the same specs.
"""

from __future__ import annotations

from functools import lru_cache

from evaluation.lib.llm import registry
from evaluation.lib.llm.evaluators import LLM_JUDGE
from evaluation.lib.metrics import ievalm, suite
from evaluation.lib.metrics.preference import PREFERENCE_ELICITATION, preference_specs
from evaluation.lib.metrics.types import AXES, SURFACES, MetricSpec

SIMULATION_PREFIX = "simulation."  # a simulated-… board's evaluator: simulation.<simulator>
HUMAN = "Human"  # the axis of imported human scores
AXIS_ORDER = (*AXES, LLM_JUDGE, HUMAN, PREFERENCE_ELICITATION, ievalm.IEVALM_AXIS,
              ievalm.PEPPER_STYLE_AXIS)
Bounds = tuple[float | None, float | None]


def evaluator_specs(evaluator: str) -> tuple[MetricSpec, ...]:
    """The metrics EVALUATOR declares (under its default configuration); () for one that
    declares none (imported scores)."""
    if evaluator == suite.SUITE_NAME:
        return suite.metric_specs()
    if evaluator == SIMULATION_PREFIX + ievalm.SIMULATOR:
        return ievalm.ievalm_specs()
    if evaluator.startswith(SIMULATION_PREFIX):
        return preference_specs()
    declared = registry.find(evaluator)
    return declared.metrics if declared is not None else ()


@lru_cache(maxsize=64)
def _catalogue(evaluator: str) -> tuple[dict[str, MetricSpec], tuple[str, ...] | None,
                                        dict[str, tuple[str, ...]]]:
    """EVALUATOR's specs by name, its headline metrics in order (None: it declares none) and
    each surface's metrics: in headline order, then the specs' order."""
    specs = evaluator_specs(evaluator)
    headline = tuple(s.name for s in sorted((s for s in specs if s.headline),
                                            key=lambda s: s.headline))
    surfaces = {surface: tuple(name for _, name in sorted(
        (s.headline or len(specs) + i, s.name) for i, s in enumerate(specs) if surface in s.shown))
        for surface in SURFACES}
    return {s.name: s for s in specs}, headline or None, surfaces


def forget() -> None:
    """Read the specs again (after a test adds one)."""
    _catalogue.cache_clear()


def headline(evaluator: str) -> tuple[str, ...] | None:
    """EVALUATOR's headline metrics in order; None when it declares none (all are shown)."""
    return _catalogue(evaluator)[1]


def is_headline(evaluator: str, metric: str) -> bool:
    """Whether METRIC is shown by default: a headline metric, or any metric of an evaluator
    that declares none."""
    names = headline(evaluator)
    return names is None or metric in names


def headline_place(evaluator: str, metric: str) -> int:
    """Where METRIC stands within its axis on the boards: its headline place, after them all
    when it has none."""
    names = headline(evaluator) or ()
    return names.index(metric) if metric in names else len(names)


def shown_on(evaluator: str, surface: str) -> tuple[str, ...]:
    """The metrics of EVALUATOR that SURFACE (types.SURFACES) lists, in headline order, then
    the specs' order."""
    if surface not in SURFACES:
        raise ValueError(f"unknown surface {surface!r}; expected one of {SURFACES}")
    return _catalogue(evaluator)[2][surface]


def bounds(evaluator: str, metric: str) -> Bounds:
    """METRIC's declared range (low, high; None = open), (None, None) when undeclared."""
    spec = _catalogue(evaluator)[0].get(metric)
    return spec.range if spec is not None else (None, None)


def axis_place(axis: str) -> int:
    """Where AXIS stands among a page's axes (unknown axes last)."""
    return AXIS_ORDER.index(axis) if axis in AXIS_ORDER else len(AXIS_ORDER)
