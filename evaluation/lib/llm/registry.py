"""The LLM evaluator registry: every LLM evaluator is one registered `LLMEvaluator` object.

An evaluator says, in one place, everything Concord does with it (docs/llm.md, "Adding an LLM
evaluator"): its name and label, the submissions it reads (`protocol`) and what it scores
(`scores`: turns, logs or particles), its metrics, its prompts with their answer formats
(`prompts`: each an `AnswerFormat`, or a builder for formats that depend on the call, e.g. a
role's name), the options a run of it takes, its configuration (`configure`), its cost
estimate (`estimate`), how it runs, what its run page shows (`template`, fed by the generic
unit table or by `report`) and its docs row (`docs`). The CLI's choices, the web's "run an
evaluator" list, the estimate and start pages, the run service, the run page and the automatic
runs all walk `registered()`; nothing else names an evaluator.

How it runs: an evaluator whose units each get a few 1–N scores from one prompt gives `score`
(the payload of one unit and a `ScoreContext` -> `AspectScore`s per aspect) and `metric_of`
(aspect -> metric name); the run service then reads its units, scores them concurrently,
stores them and their summaries (`evaluation.services.llm_runs`). One with more to do (CoRE's
routing and debate, FACE's particles) names a service function in `runner` (a dotted path,
like a Celery task's name: lib never imports glue) and, for its run page, a selector in
`report`.

The built-in evaluators are in `evaluation.lib.llm.evaluators`, which registers them on import;
every function here imports it first. Pure Python: no Django import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.llm.answer_format import AnswerFormat
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.metrics.types import MetricSpec

PROTOCOLS = ("turn", "log")
SCORES = ("turns", "logs", "particles")
# The run options an evaluator may take beside the model (its `options`): `debate` and
# `judges` (CoRE), `face` (aspects and instruction sets), `domain` (the benchmark's domain).
OPTIONS = ("debate", "judges", "face", "domain")
GENERIC_TEMPLATE = "evaluation/_run_llm_aspects.html"


@dataclass(frozen=True)
class Prompt:
    """One prompt of an evaluator: NAME, what it asks (SUMMARY) and its answer format, or a
    builder of the format for formats that depend on the call (FORMAT_FOR: a role, candidate
    ids); EXAMPLE is an answer in that format (the registry test checks it)."""

    name: str
    summary: str
    answer_format: AnswerFormat | None = None
    format_for: Callable[..., AnswerFormat] | None = None
    example: str = ""


@dataclass(frozen=True)
class ScoreContext:
    """What `LLMEvaluator.score` gets for one unit: the gateway, the model, the re-ask bound,
    the usage meter of its stage and the run's configuration (plain JSON)."""

    gateway: LLMGateway
    config: ModelConfig
    max_reasks: int
    meter: UsageMeter | None
    run_config: Mapping[str, Any]


@dataclass(frozen=True)
class EstimateInputs:
    """What `LLMEvaluator.estimate` gets beside the units and the pricer: the run's
    configuration, the benchmark's item names, and the debate choices of the start form."""

    config: Mapping[str, Any]
    item_names: Mapping[str, str] = field(default_factory=dict)
    use_debate: bool = True
    max_rounds: int = 4


def _no_unavailable(_collected: Collection[str]) -> dict[str, str]:
    return {}


def _no_configuration(_config: Mapping[str, Any], _options: Mapping[str, Any]) -> dict:
    return {}


