"""User simulators that talk to a live system (docs/formats.md §4), each a versioned
configuration: its name, version and options are stored with every run that uses it.
docs/simulation.md cites, for each choice below, the file and line of the authors' released code.

- `pepper`: PEPPER's target-free simulator (Kim et al., §3.2 and §4.1.3;
  happysnail06/PEPPER). General preferences (likes, dislikes and a narrative) are derived by
  the LLM from the reviews of the user's *seen* items only (§3.2.1), ONCE per simulated user in
  a preparation step before any dialogue (`prepare`, as PEPPER's
  `src/data_processsing/3_generate_gp.py` writes them before `src/chat/*.py` runs); the
  service stores them (`SimulatedUserProfile`) so that every simulation of one design talks
  with the same users. At each turn the system's first `shown_k` items (4 by default, the
  item interface of §4.1.3 and `candidate_list = all_recommendations_str[:4]`) are split into
  seen and unseen and *reflected preferences* are generated for them (§3.2.2) and fed into the
  next utterance, whose instructions carry PEPPER's gradual-disclosure rule (reveal preferences
  over time, a new point per message, never one already made). Concord asks for the
  reflections and the utterance in one answer (reflections first), one LLM call per turn. It
  never sees target ids.
- `ievalm`: iEvaLM's target-based user as `RUCAIBox/iEvaLM-CRS` `script/chat.py` runs it: it
  knows every gold item of its dialogue (never to be named), continues the dataset dialogue's
  context, refuses and describes its targets, accepts as soon as one target is anywhere in the
  system's top `accept_at` (50), which ends the dialogue, and scores the system's
  persuasiveness with iEvaLM's rubric at the end (`finish`). Its metric is in
  `lib/metrics/ievalm.py`.
- `template`: a deterministic, seeded, target-free simulator that needs no LLM (offline demo and
  tests). It is a template stand-in for PEPPER, not PEPPER: preferences are the categories of
  the seen items the user rated well (likes) or badly (dislikes), reflections are rules.

LLM simulators go through the gateway (cache, cost, retries, concurrency); a simulator answer
that cannot be parsed after the re-asks raises `SimulatorError` and fails the dialogue. Every
prompt of an LLM simulator declares its answer format (`Simulator.prompts`, as the evaluators'
registered objects do; docs/simulation.md, "Answer formats"): a compact JSON schema (bounded
lengths and list sizes, the shown item ids and the opinions as enums) or, for the persuasiveness
score, the tag regex. The format goes to the gateway, which constrains the call where the
model's backend can, and every answer is read through it (the JSON object, whole or found in
prose, must satisfy the schema), then re-asked with the reason when it does not.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.live.contract import LiveAnswer
from evaluation.lib.llm.answer_format import AnswerFormat
from evaluation.lib.llm.core_recall_persuasiveness import (
    IEVALM_PERSUASIVENESS_RUBRIC,
    PERSUASIVENESS_FORMAT,
    REASON_WORDS,
    parse_persuasiveness,
)
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    ask_until_parsed,
    format_parser,
    reasoning_limit,
)
from evaluation.lib.llm.registry import Prompt
from evaluation.lib.metrics.ievalm import ACCEPT_AT, accepts
from evaluation.lib.simulators.leakage import SANITISED, SANITISED_LABEL
from evaluation.lib.simulators.users import HistoryView, ItemCard, TargetView

GOOD_STARS = 3.5
# PEPPER §4.1.3 "The number of items presented in the item interface is set to 4";
# src/chat/chat_chatgpt.py L156-157 `candidate_list = all_recommendations_str[:4]`
DEFAULT_SHOWN_K = 4
MAX_SHOWN_K = 50
CONTEXT = "context"  # the action of a dataset-context turn replayed before the simulation


class SimulatorError(RuntimeError):
    """The simulator could not produce its next utterance (an LLM answer stayed unusable)."""


@dataclass(frozen=True)
class Utterance:
    text: str
    action: str
    done: bool = False


@dataclass
class SimState:
    history: HistoryView
    target: TargetView | None
    rng: random.Random
    preferences: dict[str, Any] = field(default_factory=dict)  # hidden, shown to the owner
    reflections: list[list[dict]] = field(default_factory=list)  # per turn
    transcript: list[tuple[str, str]] = field(default_factory=list)
    llm_seconds: float = 0.0  # time inside LLM calls (bench_simulation's overhead excludes it)
    ended_by_user: bool = False  # the user ended the dialogue (iEvaLM: accepted)


class Simulator(ABC):
    name = ""
    version = ""
    target_based = False
    needs_llm = False
    prepares = False  # derives the user's general preferences once, before any dialogue
    prompts: tuple[Prompt, ...] = ()  # an LLM simulator's prompts and their answer formats

    def __init__(self, *, shown_k: int = DEFAULT_SHOWN_K, seed: int = 0):
        if not 1 <= shown_k <= MAX_SHOWN_K:
            raise ValueError(f"the item interface shows 1–{MAX_SHOWN_K} items, not {shown_k}")
        self.shown_k, self.seed = shown_k, seed

    def config(self) -> dict[str, Any]:
        return {"simulator": self.name, "version": self.version, "shown_k": self.shown_k,
                "seed": self.seed, "target_based": self.target_based}

    def preparation_config(self) -> dict[str, Any]:
        """What a prepared profile depends on besides the user (the cache's key)."""
        return {"simulator": self.name, "version": self.version}

    def prepare(self, history: HistoryView) -> dict[str, Any]:
        """The user's general preferences, derived once before any dialogue ({}: none)."""
        return {}

    def start(self, history: HistoryView, target: TargetView | None = None,
              prepared: Mapping[str, Any] | None = None) -> SimState:
        rng = random.Random(f"{self.seed}:{history.user_id}")
        state = SimState(history, target if self.target_based else None, rng)
        if self.prepares:
            state.preferences = dict(prepared) if prepared is not None else \
                self.prepare(history)
        return state

    def context(self, state: SimState) -> tuple[tuple[str, str], ...]:
        """(role, text) turns replayed to the system before the opening (none by default)."""
        return ()

    @abstractmethod
    def opening(self, state: SimState) -> Utterance: ...

    @abstractmethod
    def respond(self, state: SimState, answer: LiveAnswer,
                shown: Sequence[ItemCard]) -> Utterance: ...

    def finish(self, state: SimState, answer: LiveAnswer,
               final: Sequence[ItemCard]) -> dict[str, Any]:
        """Scores the simulated user gives once the dialogue ended (ANSWER: the system's last,
        FINAL: the cards of its list); stored with the dialogue's hidden part."""
        return {}


# --- template (no LLM) ------------------------------------------------------------------------

def _categories(state: SimState, good: bool) -> list[str]:
    out: dict[str, None] = {}
    for seen in state.history.seen:
        stars = [s for _, s in seen.reviews if s is not None] or (
            [seen.card.stars] if seen.card.stars is not None else [])
        rating = sum(stars) / len(stars) if stars else GOOD_STARS
        if (rating >= GOOD_STARS) == good:
            out.update(dict.fromkeys(seen.card.categories))
    return list(out)


class TemplateSimulator(Simulator):
    name, version = "template", "1.0"

    def start(self, history, target=None, prepared=None):
        state = super().start(history, target, prepared)
        likes = _categories(state, True)
        dislikes = [c for c in _categories(state, False) if c not in likes]
        state.preferences = {"likes": likes, "dislikes": dislikes}
        return state

    def opening(self, state):
        kind = state.history.item_type or "place"
        where = f" in {state.history.city}" if state.history.city else ""
        likes = state.preferences["likes"]
        text = f"Hi! I am looking for a {kind}{where}."
        if likes:
            picked = state.rng.sample(likes, min(2, len(likes)))
            text += f" I usually enjoy {' and '.join(picked)}."
        return Utterance(text, "greet_and_seek")

    def respond(self, state, answer, shown):
        likes, dislikes = state.preferences["likes"], state.preferences["dislikes"]
        parts, reflections = [], []
        for card in shown[:self.shown_k]:
            if card.id in state.history.seen_ids:
                opinion, reason = "seen", "I have been there already"
                parts.append(f"I have already been to {card.name}.")
            elif set(card.categories) & set(dislikes):
                cat = sorted(set(card.categories) & set(dislikes))[0]
                opinion, reason = "dislike", f"I dislike {cat}"
                parts.append(f"{card.name} is not for me; I do not like {cat}.")
            elif set(card.categories) & set(likes):
                cat = sorted(set(card.categories) & set(likes))[0]
                opinion, reason = "like", f"I like {cat}"
                parts.append(f"{card.name} sounds good, I like {cat}.")
            else:
                opinion, reason = "unsure", "nothing I know I like"
            reflections.append({"item_id": card.id, "opinion": opinion, "reason": reason})
        state.reflections.append(reflections)
        if not shown:
            parts.append("You did not suggest anything yet.")
        if likes:
            parts.append(f"Do you have something else with {state.rng.choice(likes)}?")
        else:
            parts.append("Could you suggest something else?")
        return Utterance(" ".join(parts), "provide_preference")

# --- LLM simulators ---------------------------------------------------------------------------

def _seen_text(history: HistoryView) -> str:
    lines = []
    for seen in history.seen:
        lines.append(f"- {seen.card.text()}")
        lines += [f'  review ({stars if stars is not None else "?"} stars): "{text}"'
                  for text, stars in seen.reviews]
    return "\n".join(lines)


def _transcript(state: SimState) -> str:
    return "\n".join(f"{role}: {text}" for role, text in state.transcript) or "(no turns yet)"


def _reask(problem: str) -> str:
    return (f"Your reply could not be used: {problem}. Reply with the JSON object only, on one "
            "line, in the format asked for.")


# --- answer formats (docs/simulation.md, "Answer formats") -------------------------------------

UTTERANCE_CHARS = 600  # one or two sentences, with room to spare
PREFERENCE_CHARS, PREFERENCES = 160, 12  # one binary preference; at most this many per list
NARRATIVE_CHARS = 600  # two sentences in the first person
REASON_CHARS = 300  # one reflection's reason

_UTTERANCE = {"type": "string", "minLength": 1, "maxLength": UTTERANCE_CHARS}
_PREFERENCE_LIST = {"type": "array", "maxItems": PREFERENCES,
                    "items": {"type": "string", "minLength": 1, "maxLength": PREFERENCE_CHARS}}


def _object(**properties) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(properties),
            "properties": properties}


