"""Scores from distributions (FACE §2.2).

Eq. 1: a particle's score for an aspect is the expectation Σ r · P(r | I, p) over the allowed
grades r, read from the model's top log-probabilities at the grade token of its answer (the
token after the last `Score:`). The probabilities are renormalized over the allowed grades; the
share of the reported probability mass outside them (other tokens, and whatever the provider
did not report) is kept with the score and flagged above `MASS_FLAG`.

Turn and dialogue scores are the means of their particles' scores, E(I, P_x); several
instructions are averaged, s = (1/|I|) Σ_I E(I, P_x). Particles or instructions without a
usable score are left out of the means (and reported), never given a made-up value.

The same distributions give each unit's uncertainty (`score_uncertainty`, stored in the unit's
`detail["uncertainty"]`; statistics.md, "Label these next"): the standard deviation of the
mixture of its particles' grade distributions, weighted as the score weights them, so the
score is the mixture's mean. A judge sure of every grade and agreeing across particles and
instructions has a small one; the active handout reads it as the judge's own doubt.

A model or server that returns no log-probabilities is refused (`LogprobsUnavailable`): FACE
has no fallback to a sampled grade.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluation.lib.llm.face.aspects import FaceAspect
from evaluation.lib.llm.face.prompts import SCORE_MARKER, score_format, scoring_messages
from evaluation.lib.llm.gateway import (
    LLMCallError,
    LLMGateway,
    ModelConfig,
    TokenLogprob,
    UsageMeter,
)

UNCERTAINTY_SOURCE = ("FACE grade distributions (top logprobs, Eq. 1): sd of their mixture, "
                      "weighted as the score")
TOP_LOGPROBS = 20  # the most the OpenAI API allows; enough for every grade of a 0–4 scale
MASS_FLAG = 0.2  # above this share of probability outside the grades, a score is flagged


class LogprobsUnavailable(RuntimeError):
    """The model's answers carry no (top) log-probabilities, so Eq. 1 cannot be computed."""


def refusal(model: str) -> str:
    return (f"{model} returned no top log-probabilities. FACE reads each score from the grade's "
            "probability distribution (FACE §2.2, Eq. 1) and has no fallback: use a server that "
            "returns logprobs (OpenAI, vLLM, evaluation.lib.llm.local_server).")


@dataclass(frozen=True)
class ParticleScore:
    value: float | None
    distribution: Mapping[int, float]  # renormalized over the allowed grades
    mass_outside: float | None
    failure: str | None = None

    @property
    def flagged(self) -> bool:
        return self.mass_outside is not None and self.mass_outside > MASS_FLAG

    def to_dict(self) -> dict:
        data = {"value": self.value, "mass_outside": self.mass_outside,
                "distribution": {str(k): v for k, v in self.distribution.items()}}
        if self.flagged:
            data["flagged"] = True
        if self.failure:
            data["failure"] = self.failure
        return data


def expected_score(alternatives: Iterable[tuple[str, float]],
                   allowed: Sequence[int]) -> ParticleScore:
    """Eq. 1 over one token position's top alternatives [(token, logprob)]."""
    grades = set(allowed)
    mass: dict[int, float] = {}
    for token, logprob in alternatives:
        text = token.strip()
        if re.fullmatch(r"\d+", text) and int(text) in grades:
            # " 2" and "2" are different tokens for the same grade: their probabilities add up.
            mass[int(text)] = mass.get(int(text), 0.0) + math.exp(logprob)
    inside = sum(mass.values())
    outside = max(0.0, 1.0 - inside)
    if inside <= 0.0:
        return ParticleScore(None, {}, outside, "no probability on any allowed grade")
    distribution = {grade: mass.get(grade, 0.0) / inside for grade in sorted(grades)}
    value = sum(grade * p for grade, p in distribution.items())
    return ParticleScore(value, distribution, outside)


