"""Arena ratings from pairwise human preferences (spec: metrics.md §E; statistics.md "Comparing
systems"; CRS Arena / Chatbot Arena practice; docs/statistics.md "Arena").

A vote is (system_a, system_b, outcome) with outcome "a" (A better), "b" (B better), "tie" or
"both_bad"; the sequence is in the order the votes were cast. "both_bad" counts as a tie, as
Chatbot Arena counts its "tie (bothbad)" (CRS Arena's own votes have no such option). Two ratings
on the Elo scale:

- online Elo, as CRS Arena computes it: start 1000, K = 16, expected score
  E_A = 1 / (1 + base^((R_B − R_A) / scale)) with base 10 and scale 400; A scores 1, 0 or 0.5
  for a tie; R_A += K (S_A − E_A), R_B −= the same; votes applied one by one in cast order.
- Bradley–Terry by maximum likelihood, as Chatbot Arena fits it (a logistic regression without
  intercept on the pairwise design, a tie counting as half a win for each side):
  P(i beats j) = 1 / (1 + base^((R_j − R_i) / scale)); ratings centred on a mean of 1000 (what
  Chatbot Arena's unpenalized fit started from zero gives; ``anchor`` pins one system instead, as
  they pin a reference model). Fitted by Newton's method on the concave log-likelihood. The MLE
  exists only when the "won at least half a game against" graph is strongly connected;
  otherwise the ratings are undefined with that reason.

Intervals: percentile bootstrap over votes (B = 1000, seed 42). A replicate draws N votes with
replacement; Elo replays the drawn votes in cast order (each as often as it was drawn), so the
interval describes the order-dependent estimator actually reported. Bradley–Terry only needs the
drawn counts per (pair, outcome) cell, so a replicate is a multinomial draw over that table and
a fit on at most S(S−1)/2 aggregated pairs, warm-started at the full-data MLE and run for all
replicates at once; replicates without an MLE are skipped and counted (``valid_resamples``).
Rank intervals: a system's rank in a replicate is 1 + the number of systems rated strictly
higher there; its rank interval is the 2.5th–97.5th percentile of those ranks over the valid
replicates, rounded outwards to whole ranks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

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
OUTCOMES = ("a", "b", "tie", "both_bad")
_OUTCOME_SCORES = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}
METHODS = ("elo", "bt")
# A system with fewer votes than this gets no rating interval and no rank interval (issue 30:
# one vote gave Elo "1008.0 [1008.0, 1008.0]" and rank interval 1–1). Resampling fewer than 10
# outcomes has too few distinct results for a percentile interval to mean anything (with one
# vote every resample that holds it replays the same game); docs/statistics.md, "Arena".
MIN_VOTES_FOR_INTERVAL = 10
METHOD_NAMES = {"elo": "elo", "bt": "bradley_terry"}
NO_MLE = (
    "the maximum-likelihood ratings are unbounded: some group of systems never won "
    "(or tied) against the rest, or fewer than two systems have votes"
)


class Vote(NamedTuple):
    system_a: Hashable
    system_b: Hashable
    outcome: str


class _EncodedVotes(NamedTuple):
    names: list
    first: np.ndarray
    second: np.ndarray
    score: np.ndarray  # 1 if the first system won, 0 if it lost, 0.5 for a tie


def outcome_score(outcome: str) -> float:
    """A's score for an outcome; ValueError for anything but a, b, tie, both_bad."""
    key = str(outcome).strip().lower()
    if key not in _OUTCOME_SCORES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
    return _OUTCOME_SCORES[key]


def _encode(votes: Sequence[tuple[Hashable, Hashable, str]]) -> _EncodedVotes:
    if not votes:
        empty = np.zeros(0, dtype=np.int64)
        return _EncodedVotes([], empty, empty, np.zeros(0))
    kinds, outcome_codes = np.unique([str(v[2]) for v in votes], return_inverse=True)
    kind_scores = np.array([outcome_score(kind) for kind in kinds.tolist()])
    codes, names = encode_labels([v[0] for v in votes] + [v[1] for v in votes])
    half = len(votes)
    first, second = codes[:half], codes[half:]
    same = np.flatnonzero(first == second)
    if len(same):
        raise ValueError(f"a vote compares {votes[same[0]][0]!r} with itself")
    return _EncodedVotes(names, first, second, kind_scores[outcome_codes])


