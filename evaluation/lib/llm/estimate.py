"""What an LLM evaluator run will cost before it runs: an estimate, never a measurement.

The estimate builds the evaluator's real prompts (the same prompt builders the run uses) for
every unit it will judge and counts their tokens with the cl100k_base BPE bundled with litellm;
what the model answers is unknown beforehand, so answers count a typical length per call kind
(`ANSWER_TOKENS`: CoRE's Appendix E averages for factors and debate statements, short reasons
elsewhere). Where the number of calls depends on answers (FACE's particles per system turn, the
debate's rounds before agreement) it assumes `FACE_PARTICLES_PER_TURN` and every round; re-asks
after unusable answers and cache hits are not counted. The cost prices those tokens with the
gateway's price map (litellm's), None when the model has no known price.

Pure Python: no Django import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.lib.llm.conversation import ConversationLog
from evaluation.lib.llm.core_debate import DebateSettings, build_debate_messages
from evaluation.lib.llm.core_factors import build_factor_messages
from evaluation.lib.llm.core_recall_persuasiveness import persuasiveness_messages
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES, FACTOR_KEYS
from evaluation.lib.llm.cost_report import (
    SEED_FACTOR_ANSWER_TOKENS,
    SEED_STATEMENT_TOKENS,
    count_tokens,
)
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.prompts import decomposer_messages, scoring_messages
from evaluation.lib.llm.pepper_judge import build_pepper_messages
from evaluation.lib.llm.trace_judge import build_trace_judge_messages

# Typical answer lengths in tokens per call kind (assumptions, shown with the estimate).
ANSWER_TOKENS = {
    "factor": SEED_FACTOR_ANSWER_TOKENS,  # CoRE Table 20: 4,593.6 output tokens / 12 factors
    "debate": SEED_STATEMENT_TOKENS,  # CoRE Table 21: 2,337.16 output tokens / 16 statements
    "persuasiveness": 80,
    "trace_judge": 250,  # five criteria, a reason each
    "pepper_judge": 200,  # three criteria, a reason each
    "face_decompose": 250,
    "face_score": 60,
}
FACE_PARTICLES_PER_TURN = 3


@dataclass
class CallKind:
    """Calls of one kind: how many, and their prompt and answer tokens in total."""

    kind: str
    calls: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0

    def add(self, messages: Sequence[Mapping[str, str]], times: int = 1) -> None:
        self.calls += times
        self.prompt_tokens += times * messages_tokens(messages)
        self.answer_tokens += times * ANSWER_TOKENS[self.kind]


@dataclass
class RunEstimate:
    units: int
    kinds: list[CallKind]
    cost_usd: float | None  # None: the model has no known price
    assumptions: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(k.calls for k in self.kinds)

    @property
    def prompt_tokens(self) -> int:
        return sum(k.prompt_tokens for k in self.kinds)

    @property
    def answer_tokens(self) -> int:
        return sum(k.answer_tokens for k in self.kinds)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.answer_tokens

    def to_dict(self) -> dict:
        return {"units": self.units, "calls": self.calls, "prompt_tokens": self.prompt_tokens,
                "answer_tokens": self.answer_tokens, "total_tokens": self.total_tokens,
                "cost_usd": self.cost_usd, "assumptions": list(self.assumptions),
                "kinds": [{"kind": k.kind, "calls": k.calls, "prompt_tokens": k.prompt_tokens,
                           "answer_tokens": k.answer_tokens} for k in self.kinds]}


def messages_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Tokens of the message contents (what `cost_report` counts), without chat framing."""
    return sum(count_tokens(m["content"]) for m in messages)


Pricer = Callable[[int, int], "float | None"]


def _finish(units: int, kinds: list[CallKind], price: Pricer, assumptions: list[str]):
    kinds = [k for k in kinds if k.calls]
    prompt = sum(k.prompt_tokens for k in kinds)
    answer = sum(k.answer_tokens for k in kinds)
    cost = price(prompt, answer) if kinds else 0.0
    answers = ", ".join(f"{k.kind} {ANSWER_TOKENS[k.kind]}" for k in kinds)
    return RunEstimate(units, kinds, cost,
                       [f"typical answer tokens per call: {answers}" if answers else "no call",
                        *assumptions, "re-asks after unusable answers and cache hits are not "
                        "counted"])


def estimate_trace_judge(turns: Sequence, price: Pricer) -> RunEstimate:
    """TURNS: the `JudgedTurn`s the run will judge; one call each."""
    kind = CallKind("trace_judge")
    for turn in turns:
        kind.add(build_trace_judge_messages(turn))
    return _finish(len(turns), [kind], price, [])


def estimate_pepper_judge(logs: Sequence[ConversationLog], price: Pricer, *,
                          domain: str = "items") -> RunEstimate:
    kind = CallKind("pepper_judge")
    for log in logs:
        kind.add(build_pepper_messages(log, domain=domain))
    return _finish(len(logs), [kind], price, [])


def estimate_core(logs: Sequence[ConversationLog], price: Pricer, *,
                  item_names: Mapping[str, str] | None = None,
                  debate: DebateSettings | None = None) -> RunEstimate:
    """Twelve factor calls, one persuasiveness call and, with DEBATE, four roles in every
    round: each later round's prompt also carries the earlier statements it sees."""
    factors, persuasion, statements = (CallKind("factor"), CallKind("persuasiveness"),
                                       CallKind("debate"))
    assumptions = []
    for log in logs:
        for key in FACTOR_KEYS:
            factors.add(build_factor_messages(log, key, item_names=item_names))
        persuasion.add(persuasiveness_messages(log, item_names=item_names))
        if debate is None:
            continue
        for role in DEBATE_ROLES:
            base = build_debate_messages(log, {}, role, round_number=1, settings=debate,
                                         item_names=item_names)
            for round_number in range(1, debate.max_rounds + 1):
                seen = (round_number - 1 if debate.buffer == "all_rounds"
                        else min(1, round_number - 1))
                statements.add(base)
                statements.prompt_tokens += seen * len(DEBATE_ROLES) * SEED_STATEMENT_TOKENS
    if debate is not None:
        assumptions.append(f"the debate runs all {debate.max_rounds} rounds (it may stop "
                           "earlier when the roles agree)")
    return _finish(len(logs), [factors, persuasion, statements], price, assumptions)


def estimate_face(logs: Sequence[ConversationLog], price: Pricer, *,
                  instructions: Mapping[str, Sequence[str]]) -> RunEstimate:
    """INSTRUCTIONS: aspect -> its instruction texts. One decomposition per system turn, then
    every particle scored for every aspect with every instruction."""
    decompose, score = CallKind("face_decompose"), CallKind("face_score")
    for log in logs:
        turns = [(t.role, t.text) for t in log.turns]
        for index, (role, text) in enumerate(turns):
            if role != "system":
                continue
            history = turns[:index]
            reply = (turns[index + 1][1] if index + 1 < len(turns)
                     and turns[index + 1][0] == "user" else None)
            decompose.add(decomposer_messages(history, text, reply))
            mention = text[: max(1, len(text) // FACE_PARTICLES_PER_TURN)]
            for aspect, texts in instructions.items():
                for instruction in texts:
                    score.add(scoring_messages(instruction, FACE_ASPECTS[aspect], history,
                                               "recommendation", mention, reply or ""),
                              times=FACE_PARTICLES_PER_TURN)
    return _finish(len(logs), [decompose, score], price,
                   [f"{FACE_PARTICLES_PER_TURN} particles per system turn (the decomposer "
                    "decides)"])
