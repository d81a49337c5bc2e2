"""What an LLM evaluator run will cost before it runs: an estimate, never a measurement.

The estimate builds the evaluator's real prompts (the same prompt builders the run uses) for
every unit it will judge and counts their tokens with the cl100k_base BPE bundled with litellm;
what the model answers is unknown beforehand, so answers count a typical length per call kind
(`ANSWER_TOKENS`: CoRE's Appendix E averages for factors and debate statements, short reasons
elsewhere). Where the number of calls depends on answers (FACE's particles per system turn, the
debate's rounds before agreement) it assumes `FACE_PARTICLES_PER_TURN` and every round; re-asks
after unusable answers and cache hits are not counted. The cost prices those tokens with the
gateway's price map (litellm's), None when the model has no known price.

Two more paths spend LLM money and are estimated the same way (docs/llm.md, "Cost"): a user
simulation with an LLM simulator (`estimate_simulation`: every user talks for every turn, the
simulator's prompts carry the user's real history and item cards, the transcript grows by a
typical system answer and user message per turn) and FACE instruction optimisation
(`estimate_face_optimization`: Algorithm 1's calls counted from its parameters, the prompts
built from the study's real conversations).

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
from evaluation.lib.llm.face.aspects import FaceAspect
from evaluation.lib.llm.face.prompts import (
    decomposer_messages,
    gradient_rewrite_messages,
    initial_instruction,
    scoring_messages,
)
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
    "face_gradient": 400,  # a critique and its rewritten instruction, per gradient asked
    "sim_preferences": 150,  # PEPPER: likes, dislikes and a two-sentence narrative
    "sim_utterance": 60,  # a simulated user's message as JSON
    "sim_reflection": 220,  # PEPPER: a reflection on each shown item, then the message
}
FACE_PARTICLES_PER_TURN = 3
# What a simulated dialogue's transcript grows by per turn (the live system's answer and the
# user's message), in tokens: unknown before the simulation runs.
SIM_SYSTEM_ANSWER_TOKENS = 80
SIM_USER_MESSAGE_TOKENS = 40
SIM_SAMPLE_USERS = 20  # users whose prompts are built; the others are counted like them


@dataclass
class CallKind:
    """Calls of one kind: how many, and their prompt and answer tokens in total."""

    kind: str
    calls: int = 0
    prompt_tokens: int = 0
    answer_tokens: int = 0
    answer_per_call: int | None = None  # a typical answer's tokens; None: ANSWER_TOKENS'

    @property
    def typical_answer(self) -> int:
        return ANSWER_TOKENS[self.kind] if self.answer_per_call is None else self.answer_per_call

    def add(self, messages: Sequence[Mapping[str, str]], times: int = 1) -> None:
        self.calls += times
        self.prompt_tokens += times * messages_tokens(messages)
        self.answer_tokens += times * self.typical_answer


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
    answers = ", ".join(f"{k.kind} {k.typical_answer}" for k in kinds)
    return RunEstimate(units, kinds, cost,
                       [f"typical answer tokens per call: {answers}" if answers else "no call",
                        *assumptions, "re-asks after unusable answers and cache hits are not "
                        "counted"])


def estimate_one_call_per_unit(units: Sequence, price: Pricer, *, kind: str,
                               messages: Callable[[object], Sequence[Mapping[str, str]]],
                               answer_tokens: int) -> RunEstimate:
    """An evaluator that asks one prompt per unit (MESSAGES builds it) and is answered in about
    ANSWER_TOKENS: the estimate of a registered evaluator without calls of its own kind."""
    calls = CallKind(kind, answer_per_call=answer_tokens)
    for unit in units:
        calls.add(messages(unit))
    return _finish(len(units), [calls], price, [])


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


def _system_turns(turns: Sequence[tuple[str, str]]):
    """(history, text, the user's reply or None) of every system turn."""
    for index, (role, text) in enumerate(turns):
        if role != "system":
            continue
        reply = (turns[index + 1][1] if index + 1 < len(turns)
                 and turns[index + 1][0] == "user" else None)
        yield list(turns[:index]), text, reply


def _card_tokens(cards) -> int:
    texts = [card.text() for card in cards]
    return round(sum(count_tokens(t) for t in texts) / len(texts)) if texts else 0


def estimate_simulation(simulator: str, users: Sequence, *, total_users: int, turns: int,
                        shown_k: int, price: Pricer) -> RunEstimate:
    """An LLM simulator (`pepper` or `ievalm`) talking for TURNS turns with each of TOTAL_USERS
    users; USERS (`SimUser`s) are a sample whose real histories and item cards build the
    prompts (at most SIM_SAMPLE_USERS are read), scaled to TOTAL_USERS. PEPPER asks once for
    the user's preferences, once for the opening and once after every system turn but the
    last (its preferences are prepared once per user and reused by every simulation of the
    design: counted here as if not prepared yet); iEvaLM the same without the preferences,
    assuming it never accepts early, plus its persuasiveness score at the end. The live
    system's own LLM calls (an in-process LLM baseline) are not counted."""
    if simulator not in ("pepper", "ievalm"):
        raise ValueError(f"{simulator!r} is not an LLM simulator")
    sample = list(users)[:SIM_SAMPLE_USERS]
    if not sample or total_users < 1 or turns < 1:
        raise ValueError("a simulation estimate needs at least one user and one turn")
    kinds = {name: CallKind(name) for name in ("sim_preferences", "sim_utterance",
                                               "sim_reflection")}
    if simulator == "ievalm":
        kinds["persuasiveness"] = CallKind("persuasiveness")
    exchange = SIM_SYSTEM_ANSWER_TOKENS + SIM_USER_MESSAGE_TOKENS
    for user in sample:
        seen = [s.card for s in user.history.seen]
        if simulator == "pepper":
            reviews = " ".join(text for s in user.history.seen for text, _ in s.reviews)
            kinds["sim_preferences"].add([{"content": "\n".join(c.text() for c in seen)},
                                          {"content": reviews}])
            kinds["sim_preferences"].prompt_tokens += 90  # the request's fixed wording
            persona, respond_kind = 130 + ANSWER_TOKENS["sim_preferences"], "sim_reflection"
        else:
            persona = 60 + sum(count_tokens(c.text())
                               for c in user.target_view.all_targets)
            respond_kind = "sim_utterance"
            kinds["persuasiveness"].add([{"content": ""}])  # scored once, at the end
            kinds["persuasiveness"].prompt_tokens += persona + 120 + turns * exchange
        kinds["sim_utterance"].add([{"content": ""}])
        kinds["sim_utterance"].prompt_tokens += persona + 40
        shown = shown_k * (_card_tokens(seen) + 10)
        for turn in range(1, turns):  # a reply after every system turn but the last
            kind = kinds[respond_kind]
            kind.add([{"content": ""}])
            kind.prompt_tokens += persona + 110 + shown + SIM_USER_MESSAGE_TOKENS + \
                turn * exchange
    scale = total_users / len(sample)
    for kind in kinds.values():
        kind.calls = round(kind.calls * scale)
        kind.prompt_tokens = round(kind.prompt_tokens * scale)
        kind.answer_tokens = round(kind.answer_tokens * scale)
    return _finish(total_users, list(kinds.values()), price, [
        f"every user talks for all {turns} turns (a dialogue may end earlier)",
        f"each turn adds {SIM_SYSTEM_ANSWER_TOKENS} tokens of system answer and "
        f"{SIM_USER_MESSAGE_TOKENS} of user message to the transcript",
        f"prompts built from {len(sample)} of the {total_users} users' histories",
        "the live system's own LLM calls are not counted"])


def face_optimization_calls(params: Mapping, *, particles: int) -> dict[str, int]:
    """The calls Algorithm 1 makes with PARAMS (face_optimization.DEFAULTS' keys) on PARTICLES
    labelled particles: scoring calls and gradient calls. Rewrites count as proposed (every
    gradient answer parsed, no duplicate), the pool as full."""
    train = max(1, round(particles * (1 - float(params["dev_share"]))))
    dev = max(1, particles - train)
    sampled = int(params.get("gradient_particles") or 0)
    score, gradients, pool = train, 0, 0  # the seed's training correlation
    for iteration in range(1, int(params["iterations"]) + 1):
        parents = 1 if iteration == 1 else int(params["beam"])
        asked = parents * (min(sampled, train) if sampled else train)
        score += asked  # the parent's prediction on each sampled particle
        gradients += asked
        candidates = asked * int(params["gradients"])
        rounds = int(params.get("ucb_rounds") or 0) or max(1, -(-5 * candidates // 2))
        keep = min(int(params["candidates"]), candidates)
        score += rounds * int(params["ucb_sample"]) + keep * train
        pool += keep
    size = int(params.get("final_size") or 0) or int(params["beam"])
    score += max(pool, 1) * dev + size * (train + dev)
    return {"score": score, "gradient": gradients}


def estimate_face_optimization(conversations: Sequence[Sequence[tuple[str, str]]], *,
                               aspect: FaceAspect, params: Mapping, labelled_turns: int | None,
                               price: Pricer, decompose: bool = True) -> RunEstimate:
    """FACE instruction optimisation (Algorithm 1) on CONVERSATIONS, the study's labelled
    conversations as (role, text) turns. LABELLED_TURNS: for a turn-level aspect, how many
    system turns carry a label (None: every system turn of the conversations counts).
    DECOMPOSE False: the particles are already decomposed (a resumed optimisation)."""
    decomposer, score, gradient = (CallKind("face_decompose"), CallKind("face_score"),
                                   CallKind("face_gradient"))
    system_turns = [entry for turns in conversations for entry in _system_turns(list(turns))]
    if not system_turns:
        raise ValueError("the study's conversations have no system turn to decompose")
    instruction = initial_instruction(aspect)
    score_prompt = gradient_prompt = 0
    for history, text, reply in system_turns:
        if decompose:
            decomposer.add(decomposer_messages(history, text, reply))
        mention = text[: max(1, len(text) // FACE_PARTICLES_PER_TURN)]
        score_prompt += messages_tokens(scoring_messages(
            instruction, aspect, history, "recommendation", mention, reply or ""))
        gradient_prompt += messages_tokens(gradient_rewrite_messages(
            instruction, aspect, history, "recommendation", mention, reply or "", 0.0, 0.0,
            int(params["gradients"])))
    turns = len(system_turns) if labelled_turns is None else min(labelled_turns,
                                                                 len(system_turns))
    calls = face_optimization_calls(params, particles=FACE_PARTICLES_PER_TURN * turns)
    for kind, total, prompt in ((score, calls["score"], score_prompt),
                                (gradient, calls["gradient"], gradient_prompt)):
        kind.calls = total
        kind.prompt_tokens = round(total * prompt / len(system_turns))
        kind.answer_tokens = total * ANSWER_TOKENS[kind.kind]
    return _finish(len(conversations), [decomposer, score, gradient], price, [
        f"{FACE_PARTICLES_PER_TURN} particles per system turn (the decomposer decides)",
        "every gradient answer yields its rewrites and the candidate pool fills up",
        "rewritten instructions are as long as the initial one"])
