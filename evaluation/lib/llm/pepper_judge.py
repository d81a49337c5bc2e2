"""The PEPPER qualitative judge: proactiveness, coherence and personalization, each 1–5.

PEPPER, §3.3.2 "Qualitative Metric for Preference Elicitation" and Table 15: an LLM
reads the whole dialogue and the simulated user's general preferences and rates how the system
elicits preferences. Proactiveness and coherence are judged on the dialogue itself,
personalization on how well suggestions and explanations match the user's preferences. The
seed asks for scores only; we ask for a short reasoning first (it steadies the scores) and the
same tags-then-parse discipline as the other judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluation.lib.llm.conversation import ConversationLog, as_log, render_plain_dialogue
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    JUDGE_REASONING_WORDS,
    AspectScore,
    judge_aspects,
    reasoning_limit,
    tagged_scores_format,
)

PEPPER_ASPECTS: tuple[str, ...] = ("proactiveness", "coherence", "personalization")
SCORE_RANGE = (1, 5)
# A reasoning of at most REASONING_WORDS words (the prompt says so), then the three tags.
REASONING_WORDS = JUDGE_REASONING_WORDS
ANSWER_FORMAT = tagged_scores_format("pepper_judge", PEPPER_ASPECTS, low=SCORE_RANGE[0],
                                     high=SCORE_RANGE[1], words=REASONING_WORDS)

_TASK = """\
Below is a conversation between a User and a conversational recommender system (the \
"Recommender") about {domain}. Rate the Recommender on the three criteria below, using only \
these criteria.

Proactiveness (1-5): how much the Recommender takes the initiative to uncover and clarify the \
user's preferences, by asking relevant questions and making suggestions.
1 = not proactive, 2 = slightly, 3 = moderately, 4 = mostly, 5 = completely proactive.

Coherence (1-5): how fluidly the Recommender interacts: natural wording, replies that follow \
from what was said before, no abrupt jumps or disconnected exchanges.
1 = incoherent, 2 = slightly, 3 = moderately, 4 = mostly, 5 = completely coherent.

Personalization (1-5): how well the Recommender's suggestions and explanations fit the user's \
preferences (those stated in the conversation and the general preferences given below).
1 = does not fit them, 2 = slightly, 3 = moderately, 4 = mostly, 5 = consistently fits them.

Read the whole conversation before rating.

<conversation>
{dialogue}
</conversation>

<user_preferences>
{preferences}
</user_preferences>

Give a short reasoning first, {limit}, then the three scores, each a whole number from 1 \
to 5:
<proactiveness>N</proactiveness>
<coherence>N</coherence>
<personalization>N</personalization>"""


def build_pepper_messages(
    log: ConversationLog | Mapping[str, Any],
    *,
    user_preferences: str | None = None,
    domain: str = "movies",
) -> list[dict[str, str]]:
    log = as_log(log)
    preferences = user_preferences or log.metadata.get("user_preferences")
    prompt = _TASK.format(
        domain=domain,
        dialogue=render_plain_dialogue(log.turns),
        preferences=preferences or "(not given: use the preferences stated in the conversation)",
        limit=reasoning_limit(REASONING_WORDS),
    )
    return [{"role": "user", "content": prompt}]


def judge_pepper_log(
    log: ConversationLog | Mapping[str, Any],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    user_preferences: str | None = None,
    domain: str = "movies",
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> dict[str, AspectScore]:
    """Three ``AspectScore``s (1–5). ``user_preferences`` defaults to the log's metadata."""
    return judge_aspects(
        gateway,
        config,
        build_pepper_messages(log, user_preferences=user_preferences, domain=domain),
        PEPPER_ASPECTS,
        low=SCORE_RANGE[0],
        high=SCORE_RANGE[1],
        max_reasks=max_reasks,
        meter=meter,
        answer_format=ANSWER_FORMAT,
        words=REASONING_WORDS,
    )
