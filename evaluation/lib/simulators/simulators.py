"""User simulators that talk to a live system (docs/formats.md §4), each a versioned
configuration: its name, version and options are stored with every run that uses it.

- `pepper`: PEPPER's target-free simulator (Kim et al., §3.2). General preferences (Likes and
  Dislikes) are extracted by the LLM from the reviews of the user's *seen* items only (§3.2.1);
  at each turn the system's top-K items are split into seen and unseen and *reflected
  preferences* are generated for them (seen: recalled through the user's reviews; unseen: a like
  or dislike consistent with the general preferences, §3.2.2) and fed into the next utterance.
  Concord asks for the reflections and the next utterance in one answer (reflections first, so
  the utterance is conditioned on them), one LLM call per turn. It never sees target ids.
- `ievalm`: an iEvaLM-style target-based user (Wang et al.; the way CoRE's logs were made): the
  user knows its target item's attributes, never says its name, and reacts to each
  recommendation; the dialogue ends when the target is among the first `accept_at` items shown.
- `template`: a deterministic, seeded, target-free simulator that needs no LLM (offline demo and
  tests). It is a template stand-in for PEPPER, not PEPPER: preferences are the categories of
  the seen items the user rated well (likes) or badly (dislikes), reflections are rules.

LLM simulators go through the gateway (cache, cost, retries, concurrency); a simulator answer
that cannot be parsed after the re-asks raises `SimulatorError` and fails the dialogue.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.live.contract import LiveAnswer
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import Parsed, ask_until_parsed, extract_json_object
from evaluation.lib.simulators.leakage import SANITISED, SANITISED_LABEL
from evaluation.lib.simulators.users import HistoryView, ItemCard, TargetView

GOOD_STARS = 3.5


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


class Simulator(ABC):
    name = ""
    version = ""
    target_based = False
    needs_llm = False

    def __init__(self, *, shown_k: int = 5, seed: int = 0):
        self.shown_k, self.seed = shown_k, seed

    def config(self) -> dict[str, Any]:
        return {"simulator": self.name, "version": self.version, "shown_k": self.shown_k,
                "seed": self.seed, "target_based": self.target_based}

    def start(self, history: HistoryView, target: TargetView | None = None) -> SimState:
        rng = random.Random(f"{self.seed}:{history.user_id}")
        return SimState(history, target if self.target_based else None, rng)

    @abstractmethod
    def opening(self, state: SimState) -> Utterance: ...

    @abstractmethod
    def respond(self, state: SimState, answer: LiveAnswer,
                shown: Sequence[ItemCard]) -> Utterance: ...


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

    def start(self, history, target=None):
        state = super().start(history, target)
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
    return f"Your reply could not be used: {problem}. Reply with the JSON object only."


class _LLMSimulator(Simulator):
    needs_llm = True

    def __init__(self, *, gateway: LLMGateway, config: ModelConfig, shown_k: int = 5,
                 seed: int = 0, max_reasks: int = 2, meter: UsageMeter | None = None):
        super().__init__(shown_k=shown_k, seed=seed)
        self.gateway, self.model, self.max_reasks, self.meter = gateway, config, max_reasks, meter

    def config(self):
        return {**super().config(), "model": self.model.model,
                "temperature": self.model.temperature, "max_reasks": self.max_reasks}

    def ask(self, state: SimState, messages, parse) -> Any:
        started = time.perf_counter()
        outcome = ask_until_parsed(self.gateway, self.model, messages, parse, _reask,
                                   max_reasks=self.max_reasks, meter=self.meter)
        state.llm_seconds += time.perf_counter() - started
        if outcome.value is None:
            raise SimulatorError(f"{self.name} simulator: {outcome.failure}")
        return outcome.value


def _utterance_parser(*extra: str):
    def parse(text: str) -> Parsed[dict]:
        data = extract_json_object(text)
        if data.value is None:
            return data
        utterance = data.value.get("utterance")
        if not isinstance(utterance, str) or not utterance.strip():
            return Parsed(problem='"utterance" must be a non-empty string')
        for key in extra:
            if not isinstance(data.value.get(key), list):
                return Parsed(problem=f'"{key}" must be a list')
        return Parsed(data.value)
    return parse


class PepperSimulator(_LLMSimulator):
    name, version = "pepper", "1.0"

    def start(self, history, target=None):
        state = super().start(history, None)  # target-free: never given the target
        messages = [
            {"role": "system", "content": "You summarise a person's tastes from their reviews."},
            {"role": "user", "content": (
                "Here are places this person visited, with their reviews:\n"
                f"{_seen_text(history)}\n\nFocus on the most representative features. Reply "
                'with JSON only: {"likes": ["<short binary preference>", ...], '
                '"dislikes": ["...", ...], "narrative": "<two sentences in the first person>"}')},
        ]

        def parse(text):
            data = extract_json_object(text)
            if data.value is None:
                return data
            if not all(isinstance(data.value.get(k), list) for k in ("likes", "dislikes")):
                return Parsed(problem='"likes" and "dislikes" must be lists of strings')
            return Parsed(data.value)

        prefs = self.ask(state, messages, parse)
        state.preferences = {"likes": [str(x) for x in prefs["likes"]],
                             "dislikes": [str(x) for x in prefs["dislikes"]],
                             "narrative": str(prefs.get("narrative") or "")}
        return state

    def _persona(self, state) -> str:
        p = state.preferences
        where = f" in {state.history.city}" if state.history.city else ""
        return (f"You are a user looking for a {state.history.item_type or 'place'}{where}. "
                f"{p['narrative']}\nLikes: {'; '.join(p['likes'])}\n"
                f"Dislikes: {'; '.join(p['dislikes'])}\nYou do not know which item you will "
                "end up liking; talk naturally, one or two sentences, and never invent facts.")

    def opening(self, state):
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        "Start the conversation with a recommender by asking for a "
                        'recommendation that fits your general preferences. JSON only: '
                        '{"utterance": "..."}')}]
        data = self.ask(state, messages, _utterance_parser())
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
                        "UNSEEN items say whether you would like it given your preferences. Then "
                        "write your next message to the recommender, using those reflections. "
                        'JSON only: {"reflected_preferences": [{"item_id": "...", "opinion": '
                        '"like|dislike", "reason": "..."}], "utterance": "..."}')}]
        data = self.ask(state, messages, _utterance_parser("reflected_preferences"))
        state.reflections.append([r for r in data["reflected_preferences"]
                                  if isinstance(r, dict)])
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "provide_preference")


class IEvaLMSimulator(_LLMSimulator):
    name, version = "ievalm", "1.0"
    target_based = True

    def __init__(self, *, accept_at: int = 5, **options):
        super().__init__(**options)
        self.accept_at = accept_at

    def config(self):
        return {**super().config(), "accept_at": self.accept_at}

    def start(self, history, target=None):
        if target is None:
            raise SimulatorError("the iEvaLM-style simulator needs a target item")
        state = super().start(history, target)
        state.preferences = {"target_item_id": target.target.id,
                             "target": target.target.text()}
        return state

    def _persona(self, state) -> str:
        return ("You are a user talking to a recommender. You are looking for an item with "
                f"these attributes: {state.target.target.text(with_name=False)}. Never say its "
                "name; describe what you want, react to the recommendations (why they do not "
                "fit), one or two sentences per message.")

    def opening(self, state):
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": 'Open the conversation. JSON only: '
                                                '{"utterance": "..."}'}]
        data = self.ask(state, messages, _utterance_parser())
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "greet_and_seek")

    def respond(self, state, answer, shown):
        state.transcript.append(("system", answer.response))
        if state.target.target.id in answer.ranked_item_ids[:self.accept_at]:
            text = "Yes, that is exactly what I was looking for. Thank you!"
            state.transcript.append(("user", text))
            return Utterance(text, "accept", done=True)
        names = ", ".join(card.name for card in shown[:self.shown_k]) or "nothing"
        messages = [{"role": "system", "content": self._persona(state)},
                    {"role": "user", "content": (
                        f"The conversation so far:\n{_transcript(state)}\n\nYou were shown: "
                        f"{names}. None is what you want. Reply to the recommender. JSON only: "
                        '{"utterance": "..."}')}]
        data = self.ask(state, messages, _utterance_parser())
        state.transcript.append(("user", data["utterance"]))
        return Utterance(data["utterance"], "reject_and_refine")


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
