"""Shared discipline for LLM judges: parse the answer, re-ask a bounded number of times, and
record a failure rather than invent a score.

Used by the CoRE evaluator (§4.1: rationale first, then ``<rating>n</rating>``), the
Trace LLM judge (Appendix J "LLM-as-Judge"), the PEPPER qualitative judge
(§3.3.2) and the LLM baselines (Trace, Appendix F), which all ask for a structured answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from evaluation.lib.llm.gateway import LLMCallError, LLMGateway, ModelConfig, UsageMeter

T = TypeVar("T")
DEFAULT_MAX_REASKS = 2


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A parse outcome: ``value`` when usable, otherwise ``problem`` says what was wrong."""

    value: T | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class AskOutcome(Generic[T]):
    value: T | None
    failure: str | None  # None when value is usable
    attempts: int  # LLM answers obtained (1 + re-asks actually made)
    raw_answers: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.failure is None


def ask_until_parsed(
    gateway: LLMGateway,
    config: ModelConfig,
    messages: Sequence[Mapping[str, Any]],
    parse: Callable[[str], Parsed[T]],
    reask: Callable[[str], str],
    *,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> AskOutcome[T]:
    """Ask, parse, and on a bad answer show the model its answer plus what was wrong.

    The conversation grows by (answer, correction) per re-ask, so the cache key of every re-ask
    depends on the earlier answers and a re-run replays the same exchange from the cache.
    """
    conversation = [dict(m) for m in messages]
    raw_answers: list[str] = []
    problem = "no answer"
    for _ in range(max_reasks + 1):
        try:
            result = gateway.complete(config, conversation, meter=meter)
        except LLMCallError as error:
            return AskOutcome(None, f"llm_error: {error}", len(raw_answers), tuple(raw_answers))
        raw_answers.append(result.text)
        parsed = parse(result.text)
        if parsed.ok:
            return AskOutcome(parsed.value, None, len(raw_answers), tuple(raw_answers))
        problem = parsed.problem or "unusable answer"
        conversation += [
            {"role": "assistant", "content": result.text},
            {"role": "user", "content": reask(problem)},
        ]
    failure = f"unparseable after {len(raw_answers)} answers: {problem}"
    return AskOutcome(None, failure, len(raw_answers), tuple(raw_answers))


# --------------------------------------------------------------------------------------------
# Parsers
# --------------------------------------------------------------------------------------------

_NUMBER = r"[-+]?\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Rating:
    score: int
    rationale: str


def parse_rating(text: str, *, low: int, high: int, tag: str = "rating") -> Parsed[Rating]:
    """Read the last ``<tag>n</tag>`` (the answer comes after the rationale) as an integer score."""
    matches = list(re.finditer(rf"<{tag}>\s*([^<]*?)\s*</{tag}>", text, flags=re.IGNORECASE))
    if not matches:
        return Parsed(problem=f"no <{tag}>…</{tag}> tag found")
    last = matches[-1]
    score = _integer_in_range(last.group(1), low, high)
    if isinstance(score, str):
        return Parsed(problem=f"<{tag}> {score}")
    return Parsed(Rating(score=score, rationale=text[: last.start()].strip()))


def parse_tagged_scores(
    text: str, keys: Sequence[str], *, low: int, high: int
) -> tuple[dict[str, int], dict[str, str]]:
    """Scores in ``<key>n</key>`` tags (last occurrence wins) and the problem of each bad key."""
    scores: dict[str, int] = {}
    problems: dict[str, str] = {}
    for key in keys:
        matches = re.findall(rf"<{key}>\s*([^<]*?)\s*</{key}>", text, flags=re.IGNORECASE)
        if not matches:
            problems[key] = f"no <{key}>…</{key}> tag found"
            continue
        score = _integer_in_range(matches[-1], low, high)
        if isinstance(score, str):
            problems[key] = f"<{key}> {score}"
        else:
            scores[key] = score
    return scores, problems


def _integer_in_range(raw: str, low: int, high: int) -> int | str:
    """The integer, or a description of why ``raw`` is not one in [low, high]."""
    if not re.fullmatch(_NUMBER, raw.strip()):
        return f"value {raw!r} is not a number"
    value = float(raw)
    if not value.is_integer():
        return f"value {raw!r} is not a whole number"
    if not low <= value <= high:
        return f"value {raw!r} is outside {low}–{high}"
    return int(value)


def extract_json_object(text: str) -> Parsed[dict[str, Any]]:
    """The first JSON object in ``text``, tolerating code fences and prose around it."""
    decoder = json.JSONDecoder()
    candidates = [m.group(1) for m in re.finditer(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)]
    candidates.append(text)
    for candidate in candidates:
        for start in (i for i, ch in enumerate(candidate) if ch == "{"):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return Parsed(value)
    return Parsed(problem="no valid JSON object found")


# --------------------------------------------------------------------------------------------
# Several aspects in one answer (Trace LLM judge, PEPPER qualitative judge)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AspectScore:
    aspect: str
    score: int | None  # None when no usable score was given for this aspect
    failure: str | None
    attempts: int
    rationale: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None


def judge_aspects(
    gateway: LLMGateway,
    config: ModelConfig,
    messages: Sequence[Mapping[str, Any]],
    aspects: Sequence[str],
    *,
    low: int,
    high: int,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> dict[str, AspectScore]:
    """Ask for every aspect as ``<aspect>n</aspect>`` in one answer; re-ask while any is bad.

    If answers stay bad, the aspects the last answer did score are kept (they are real answers)
    and each other aspect records its own failure.
    """

    def parse(text: str) -> Parsed[dict[str, int]]:
        scores, problems = parse_tagged_scores(text, aspects, low=low, high=high)
        return Parsed(problem="; ".join(problems.values())) if problems else Parsed(scores)

    def reask(problem: str) -> str:
        tags = " ".join(f"<{a}>N</{a}>" for a in aspects)
        return (
            f"Your answer could not be used: {problem}. Answer again: a short reasoning, then "
            f"every score as {tags}, each N a whole number from {low} to {high}."
        )

    outcome = ask_until_parsed(
        gateway, config, messages, parse, reask, max_reasks=max_reasks, meter=meter
    )
    last = outcome.raw_answers[-1] if outcome.raw_answers else ""
    rationale = _text_before_first_tag(last, aspects)
    if outcome.value is not None:
        return {
            a: AspectScore(a, outcome.value[a], None, outcome.attempts, rationale) for a in aspects
        }
    scores, problems = parse_tagged_scores(last, aspects, low=low, high=high)
    results = {}
    for aspect in aspects:
        if aspect in scores:
            results[aspect] = AspectScore(aspect, scores[aspect], None, outcome.attempts, rationale)
        else:
            reason = outcome.failure or ""
            if aspect in problems and not reason.startswith("llm_error"):
                reason = f"unparseable after {outcome.attempts} answers: {problems[aspect]}"
            results[aspect] = AspectScore(aspect, None, reason, outcome.attempts, rationale)
    return results


def _text_before_first_tag(text: str, aspects: Sequence[str]) -> str:
    positions = [m.start() for a in aspects for m in re.finditer(rf"<{a}>", text, re.IGNORECASE)]
    return text[: min(positions)].strip() if positions else text.strip()
