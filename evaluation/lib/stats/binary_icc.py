"""The intervals of a yes/no field's agreement (docs/statistics.md, "Yes/no fields rated twice:
a profile-likelihood interval" and "Yes/no fields with three or more values per unit: a
test-inversion interval").

For two categories, Krippendorff's alpha estimates the intraclass correlation ρ = 1 − P(two
values of one unit differ) / P(two values of different units differ). A unit rated by m
annotators, x of whom said yes, is modelled by Prentice's (1986) extended beta-binomial: mean
π, pairwise correlation ρ, and, through γ = ρ / (1 − ρ),

    P(x | m) = C(m, x) ∏_{r<x} (π + rγ) ∏_{r<m−x} (1 − π + rγ) / ∏_{r<m} (1 + rγ),

which allows ρ below 0 down to −1 / (2M − 3), M the largest number of values per unit. With m = 2
the model is saturated (any distribution of a pair's answers is one (π, ρ)), so for two
annotators it is no assumption at all, and ``profile_interval`` holds every ρ whose profile
log-likelihood (maximised over π) is within cut / 2 of the maximum (χ²₁ at the confidence by
default; the study report passes t²_{n−1}, agreement._yes_no_pair_interval); where that set
reaches ρ = 1 (every unit unanimous) the upper end is 1. No random draws.

With three or more values per unit the model is not saturated, and ``test_inversion_interval``
uses it only for alpha's sampling distribution: every ρ₀ at which the observed alpha is in
neither tail of alpha over studies simulated at (π̂(ρ₀), ρ₀). Seeded. No Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

__all__ = ["UnitCounts", "alpha_of_counts", "log_likelihood", "mean_at", "profile_interval",
           "profile_log_likelihood", "rho_floor", "simulated_alphas", "tail_probabilities",
           "test_inversion_interval", "unit_counts", "unit_probabilities"]

_EDGE = 1e-9  # distance kept from the parameter space's boundaries


@dataclass(frozen=True)
class UnitCounts:
    """Pairable units reduced to their distinct (values, yes answers) pairs and how many units
    have each."""

    sizes: np.ndarray
    yes: np.ndarray
    units: np.ndarray

    @property
    def largest(self) -> int:
        return int(self.sizes.max())

    @property
    def unanimous(self) -> bool:
        return bool(np.all((self.yes == 0) | (self.yes == self.sizes)))


def unit_counts(codes: np.ndarray) -> UnitCounts:
    """Units (columns of an annotators × units matrix of 0 = one category, 1 = the other,
    −1 = no value) with two or more values."""
    present = codes >= 0
    sizes = present.sum(axis=0)
    yes = (codes == 1).sum(axis=0)
    pairable = sizes >= 2
    pairs, units = np.unique(np.stack([sizes[pairable], yes[pairable]], axis=1), axis=0,
                             return_counts=True)
    return UnitCounts(pairs[:, 0].astype(int), pairs[:, 1].astype(int), units.astype(float))


def rho_floor(counts: UnitCounts) -> float:
    """The smallest ρ the model allows: γ ≥ −1 / (2(M − 1)), i.e. ρ ≥ −1 / (2M − 3)."""
    return -1.0 / (2.0 * counts.largest - 3.0)


def _pi_range(rho: float, counts: UnitCounts) -> tuple[float, float]:
    """The means π for which every probability of the model is positive at ρ."""
    if rho >= 0.0:
        return _EDGE, 1.0 - _EDGE
    reach = -(counts.largest - 1) * rho / (1.0 - rho)  # −(M − 1)γ
    return reach + _EDGE, 1.0 - reach - _EDGE


def log_likelihood(pi: float, rho: float, counts: UnitCounts) -> float:
    """The model's log-likelihood at (π, ρ), binomial coefficients left out (they do not
    depend on the parameters). ρ = 1 is the limit: every unit unanimous, yes with
    probability π."""
    if rho >= 1.0:
        if not counts.unanimous:
            return -math.inf
        all_yes = counts.yes == counts.sizes
        return float(np.sum(counts.units * np.where(all_yes, math.log(pi), math.log1p(-pi))))
    gamma = rho / (1.0 - rho)
    steps = np.arange(counts.largest) * gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        yes_terms = np.concatenate([[0.0], np.cumsum(np.log(pi + steps))])
        no_terms = np.concatenate([[0.0], np.cumsum(np.log(1.0 - pi + steps))])
        norm = np.concatenate([[0.0], np.cumsum(np.log1p(steps))])
    per_unit = yes_terms[counts.yes] + no_terms[counts.sizes - counts.yes] - norm[counts.sizes]
    value = float(np.sum(counts.units * per_unit))
    return value if math.isfinite(value) else -math.inf


def _score(pi: float, rho: float, counts: UnitCounts) -> float:
    """d log-likelihood / dπ at ρ < 1."""
    steps = np.arange(counts.largest) * (rho / (1.0 - rho))
    yes_terms = np.concatenate([[0.0], np.cumsum(1.0 / (pi + steps))])
    no_terms = np.concatenate([[0.0], np.cumsum(1.0 / (1.0 - pi + steps))])
    return float(np.sum(counts.units * (yes_terms[counts.yes]
                                        - no_terms[counts.sizes - counts.yes])))


def profile_log_likelihood(rho: float, counts: UnitCounts) -> float:
    """max over π of the log-likelihood at ρ (at ``mean_at``)."""
    low, high = _pi_range(rho, counts)
    if low >= high:
        return -math.inf
    return log_likelihood(mean_at(rho, counts), rho, counts)


def profile_interval(counts: UnitCounts, confidence: float = 0.95, *,
                     cut: float | None = None) -> tuple[float, float, float]:
    """(ρ̂, low, high): the maximum-likelihood ρ and the profile-likelihood interval, the ρ
    whose likelihood-ratio statistic is at most CUT (default χ²₁ at CONFIDENCE)."""
    floor = rho_floor(counts) + 1e-7
    top = 1.0 - _EDGE
    profile = lambda rho: profile_log_likelihood(rho, counts)  # noqa: E731
    inner = optimize.minimize_scalar(lambda rho: -profile(rho), bounds=(floor, top),
                                     method="bounded", options={"xatol": 1e-9})
    rho_hat, best = float(inner.x), float(-inner.fun)
    for edge in (floor, 1.0):  # a maximum on the boundary (1: every unit unanimous)
        if profile(edge) > best:
            rho_hat, best = edge, profile(edge)
    if cut is None:
        cut = float(stats.chi2.ppf(confidence, 1))
    lowest = best - cut / 2.0
    excess = lambda rho: profile(rho) - lowest  # noqa: E731
    low = rho_floor(counts) if rho_hat <= floor or excess(floor) >= 0 else optimize.brentq(
        excess, floor, rho_hat, xtol=1e-9)
    high = 1.0 if rho_hat >= top or excess(1.0) >= 0 or excess(top) >= 0 else optimize.brentq(
        excess, rho_hat, top, xtol=1e-9)
    return rho_hat, float(low), float(high)


# --- three or more values per unit: a parametric test-inversion interval ---------------------
#
# docs/statistics.md, "Yes/no fields with three or more values per unit". The interval holds
# every ρ₀ at which the observed alpha is not in either 2.5% tail (mid-p) of alpha's own
# sampling distribution, simulated from the beta-binomial at (π̂(ρ₀), ρ₀) — π̂(ρ₀) the
# maximum-likelihood mean at ρ₀ — on the study's own units. The model only supplies the null
# distribution; the statistic is alpha itself.

TEST_DRAWS = 4000  # simulated studies per ρ₀: a tail's Monte Carlo error 0.0025 near 2.5%
_TOLERANCE = 1e-4  # the interval's ends are found to this precision in ρ


def unit_probabilities(size: int, pi: float, rho: float) -> np.ndarray:
    """P(x yes answers | SIZE values) for x = 0 … SIZE under the model at (π, ρ); at ρ = 1 every
    unit is unanimous, yes with probability π."""
    if rho >= 1.0:
        return np.array([1.0 - pi] + [0.0] * (size - 1) + [pi])
    steps = np.arange(size) * (rho / (1.0 - rho))
    with np.errstate(divide="ignore", invalid="ignore"):
        yes_terms = np.concatenate([[0.0], np.cumsum(np.log(pi + steps))])
        no_terms = np.concatenate([[0.0], np.cumsum(np.log(1.0 - pi + steps))])
    x = np.arange(size + 1)
    log_p = (yes_terms[x] + no_terms[size - x] - np.sum(np.log1p(steps))
             + np.array([math.log(math.comb(size, k)) for k in x]))
    probabilities = np.nan_to_num(np.exp(log_p))
    return probabilities / probabilities.sum()


def mean_at(rho: float, counts: UnitCounts) -> float:
    """π̂(ρ): the maximum-likelihood share of yes answers with the correlation held at ρ (inside
    the model's range at ρ). For a fixed ρ the log-likelihood is a sum of logs of functions
    linear in π, hence concave, so its maximum is where the score (decreasing in π) crosses 0,
    or the end of π's range it falls towards; at ρ = 1, the share of units all of whose answers
    are yes."""
    low, high = _pi_range(rho, counts)
    if rho >= 1.0:
        share = float(np.sum(counts.units * (counts.yes == counts.sizes)) / counts.units.sum())
        return min(max(share, low), high)
    if _score(low, rho, counts) <= 0.0:
        return low
    if _score(high, rho, counts) >= 0.0:
        return high
    return float(optimize.brentq(_score, low, high, args=(rho, counts), xtol=1e-12))


def _sizes(counts: UnitCounts) -> dict[int, int]:
    """How many pairable units have each number of values."""
    return {int(size): int(counts.units[counts.sizes == size].sum())
            for size in np.unique(counts.sizes)}


def _binary_alpha(values: float, yes_values, within):
    """Krippendorff's nominal alpha of two categories from N = VALUES pairable values, n_yes =
    YES_VALUES of them yes, and WITHIN = Σ_u x(m − x) / (m − 1) over units with m values, x yes:
    1 − (N − 1) WITHIN / (n_yes n_no); NaN where every value is the same. Vectorised."""
    yes_values, within = np.asarray(yes_values, float), np.asarray(within, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (values - 1.0) * within / (yes_values * (values - yes_values))
    return np.where((yes_values > 0) & (yes_values < values), alpha, np.nan)


def alpha_of_counts(counts: UnitCounts) -> float:
    """Krippendorff's alpha of the yes/no values summarised by COUNTS (``_binary_alpha``)."""
    return float(_binary_alpha(
        float(np.sum(counts.units * counts.sizes)), np.sum(counts.units * counts.yes),
        np.sum(counts.units * counts.yes * (counts.sizes - counts.yes) / (counts.sizes - 1.0))))


def simulated_alphas(sizes: dict[int, int], pi: float, rho: float, draws: int,
                     seed: int) -> np.ndarray:
    """Alpha of DRAWS studies with the given units (SIZES: values per unit → units) whose yes
    counts follow the model at (π, ρ); NaN for a study whose values are all the same. The
    same SEED at every (π, ρ), so neighbouring ρ see the same random numbers."""
    rng = np.random.default_rng(seed)
    values = float(sum(size * units for size, units in sizes.items()))
    yes_values = np.zeros(draws)
    within = np.zeros(draws)
    for size, units in sorted(sizes.items()):
        x = np.arange(size + 1)
        drawn = rng.multinomial(units, unit_probabilities(size, pi, rho), size=draws)
        yes_values += drawn @ x
        within += drawn @ (x * (size - x) / (size - 1.0))
    return _binary_alpha(values, yes_values, within)


def tail_probabilities(observed: float, rho: float, counts: UnitCounts, *, draws: int = TEST_DRAWS,
                       seed: int = 0) -> tuple[float, float]:
    """(P(α̂ ≤ observed), P(α̂ ≥ observed)) at ρ, mid-p (a tie counts half), over the studies
    whose alpha is defined, with the mean at its maximum-likelihood value π̂(ρ); (0, 0) when
    none is."""
    alphas = simulated_alphas(_sizes(counts), mean_at(rho, counts), rho, draws, seed)
    alphas = alphas[np.isfinite(alphas)]
    if not len(alphas):  # the model at ρ (almost) never gives a study like the observed one
        return 0.0, 0.0
    below = float(np.mean(alphas < observed - 1e-12))
    tied = float(np.mean(np.abs(alphas - observed) <= 1e-12))
    return below + tied / 2.0, 1.0 - below - tied / 2.0


def test_inversion_interval(counts: UnitCounts, confidence: float = 0.95, *,
                            draws: int = TEST_DRAWS, seed: int = 0) -> tuple[float, float]:
    """(low, high): every ρ₀ at which the observed alpha lies in neither (1 − CONFIDENCE) / 2
    tail of alpha's distribution at (π̂(ρ₀), ρ₀) (``tail_probabilities``). The ends are found by
    bisection between alpha (clipped to the model's range) and the model's floor or 1; where the
    floor itself is not rejected the lower end is the floor, or alpha when alpha is lower."""
    observed = alpha_of_counts(counts)
    tail = (1.0 - confidence) / 2.0
    floor = rho_floor(counts) + 1e-7
    centre = min(max(observed, floor), 1.0 - _EDGE)
    upper_tail = lambda rho: tail_probabilities(observed, rho, counts, draws=draws,  # noqa: E731
                                                seed=seed)[1]
    lower_tail = lambda rho: tail_probabilities(observed, rho, counts, draws=draws,  # noqa: E731
                                                seed=seed)[0]
    low = min(rho_floor(counts), observed) if upper_tail(floor) > tail else _boundary(
        lambda rho: upper_tail(rho) > tail, floor, centre)
    high = 1.0 if lower_tail(1.0) > tail else _boundary(
        lambda rho: lower_tail(rho) > tail, 1.0, centre)
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
