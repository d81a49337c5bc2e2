"""The Trace LLM judge: five 1–5 ratings of one recommend/compare system turn.

Trace, Appendix A Table 7 ("LLM Judge" family) and Appendix J ("LLM-as-Judge"):
Relevance (does the response address the user's stated need?), Informativeness (specific and
actionable?), Grounding quality (claims supported by evidence?), Natural flow (conversational
naturalness) and Justification (well-reasoned recommendation explanations?), each 1–5, on
recommend/compare turns (metrics spec §A). The judge sees the dialogue so far, the response and
the reviews the response cites. The anchors below are our wording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    JUDGE_REASONING_WORDS,
    AspectScore,
    judge_aspects,
    reasoning_limit,
    tagged_scores_format,
)

TRACE_CRITERIA: tuple[str, ...] = (
    "relevance",
    "informativeness",
    "grounding_quality",
    "natural_flow",
    "justification",
)
SCORE_RANGE = (1, 5)
# The answer: a reasoning of at most REASONING_WORDS words, then the five tags in order
# (docs/llm.md, "Answer formats"); the prompt says the same limit in words.
REASONING_WORDS = JUDGE_REASONING_WORDS
ANSWER_FORMAT = tagged_scores_format("trace_judge", TRACE_CRITERIA, low=SCORE_RANGE[0],
                                     high=SCORE_RANGE[1], words=REASONING_WORDS)

CRITERION_ANCHORS: dict[str, tuple[str, str]] = {
    "relevance": (
        "Relevance",
        "Does the response address what the user asked for in the last turn, respecting the "
        "preferences and rejections stated earlier? 1 = ignores or contradicts the need; "
        "3 = partly addresses it; 5 = fully addresses it.",
    ),
    "informativeness": (
        "Informativeness",
        "Is the response specific and actionable: concrete places, attributes and practical "
        "details a traveller can act on? 1 = vague or generic; 3 = some useful specifics; "
        "5 = rich, specific, decision-ready information.",
    ),
    "grounding_quality": (
        "Grounding quality",
        "Are the response's claims about the places supported by the cited reviews shown below? "
        "1 = claims unsupported or contradicted, or no evidence; 3 = some claims supported; "
        "5 = every claim is backed by the cited review text.",
    ),
    "natural_flow": (
        "Natural flow",
        "Does the response read like a natural conversational turn that follows on from the "
        "dialogue (tone, transitions, no template-like or awkward wording)? 1 = stilted or "
        "disconnected; 3 = acceptable; 5 = completely natural.",
    ),
    "justification": (
        "Justification",
        "Does the response explain why the recommended places suit this user, with reasons "
        "tied to their stated preferences? 1 = no reasons; 3 = generic reasons; "
        "5 = well-reasoned, personalised explanation.",
    ),
}


@dataclass(frozen=True)
class CitedReview:
    label: str  # e.g. "R2", as used in the response
    review_id: str
    text: str
    item_name: str | None = None


@dataclass(frozen=True)
class JudgedTurn:
    dialogue_id: str
    turn_index: int
    context: tuple[tuple[str, str], ...]  # (role, text) of the turns before the response
    response: str
    cited_reviews: tuple[CitedReview, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgedTurn:
        return cls(
            dialogue_id=str(data["dialogue_id"]),
            turn_index=int(data["turn_index"]),
            context=tuple((str(t["role"]), str(t["text"])) for t in data.get("context", ())),
            response=str(data["response"]),
            cited_reviews=tuple(
                CitedReview(
                    label=str(r["label"]),
                    review_id=str(r["review_id"]),
                    text=str(r["text"]),
                    item_name=r.get("item_name"),
                )
                for r in data.get("cited_reviews", ())
            ),
        )


_SYSTEM = (
    "You are an expert judge of travel recommendation dialogues. You rate one system response "
    "on five criteria, strictly following the given scales."
)

_TASK = """\
Rate the system response that ends the dialogue below on each criterion, from 1 to 5.

<criteria>
{criteria}
</criteria>

<dialogue>
{context}
</dialogue>

<response>
{response}
</response>

<cited_reviews>
{reviews}
</cited_reviews>

Give a short reasoning first, {limit}. Then give every score in its tag, each a whole number \
from 1 to 5:
{tags}"""


def build_trace_judge_messages(turn: JudgedTurn) -> list[dict[str, str]]:
    criteria = "\n".join(
        f"- {CRITERION_ANCHORS[c][0]} <{c}>: {CRITERION_ANCHORS[c][1]}" for c in TRACE_CRITERIA
    )
    context = "\n".join(f"<{role}>{escape(text)}</{role}>" for role, text in turn.context)
    reviews = "\n".join(
        f"[{r.label}] ({escape(r.item_name or 'unknown place')}, review {r.review_id}): "
        f"{escape(r.text)}"
        for r in turn.cited_reviews
    )
    prompt = _TASK.format(
        criteria=criteria,
        context=context or "(no earlier turns)",
        response=escape(turn.response),
        reviews=reviews or "(the response cites no review)",
        tags="\n".join(f"<{c}>N</{c}>" for c in TRACE_CRITERIA),
        limit=reasoning_limit(REASONING_WORDS),
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]


def judge_trace_turn(
    turn: JudgedTurn | Mapping[str, Any],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> dict[str, AspectScore]:
    """Five ``AspectScore``s (1–5); an aspect never answered usably records its failure."""
    turn = turn if isinstance(turn, JudgedTurn) else JudgedTurn.from_dict(turn)
    return judge_aspects(
        gateway,
        config,
        build_trace_judge_messages(turn),
        TRACE_CRITERIA,
        low=SCORE_RANGE[0],
        high=SCORE_RANGE[1],
        max_reasks=max_reasks,
        meter=meter,
        answer_format=ANSWER_FORMAT,
        words=REASONING_WORDS,
    )


def judge_trace_turns(
    turns: Sequence[JudgedTurn | Mapping[str, Any]],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> list[dict[str, AspectScore]]:
    return gateway.map(
        lambda t: judge_trace_turn(
            t, gateway=gateway, config=config, max_reasks=max_reasks, meter=meter
        ),
        list(turns),
    )