@dataclass(frozen=True)
class LLMEvaluator:
    """One LLM evaluator (see the module's docstring for what each part drives)."""

    name: str
    version: str
    protocol: str  # the submission protocol it reads: "log" or "turn"
    unit: str  # "dialogue" (a log) or "turn"
    title: str  # its label on pages and in the CLI's help
    metrics: tuple[MetricSpec, ...]
    scores: str = "logs"  # what it scores: "turns", "logs" or "particles"
    docs: str = ""  # its row in docs/llm.md's table of evaluators (one sentence)
    prompts: tuple[Prompt, ...] = ()
    options: frozenset[str] = frozenset()
    # (the configuration so far, the start's options) -> the evaluator's own configuration keys
    configure: Callable[[Mapping[str, Any], Mapping[str, Any]], dict] = _no_configuration
    # (each unit's payload, pricer, EstimateInputs) -> RunEstimate
    estimate: Callable[..., Any] | None = None
    # the generic path: (payload, ScoreContext) -> {aspect: AspectScore}; metric per aspect
    score: Callable[[Any, ScoreContext], Mapping[str, Any]] | None = None
    metric_of: Callable[[str], str] | None = None
    runner: str = ""  # dotted path of a service (ctx, entries, progress) -> result, instead
    # the run page: the unit section's template; REPORT: a selector (run, spec, scores, hidden
    # or None, page) -> the section's data, instead of the generic table of COLUMNS
    template: str = GENERIC_TEMPLATE
    report: str = ""
    columns: tuple[tuple[str, str], ...] = ()  # (metric, label) of the generic table
    # metrics no unit could have (metric -> why), from the metrics that got a value
    unavailable: Callable[[Collection[str]], dict[str, str]] = _no_unavailable
    judge_routing: bool = False  # several judge models are routed against a human study

    def metric(self, name: str) -> MetricSpec | None:
        return next((spec for spec in self.metrics if spec.name == name), None)

    @property
    def unit_word(self) -> str:
        """What one unit is called on its pages: "turn" or "log"."""
        return "turn" if self.unit == "turn" else "log"

    @property
    def answer_formats(self) -> tuple[AnswerFormat, ...]:
        """Its prompts' fixed answer formats (per-call ones are built when called)."""
        return tuple(p.answer_format for p in self.prompts if p.answer_format is not None)


_REGISTRY: dict[str, LLMEvaluator] = {}


def register(evaluator: LLMEvaluator) -> LLMEvaluator:
    """Add EVALUATOR to the registry (after those already there); returns it. A bad object
    raises ValueError naming what is wrong, and nothing is registered."""
    name = evaluator.name
    if not name or not name.replace("_", "").isalnum() or not name.islower() or len(name) > 40:
        raise ValueError(f"An LLM evaluator's name is lowercase letters, digits or _: {name!r}.")
    if name in _REGISTRY:
        raise ValueError(f"An LLM evaluator {name!r} is already registered.")
    if name == "trace" or name.startswith(("simulation", "external")):
        raise ValueError(f"{name!r} is reserved for Concord's other evaluators.")
    if evaluator.protocol not in PROTOCOLS:
        raise ValueError(f"LLM evaluator {name!r}: protocol is one of {', '.join(PROTOCOLS)}.")
    if evaluator.scores not in SCORES:
        raise ValueError(f"LLM evaluator {name!r}: scores is one of {', '.join(SCORES)}.")
    unknown = sorted(set(evaluator.options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"LLM evaluator {name!r}: unknown options {', '.join(unknown)}.")
    if not evaluator.runner and (evaluator.score is None or evaluator.metric_of is None):
        raise ValueError(f"LLM evaluator {name!r} needs score and metric_of, or a runner.")
    if evaluator.estimate is None or not evaluator.metrics or not evaluator.title:
        raise ValueError(f"LLM evaluator {name!r} needs a title, metrics and an estimate.")
    _REGISTRY[name] = evaluator
    return evaluator


def unregister(name: str) -> None:
    """Remove an evaluator (tests that register a throwaway one clean up with this)."""
    _REGISTRY.pop(name, None)


def _builtins() -> None:
    importlib.import_module("evaluation.lib.llm.evaluators")  # registers them on first import


def registered() -> tuple[LLMEvaluator, ...]:
    _builtins()
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    _builtins()
    return tuple(_REGISTRY)


def is_llm_evaluator(name: str) -> bool:
    _builtins()
    return name in _REGISTRY


def find(name: str) -> LLMEvaluator | None:
    _builtins()
    return _REGISTRY.get(name)


def get(name: str) -> LLMEvaluator:
    """The evaluator NAME; ValueError naming the registered ones when there is none."""
    evaluator = find(name)
    if evaluator is None:
        raise ValueError(f"unknown LLM evaluator {name!r} (choose from {', '.join(names())})")
    return evaluator


def for_protocol(protocol: str | Sequence[str]) -> list[LLMEvaluator]:
    """The evaluators that read PROTOCOL (or any of several), in registration order."""
    wanted = {protocol} if isinstance(protocol, str) else set(protocol)
    return [e for e in registered() if e.protocol in wanted]


def load(dotted: str) -> Callable[..., Any]:
    """The function a dotted path names (an evaluator's `runner` or `report`)."""
    module, _, attribute = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attribute)
