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

from evaluation.lib.llm.answer_format import AnswerFormat, AnswerFormatError, compact_json
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
    answer_format: AnswerFormat | None = None,
) -> AskOutcome[T]:
    """Ask, parse, and on a bad answer show the model its answer plus what was wrong.

    ANSWER_FORMAT (the prompt's declared format, docs/llm.md "Answer formats") goes to the
    gateway, which constrains the call where the model's backend can; PARSE still reads every
    answer (the fallback where it cannot). An answer that copies one of the prompt's ``<…>``
    placeholders is refused before it is parsed (issue 31, item 4).

    The conversation grows by (answer, correction) per re-ask, so the cache key of every re-ask
    depends on the earlier answers and a re-run replays the same exchange from the cache.
    """
    conversation = [dict(m) for m in messages]
    placeholders = prompt_placeholders(messages)
    raw_answers: list[str] = []
    problem = "no answer"
    for _ in range(max_reasks + 1):
        try:
            result = gateway.complete(config, conversation, meter=meter,
                                      answer_format=answer_format)
        except LLMCallError as error:
            return AskOutcome(None, f"llm_error: {error}", len(raw_answers), tuple(raw_answers))
        raw_answers.append(result.text)
        copied = copied_placeholder(result.text, placeholders)
        parsed = parse(result.text) if copied is None else Parsed(problem=copied)
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
# Placeholders: an answer that copies the prompt's template text is no answer
# --------------------------------------------------------------------------------------------

# ``<…>`` with at least one space or comma inside: a placeholder such as ``<your statement>``
# or ``<every candidate id, best match first>``; XML-like tags (``<rating>``, ``</user>``,
# ``<guideline factor="x">``) and comments (``<!-- … -->``) are the answer's or the prompt's
# structure, not placeholders.
_ANGLED = re.compile(r"<([^<>\n]{1,160})>")
_TAG = re.compile(r'^/?[A-Za-z_][\w.-]*(?:\s+[\w-]+="[^"]*")*\s*/?$')


