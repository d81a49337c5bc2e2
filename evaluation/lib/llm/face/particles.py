"""Conversation particles (FACE §2.1): the decomposer D maps (history h, system response r_t,
user reply r_{t+1}) to particles (dialogue act, mention, user feedback).

A response the model cannot decompose (no usable JSON list after the re-asks, or an LLM error)
is returned with its reason and the model's last answer; it is never dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from evaluation.lib.llm.face.prompts import (
    DECOMPOSITION_FORMAT,
    DIALOGUE_ACTS,
    decomposer_messages,
    decomposer_reask,
)
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import Parsed, ask_until_parsed


@dataclass(frozen=True)
class Particle:
    act: str
    mention: str
    feedback: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Decomposition:
    """The particles of one system turn, or why there are none."""

    turn_index: int
    particles: tuple[Particle, ...]
    failure: str | None
    attempts: int
    last_answer: str = ""

    def to_dict(self) -> dict:
        data = {"turn_index": self.turn_index, "attempts": self.attempts,
                "particles": [p.to_dict() for p in self.particles]}
        if self.failure:
            data.update({"failure": self.failure, "answer": self.last_answer})
        return data


def parse_particles(text: str) -> Parsed[tuple[Particle, ...]]:
    """The last JSON list in TEXT (a ```json block preferred) as particles, or the problem."""
    decoder = json.JSONDecoder()
    blocks = [m.group(1) for m in re.finditer(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)]
    found = None
    for candidate in [*reversed(blocks), text]:
        for start in reversed([i for i, ch in enumerate(candidate) if ch == "["]):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, list):
                found = value
                break
        if found is not None:
            break
    if found is None:
        return Parsed(problem="no JSON list found")
    if not found:
        return Parsed(problem="the JSON list is empty")
    particles = []
    for position, entry in enumerate(found):
        if not isinstance(entry, dict):
            return Parsed(problem=f"item {position} is not an object")
        act = str(entry.get("dialogue_act", "")).strip().lower()
        mention = entry.get("mention", entry.get("nugget_mention"))
        if act not in DIALOGUE_ACTS:
            return Parsed(problem=f"item {position}: dialogue_act {act!r} is not one of "
                                  f"{', '.join(DIALOGUE_ACTS)}")
        if not isinstance(mention, str) or not mention.strip():
            return Parsed(problem=f"item {position}: mention is missing or empty")
        feedback = entry.get("user_feedback", "")
        particles.append(Particle(act, mention.strip(),
                                  feedback.strip() if isinstance(feedback, str) else ""))
    return Parsed(tuple(particles))


def system_turns(turns: Sequence[tuple[str, str]]) -> list[int]:
    """Indices of the system turns that are decomposed (empty responses have no particle)."""
    return [i for i, (role, text) in enumerate(turns) if role == "system" and text.strip()]


def decompose_turn(gateway: LLMGateway, config: ModelConfig, turns: Sequence[tuple[str, str]],
                   index: int, *, max_reasks: int = 2,
                   meter: UsageMeter | None = None) -> Decomposition:
    """Particles of system turn INDEX of TURNS [(role, text)], given the history before it and
    the user's next turn."""
    following = turns[index + 1] if index + 1 < len(turns) else None
    reply = following[1] if following is not None and following[0] == "user" else None
    messages = decomposer_messages(turns[:index], turns[index][1], reply)
    outcome = ask_until_parsed(gateway, config, messages, parse_particles, decomposer_reask,
                               max_reasks=max_reasks, meter=meter,
                               answer_format=DECOMPOSITION_FORMAT)
    last = outcome.raw_answers[-1] if outcome.raw_answers else ""
    if outcome.value is None:
        return Decomposition(index, (), outcome.failure, outcome.attempts, last)
    return Decomposition(index, outcome.value, None, outcome.attempts, last)