def grade_position(tokens: Sequence[TokenLogprob]) -> int | None:
    """Index of the grade token: the first non-blank token after the last `Score:` marker."""
    joined = "".join(t.token for t in tokens)
    marker = joined.lower().rfind(SCORE_MARKER.lower())
    if marker < 0:
        return None
    after = marker + len(SCORE_MARKER)
    position = 0
    for index, token in enumerate(tokens):
        start, position = position, position + len(token.token)
        if position <= after:
            continue
        rest = token.token[max(0, after - start):]
        if rest.strip():
            return index
    return None


def score_from_answer(tokens: Sequence[TokenLogprob] | None, model: str,
                      allowed: Sequence[int]) -> ParticleScore:
    if tokens is None or (tokens and not any(t.top for t in tokens)):
        raise LogprobsUnavailable(refusal(model))
    index = grade_position(tokens)
    if index is None:
        return ParticleScore(None, {}, None, f'no "{SCORE_MARKER} N" line in the answer')
    return expected_score(tokens[index].top, allowed)


def score_particle(gateway: LLMGateway, config: ModelConfig, instruction: str,
                   aspect: FaceAspect, history: Sequence[tuple[str, str]], particle,
                   *, max_reasks: int = 1, meter: UsageMeter | None = None) -> ParticleScore:
    """Eq. 1 for one (instruction, particle) pair; re-asks when the answer has no grade line."""
    config = scored_config(config)
    messages = scoring_messages(instruction, aspect, history, particle.act, particle.mention,
                                particle.feedback)
    outcome = ParticleScore(None, {}, None, "no answer")
    for _ in range(max_reasks + 1):
        try:
            result = gateway.complete(config, messages, meter=meter,
                                      answer_format=score_format(aspect))
        except LLMCallError as error:
            return ParticleScore(None, {}, None, f"llm_error: {error}")
        outcome = score_from_answer(result.logprobs, config.model, aspect.scores)
        if outcome.value is not None:
            return outcome
        messages = [*messages, {"role": "assistant", "content": result.text},
                    {"role": "user", "content": f"Your answer could not be used: "
                     f"{outcome.failure}. End with one line \"{SCORE_MARKER} N\", N a whole "
                     f"number from {aspect.low} to {aspect.high}."}]
    return outcome


def scored_config(config: ModelConfig) -> ModelConfig:
    return dataclasses.replace(config, logprobs=True, top_logprobs=TOP_LOGPROBS)


def mean_or_none(values: Iterable[float | None]) -> float | None:
    usable = [v for v in values if v is not None]
    return statistics.fmean(usable) if usable else None


def face_score(per_instruction: Sequence[Sequence[float | None]]) -> float | None:
    """s = (1/|I|) Σ_I E(I, P_x): per instruction the particle mean, then the instruction mean.

    PER_INSTRUCTION holds, per instruction, the particle scores of one turn or dialogue.
    """
    return mean_or_none(mean_or_none(scores) for scores in per_instruction)


def score_uncertainty(per_instruction: Sequence[Sequence[ParticleScore]]) -> dict | None:
    """The unit's uncertainty from its particles' distributions, PER_INSTRUCTION as `face_score`
    takes them: each usable distribution weighs 1 / (instructions with a usable score × that
    instruction's usable particles), the weights `face_score` gives their expectations, so the
    mixture's mean is the FACE score. `sd` is the mixture's standard deviation (a particle's own
    spread and the particles' and instructions' disagreement), `within_sd` the root of the mean
    variance inside the distributions (the model's doubt alone). None without a usable score."""
    usable = [[s for s in scores if s.value is not None and s.distribution]
              for scores in per_instruction]
    usable = [scores for scores in usable if scores]
    if not usable:
        return None
    mean = second = within = 0.0
    for scores in usable:
        weight = 1.0 / (len(usable) * len(scores))
        for score in scores:
            m = sum(g * p for g, p in score.distribution.items())
            m2 = sum(g * g * p for g, p in score.distribution.items())
            mean += weight * m
            second += weight * m2
            within += weight * max(m2 - m * m, 0.0)
    return {"sd": math.sqrt(max(second - mean * mean, 0.0)), "within_sd": math.sqrt(within),
            "source": UNCERTAINTY_SOURCE, "distributions": sum(len(s) for s in usable)}
