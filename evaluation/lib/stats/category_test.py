"""The test-inversion interval of a nominal field's alpha (docs/statistics.md, "Nominal fields: a
test-inversion interval").

For nominal data Krippendorff's alpha estimates the intraclass correlation ρ = 1 − P(two values
of one unit differ) / P(two values of different units differ). A unit rated m times, n_c of its
values in category c, is modelled by the extended Dirichlet-multinomial with category shares p
and pairwise correlation ρ (γ = ρ / (1 − ρ)):

    P(n | m) = m! / ∏_c n_c! × ∏_c ∏_{r<n_c} (p_c + rγ) / ∏_{r<m} (1 + rγ),

Prentice's (1986) extended beta-binomial when there are two categories. Its product form is a
distribution for negative γ too as long as every p_c + (M − 1)γ ≥ 0 (M the largest number of
values per unit), so ρ may go down to −1 / (k(M − 1) − 1) with k categories. Under it the
population alpha is ρ whatever p.

The interval holds every ρ₀ at which the observed alpha lies in neither tail (mid-p) of alpha's
own distribution over studies simulated on the study's units at (p̂(ρ₀), ρ₀), p̂(ρ₀) the
maximum-likelihood shares with the correlation held at ρ₀. The statistic is alpha itself; the
model only says how alpha varies from study to study. Seeded, so the same study always gets the
same interval. No Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammaln

__all__ = ["CategoryCounts", "MAX_OUTCOMES", "TEST_DRAWS", "alpha_of_counts", "category_counts",
           "outcome_count", "outcome_probabilities", "rho_floor", "shares_at", "simulated_alphas",
           "tail_probabilities", "test_inversion_interval"]

TEST_DRAWS = 4000  # simulated studies per ρ₀: a tail's Monte Carlo error 0.0025 near 2.5%
# Each unit size's outcomes (the ways to split its values among the categories) are drawn as
# one multinomial; a design with more outcomes than this over its unit sizes (many categories
# and many values per unit) is not simulated: the study report gives it the jackknife.
MAX_OUTCOMES = 2000
_TOLERANCE = 1e-4  # the interval's ends are found to this precision in ρ
_EDGE = 1e-9  # distance kept from the parameter space's boundaries


@dataclass(frozen=True)
class CategoryCounts:
    """Pairable units reduced to their distinct count vectors (``counts``: one row per distinct
    unit, one column per category) and how many units have each (``units``)."""

    counts: np.ndarray
    units: np.ndarray

    @property
    def categories(self) -> int:
        return self.counts.shape[1]

    @property
    def sizes(self) -> np.ndarray:
        return self.counts.sum(axis=1)

    @property
    def largest(self) -> int:
        return int(self.sizes.max())


def category_counts(codes: np.ndarray) -> CategoryCounts:
    """Units (columns of an annotators × units matrix of category codes 0 … k − 1, −1 = no
    value) with two or more values; k is the largest code + 1."""
    categories = int(codes.max()) + 1
    per_unit = np.stack([(codes == c).sum(axis=0) for c in range(categories)], axis=1)
    per_unit = per_unit[per_unit.sum(axis=1) >= 2]
    rows, units = np.unique(per_unit, axis=0, return_counts=True)
    return CategoryCounts(rows.astype(int), units.astype(float))


def alpha_of_counts(counts: CategoryCounts) -> float:
    """Krippendorff's nominal alpha of the values summarised by COUNTS (``_alpha``)."""
    sizes = counts.sizes.astype(float)
    return float(_alpha(float(counts.units @ sizes), counts.units @ counts.counts,
                        counts.units @ _within(counts.counts)))


def _within(counts: np.ndarray) -> np.ndarray:
    """Σ_c n_c(m − n_c) / (m − 1) of each row of unit counts: the unit's disagreeing ordered
    pairs of values, weighted 1 / (m − 1) as alpha weights them."""
    sizes = counts.sum(axis=-1, keepdims=True).astype(float)
    return np.sum(counts * (sizes - counts) / (sizes - 1.0), axis=-1)


