"""The selection steps of FACE's instruction optimization (FACE §2.3, Algorithm 1; Appendix B).

- `split_dialogues`: train/dev split by dialogue with a seed (dev = the validation set H').
- `parse_rewrites`: the gradient ∇ and rewrite δ answer (merged, Appendix C.2) as
  (feedback, new instruction) pairs, at most α of them.
- `ucb_select`: Select^UCB_{b'} (Appendix B.1, Algorithm 2, after Pryzant et al. 2023): T rounds;
  each samples particles uniformly, pulls the instruction maximising Q(I) + c·sqrt(log t / N(I))
  (an instruction never pulled goes first), observes the correlation r of its scores with the
  human labels on the sample, then N(I) += |P_smp| and Q(I) += (r − Q(I)) / N(I), exactly as
  Algorithm 2 writes it; returns the top b' by Q.
- `beam_select`: the top b of the pool by training correlation (Algorithm 1, line 18).
- `correlation`: Spearman's ρ (or Pearson's r) of paired scores; None when undefined.

Ties are broken by position (the earlier candidate wins), so a run is reproducible.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.lib.stats.correlation import correlate

UCB_C = 1.0
_REWRITE = re.compile(r"(?:<feedback>(.*?)</feedback>\s*)?<instructions>(.*?)</instructions>",
                      flags=re.DOTALL | re.IGNORECASE)  # FACE Appendix C.1: c = 1


def correlation(predicted: Mapping[Hashable, float | None], gold: Mapping[Hashable, float],
                method: str = "spearman") -> float | None:
    return correlate(predicted, gold, methods=(method,))[method].statistic


def split_dialogues(dialogue_ids, *, dev_share: float, seed: int) -> tuple[list[str], list[str]]:
    """(train, dev): the dialogues shuffled with SEED, DEV_SHARE of them (at least one of two
    or more) held out for the final selection."""
    ids = sorted(set(dialogue_ids))
    if not 0 < dev_share < 1:
        raise ValueError("the dev share must be between 0 and 1")
    random.Random(seed).shuffle(ids)
    dev_size = max(1, round(len(ids) * dev_share)) if len(ids) > 1 else 0
    return sorted(ids[dev_size:]), sorted(ids[:dev_size])


def parse_rewrites(text: str, limit: int) -> list[tuple[str, str]]:
    """[(feedback, new instruction)] from ``<feedback>…</feedback><instructions>…</instructions>``
    pairs; an instruction without its own feedback gets the preceding text as its gradient."""
    pairs = []
    for match in _REWRITE.finditer(text):
        feedback, instruction = (match.group(1) or "").strip(), match.group(2).strip()
        if instruction and (not pairs or instruction != pairs[-1][1]):
            pairs.append((feedback, instruction))
    return pairs[:limit]


@dataclass
class UCBState:
    pulls: list[int] = field(default_factory=list)  # N(I), in particles
    estimates: list[float] = field(default_factory=list)  # Q(I)
    history: list[tuple[int, float | None]] = field(default_factory=list)  # (arm, reward)


def ucb_select(candidates: int, population: Sequence[Hashable],
               reward: Callable[[int, Sequence[Hashable]], float | None], *, keep: int,
               rounds: int, sample_size: int, rng: random.Random,
               c: float = UCB_C) -> tuple[list[int], UCBState]:
    """Indices of the top KEEP of CANDIDATES arms after ROUNDS UCB pulls (Algorithm 2).

    REWARD(arm, sample) is the correlation of arm's scores with the labels on the sampled
    particles; an undefined correlation (constant scores) counts as 0.
    """
    state = UCBState([0] * candidates, [0.0] * candidates)
    if candidates == 0:
        return [], state
    population = list(population)
    for t in range(1, rounds + 1):
        sample = rng.sample(population, min(sample_size, len(population)))
        arm = max(range(candidates), key=lambda i: (_ucb(state, i, t, c), -i))
        observed = reward(arm, sample)
        value = 0.0 if observed is None else observed
        state.history.append((arm, observed))
        state.pulls[arm] += len(sample)
        state.estimates[arm] += (value - state.estimates[arm]) / state.pulls[arm]
    ranked = sorted(range(candidates), key=lambda i: (-state.estimates[i], i))
    return ranked[:keep], state


def _ucb(state: UCBState, arm: int, t: int, c: float) -> float:
    if state.pulls[arm] == 0:
        return math.inf
    return state.estimates[arm] + c * math.sqrt(math.log(t) / state.pulls[arm])


def beam_select(scores: Mapping[Hashable, float | None], width: int) -> list[Hashable]:
    """The WIDTH keys with the highest correlation (undefined last), in insertion order on ties."""
    order = {key: position for position, key in enumerate(scores)}
    ranked = sorted(scores, key=lambda k: (scores[k] is None, -(scores[k] or 0.0), order[k]))
    return ranked[:width]
