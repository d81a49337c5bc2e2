"""Vote quality in the arena (docs/arena.md, "Vote quality").

Flags (a vote may carry several; ratings are shown with and without flagged votes):

- ``too_fast``: the vote came sooner after the last answers than a person can skim both: under
  (words in both final answers) / SKIM_WORDS_PER_SECOND seconds, with skimming at 700 words a
  minute (the upper end of skimming rates in Rayner et al. 2016, "So much to read, so little
  time", Psychological Science in the Public Interest 17(1)), and never under 2 seconds.
- ``same_side``: the vote's session cast at least SAME_SIDE_MIN_VOTES decisive votes and every
  one for the same side. Sides are drawn at random per battle, so a person who prefers the
  better system picks A about half the time; 8 alike by chance has probability 2 · 2⁻⁸ < 1%.
- ``owner``: cast by an owner of either system (the safety issue's screening; stored on the
  vote as its exclusion reason).

Annotator ability (an option beside plain Bradley–Terry): am-ELO's model (Liu et al. 2025,
arXiv 2505.03475) gives each voter k a discrimination a_k in P(i beats j | k) =
σ(a_k (θ_i − θ_j)): a careful voter has a_k near or above 1, a random clicker near 0, a
contrarian below 0. Concord fits θ and a by alternating Newton steps on the joint likelihood
(ties half a win, as everywhere in the arena) with a normal prior a_k ~ N(1, 0.5²) on each
voter's ability — a named variant: am-ELO normalises abilities instead; the prior keeps a
voter with two votes from getting an extreme weight.

Pure code: no Django.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from evaluation.lib.stats.arena import (
    ELO_BASE,
    ELO_INITIAL,
    ELO_SCALE,
    fit_bradley_terry,
    outcome_score,
)

SKIM_WORDS_PER_SECOND = 700 / 60
MIN_READING_SECONDS = 2.0
SAME_SIDE_MIN_VOTES = 8
ABILITY_PRIOR_MEAN = 1.0
ABILITY_PRIOR_SD = 0.5
FLAGS = {
    "too_fast": "cast faster than a person can skim both answers",
    "same_side": "from a session that always picked the same side",
    "owner": "cast by an owner of one of the two systems",
}


@dataclass(frozen=True)
class VoteRecord:
    """What the flags read from one vote."""

    key: Hashable  # the vote's id
    session: str
    outcome: str  # a, b, tie, both_bad
    seconds_to_vote: float | None  # from the last answers shown to the vote; None: unknown
    words_shown: int  # words in both sides' final answers
    by_owner: bool = False


def reading_seconds(words_shown: int) -> float:
    """The least time a person needs to skim WORDS_SHOWN words."""
    return max(MIN_READING_SECONDS, words_shown / SKIM_WORDS_PER_SECOND)


def vote_flags(votes: Sequence[VoteRecord]) -> dict[Hashable, list[str]]:
    """vote key -> its flags (in FLAGS order; empty when none)."""
    by_session: dict[str, list[str]] = defaultdict(list)
    for vote in votes:
        if vote.outcome in ("a", "b"):
            by_session[vote.session].append(vote.outcome)
    one_sided = {session for session, sides in by_session.items()
                 if len(sides) >= SAME_SIDE_MIN_VOTES and len(set(sides)) == 1}
    flags = {}
    for vote in votes:
        found = []
        if vote.seconds_to_vote is not None \
                and vote.seconds_to_vote < reading_seconds(vote.words_shown):
            found.append("too_fast")
        if vote.session in one_sided:
            found.append("same_side")
        if vote.by_owner:
            found.append("owner")
        flags[vote.key] = found
    return flags


@dataclass(frozen=True)
class AbilityFit:
    ratings: dict[Hashable, float]  # on the Elo scale, mean 1000
    abilities: dict[Hashable, float]  # voter -> a_k
    iterations: int


def ability_weighted_ratings(
    votes: Sequence[tuple[Hashable, Hashable, str, Hashable]], *, base: float = ELO_BASE,
    scale: float = ELO_SCALE, initial: float = ELO_INITIAL, max_iterations: int = 50,
    tolerance: float = 1e-7,
) -> AbilityFit | None:
    """Bradley–Terry with a discrimination per voter (system_a, system_b, outcome, voter);
    None when the plain maximum-likelihood ratings do not exist (the starting point)."""
    names = sorted({v[0] for v in votes} | {v[1] for v in votes}, key=str)
    voters = sorted({v[3] for v in votes}, key=str)
    if len(names) < 2:
        return None
    index = {name: i for i, name in enumerate(names)}
    who = {voter: k for k, voter in enumerate(voters)}
    first = np.array([index[v[0]] for v in votes])
    second = np.array([index[v[1]] for v in votes])
    voter = np.array([who[v[3]] for v in votes])
    score = np.array([outcome_score(v[2]) for v in votes])
    size = len(names)
    wins = np.zeros((size, size))
    np.add.at(wins, (first, second), score)
    np.add.at(wins, (second, first), 1 - score)
    theta = fit_bradley_terry(wins)
    if theta is None:
        return None
    ability = np.full(len(voters), ABILITY_PRIOR_MEAN)
    precision = 1.0 / ABILITY_PRIOR_SD ** 2
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 - reported
        # Abilities given θ: one Newton step per voter on the penalised likelihood.
        gap = theta[first] - theta[second]
        residual = score - expit(ability[voter] * gap)
        weight = expit(ability[voter] * gap) * (1 - expit(ability[voter] * gap)) * gap ** 2
        gradient = np.bincount(voter, residual * gap, len(voters)) \
            - precision * (ability - ABILITY_PRIOR_MEAN)
        curvature = np.bincount(voter, weight, len(voters)) + precision
        ability = ability + gradient / curvature
        # θ given abilities: Newton steps on the weighted design (θ_0 pinned, then centred).
        previous = theta
        for _ in range(20):
            a = ability[voter]
            eta = a * (theta[first] - theta[second])
            p = expit(eta)
            g = np.zeros(size)
            np.add.at(g, first, a * (score - p))
            np.add.at(g, second, -a * (score - p))
            w = a ** 2 * p * (1 - p)
            hessian = np.zeros((size, size))
            np.add.at(hessian, (first, first), w)
            np.add.at(hessian, (second, second), w)
            np.add.at(hessian, (first, second), -w)
            np.add.at(hessian, (second, first), -w)
            step = np.zeros(size)
            try:
                step[1:] = np.linalg.solve(hessian[1:, 1:], g[1:])
            except np.linalg.LinAlgError:
                return None
            theta = theta + np.clip(step, -2, 2)
            if np.abs(step).max() < tolerance:
                break
        theta = theta - theta.mean()
        if np.abs(theta - previous).max() < tolerance:
            break
    ratings = initial + scale * theta / np.log(base)
    return AbilityFit(dict(zip(names, ratings.tolist(), strict=True)),
                      dict(zip(voters, ability.tolist(), strict=True)), iterations)
