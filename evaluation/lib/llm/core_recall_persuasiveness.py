"""The measures reported beside CoRE (Chen et al., "Evaluating Conversational Recommender Systems
with Large Language Models: A User-Centric Evaluation Framework", §6.3): Recall@{1,5,10} on the
session list, and the iEvaLM persuasiveness score (Wang et al., EMNLP 2023).

CoRE takes persuasiveness from iEvaLM: "Persuasiveness, proposed by Wang et al. [89]" (§6.3) and
"in accordance with the method of Wang et al. [89], we direct the simulator to provide a
Persuasiveness score" (§6.4). So the rubric here is iEvaLM's (`RUCAIBox/iEvaLM-CRS`
`script/chat.py` L348-363), the one the iEvaLM simulator's `finish` asks as well
(`IEVALM_PERSUASIVENESS_RUBRIC`, one text for both); docs/llm.md, "Persuasiveness beside CoRE".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evaluation.lib.llm.conversation import ConversationLog, as_log, item_label, render_log
from evaluation.lib.llm.core_factors import REASK, FactorResult, with_reasoning_hint
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    Parsed,
    Rating,
    ask_until_parsed,
    reasoning_limit,
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
# The answer: a short reason of at most REASON_WORDS words, then <rating>N</rating>, N 0–2.
# iEvaLM answers the bare number (its logit bias admits only the tokens 0–2, chat.py L205);
# Concord keeps a reason before it.
REASON_WORDS = 40
PERSUASIVENESS_FORMAT = tagged_scores_format("ievalm_persuasiveness", ("rating",),
                                             low=PERSUASIVENESS_RANGE[0],
                                             high=PERSUASIVENESS_RANGE[1], words=REASON_WORDS)

# iEvaLM's rubric (script/chat.py L348-363) in Concord's words, in its order: a target named
# gives 2; otherwise worse / comparable / better than the targets by the explanation: 0 / 1 / 2.
IEVALM_PERSUASIVENESS_RUBRIC = (
    "How much does its explanation make you want to take the recommendation? Score it with "
    "these rules, in this order: 2 if it names one of the items you are after; otherwise 0 if "
    "what it recommends seems worse than the items you are after, 1 if it seems about as good, "
    "2 if it seems better, judging by its explanation. Give a short reason "
    f"{reasoning_limit(REASON_WORDS)}, then the score as <rating>N</rating> with N in 0, 1 "
    "or 2.")

_PERSUASIVENESS_PROMPT = """\
You are the user in the conversation below. The items you are after: {targets}.

The conversation:
{log}

Decide how persuasive the system's last recommendation and its explanation are for you:
<system_turn>
{turn}
</system_turn>

""" + IEVALM_PERSUASIVENESS_RUBRIC


def persuasiveness_messages(
    log: ConversationLog | Mapping[str, Any], *, item_names: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """iEvaLM persuasiveness (0–2, iEvaLM's rubric): an LLM in the user's place, told the log's
    ground-truth items as its targets, scores the system's final explanation after the log."""
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
    return with_reasoning_hint(
        _parse_rating(text, low=PERSUASIVENESS_RANGE[0], high=PERSUASIVENESS_RANGE[1]), text,
        REASON_WORDS)


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
        lambda problem: REASK.format(problem=problem, low=0, high=2,
                                     limit=reasoning_limit(REASON_WORDS)),
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
