"""CoRE, the twelve-factor LLM evaluator (Chen et al., "Evaluating Conversational Recommender
Systems with Large Language Models: A User-Centric Evaluation Framework", §4.1 and Appendix D).

Each of the twelve factors is scored 0–4 by an LLM given the factor's definition, scoring
standard (a counting rule) and steps; the judge reasons first and ends with
``<rating>n</rating>``. Our prompt wording lives in ``core_rubrics``. The debate that turns these
scores into one 0–100 score is ``core_debate``; choosing the judge per factor is ``core_routing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.lib.llm.conversation import ConversationLog, as_log, render_log
from evaluation.lib.llm.core_rubrics import FACTOR_KEYS, GUIDELINE_BY_KEY
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    Parsed,
    Rating,
    ask_until_parsed,
    overlong_reasoning,
    reasoning_limit,
    tagged_scores_format,
)
from evaluation.lib.llm.judging import parse_rating as _parse_rating

FACTOR_SCORE_RANGE = (0, 4)

_FACTOR_SYSTEM = (
    "You are a careful evaluator of conversational recommender systems. You rate one quality "
    "factor at a time, strictly following the guideline you are given."
)

_FACTOR_TASK = """\
Judge one factor of a recommender system's behaviour: {name}.

The conversation below has two consecutive parts. <history> is earlier context: read it so you \
understand the situation, but do not rate it. <interaction> continues right after it. Rate only \
the system's turns (<system>) inside <interaction>; never rate the user's turns or anything in \
<history>.

<guideline factor="{name}">
<definition>
{definition}
</definition>
<scoring_standard>
{standard}
</scoring_standard>
<steps>
{steps}
</steps>
</guideline>

{log}

Reason step by step following the guideline first, {limit}. Then give the score as \
<rating>N</rating>, where N is a whole number from 0 to 4."""

REASK = (
    "Your answer could not be used: {problem}. Answer again: give your reasoning {limit}, then "
    "end with exactly one tag <rating>N</rating> where N is a whole number from {low} to {high}."
)


@dataclass(frozen=True)
class FactorResult:
    factor: str
    score: int | None  # None when the judge never gave a usable answer
    rationale: str
    failure: str | None
    attempts: int
    model: str
    raw_answer: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None


def build_factor_messages(
    log: ConversationLog | Mapping[str, Any],
    factor: str,
    *,
    item_names: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """The chat messages that ask for one factor's 0–4 score; only that factor's guideline."""
    guideline = GUIDELINE_BY_KEY[factor]
    prompt = _FACTOR_TASK.format(
        name=guideline.name,
        definition=guideline.definition,
        standard=_bullets(guideline.scoring_standard),
        steps=_numbered(guideline.steps),
        log=render_log(as_log(log), item_names=item_names),
        limit=reasoning_limit(REASONING_WORDS),
    )
    return [{"role": "system", "content": _FACTOR_SYSTEM}, {"role": "user", "content": prompt}]


# The answer: the rationale, then one rating tag. CoRE Appendix E's rationales average a few
# hundred tokens; one factor's counting rule needs the turns it counts and why, which 100
# words hold (the prompt says so; a longer one from a backend that cannot constrain is read).
REASONING_WORDS = 100
FACTOR_FORMAT = tagged_scores_format("core_factor", ("rating",), low=0, high=4,
                                     words=REASONING_WORDS)


def parse_factor_rating(text: str) -> Parsed[Rating]:
    return with_reasoning_hint(
        _parse_rating(text, low=FACTOR_SCORE_RANGE[0], high=FACTOR_SCORE_RANGE[1]), text,
        REASONING_WORDS)


def with_reasoning_hint(parsed: Parsed[Rating], text: str, words: int) -> Parsed[Rating]:
    """PARSED, its problem followed by `overlong_reasoning`'s when the answer rambled past
    WORDS words without a usable rating (what the re-ask then tells the model)."""
    if parsed.ok:
        return parsed
    return Parsed(problem=f"{parsed.problem}{overlong_reasoning(text, ('rating',), words)}")


def score_factors(
    log: ConversationLog | Mapping[str, Any],
    *,
    gateway: LLMGateway,
    config: ModelConfig | Mapping[str, ModelConfig],
    factors: Sequence[str] = FACTOR_KEYS,
    item_names: Mapping[str, str] | None = None,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> dict[str, FactorResult]:
    """Score each factor independently (one prompt per factor, run concurrently).

    ``config`` is one model for all factors, or a mapping factor → model (mixture of evaluators,
    see ``configs_for_choices``). A factor whose answers stay unusable after ``max_reasks``
    re-asks gets ``score=None`` and a ``failure`` reason, never a default score.
    """
    log = as_log(log)
    unknown = [f for f in factors if f not in GUIDELINE_BY_KEY]
    if unknown:
        raise ValueError(f"unknown CoRE factors: {unknown}")

    def judge(factor: str) -> FactorResult:
        factor_config = config[factor] if isinstance(config, Mapping) else config
        outcome = ask_until_parsed(
            gateway,
            factor_config,
            build_factor_messages(log, factor, item_names=item_names),
            parse_factor_rating,
            lambda problem: REASK.format(problem=problem, low=0, high=4,
                                         limit=reasoning_limit(REASONING_WORDS)),
            max_reasks=max_reasks,
            meter=meter,
            answer_format=FACTOR_FORMAT,
        )
        return FactorResult(
            factor=factor,
            score=outcome.value.score if outcome.value else None,
            rationale=outcome.value.rationale if outcome.value else "",
            failure=outcome.failure,
            attempts=outcome.attempts,
            model=factor_config.model,
            raw_answer=outcome.raw_answers[-1] if outcome.raw_answers else "",
        )

    return dict(zip(factors, gateway.map(judge, list(factors)), strict=True))


def _bullets(lines: Iterable[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _numbered(lines: Iterable[str]) -> str:
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1))

