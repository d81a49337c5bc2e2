"""The interval of a yes/no field's agreement rated twice per unit: a profile-likelihood interval
for the intraclass correlation of binary ratings (docs/statistics.md, "Yes/no fields rated
twice: a profile-likelihood interval").

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
reaches ρ = 1 (every unit unanimous) the upper end is 1. With three or more values per unit
the model is not saturated; such fields get ``category_test``'s interval. No random draws, no
Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

__all__ = ["UnitCounts", "log_likelihood", "mean_at", "profile_interval",
           "profile_log_likelihood", "rho_floor", "unit_counts"]

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