# PEPPER's preparation step: general preferences (likes, dislikes, a narrative).
PREPARATION_FORMAT = AnswerFormat("pepper_preferences", json_schema=_object(
    likes=_PREFERENCE_LIST, dislikes=_PREFERENCE_LIST,
    narrative={"type": "string", "maxLength": NARRATIVE_CHARS}))
# One message to the recommender (PEPPER's opening; every iEvaLM user message).
UTTERANCE_FORMAT = AnswerFormat("sim_utterance", json_schema=_object(utterance=_UTTERANCE))
OPINIONS = ("like", "dislike")


def reflection_format(item_ids: Sequence[str]) -> AnswerFormat:
    """PEPPER's turn, per call: a reflection on each shown item (its id one of ITEM_IDS, an
    enum; at most one per item), then the next message."""
    ids = list(dict.fromkeys(str(i) for i in item_ids))
    reflections: dict[str, Any] = {"type": "array", "maxItems": len(ids)}
    if ids:
        reflections["items"] = _object(
            item_id={"type": "string", "enum": ids},
            opinion={"type": "string", "enum": list(OPINIONS)},
            reason={"type": "string", "maxLength": REASON_CHARS})
    return AnswerFormat("pepper_reflections", json_schema=_object(
        reflected_preferences=reflections, utterance=_UTTERANCE))


