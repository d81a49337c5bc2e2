"""Arena ratings from pairwise human preferences (spec: metrics.md §E; statistics.md "Comparing
systems"; CRS Arena / Chatbot Arena practice).

A vote is (system_a, system_b, outcome) with outcome "a", "b" or "tie"; the sequence is in time
order. Two ratings on the Elo scale:

- online Elo: start 1000, K = 16, expected score 1 / (1 + base^((R_b − R_a) / scale)) with base 10
  and scale 400; A scores 1, 0 or 0.5 for a tie; votes applied one by one in time order.
- Bradley–Terry maximum likelihood: P(i beats j) = 1 / (1 + e^(θ_j − θ_i)), ties counted as half a
  win for each side, fitted by Newton's method on the (concave) log-likelihood and reported as
  1000 + 400·log10(strength), strengths centred so that the mean rating is 1000. The MLE exists
  only when the "won at least half a game against" graph is strongly connected; otherwise the
  ratings are reported as undefined with that reason.

CIs: percentile bootstrap over votes (resampled with replacement; Elo keeps the drawn votes in
their original time order).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from evaluation.lib.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    encode_labels,
    percentiles,
)
from evaluation.lib.stats.results import Estimate

ELO_K = 16.0
ELO_BASE = 10.0
ELO_SCALE = 400.0
ELO_INITIAL = 1000.0
_OUTCOME_SCORES = {"a": 1.0, "b": 0.0, "tie": 0.5}


class Vote(NamedTuple):
    system_a: Hashable
    system_b: Hashable
    outcome: str


class _EncodedVotes(NamedTuple):
    names: list
    first: np.ndarray
    second: np.ndarray
    score: np.ndarray  # 1 if the first system won, 0 if it lost, 0.5 for a tie


def _encode(votes: Sequence[tuple[Hashable, Hashable, str]]) -> _EncodedVotes:
    scores = []
    for system_a, system_b, outcome in votes:
        if system_a == system_b:
            raise ValueError(f"a vote compares {system_a!r} with itself")
        key = str(outcome).strip().lower()
        if key not in _OUTCOME_SCORES:
            raise ValueError(f"outcome must be 'a', 'b' or 'tie', not {outcome!r}")
        scores.append(_OUTCOME_SCORES[key])
    codes, names = encode_labels([v[0] for v in votes] + [v[1] for v in votes])
    half = len(votes)
    return _EncodedVotes(names, codes[:half], codes[half:], np.array(scores, dtype=float))


def _vote_counts(encoded: _EncodedVotes) -> dict[Hashable, dict[str, int]]:
    counts = {name: {"votes": 0, "wins": 0, "losses": 0, "ties": 0} for name in encoded.names}
    for i, j, score in zip(encoded.first, encoded.second, encoded.score, strict=True):
        for me, result in ((i, score), (j, 1.0 - score)):
            entry = counts[encoded.names[me]]
            entry["votes"] += 1
            entry["wins" if result == 1.0 else "losses" if result == 0.0 else "ties"] += 1
    return counts


# --- Elo ------------------------------------------------------------------------------------


def _elo_replicates(encoded, order: np.ndarray, *, k, base, scale, initial) -> np.ndarray:
    """Online Elo for several vote sequences at once: ``order`` is (replicates, votes)."""
    order = np.atleast_2d(order)
    ratings = np.full((order.shape[0], len(encoded.names)), initial, dtype=float)
    rows = np.arange(order.shape[0])
    for step in range(order.shape[1]):
        votes = order[:, step]
        i, j, score = encoded.first[votes], encoded.second[votes], encoded.score[votes]
        expected = 1.0 / (1.0 + base ** ((ratings[rows, j] - ratings[rows, i]) / scale))
        change = k * (score - expected)
        ratings[rows, i] += change
        ratings[rows, j] -= change
    return ratings


def elo_ratings(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    k: float = ELO_K,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
) -> dict[Hashable, float]:
    """Online Elo after applying ``votes`` in the given (time) order."""
    encoded = _encode(votes)
    order = np.arange(len(votes))[None, :]
    ratings = _elo_replicates(encoded, order, k=k, base=base, scale=scale, initial=initial)[0]
    return dict(zip(encoded.names, ratings.tolist(), strict=True))


def elo_with_ci(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    k: float = ELO_K,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[Hashable, Estimate]:
    """Elo per system with a bootstrap CI (votes resampled, kept in time order)."""
    encoded = _encode(votes)
    params = {
        "k": k,
        "base": base,
        "scale": scale,
        "initial": initial,
        "n_resamples": n_resamples,
        "seed": seed,
        "confidence": confidence,
    }
    if not votes:
        return {}
    options = {"k": k, "base": base, "scale": scale, "initial": initial}
    point = _elo_replicates(encoded, np.arange(len(votes))[None, :], **options)[0]
    rng = np.random.default_rng(seed)
    order = np.sort(rng.integers(0, len(votes), size=(n_resamples, len(votes))), axis=1)
    replicates = _elo_replicates(encoded, order, **options)
    return _estimates(encoded, point, replicates, confidence, "elo", params)


def _estimates(encoded, point, replicates, confidence, method, params) -> dict:
    tail = (1.0 - confidence) / 2.0
    low, high = percentiles(replicates, [tail, 1.0 - tail], axis=0)
    counts = _vote_counts(encoded)
    valid = int(np.isfinite(replicates).all(axis=1).sum())
    return {
        name: Estimate(
            point[s],
            low[s],
            high[s],
            n=counts[name],
            method=method,
            params={**params, "valid_resamples": valid},
        )
        for s, name in enumerate(encoded.names)
    }


# --- Bradley–Terry --------------------------------------------------------------------------


def _win_matrix(encoded: _EncodedVotes, votes: np.ndarray) -> np.ndarray:
    """wins[i, j]: games i won against j, ties counting half for each side."""
    size = len(encoded.names)
    i, j, score = encoded.first[votes], encoded.second[votes], encoded.score[votes]
    wins = np.bincount(i * size + j, weights=score, minlength=size * size)
    wins += np.bincount(j * size + i, weights=1.0 - score, minlength=size * size)
    return wins.reshape(size, size)


def mle_exists(wins: np.ndarray) -> bool:
    """Ford's condition: every system can be reached from every other along 'won against'."""
    graph = csr_matrix(wins > 0)
    n_components, _ = connected_components(graph, directed=True, connection="strong")
    return n_components == 1