def _vote_counts(encoded: _EncodedVotes) -> list[dict[str, int]]:
    """Per system (in ``encoded.names`` order): votes, wins, losses, ties."""
    size = len(encoded.names)
    won = encoded.score == 1.0
    lost = encoded.score == 0.0
    tied = ~(won | lost)

    def per_system(first_mask, second_mask):
        return (np.bincount(encoded.first[first_mask], minlength=size)
                + np.bincount(encoded.second[second_mask], minlength=size))

    wins, losses, ties = per_system(won, lost), per_system(lost, won), per_system(tied, tied)
    return [{"votes": int(wins[s] + losses[s] + ties[s]), "wins": int(wins[s]),
             "losses": int(losses[s]), "ties": int(ties[s])} for s in range(size)]


# --- Elo ------------------------------------------------------------------------------------


def _elo_point(encoded: _EncodedVotes, *, k, base, scale, initial) -> np.ndarray:
    """CRS Arena's loop, vote by vote in cast order."""
    ratings = [float(initial)] * len(encoded.names)
    for i, j, score in zip(encoded.first.tolist(), encoded.second.tolist(),
                           encoded.score.tolist(), strict=True):
        expected = 1.0 / (1.0 + base ** ((ratings[j] - ratings[i]) / scale))
        change = k * (score - expected)
        ratings[i] += change
        ratings[j] -= change
    return np.array(ratings)


def _sorted_draws(n: int, n_resamples: int, rng: np.random.Generator,
                  block: int = 1024) -> Iterator[np.ndarray]:
    """Each replicate's N draws (with replacement) from range(N) in ascending order, produced
    block by block as (replicates, steps) arrays so the whole (replicates × N) table never
    exists. Sorted uniforms by Rényi's representation: U_(k) = 1 − exp(−Σ_{m≤k} E_m / (N−m+1)),
    E_m iid exponential; the draw is ⌊N U_(k)⌋."""
    from evaluation.lib.stats.elo_kernel import sorted_draw_block  # numba: loaded when used

    divisor = 1.0 / (n - np.arange(n, dtype=float))
    offset = np.zeros(n_resamples)
    for start in range(0, n, block):
        stop = min(n, start + block)
        yield sorted_draw_block(rng.standard_exponential((n_resamples, stop - start)),
                                divisor[start:stop], offset, n)