def _ask_for(shape: str) -> str:
    """The prompt's last line: compact JSON of SHAPE (its `<…>` placeholders are to be filled
    in; an answer that copies one is refused)."""
    return f"Reply with one line of compact JSON only, no other text: {shape}"


class _LLMSimulator(Simulator):
    needs_llm = True

    def __init__(self, *, gateway: LLMGateway, config: ModelConfig,
                 shown_k: int = DEFAULT_SHOWN_K, seed: int = 0, max_reasks: int = 2,
                 meter: UsageMeter | None = None):
        super().__init__(shown_k=shown_k, seed=seed)
        self.gateway, self.model, self.max_reasks, self.meter = gateway, config, max_reasks, meter

    def config(self):
        return {**super().config(), "model": self.model.model,
                "temperature": self.model.temperature, "max_reasks": self.max_reasks}

    def preparation_config(self):
        return {**super().preparation_config(), "model": self.model.model,
                "temperature": self.model.temperature}

    def ask(self, state: SimState | None, messages, answer_format: AnswerFormat) -> Any:
        """The answer to MESSAGES in ANSWER_FORMAT (a JSON object), or `SimulatorError`."""
        outcome = self.ask_outcome(state, messages, answer_format, format_parser(answer_format))
        if outcome.value is None:
            raise SimulatorError(f"{self.name} simulator: {outcome.failure}")
        return outcome.value

    def ask_outcome(self, state: SimState | None, messages, answer_format: AnswerFormat, parse,
                    *, reask=_reask):
        started = time.perf_counter()
        outcome = ask_until_parsed(self.gateway, self.model, messages, parse, reask,
                                   max_reasks=self.max_reasks, meter=self.meter,
                                   answer_format=answer_format)
        if state is not None:
            state.llm_seconds += time.perf_counter() - started
        return outcome


