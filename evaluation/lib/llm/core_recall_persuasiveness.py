"""The measures reported beside CoRE (Chen et al., "Evaluating Conversational Recommender Systems
with Large Language Models: A User-Centric Evaluation Framework", §6.3): Recall@{1,5,10} on the
session list, and the iEvaLM persuasiveness score (Wang et al., EMNLP 2023).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evaluation.lib.llm.conversation import ConversationLog, as_log, item_label, render_log
from evaluation.lib.llm.core_factors import REASK, FactorResult
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    Parsed,
    Rating,
    ask_until_parsed,
    tagged_scores_format,
)
from evaluation.lib.llm.judging import parse_rating as _parse_rating


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """Fraction of the relevant items found in the first k of ``ranked``; None if none known."""
    relevant_set = set(relevant)
    if not relevant_set:
        return None
    if k < 1:
        raise ValueError("k must be at least 1")
    return len(relevant_set.intersection(ranked[:k])) / len(relevant_set)


def session_recall(
    log: ConversationLog | Mapping[str, Any], ks: Sequence[int] = (1, 5, 10)
) -> dict[int, float | None]:
    """Recall@k on the session list (the interaction's lists concatenated, repeats dropped)."""
    log = as_log(log)
    session = log.session_recommendations()
    return {k: recall_at_k(session, log.ground_truth_item_ids, k) for k in ks}


PERSUASIVENESS_RANGE = (0, 2)
PERSUASIVENESS_FORMAT = tagged_scores_format("core_persuasiveness", ("rating",),
                                             low=PERSUASIVENESS_RANGE[0],
                                             high=PERSUASIVENESS_RANGE[1])

_PERSUASIVENESS_PROMPT = """\
You are the user in the conversation below. What you were really looking for is: {targets}.

Read the system's last recommendation and the explanation it gave for it:
<system_turn>
{turn}
</system_turn>

Decide how persuasive that explanation is for you, given what you were really looking for. An \
explanation is persuasive when it is accurate about the recommended item and would lead you to \
an item you actually want; an explanation that talks you into an item you do not want is not \
persuasive.
- 2: highly persuasive
- 1: partially persuasive
- 0: not persuasive (or no explanation)

The conversation:
{log}

Give a short reason first, then the score as <rating>N</rating> with N in 0, 1 or 2."""


def persuasiveness_messages(
    log: ConversationLog | Mapping[str, Any], *, item_names: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """iEvaLM persuasiveness (0–2): the user judges the system's final explanation."""
    log = as_log(log)
    system_turns = [t for t in log.interaction if t.role == "system"]
    last = system_turns[-1].text if system_turns else "(the system said nothing)"
    targets = ", ".join(item_label(i, item_names) for i in log.ground_truth_item_ids)
    prompt = _PERSUASIVENESS_PROMPT.format(
        targets=targets or "(unknown: use the wishes you expressed in the conversation)",
        turn=last,
        log=render_log(log, item_names=item_names, include_ground_truth=False),
    )
    return [{"role": "user", "content": prompt}]


def parse_persuasiveness(text: str) -> Parsed[Rating]:
    return _parse_rating(text, low=PERSUASIVENESS_RANGE[0], high=PERSUASIVENESS_RANGE[1])


def score_persuasiveness(
    log: ConversationLog | Mapping[str, Any],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    item_names: Mapping[str, str] | None = None,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> FactorResult:
    outcome = ask_until_parsed(
        gateway,
        config,
        persuasiveness_messages(log, item_names=item_names),
        parse_persuasiveness,
        lambda problem: REASK.format(problem=problem, low=0, high=2),
        max_reasks=max_reasks,
        meter=meter,
        answer_format=PERSUASIVENESS_FORMAT,
    )
    return FactorResult(
        factor="persuasiveness",
        score=outcome.value.score if outcome.value else None,
        rationale=outcome.value.rationale if outcome.value else "",
        failure=outcome.failure,
        attempts=outcome.attempts,
        model=config.model,
        raw_answer=outcome.raw_answers[-1] if outcome.raw_answers else "",
    )