def _elo_threads() -> int:
    """Threads for the Elo replay: the CPUs this process may use (the kernel releases the GIL)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _elo_replicates(encoded: _EncodedVotes, *, n_resamples: int, seed: int, k, base, scale,
                    initial, threads: int | None = None, block: int = 1024) -> np.ndarray:
    """Online Elo for every bootstrap replicate, (replicates, systems): each replicate replays
    its drawn votes in cast order (`elo_kernel.replay_drawn`, compiled: the sorted draws of
    `_sorted_draws` made and applied in one pass, never stored).

    The replicates are independent, so THREADS (default: this process's CPUs) each replay a
    fixed share of them while this thread draws the next block of exponentials (numpy releases
    the GIL too). The generator is used in the same order as `_sorted_draws` uses it, whatever
    the number of threads, so the ratings are the same for a seed on any machine.

    Ratings are kept in natural-log units θ = R ln(base) / scale, so E_A = expit(θ_A − θ_B)."""
    from evaluation.lib.stats.elo_kernel import replay_drawn  # numba: loaded only when used

    rng = np.random.default_rng(seed)
    n = len(encoded.score)
    theta = np.zeros((n_resamples, len(encoded.names)))
    offset = np.zeros(n_resamples)
    divisor = 1.0 / (n - np.arange(n, dtype=float))
    step_size = k * math.log(base) / scale
    target = encoded.score * step_size
    parts = min(threads or _elo_threads(), n_resamples)
    bounds = np.linspace(0, n_resamples, parts + 1).astype(int).tolist()
    shares = list(zip(bounds[:-1], bounds[1:], strict=True))

    def replay(spacing, start, lo, hi):
        replay_drawn(encoded.first, encoded.second, target, spacing[lo:hi],
                     divisor[start:start + spacing.shape[1]], offset[lo:hi], n, theta[lo:hi],
                     step_size)

    starts = range(0, n, block)
    spacing = rng.standard_exponential((n_resamples, min(block, n)))
    with ThreadPoolExecutor(max_workers=parts) as pool:
        for start in starts:
            running = [pool.submit(replay, spacing, start, lo, hi) for lo, hi in shares]
            stop = start + block
            following = (rng.standard_exponential((n_resamples, min(n, stop + block) - stop))
                         if stop < n else None)
            for future in running:
                future.result()
            spacing = following
    return initial + theta * (scale / math.log(base))


def elo_ratings(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    k: float = ELO_K,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
) -> dict[Hashable, float]:
    """Online Elo after applying ``votes`` in the given (cast) order."""
    encoded = _encode(votes)
    ratings = _elo_point(encoded, k=k, base=base, scale=scale, initial=initial)
    return dict(zip(encoded.names, ratings.tolist(), strict=True))


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


def _mle_exists_batch(wins: np.ndarray) -> np.ndarray:
    """``mle_exists`` for a stack of win matrices (replicates, S, S): the transitive closure of
    'won against' by repeated squaring must be full."""
    size = wins.shape[-1]
    reach = (wins > 0).astype(np.float32)
    reach[:, np.arange(size), np.arange(size)] = 1.0
    for _ in range(max(1, math.ceil(math.log2(size)))):
        reach = np.minimum(reach @ reach, 1.0)
    return (reach > 0).all(axis=(1, 2))


def _log_likelihood(wins: np.ndarray, theta: np.ndarray) -> float:
    gaps = theta[:, None] - theta[None, :]
    return float((wins * -np.logaddexp(0.0, -gaps)).sum())


def fit_bradley_terry(wins: np.ndarray, *, tolerance: float = 1e-10, max_steps: int = 100,
                      start: np.ndarray | None = None):
    """Log-strengths θ (natural log, mean 0) maximizing the Bradley–Terry likelihood, or None
    when the maximum does not exist."""
    size = wins.shape[0]
    if size < 2 or not mle_exists(wins):
        return None
    games = wins + wins.T
    theta = np.zeros(size) if start is None else np.array(start, dtype=float)
    current = _log_likelihood(wins, theta)
    for _ in range(max_steps):
        probability = expit(theta[:, None] - theta[None, :])
        gradient = wins.sum(axis=1) - (games * probability).sum(axis=1)
        weight = games * probability * (1.0 - probability)
        hessian = weight - np.diag(weight.sum(axis=1))
        # θ_0 is pinned (the likelihood only sees differences); recentred at the end.
        step = np.zeros(size)
        step[1:] = np.linalg.solve(hessian[1:, 1:], -gradient[1:])
        size_factor = 1.0
        while size_factor > 1e-6:
            candidate = theta + size_factor * step
            value = _log_likelihood(wins, candidate)
            if value >= current - 1e-12:
                break
            size_factor /= 2.0
        theta, improvement, current = candidate, value - current, value
        if np.abs(size_factor * step).max() < tolerance or abs(improvement) < tolerance**2:
            break
    return theta - theta.mean()


def _bt_cells(encoded: _EncodedVotes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pair × outcome table: for each unordered pair (i < j) that met, the votes i won, j
    won, and tied, as a (pairs, 3) count array with the pairs' i and j."""
    size = len(encoded.names)
    low = np.minimum(encoded.first, encoded.second)
    high = np.maximum(encoded.first, encoded.second)
    score_low = np.where(encoded.first == low, encoded.score, 1.0 - encoded.score)
    outcome = np.where(score_low == 1.0, 0, np.where(score_low == 0.0, 1, 2))
    pairs, pair_codes = np.unique(low * size + high, return_inverse=True)
    table = np.bincount(pair_codes * 3 + outcome, minlength=len(pairs) * 3).reshape(-1, 3)
    return table, pairs // size, pairs % size


def _bt_replicate_wins(encoded: _EncodedVotes, *, n_resamples: int, seed: int) -> np.ndarray:
    """Each bootstrap replicate's win matrix, (replicates, S, S): a multinomial draw of N votes
    over the pair × outcome cells (the same law as drawing N votes with replacement)."""
    size = len(encoded.names)
    table, low, high = _bt_cells(encoded)
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(len(encoded.score), table.ravel() / table.sum(), size=n_resamples)
    drawn = drawn.reshape(n_resamples, -1, 3).astype(float)
    wins = np.zeros((n_resamples, size * size))
    wins[:, low * size + high] = drawn[:, :, 0] + 0.5 * drawn[:, :, 2]
    wins[:, high * size + low] = drawn[:, :, 1] + 0.5 * drawn[:, :, 2]
    return wins.reshape(n_resamples, size, size)


def fit_bradley_terry_batch(wins: np.ndarray, start: np.ndarray, *, tolerance: float = 1e-8,
                            max_steps: int = 30) -> np.ndarray:
    """``fit_bradley_terry`` for a stack of win matrices (replicates, S, S) at once, by Newton's
    method from ``start``; NaN rows where the MLE does not exist. A replicate that has not
    converged after ``max_steps`` is refitted on its own with the line-searched fit."""
    n_resamples, size = wins.shape[0], wins.shape[1]
    theta = np.full((n_resamples, size), np.nan)
    valid = _mle_exists_batch(wins)
    if not valid.any():
        return theta
    batch_wins = wins[valid]
    games = batch_wins + batch_wins.transpose(0, 2, 1)
    won = batch_wins.sum(axis=2)
    current = np.repeat(start[None, :], len(batch_wins), axis=0)
    converged = np.zeros(len(batch_wins), dtype=bool)
    for _ in range(max_steps):
        probability = expit(current[:, :, None] - current[:, None, :])
        expected = games * probability
        gradient = won - expected.sum(axis=2)
        probability -= 1.0
        weight = expected * probability  # −games·p·(1 − p)
        hessian = -weight[:, 1:, 1:]
        diagonal = np.arange(size - 1)
        hessian[:, diagonal, diagonal] += weight.sum(axis=2)[:, 1:]
        try:
            step = np.linalg.solve(hessian, -gradient[:, 1:, None])[:, :, 0]
        except np.linalg.LinAlgError:  # a saturated replicate: refit each one on its own
            break
        # A bounded step keeps a replicate far from the warm start from overshooting.
        step = np.where(converged[:, None], 0.0, np.clip(step, -5.0, 5.0))
        current[:, 1:] += step
        converged |= np.abs(step).max(axis=1) < tolerance
        if converged.all():
            break
    current -= current.mean(axis=1, keepdims=True)
    bad = ~converged | ~np.isfinite(current).all(axis=1)
    for index in np.flatnonzero(bad):
        refit = fit_bradley_terry(batch_wins[index], tolerance=tolerance)
        current[index] = np.nan if refit is None else refit
    theta[valid] = current
    return theta


def _to_rating(theta: np.ndarray, *, base: float, scale: float, initial: float) -> np.ndarray:
    return initial + scale * theta / np.log(base)


def _anchored(ratings: np.ndarray, names: list, anchor) -> np.ndarray:
    if anchor is None:
        return ratings
    name, value = anchor
    if name not in names:
        raise ValueError(f"anchor system {name!r} has no votes")
    return ratings + (value - ratings[..., [names.index(name)]])


def bradley_terry_ratings(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
    anchor: tuple[Hashable, float] | None = None,
) -> dict[Hashable, float] | None:
    """Bradley–Terry MLE on the Elo scale (mean 1000, or ``anchor`` = (system, rating)), or None
    when the MLE does not exist."""
    encoded = _encode(votes)
    if not votes:
        return None
    theta = fit_bradley_terry(_win_matrix(encoded, np.arange(len(votes))))
    if theta is None:
        return None
    ratings = _anchored(_to_rating(theta, base=base, scale=scale, initial=initial),
                        encoded.names, anchor)
    return dict(zip(encoded.names, ratings.tolist(), strict=True))


# --- the rating table: point, CI, rank interval -----------------------------------------------


@dataclass(frozen=True)
class SystemRating:
    system: Hashable
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    rank: int | None  # 1 + systems with a strictly higher rating
    rank_low: int | None  # best rank in the 95% rank interval
    rank_high: int | None  # worst rank
    votes: int
    wins: int
    losses: int
    ties: int
    ci_note: str | None = None  # why this system has no interval (too few votes of its own)


@dataclass(frozen=True)
class ArenaTable:
    """An arena's ratings by one method, best first (undefined ratings last)."""

    method: str  # "elo" or "bt"
    rows: list[SystemRating]
    n_votes: int
    params: dict
    valid_resamples: int
    undefined_reason: str | None = None
    win_rates: dict = field(default_factory=dict)  # (row system, column system) -> share won
    ci_note: str | None = None  # why the ratings have no intervals (too few votes)
    # the share of bootstrap replicates whose top TOP_K order is the point estimate's
    # (top_k_stability); None without replicates
    top_k_stable_share: float | None = None

    @property
    def top_k_stable(self) -> bool | None:
        share = self.top_k_stable_share
        return None if share is None else share >= STABILITY_THRESHOLD

    def ratings(self) -> dict[Hashable, dict]:
        """system -> {rating, ci_low, ci_high}: what ``arena_ratings --json`` prints."""
        return {row.system: {"rating": row.rating, "ci_low": row.ci_low, "ci_high": row.ci_high}
                for row in self.rows}


# The ranking-stability rule (arena_pairing.py's module doc; Softcatala/arena-cat PR 20).
STABILITY_THRESHOLD = 0.95
TOP_K = 3


def top_k_stability(point: Sequence[float], replicates: np.ndarray, k: int) -> float | None:
    """The share of replicates (rows of REPLICATES, one rating per system; rows with a NaN are
    skipped) whose k best systems, in order, are the point estimate's; None without any."""
    point = np.asarray(point, dtype=float)
    k = min(k, len(point))
    valid = replicates[np.isfinite(replicates).all(axis=1)]
    if not len(valid) or k < 1:
        return None
    order = np.argsort(-point, kind="stable")[:k]
    orders = np.argsort(-valid, axis=1, kind="stable")[:, :k]
    return float((orders == order).all(axis=1).mean())


def _ranks(ratings: np.ndarray) -> np.ndarray:
    """1 + the number of systems rated strictly higher, along the last axis."""
    return 1 + (ratings[..., None, :] > ratings[..., :, None]).sum(axis=-1)


def _intervals(replicates: np.ndarray, confidence: float):
    valid = np.isfinite(replicates).all(axis=1)
    usable = replicates[valid]
    size = replicates.shape[1]
    if not len(usable):
        nothing = np.full(size, np.nan)
        return nothing, nothing, nothing, nothing, 0
    tail = (1.0 - confidence) / 2.0
    low, high = percentiles(usable, [tail, 1.0 - tail], axis=0)
    rank_low, rank_high = percentiles(_ranks(usable).astype(float), [tail, 1.0 - tail], axis=0)
    return low, high, np.floor(rank_low), np.ceil(rank_high), int(valid.sum())


def pairwise_win_rates(encoded: _EncodedVotes) -> dict:
    """(i, j) -> the share of i's games against j that i won (ties half), where they met."""
    wins = _win_matrix(encoded, np.arange(len(encoded.score)))
    games = wins + wins.T
    return {(encoded.names[i], encoded.names[j]): float(wins[i, j] / games[i, j])
            for i in range(len(encoded.names)) for j in range(len(encoded.names))
            if i != j and games[i, j] > 0}


def arena_table(
    votes: Sequence[tuple[Hashable, Hashable, str]],
    *,
    method: str,
    k: float = ELO_K,
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
    anchor: tuple[Hashable, float] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> ArenaTable:
    """Ratings by ``method`` ("elo" or "bt") with bootstrap CIs and rank intervals."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    encoded = _encode(votes)
    params = {"base": base, "scale": scale, "initial": initial, "n_resamples": n_resamples,
              "seed": seed, "confidence": confidence}
    if method == "elo":
        params["k"] = k
    if anchor is not None:
        params["anchor"] = list(anchor)
    counts = _vote_counts(encoded)
    size = len(encoded.names)
    nothing = np.full(size, np.nan)
    reason = note = None
    point = low = high = rank_low = rank_high = nothing
    valid = 0
    stable = None
    if method == "elo":
        if votes:
            options = {"k": k, "base": base, "scale": scale, "initial": initial}
            point = _elo_point(encoded, **options)
            replicates = _elo_replicates(encoded, n_resamples=n_resamples, seed=seed, **options)
            low, high, rank_low, rank_high, valid = _intervals(replicates, confidence)
            stable = top_k_stability(point, replicates, TOP_K)
        else:
            reason = "no votes"
    else:
        theta = fit_bradley_terry(_win_matrix(encoded, np.arange(len(votes)))) if votes else None
        if theta is None:
            reason = NO_MLE if votes else "no votes"
        else:
            options = {"base": base, "scale": scale, "initial": initial}
            point = _anchored(_to_rating(theta, **options), encoded.names, anchor)
            wins = _bt_replicate_wins(encoded, n_resamples=n_resamples, seed=seed)
            replicates = fit_bradley_terry_batch(wins, theta)
            replicates = _anchored(_to_rating(replicates, **options), encoded.names, anchor)
            low, high, rank_low, rank_high, valid = _intervals(replicates, confidence)
            stable = top_k_stability(point, replicates, TOP_K)
            note = _too_few_votes(valid, n_resamples, confidence)
            if note:
                low = high = rank_low = rank_high = nothing
    ranks = _ranks(point) if reason is None else nothing

    def number(values, s, kind=float):
        return kind(values[s]) if np.isfinite(values[s]) else None

    rows = [_with_vote_floor(SystemRating(
                name, number(point, s), number(low, s), number(high, s), number(ranks, s, int),
                number(rank_low, s, int), number(rank_high, s, int), **counts[s]))
            for s, name in enumerate(encoded.names)]
    rows.sort(key=lambda row: (row.rating is None, -(row.rating or 0.0), str(row.system)))
    return ArenaTable(method, rows, len(votes), params, valid, reason, pairwise_win_rates(encoded),
                      note, stable)


def _with_vote_floor(row: SystemRating) -> SystemRating:
    """ROW without its interval and rank interval when its system has too few votes."""
    if row.votes >= MIN_VOTES_FOR_INTERVAL or row.rating is None:
        return row
    note = (f"too few votes for an interval: {row.votes} of the {MIN_VOTES_FOR_INTERVAL} a "
            "system needs")
    return replace(row, ci_low=None, ci_high=None, rank_low=None, rank_high=None, ci_note=note)


def _too_few_votes(valid: int, n_resamples: int, confidence: float) -> str | None:
    """Why Bradley–Terry gets no intervals, or None. Replicates without an MLE (a system that
    drew no win or no loss) are skipped, and they are the extreme ones: when more than
    1 − CONFIDENCE of them (5%) are skipped — more than the two tails the percentile interval
    reads — its ends are set by which replicates were dropped, and simulated arenas showed it
    too short (statistics.md, "Too few votes for an interval")."""
    if valid >= confidence * n_resamples:
        return None
    return (f"too few votes for an interval: only {valid} of {n_resamples} resamples had "
            f"maximum-likelihood ratings (an interval needs {confidence:.0%})")


def _estimates(table: ArenaTable) -> dict[Hashable, Estimate]:
    method = METHOD_NAMES[table.method]
    params = {**table.params, "valid_resamples": table.valid_resamples}
    out = {}
    for row in table.rows:
        n = {"votes": row.votes, "wins": row.wins, "losses": row.losses, "ties": row.ties}
        if row.rating is None:
            out[row.system] = Estimate.undefined(table.undefined_reason or NO_MLE, method=method,
                                                 n=n, params=params)
        else:
            note = row.ci_note or table.ci_note
            extra = {"ci_note": note} if note else {}
            out[row.system] = Estimate(row.rating, row.ci_low, row.ci_high, n=n, method=method,
                                       params={**params, **extra})
    return out


def elo_with_ci(votes: Sequence[tuple[Hashable, Hashable, str]], **options
                ) -> dict[Hashable, Estimate]:
    """Elo per system with a bootstrap CI (votes resampled, replayed in cast order)."""
    return _estimates(arena_table(votes, method="elo", **options))


def bradley_terry_with_ci(votes: Sequence[tuple[Hashable, Hashable, str]], **options
                          ) -> dict[Hashable, Estimate]:
    """Bradley–Terry ratings with bootstrap CIs over votes (resamples without an MLE skipped)."""
    options.pop("k", None)
    return _estimates(arena_table(votes, method="bt", **options))


# --- timing (the performance target of docs/performance.md) ----------------------------------


def simulated_votes(n_votes: int, n_systems: int, *, seed: int = 42,
                    tie_share: float = 0.1, strengths: Sequence[float] | None = None,
                    rng: np.random.Generator | None = None) -> list[tuple[str, str, str]]:
    """Votes in random pairs of ``n_systems`` and ``tie_share`` ties; outside the ties A wins
    with the Bradley–Terry probability expit(θ_A − θ_B). θ are the given natural-log
    ``strengths``, or drawn θ ~ N(0, 1) (about ±170 Elo). ``rng`` (else a generator seeded with
    ``seed``) draws everything. The bench's, the tests' and ``bench_calibration``'s data."""
    rng = np.random.default_rng(seed) if rng is None else rng
    if strengths is None:
        theta = rng.normal(0.0, 1.0, n_systems)
    else:
        theta = np.asarray(strengths, dtype=float)
        if theta.shape != (n_systems,):
            raise ValueError(f"strengths: expected {n_systems} values, got {theta.shape}")
    first = rng.integers(0, n_systems, n_votes)
    second = (first + rng.integers(1, n_systems, n_votes)) % n_systems
    draw = rng.random(n_votes)
    a_wins = (1.0 - tie_share) * expit(theta[first] - theta[second])
    outcome = np.where(draw < a_wins, "a", np.where(draw < 1.0 - tie_share, "b", "tie"))
    names = [f"system-{s:03d}" for s in range(n_systems)]
    return [(names[i], names[j], o) for i, j, o in zip(first.tolist(), second.tolist(),
                                                        outcome.tolist(), strict=True)]


def elo_kernels_load() -> None:
    """Load the compiled Elo kernels now (numba's import and its on-disk cache: ~0.6 s), so the
    first Elo ratings a web process computes cost what every later one does (a server calls
    this as it starts: `config.wsgi.warm_up`)."""
    arena_table([("a", "b", "a"), ("b", "a", "tie")], method="elo", n_resamples=2)


def time_arena(n_votes: int = 100_000, n_systems: int = 50, n_resamples: int = 1000, *,
               methods: Sequence[str] = METHODS, seed: int = 42) -> list[dict]:
    """Wall and CPU seconds of ``arena_table`` (point, bootstrap CIs, rank intervals) per
    method on ``simulated_votes``."""
    import time

    votes = simulated_votes(n_votes, n_systems, seed=seed)
    reports = []
    for method in methods:
        wall, cpu = time.perf_counter(), time.process_time()
        table = arena_table(votes, method=method, n_resamples=n_resamples, seed=seed)
        reports.append({"method": method, "votes": n_votes, "systems": n_systems,
                        "resamples": n_resamples, "valid_resamples": table.valid_resamples,
                        "wall_seconds": time.perf_counter() - wall,
                        "cpu_seconds": time.process_time() - cpu})
    return reports