# PEPPER's gradual disclosure (prompts/user_simulator_prompt.txt L20-21 and L26), in Concord's
# words: one new point per message, drawn from a part of the preferences not used yet.
GRADUAL_DISCLOSURE = (
    "How to talk: let your tastes come out little by little over the conversation, not all "
    "at once. Before writing, read the conversation so far; each message makes ONE point you "
    "have not made before (a different part of your preferences, or your view of an item just "
    "shown) and never repeats a point you already made. Keep it to one or two casual sentences "
    "in the first person, do not overdo thanks, and never invent facts.")


class PepperSimulator(_LLMSimulator):
    name, version = "pepper", "2.1"
    prepares = True
    prompts = (
        Prompt("prepare", "general preferences from the seen items' reviews, once per user",
               PREPARATION_FORMAT, example='{"likes":["fresh seafood"],"dislikes":'
               '["loud music"],"narrative":"I like quiet seafood places."}'),
        Prompt("opening", "the first message, with one preference", UTTERANCE_FORMAT,
               example='{"utterance":"Any quiet seafood place nearby?"}'),
        Prompt("respond", "reflections on the shown items, then the next message",
               format_for=reflection_format,
               example='{"reflected_preferences":[{"item_id":"r1","opinion":"like","reason":'
                       '"seafood"}],"utterance":"I like r1; anything quieter?"}'),
    )

    def prepare(self, history):
        """PEPPER's preparation step (§3.2.1; 3_generate_gp.py): likes, dislikes and a short
        narrative from the seen items' reviews, once per user, before any dialogue."""
        messages = [
            {"role": "system", "content": "You summarise a person's tastes from their reviews."},
            {"role": "user", "content": (
                "Here are places this person visited, with their reviews:\n"
                f"{_seen_text(history)}\n\nFocus on the most representative features: at "
                f"most {PREFERENCES} likes and {PREFERENCES} dislikes, each a short binary "
                "preference. " + _ask_for(
                    '{"likes":["<short binary preference>"],"dislikes":["<short binary '
                    'preference>"],"narrative":"<two sentences in the first person>"}'))},
        ]
        prefs = self.ask(None, messages, PREPARATION_FORMAT)
        return {"likes": [str(x) for x in prefs["likes"]],
                "dislikes": [str(x) for x in prefs["dislikes"]],
                "narrative": str(prefs.get("narrative") or "")}

    def _persona(self, state) -> str:
        p = state.preferences
        where = f" in {state.history.city}" if state.history.city else ""
        return (f"You are a user looking for a {state.history.item_type or 'place'}{where}. "
                f"{p.get('narrative', '')}\nLikes: {'; '.join(p.get('likes', []))}\n"
                f"Dislikes: {'; '.join(p.get('dislikes', []))}\nYou do not know which item you "
                f"will end up liking.\n{GRADUAL_DISCLOSURE}")

    def opening(self, state):
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        "Nothing has been recommended yet. Start the conversation with a "
                        "recommender: say what you are after, with one of your preferences "
                        "(not all of them). " + _ask_for('{"utterance":"<your message>"}'))}]
        data = self.ask(state, messages, UTTERANCE_FORMAT)
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "greet_and_seek")

    def respond(self, state, answer, shown):
        state.transcript.append(("system", answer.response))
        seen_ids = state.history.seen_ids
        reviews = {s.card.id: s.reviews for s in state.history.seen}
        lines = []
        for card in shown[:self.shown_k]:
            if card.id in seen_ids:
                said = " ".join(f'"{t}"' for t, _ in reviews[card.id]) or "(no review)"
                lines.append(f"- [{card.id}] SEEN: {card.text()}; your reviews: {said}")
            else:
                lines.append(f"- [{card.id}] UNSEEN: {card.text()}")
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        f"The conversation so far:\n{_transcript(state)}\n\nThe items shown to "
                        "you now:\n" + ("\n".join(lines) or "(none)") + "\n\nFirst reflect on "
                        "each item: for SEEN items recall your experience from your reviews; for "
                        "UNSEEN items say whether you would like it given your preferences, from "
                        "an angle the conversation has not covered yet. Then write your next "
                        "message to the recommender: pick the single most important new point "
                        "from those reflections and your preferences, one you have not made "
                        "before. At most one reflection per item, its item_id one of the ids "
                        "in brackets, its opinion like or dislike. " + _ask_for(
                            '{"reflected_preferences":[{"item_id":"<an id shown above>",'
                            '"opinion":"like","reason":"<your reason>"}],'
                            '"utterance":"<your message>"}'))}]
        data = self.ask(state, messages,
                        reflection_format([c.id for c in shown[:self.shown_k]]))
        state.reflections.append(list(data["reflected_preferences"]))
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "provide_preference")