def prompt_placeholders(messages: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The ``<…>`` placeholders in MESSAGES' text (what an answer must fill in, not copy)."""
    found: dict[str, None] = {}
    for message in messages:
        for match in _ANGLED.finditer(str(message.get("content") or "")):
            inner = match.group(1)
            if (" " in inner or "," in inner) and not inner.startswith(("!", "?")) \
                    and not _TAG.match(inner.strip()):
                found.setdefault(match.group(0))
    return tuple(found)


def copied_placeholder(text: str, placeholders: Sequence[str]) -> str | None:
    """Why TEXT is refused when it copies one of PLACEHOLDERS (None when it copies none)."""
    for placeholder in placeholders:
        if placeholder in text:
            return f"the answer copies the prompt's placeholder {placeholder}"
    return None


# --------------------------------------------------------------------------------------------
# Answer formats of the tag-based prompts, and JSON answers read through their format
# --------------------------------------------------------------------------------------------

# The reasoning before the tags is bounded in words in the prompt ("in at most 60 words") and
# in characters in the format (what constrained decoding counts): WORD_CHARS per word, an
# English word and its space taking about six, the rest slack. The bound is what a constrained
# answer may spend before its tags must come, so a model that rambles (a tiny one always does)
# still closes every tag within the call's token cap (`AnswerFormat.max_tokens`).
WORD_CHARS = 8
JUDGE_REASONING_WORDS = 60  # the Trace and PEPPER judges: a short reasoning
_TAG_GAP = r"\s{0,2}"  # between the reasoning's end, the tags and the answer's end


def reasoning_chars(words: int) -> int:
    """The characters a reasoning of at most WORDS words may take in a tag format."""
    return WORD_CHARS * words


def _whole_numbers(low: int, high: int) -> str:
    return "(?:" + "|".join(str(n) for n in range(high, low - 1, -1)) + ")"


def tagged_scores_format(name: str, keys: Sequence[str], *, low: int, high: int,
                         words: int = JUDGE_REASONING_WORDS) -> AnswerFormat:
    """A reasoning of at most WORDS words (`reasoning_chars` characters, without ``<`` or
    ``>``), then ``<key>N</key>`` for every key in order, N a whole number in [LOW, HIGH]:
    the textual format of the seeds' tag answers (CoRE §4.1, Trace Appendix J, PEPPER §3.3.2),
    bounded in length. Every answer it matches is read by `parse_tagged_scores` /
    `parse_rating`, which also take tags in another order, with spaces, or after a longer
    reasoning (the fallback of a backend that cannot constrain)."""
    tags = _TAG_GAP.join(rf"<{key}>{_whole_numbers(low, high)}</{key}>" for key in keys)
    return AnswerFormat(name=name,
                        regex=rf"[^<>]{{0,{reasoning_chars(words)}}}{tags}{_TAG_GAP}")


def reasoning_limit(words: int) -> str:
    """The prompt's words for the reasoning bound of a tag format."""
    return f"in at most {words} words"


def json_answer(text: str, answer_format: AnswerFormat | None) -> Parsed[dict[str, Any]]:
    """The JSON object of TEXT: checked against ANSWER_FORMAT when it is the whole answer (a
    constrained call), else the first JSON object found in it (`extract_json_object`: the
    parse of backends that cannot constrain, tolerant of prose and code fences)."""
    if answer_format is not None and answer_format.kind == "json":
        try:
            value = answer_format.check(text)
        except AnswerFormatError:
            pass
        else:
            if isinstance(value, dict):
                return Parsed(value)
    return extract_json_object(text)


def format_parser(answer_format: AnswerFormat) -> Callable[[str], Parsed[dict]]:
    """Parse an answer through ANSWER_FORMAT: the JSON object (the whole answer, as a constrained
    call gives it, or the first one found in prose or a code fence, as an unconstrained model
    may write it) must satisfy the schema; otherwise its reason is the re-ask's problem. Keys
    the schema does not name are dropped first (harmless in an unconstrained answer)."""
    known = answer_format.json_schema["properties"]

    def parse(text: str) -> Parsed[dict]:
        found = json_answer(text, answer_format)
        if found.value is None:
            return found
        value = {key: found.value[key] for key in known if key in found.value}
        try:
            answer_format.check(compact_json(value))
        except AnswerFormatError as error:
            return Parsed(problem=error.reason)
        if "utterance" in value and not value["utterance"].strip():
            return Parsed(problem='"utterance" is empty')
        return Parsed(value)
    return parse


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
    answer_format: AnswerFormat | None = None,
    words: int = JUDGE_REASONING_WORDS,
) -> dict[str, AspectScore]:
    """Ask for every aspect as ``<aspect>n</aspect>`` in one answer; re-ask while any is bad.
    ANSWER_FORMAT: the prompt's declared format (`tagged_scores_format`, its reasoning at most
    WORDS words, which the re-ask repeats).

    If answers stay bad, the aspects the last answer did score are kept (they are real answers)
    and each other aspect records its own failure.
    """

    def parse(text: str) -> Parsed[dict[str, int]]:
        scores, problems = parse_tagged_scores(text, aspects, low=low, high=high)
        if not problems:
            return Parsed(scores)
        return Parsed(problem="; ".join(problems.values())
                      + overlong_reasoning(text, aspects, words))

    def reask(problem: str) -> str:
        tags = " ".join(f"<{a}>N</{a}>" for a in aspects)
        return (
            f"Your answer could not be used: {problem}. Answer again: a short reasoning "
            f"{reasoning_limit(words)}, then every score as {tags}, each N a whole number from "
            f"{low} to {high}."
        )

    outcome = ask_until_parsed(
        gateway, config, messages, parse, reask, max_reasks=max_reasks, meter=meter,
        answer_format=answer_format,
    )
    last = outcome.raw_answers[-1] if outcome.raw_answers else ""
    rationale = _text_before_first_tag(last, aspects)
    if outcome.value is not None:
        return {
            a: AspectScore(a, outcome.value[a], None, outcome.attempts, rationale) for a in aspects
        }
    # An answer that copied the prompt's template keeps none of its tags.
    copied = copied_placeholder(last, prompt_placeholders(messages))
    scores, problems = ({}, {}) if copied else parse_tagged_scores(last, aspects, low=low,
                                                                   high=high)
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


def overlong_reasoning(text: str, keys: Sequence[str], words: int) -> str:
    """What a re-ask adds when an unusable answer's reasoning (its text before the first of
    KEYS' tags, all of it when there is none) runs past WORDS words: the likely reason its tags
    are missing (the answer was cut at the token cap). Empty otherwise. A longer reasoning
    whose tags are all there is read, never refused for its length."""
    said = len(_text_before_first_tag(text, keys).split())
    if said <= words:
        return ""
    return f" (the reasoning before the tags ran to {said} words; at most {words} were asked)"


def _text_before_first_tag(text: str, aspects: Sequence[str]) -> str:
    positions = [m.start() for a in aspects for m in re.finditer(rf"<{a}>", text, re.IGNORECASE)]
    return text[: min(positions)].strip() if positions else text.strip()