def fit_bradley_terry(wins: np.ndarray, *, tolerance: float = 1e-10, max_steps: int = 100):
    """Log-strengths θ (mean 0) maximizing the Bradley–Terry likelihood, or None if unbounded."""
    size = wins.shape[0]
    if size < 2 or not mle_exists(wins):
        return None
    games = wins + wins.T
    theta = np.zeros(size)

    def log_likelihood(values: np.ndarray) -> float:
        gaps = values[:, None] - values[None, :]
        return float((wins * -np.logaddexp(0.0, -gaps)).sum())

    current = log_likelihood(theta)
    for _ in range(max_steps):
        probability = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
        gradient = wins.sum(axis=1) - (games * probability).sum(axis=1)
        weight = games * probability * (1.0 - probability)
        hessian = weight - np.diag(weight.sum(axis=1))
        # θ_0 is pinned to 0 (the likelihood only sees differences); recentred at the end.
        step = np.zeros(size)
        step[1:] = np.linalg.solve(hessian[1:, 1:], -gradient[1:])
        size_factor = 1.0
        while size_factor > 1e-6:
            candidate = theta + size_factor * step
            value = log_likelihood(candidate)
            if value >= current - 1e-12:
                break
            size_factor /= 2.0
        theta, improvement, current = candidate, value - current, value
        if np.abs(size_factor * step).max() < tolerance or abs(improvement) < tolerance**2:
            break
    return theta - theta.mean()


def _to_rating(theta: np.ndarray, *, base: float, scale: float, initial: float) -> np.ndarray:
    return initial + scale * theta / np.log(base)


def bradley_terry_ratings(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
) -> dict[Hashable, float] | None:
    """Bradley–Terry MLE on the Elo scale (mean 1000), or None when the MLE does not exist."""
    encoded = _encode(votes)
    theta = fit_bradley_terry(_win_matrix(encoded, np.arange(len(votes))))
    if theta is None:
        return None
    ratings = _to_rating(theta, base=base, scale=scale, initial=initial)
    return dict(zip(encoded.names, ratings.tolist(), strict=True))


def bradley_terry_with_ci(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[Hashable, Estimate]:
    """Bradley–Terry ratings with bootstrap CIs over votes (resamples without an MLE skipped)."""
    encoded = _encode(votes)
    params = {
        "base": base,
        "scale": scale,
        "initial": initial,
        "n_resamples": n_resamples,
        "seed": seed,
        "confidence": confidence,
    }
    method = "bradley_terry"
    theta = fit_bradley_terry(_win_matrix(encoded, np.arange(len(votes))))
    if theta is None:
        counts = _vote_counts(encoded)
        reason = (
            "the maximum-likelihood ratings are unbounded: some group of systems never won "
            "(or tied) against the rest, or fewer than two systems have votes"
        )
        return {
            name: Estimate.undefined(reason, method=method, n=counts[name], params=params)
            for name in encoded.names
        }
    rng = np.random.default_rng(seed)
    replicates = np.full((n_resamples, len(encoded.names)), np.nan)
    for r in range(n_resamples):
        drawn = rng.integers(0, len(votes), size=len(votes))
        fitted = fit_bradley_terry(_win_matrix(encoded, drawn))
        if fitted is not None:
            replicates[r] = fitted
    options = {"base": base, "scale": scale, "initial": initial}
    return _estimates(
        encoded,
        _to_rating(theta, **options),
        _to_rating(replicates, **options),
        confidence,
        method,
        params,
    )