def _persuasiveness_reask(problem: str) -> str:
    return (f"Your reply could not be used: {problem}. Give a short reason "
            f"{reasoning_limit(REASON_WORDS)}, then the score as <rating>N</rating> with N in 0, "
            "1 or 2.")


class IEvaLMSimulator(_LLMSimulator):
    name, version = "ievalm", "2.1"
    target_based = True
    # Acceptance is not asked of the LLM: it is iEvaLM's rule on the list (`accepts`).
    prompts = (
        Prompt("utterance", "the next message: refuse and describe the targets",
               UTTERANCE_FORMAT, example='{"utterance":"No, something quieter by the sea."}'),
        Prompt("persuasiveness", "iEvaLM's rubric after the dialogue; <rating> 0-2",
               PERSUASIVENESS_FORMAT, example="It names one.\n<rating>2</rating>"),
    )

    def __init__(self, *, accept_at: int = ACCEPT_AT, **options):
        super().__init__(**options)
        if not 1 <= accept_at <= MAX_SHOWN_K:
            raise ValueError(f"accept_at must be 1–{MAX_SHOWN_K}, not {accept_at}")
        self.accept_at = accept_at

    def config(self):
        return {**super().config(), "accept_at": self.accept_at}

    def start(self, history, target=None, prepared=None):
        if target is None:
            raise SimulatorError("the iEvaLM-style simulator needs a target item")
        state = super().start(history, target, prepared)
        state.preferences = {"target_item_ids": [c.id for c in target.all_targets],
                             "targets": [c.text() for c in target.all_targets],
                             "target_item_id": target.target.id, "target": target.target.text()}
        return state

    def _targets(self, state) -> str:
        return "; ".join(f'"{c.name}" ({c.text(with_name=False)})'
                         for c in state.target.all_targets)

    def _persona(self, state) -> str:
        # script/chat.py L107-111: the seeker is told its target items, to accept them, to
        # refuse anything else while describing them, and never to say a target's title.
        return ("You are a user chatting with a recommender to get a recommendation. The items "
                f"you are after: {self._targets(state)}. If the recommender suggests one of "
                "them, accept it. If it suggests something else, turn it down and describe what "
                "you are after; if it asks about your preferences, describe them. Never say the "
                "name of an item you are after. One or two sentences per message.")

    def context(self, state):
        """The dataset dialogue's turns before its recommendation (chat.py L238-257), a last
        user turn aside: that one is the opening."""
        turns = state.target.context
        if turns and turns[-1][0] == "user":
            turns = turns[:-1]
        state.transcript.extend(turns)
        return turns

    def opening(self, state):
        turns = state.target.context
        if turns and turns[-1][0] == "user":  # the dataset's own last user turn opens
            state.transcript.append(("user", turns[-1][1]))
            return Utterance(turns[-1][1], CONTEXT)
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        f"The conversation so far:\n{_transcript(state)}\n\nWrite your next "
                        "message to the recommender. "
                        + _ask_for('{"utterance":"<your message>"}'))}]
        data = self.ask(state, messages, UTTERANCE_FORMAT)
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "greet_and_seek")

    def respond(self, state, answer, shown):
        state.transcript.append(("system", answer.response))
        targets = [c.id for c in state.target.all_targets]
        if accepts(answer.ranked_item_ids, targets, self.accept_at):
            text = "Yes, that is what I was looking for. Thank you!"
            state.transcript.append(("user", text))
            state.ended_by_user = True
            return Utterance(text, "accept", done=True)
        # chat.py L289-294: the list is shown only with the accepted or the last turn; before
        # that the seeker reads the recommender's words alone.
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        f"The conversation so far:\n{_transcript(state)}\n\nNothing suggested "
                        "is what you are after. Reply to the recommender. "
                        + _ask_for('{"utterance":"<your message>"}'))}]
        data = self.ask(state, messages, UTTERANCE_FORMAT)
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "reject_and_refine")

    def finish(self, state, answer, final):
        """iEvaLM's persuasiveness (chat.py L348-363): the seeker, who knows its targets,
        scores the system's explanation 0–2 with iEvaLM's rubric after the dialogue, the final
        list shown with the last system turn (L289-294)."""
        if not state.ended_by_user:  # the turn limit: the last answer was never replied to
            state.transcript.append(("system", answer.response))
        listed = "\n".join(f"{i}. {card.name}" for i, card in enumerate(final[:50], 1))
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        f"The conversation:\n{_transcript(state)}\n\nWith its last message the "
                        f"recommender listed:\n{listed or '(nothing)'}\n\n"
                        + IEVALM_PERSUASIVENESS_RUBRIC)}]
        outcome = self.ask_outcome(state, messages, PERSUASIVENESS_FORMAT,
                                   parse_persuasiveness, reask=_persuasiveness_reask)
        if outcome.value is None:
            return {"persuasiveness": None, "persuasiveness_failure": outcome.failure}
        return {"persuasiveness": outcome.value.score,
                "persuasiveness_reason": outcome.value.rationale}