def _alpha(values: float, totals, within):
    """1 − (N − 1) WITHIN / Σ_c T_c (N − T_c) from N = VALUES pairable values, TOTALS the values
    of each category (last axis) and WITHIN (``_within`` summed over units); NaN where every
    value is the same. Vectorised over leading axes."""
    totals, within = np.asarray(totals, float), np.asarray(within, float)
    expected = np.sum(totals * (values - totals), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (values - 1.0) * within / expected
    return np.where(expected > 0, alpha, np.nan)


def rho_floor(counts: CategoryCounts) -> float:
    """The smallest ρ the model allows: γ ≥ −1 / (k(M − 1)), i.e. ρ ≥ −1 / (k(M − 1) − 1)."""
    return -1.0 / (counts.categories * (counts.largest - 1.0) - 1.0)


def outcome_count(counts: CategoryCounts) -> int:
    """How many outcomes the simulation draws among: Σ over unit sizes m of C(m + k − 1, k − 1)."""
    return sum(math.comb(int(m) + counts.categories - 1, counts.categories - 1)
               for m in np.unique(counts.sizes))


@lru_cache(maxsize=64)
def _outcomes(size: int, categories: int) -> np.ndarray:
    """Every split of SIZE values among CATEGORIES categories, one row each; with two
    categories (m − x, x) for x = 0 … m."""
    if categories == 1:
        return np.array([[size]])
    rows = []
    for last in range(size + 1):  # the last category's count, then the others' splits
        rest = _outcomes(size - last, categories - 1)
        rows.append(np.hstack([rest, np.full((len(rest), 1), last)]))
    return np.vstack(rows)


def outcome_probabilities(size: int, shares: np.ndarray, rho: float) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """(outcomes, P(outcome)) of a unit with SIZE values under the model at (p = SHARES, ρ); at
    ρ = 1 every unit is unanimous, category c with probability p_c."""
    outcomes = _outcomes(size, len(shares))
    if rho >= 1.0:
        probabilities = np.where(outcomes == size, shares[None, :], 0.0).sum(axis=1)
        return outcomes, probabilities / probabilities.sum()
    steps = np.arange(size) * (rho / (1.0 - rho))
    with np.errstate(divide="ignore", invalid="ignore"):
        rising = np.concatenate([np.zeros((len(shares), 1)),
                                 np.cumsum(np.log(shares[:, None] + steps[None, :]), axis=1)],
                                axis=1)  # rising[c, n] = Σ_{r<n} log(p_c + rγ)
    log_coefficient = math.lgamma(size + 1) - gammaln(outcomes + 1).sum(axis=1)
    log_p = (log_coefficient + rising[np.arange(len(shares))[None, :], outcomes].sum(axis=1)
             - np.sum(np.log1p(steps)))
    probabilities = np.nan_to_num(np.exp(log_p))
    return outcomes, probabilities / probabilities.sum()


def shares_at(rho: float, counts: CategoryCounts) -> np.ndarray:
    """p̂(ρ): the maximum-likelihood category shares with the correlation held at ρ. The
    log-likelihood is Σ_c f_c(p_c) with f_c(p) = Σ_r h_c(r) log(p + rγ), h_c(r) the units with
    more than r values in c: concave and separable, so at the maximum every share not at its
    lower bound b = max(0, −(M − 1)γ) has f_c'(p_c) = λ, and λ is where the shares sum to 1.
    Each p_c(λ) is found by Newton's method from below (f_c' is convex and decreasing), and λ
    by Newton's method from N, the root at ρ = 0: Σ_c p_c(λ) is convex and decreasing, so from
    above the root one step lands below it (kept above N / (1 + k(M − 1)γ), a lower bound since
    p_c ≥ n_c / λ − (M − 1) max(γ, 0)), and from below the steps approach it monotonically.
    At ρ = 1, the shares of the unanimous units (the observed shares when none is)."""
    if rho >= 1.0:
        unanimous = (counts.counts == counts.sizes[:, None]) * counts.units[:, None]
        totals = unanimous.sum(axis=0) if unanimous.sum() else counts.units @ counts.counts
        return totals / totals.sum()
    gamma = rho / (1.0 - rho)
    steps = np.arange(counts.largest) * gamma
    # h[c, r]: units with more than r values in category c
    h = np.stack([counts.units @ (counts.counts > r) for r in range(counts.largest)], axis=1)
    low = max(0.0, -(counts.largest - 1) * gamma) + _EDGE
    totals = h.sum(axis=1)

    def slope(p):  # f_c'(p) and f_c''(p) for every category at once
        with np.errstate(divide="ignore"):
            inverse = np.where(h > 0, h / (p[:, None] + steps[None, :]), 0.0)
            return inverse.sum(axis=1), -np.sum(inverse ** 2 / np.where(h > 0, h, 1.0), axis=1)

    at_low, _ = slope(np.full(len(h), low))

    def shares(level):  # p_c(λ) and dp_c/dλ = 1 / f_c''(p_c) (0 where p_c is at its bound)
        # below the root: each term h(r) / (p + rγ) ≤ f_c'(p), and so is the sum with every
        # denominator at its largest, p + (M − 1) max(γ, 0)
        p = np.maximum(low, np.maximum(totals / level - max(gamma, 0.0) * (counts.largest - 1),
                                       np.max(h / level - steps[None, :], axis=1)))
        for _ in range(200):
            value, curve = slope(p)
            step = np.where(value > level, (value - level) / -curve, 0.0)
            p = p + step
            if np.all(step <= 1e-15 * p):
                break
        bound = at_low <= level
        return np.where(bound, low, p), np.where(bound, 0.0, 1.0 / curve)

    total = float(counts.units @ counts.sizes)
    floor = total / (1.0 + counts.categories * (counts.largest - 1) * max(gamma, 0.0))
    level = total  # λ at ρ = 0; from above its Newton step lands below the root (convexity)
    for _ in range(100):
        result, change = shares(level)
        excess = result.sum() - 1.0
        if abs(excess) <= 1e-14 or change.sum() >= 0.0:
            break
        level = max(level - excess / change.sum(), floor)
    return result / result.sum()


def simulated_alphas(counts: CategoryCounts, shares: np.ndarray, rho: float, draws: int,
                     seed: int) -> np.ndarray:
    """Alpha of DRAWS studies with the units of COUNTS (the same number of values per unit)
    under the model at (SHARES, ρ): each unit size's outcomes are one multinomial draw. NaN for
    a study whose values are all the same. The same SEED at every (p, ρ), so neighbouring ρ see
    the same random numbers."""
    rng = np.random.default_rng(seed)
    sizes = counts.sizes
    values = float(counts.units @ sizes)
    totals = np.zeros((draws, counts.categories))
    within = np.zeros(draws)
    for size in np.unique(sizes):
        outcomes, probabilities = outcome_probabilities(int(size), shares, rho)
        drawn = rng.multinomial(int(counts.units[sizes == size].sum()), probabilities,
                                size=draws)
        totals += drawn @ outcomes
        within += drawn @ _within(outcomes)
    return _alpha(values, totals, within)


def tail_probabilities(observed: float, rho: float, counts: CategoryCounts, *,
                       draws: int = TEST_DRAWS, seed: int = 0) -> tuple[float, float]:
    """(P(α̂ ≤ observed), P(α̂ ≥ observed)) at ρ, mid-p (a tie counts half), over the studies
    whose alpha is defined, with the shares at their maximum-likelihood values p̂(ρ); (0, 0)
    when none is."""
    alphas = simulated_alphas(counts, shares_at(rho, counts), rho, draws, seed)
    alphas = alphas[np.isfinite(alphas)]
    if not len(alphas):  # the model at ρ (almost) never gives a study like the observed one
        return 0.0, 0.0
    below = float(np.mean(alphas < observed - 1e-12))
    tied = float(np.mean(np.abs(alphas - observed) <= 1e-12))
    return below + tied / 2.0, 1.0 - below - tied / 2.0


def test_inversion_interval(counts: CategoryCounts, confidence: float = 0.95, *,
                            draws: int = TEST_DRAWS, seed: int = 0) -> tuple[float, float]:
    """(low, high): every ρ₀ at which the observed alpha lies in neither (1 − CONFIDENCE) / 2
    tail of alpha's distribution at (p̂(ρ₀), ρ₀) (``tail_probabilities``). The ends are found by
    bisection between alpha (clipped to the model's range) and the model's floor or 1; where the
    floor itself is not rejected the lower end is the floor, or alpha when alpha is lower."""
    observed = alpha_of_counts(counts)
    tail = (1.0 - confidence) / 2.0
    floor = rho_floor(counts) + 1e-7
    centre = min(max(observed, floor), 1.0 - _EDGE)

    def tails(rho):
        return tail_probabilities(observed, rho, counts, draws=draws, seed=seed)

    low = min(rho_floor(counts), observed) if tails(floor)[1] > tail else _boundary(
        lambda rho: tails(rho)[1] > tail, floor, centre)
    high = 1.0 if tails(1.0)[0] > tail else _boundary(
        lambda rho: tails(rho)[0] > tail, 1.0, centre)
    return float(min(low, observed)), float(max(high, observed))


def _boundary(accepted, rejected_end: float, accepted_end: float) -> float:
    """Bisection for where ACCEPTED turns true between REJECTED_END and ACCEPTED_END."""
    while abs(accepted_end - rejected_end) > _TOLERANCE:
        middle = (accepted_end + rejected_end) / 2.0
        if accepted(middle):
            accepted_end = middle
        else:
            rejected_end = middle
    return accepted_end
