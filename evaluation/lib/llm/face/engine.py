"""FACE on one conversation: decompose every system turn (§2.1), score every particle with every
instruction of every aspect (Eq. 1), and aggregate per turn and per dialogue (§2.2).

Shared by evaluation runs and by instruction optimization, which scores the same particles with
many instructions (every call goes through the gateway's cache, so a particle scored once with an
instruction is never paid for again).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.lib.llm.face.aspects import ASPECTS, TURN
from evaluation.lib.llm.face.particles import Decomposition, Particle, decompose_turn, system_turns
from evaluation.lib.llm.face.scoring import (
    ParticleScore,
    face_score,
    mean_or_none,
    score_particle,
    score_uncertainty,
)
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter

Turns = Sequence[tuple[str, str]]  # (role, text), position = the turn's index in the dialogue


@dataclass
class ConversationParticles:
    turns: Turns
    decompositions: list[Decomposition]

    def particles(self, turn_index: int | None = None) -> list[tuple[int, int, Particle]]:
        """(turn index, position, particle) of one turn, or of the whole dialogue."""
        return [(d.turn_index, position, p) for d in self.decompositions
                if turn_index is None or d.turn_index == turn_index
                for position, p in enumerate(d.particles)]

    @property
    def failures(self) -> list[Decomposition]:
        return [d for d in self.decompositions if d.failure]


def decompose(gateway: LLMGateway, config: ModelConfig, turns: Turns, *, max_reasks: int = 2,
              meter: UsageMeter | None = None) -> ConversationParticles:
    return ConversationParticles(turns, [
        decompose_turn(gateway, config, turns, index, max_reasks=max_reasks, meter=meter)
        for index in system_turns(turns)])


@dataclass
class AspectResult:
    """One aspect on one conversation: unit scores and every particle's score per instruction."""

    aspect: str
    # turn index (turn aspects) or None (the dialogue) -> FACE score
    units: dict[int | None, float | None] = field(default_factory=dict)
    # (turn index, position) -> one ParticleScore per instruction
    particles: dict[tuple[int, int], list[ParticleScore]] = field(default_factory=dict)


def score_conversation(gateway: LLMGateway, config: ModelConfig,
                       conversation: ConversationParticles, aspect_key: str,
                       instructions: Sequence[str], *, max_reasks: int = 1,
                       meter: UsageMeter | None = None) -> AspectResult:
    """FACE(I^a, P_x) for every unit x of the conversation (raises LogprobsUnavailable)."""
    aspect = ASPECTS[aspect_key]
    result = AspectResult(aspect_key)
    for turn_index, position, particle in conversation.particles():
        result.particles[(turn_index, position)] = [
            score_particle(gateway, config, instruction, aspect,
                           conversation.turns[:turn_index], particle, max_reasks=max_reasks,
                           meter=meter)
            for instruction in instructions]
    result.units = aggregate(result.particles, len(instructions), aspect.level == TURN,
                             [d.turn_index for d in conversation.decompositions])
    return result


def aggregate(particles: Mapping[tuple[int, int], Sequence[ParticleScore]], instructions: int,
              per_turn: bool, turn_indices: Sequence[int]) -> dict[int | None, float | None]:
    """Per turn (turn aspects) or for the dialogue: the mean over instructions of the particle
    means (FACE §2.2). A turn without particles has no score (None)."""
    def score(keys) -> float | None:
        return face_score([[particles[k][i].value for k in keys] for i in range(instructions)])
    if per_turn:
        return {t: score([k for k in particles if k[0] == t]) for t in turn_indices}
    return {None: score(list(particles))}


def instruction_means(particles: Mapping[tuple[int, int], Sequence[ParticleScore]],
                      instructions: int) -> list[float | None]:
    """E(I, P_x) per instruction over all the given particles (shown beside the FACE score)."""
    return [mean_or_none(particles[k][i].value for k in particles) for i in range(instructions)]


def unit_uncertainty(particles: Mapping[tuple[int, int], Sequence[ParticleScore]],
                     instructions: int) -> dict | None:
    """The uncertainty of the unit whose PARTICLES these are (`scoring.score_uncertainty`, the
    particles grouped per instruction as `aggregate` groups them)."""
    return score_uncertainty([[particles[k][i] for k in particles] for i in range(instructions)])
