"""Adaptive pairing and the ranking-stability stopping rule (docs/arena.md, "Adaptive pairing").

Pairing. Uniform pairing spends votes on pairs whose order is already clear. An adaptive arena
draws a pair with probability that grows with how much its two systems' ratings still overlap
(coval-ai/benchmarks PR 166 and ComparIA PR 448 describe the same idea):

    p(i, j) = FLOOR / P + (1 − FLOOR) · w(i, j) / Σ w,

with P the number of pairs. w(i, j) = Φ(−|θ_i − θ_j| / sd(θ_i − θ_j)) is the chance, under
the normal approximation of the Bradley–Terry fit so far (Wald covariance from the Fisher
information of the win matrix: no bootstrap, so a battle start stays fast), that the pair's
order is the other way round: 1/2 for two systems the votes cannot tell apart, near 0 for a
settled pair. Only pairs with a system in the current top k (3, what the stopping rule
watches) get an adaptive weight. The FLOOR share (20%) keeps every pair sampled, and a pair
that already holds more than CAP of all votes (25%, once there are at least 5 votes per pair)
gets only its floor. Until the Bradley–Terry maximum exists (some system has never won or
lost) every pair is equally likely.

Stopping rule. A ranking's top k is stable when, in a share of bootstrap replicates at least
THRESHOLD (95%), the k best systems come in the same order as in the point estimate (the
stability check Softcatala/arena-cat PR 20 reports per benchmark). The ratings page states it.

Pure code: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
from scipy.special import expit

from evaluation.lib.stats.arena import (  # noqa: F401 - top_k_stability is this module's too
    STABILITY_THRESHOLD,
    TOP_K,
    fit_bradley_terry,
    fit_bradley_terry_batch,
    top_k_stability,
)

FLOOR = 0.2
CAP = 0.25
CAP_AFTER_VOTES_PER_PAIR = 5


def bt_covariance(wins: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The Wald covariance of the centred log-strengths θ from the Fisher information of the
    win matrix (ties half): I = Σ_pairs n_ij p_ij (1 − p_ij) (e_i − e_j)(e_i − e_j)ᵀ, inverted
    on the sum-to-zero subspace (Moore–Penrose)."""
    games = wins + wins.T
    probability = expit(theta[:, None] - theta[None, :])
    weight = games * probability * (1.0 - probability)
    return np.linalg.pinv(np.diag(weight.sum(axis=1)) - weight)


def pair_probabilities(wins: np.ndarray, *, top_k: int = TOP_K, floor: float = FLOOR,
                       cap: float = CAP, theta: np.ndarray | None = None
                       ) -> dict[tuple[int, int], float]:
    """(i, j) with i < j -> the probability the next battle pairs systems i and j, from the
    win matrix WINS (wins[i, j]: games i won against j, ties half) of the votes so far; THETA,
    when the caller has fitted it already, is `fit_bradley_terry(wins)`."""
    size = wins.shape[0]
    pairs = [(i, j) for i in range(size) for j in range(i + 1, size)]
    if not pairs:
        return {}
    if theta is None:
        theta = fit_bradley_terry(wins) if size >= 2 else None
    if theta is None:
        return {pair: 1.0 / len(pairs) for pair in pairs}
    covariance = bt_covariance(wins, theta)
    rank = np.argsort(np.argsort(-theta, kind="stable"), kind="stable")
    games = wins + wins.T
    total = games.sum() / 2.0
    capped = total >= CAP_AFTER_VOTES_PER_PAIR * len(pairs)
    weights = np.zeros(len(pairs))
    for index, (i, j) in enumerate(pairs):
        if min(rank[i], rank[j]) >= top_k or (capped and games[i, j] > cap * total):
            continue
        spread = covariance[i, i] + covariance[j, j] - 2.0 * covariance[i, j]
        weights[index] = NormalDist().cdf(-abs(theta[i] - theta[j])
                                          / np.sqrt(max(spread, 1e-12)))
    adaptive = weights / weights.sum() if weights.sum() > 0 else np.full(len(pairs),
                                                                           1 / len(pairs))
    probability = floor / len(pairs) + (1.0 - floor) * adaptive
    return dict(zip(pairs, probability.tolist(), strict=True))


def simulate_votes_until_stable(strengths: Sequence[float], *, adaptive: bool, k: int = TOP_K,
                                seed: int = 0, batch: int = 25, max_votes: int = 4000,
                                n_resamples: int = 200,
                                threshold: float = STABILITY_THRESHOLD) -> int:
    """Votes an arena of systems with log-strengths STRENGTHS collects, in batches drawn
    adaptively or uniformly, until its top-K order is stable and equals the true top-K order
    (MAX_VOTES when it never is): the figure ``bench_calibration`` compares."""
    rng = np.random.default_rng(seed)
    strengths = np.asarray(strengths, dtype=float)
    size = len(strengths)
    truth = np.argsort(-strengths, kind="stable")[:k]
    wins = np.zeros((size, size))
    pairs = [(i, j) for i in range(size) for j in range(i + 1, size)]
    played: list[tuple[int, int, float]] = []
    while len(played) < max_votes:
        probabilities = (pair_probabilities(wins, top_k=k) if adaptive
                         else {pair: 1 / len(pairs) for pair in pairs})
        keys = list(probabilities)
        chosen = rng.choice(len(keys), size=batch, p=np.array(list(probabilities.values())))
        for index in chosen:
            i, j = keys[index]
            won = float(rng.random() < expit(strengths[i] - strengths[j]))
            wins[i, j] += won
            wins[j, i] += 1 - won
            played.append((i, j, won))
        theta = fit_bradley_terry(wins)
        if theta is None or not (np.argsort(-theta, kind="stable")[:k] == truth).all():
            continue
        draws = rng.integers(0, len(played), size=(n_resamples, len(played)))
        votes = np.array(played)
        stack = np.zeros((n_resamples, size, size))
        for b in range(n_resamples):
            chosen_votes = votes[draws[b]]
            i, j, won = chosen_votes[:, 0].astype(int), chosen_votes[:, 1].astype(int), \
                chosen_votes[:, 2]
            np.add.at(stack[b], (i, j), won)
            np.add.at(stack[b], (j, i), 1 - won)
        replicates = fit_bradley_terry_batch(stack, theta)
        share = top_k_stability(theta, replicates, k)
        if share is not None and share >= threshold:
            return len(played)
    return max_votes