SIMULATORS = {cls.name: cls for cls in (PepperSimulator, IEvaLMSimulator, TemplateSimulator)}

# A leaderboard of its own per simulator: the `simulated-<name>` protocol ranks the runs
# (evaluator `simulation.<name>`) of every system simulated with that simulator.
SIMULATED_PROTOCOL_PREFIX = "simulated-"


def simulated_protocol(simulator: str) -> str:
    return f"{SIMULATED_PROTOCOL_PREFIX}{simulator}"


def simulator_of_protocol(protocol: str) -> str | None:
    """The simulator whose leaderboard PROTOCOL is, None for a submission protocol."""
    if protocol.startswith(SIMULATED_PROTOCOL_PREFIX):
        name = protocol[len(SIMULATED_PROTOCOL_PREFIX):]
        return name if name in SIMULATORS else None
    return None


def simulator_config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


# A simulated board ranks runs of one *design* only (issue 34): the same simulator and
# configuration (version, model, shown K, ...), number of users, turns, pool, seed (hence the
# same users) and user pool (with or without the released hidden split). Everything in a
# simulation's configuration but the system and the benchmark it ran on.
DESIGN_PREFIX = "design-"
_NOT_DESIGN = ("system", "benchmark", "dialogues")
# The sanitised protocol's runs (Zhu et al.'s "-Both": leaked dialogues removed) keep their
# design's key with this suffix: the same users, another set of dialogues (lib/simulators/
# leakage.py), ranked on their own.
SANITISED_SUFFIX = "-both"


@dataclass(frozen=True)
class Design:
    key: str  # `design-` and 12 hex digits of the design's hash: a URL parameter as it is
    label: str  # what the board's selector shows


def simulation_design(config: dict) -> Design:
    """The design of a simulation run from its stored configuration (`Run.config`)."""
    design = {k: v for k, v in config.items() if k not in _NOT_DESIGN}
    parts = [f"{design.get('simulator', '?')} {design.get('version', '')}".strip(),
             f"{design.get('users', '?')} users × {design.get('turns', '?')} turns",
             f"seed {design.get('seed', 0)}", f"pool {design.get('pool', 'catalogue')}",
             f"top {design.get('shown_k', '?')} shown"]
    if design.get("model"):
        parts.append(f"model {design['model']}")
    if design.get("accept_at"):
        parts.append(f"accepts in top {design['accept_at']}")
    if design.get("pcir"):  # runs stored before the option computed Eq. 3
        parts.append(f"PCIR_avg {design['pcir']}")
    if design.get("hidden_users"):
        parts.append("hidden split included")
    key = DESIGN_PREFIX + simulator_config_hash(design)[:12]
    if config.get("dialogues") == SANITISED:
        key += SANITISED_SUFFIX
        parts.append(SANITISED_LABEL)
    return Design(key, " · ".join(parts))


def design_variant(key: str, sanitised: bool) -> str:
    """The key of design KEY's runs on all dialogues or (SANITISED) on the leak-free ones."""
    base = key[:-len(SANITISED_SUFFIX)] if key.endswith(SANITISED_SUFFIX) else key
    return base + SANITISED_SUFFIX if sanitised else base
