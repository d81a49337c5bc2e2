"""Scenario-conditioned arena ratings (docs/arena.md, "Ratings per scenario facet").

Which system wins for which request? Each vote carries the value its battle's scenario has for
one facet (a city, an item type, a difficulty tier, whether a rejection is in it). A separate
Bradley–Terry fit per facet value would be noisy where a value has few votes; instead one fit
shares strength across values (Bradley–Terry with facet interactions and shrinkage):

    P(i beats j | value f) = σ((θ_i + δ_{i,f}) − (θ_j + δ_{j,f})),   δ_{i,f} ~ N(0, τ²),

with τ = 0.5 on the log-odds scale (about 87 Elo points: a system's strength may move that much
from one value to another before the data must say so). θ and δ are fitted together by
maximising the penalised likelihood (the posterior mode; θ_0 = 0 pins the scale; ties count
half a win). Intervals are the normal (Laplace) approximation of the posterior: the inverse of
the penalised information, so a sparse cell's interval is wide and its rating pulled towards
the system's overall one. Each value's ratings are reported on the Elo scale, centred on 1000
over the systems. Coverage over facets drawn from the prior: ``bench_calibration``.

Pure code: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy.special import expit

from evaluation.lib.stats.arena import (
    ELO_BASE,
    ELO_INITIAL,
    ELO_SCALE,
    NO_MLE,
    mle_exists,
    outcome_score,
)
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE

TAU = 0.5
METHOD = "bradley_terry_facet_shrinkage"
METHOD_LABEL = ("Bradley–Terry with facet interactions, shrunk towards each system's overall "
                "strength (normal prior, τ = 0.5 log-odds; 95% Laplace intervals)")


@dataclass(frozen=True)
class FacetRating:
    facet_value: str
    system: Hashable
    rating: float
    ci_low: float
    ci_high: float
    votes: int  # the system's votes with this value


@dataclass(frozen=True)
class FacetTable:
    rows: list[FacetRating]  # by value, then best first
    values: list[str]
    n_votes: int
    undefined_reason: str | None = None
    method: str = METHOD
    method_label: str = METHOD_LABEL


def facet_ratings(votes: Sequence[tuple[Hashable, Hashable, str, str]], *, tau: float = TAU,
                  base: float = ELO_BASE, scale: float = ELO_SCALE,
                  initial: float = ELO_INITIAL, confidence: float = DEFAULT_CONFIDENCE,
                  max_steps: int = 50, tolerance: float = 1e-9) -> FacetTable:
    """Ratings per facet value from (system_a, system_b, outcome, facet value) votes."""
    if not votes:
        return FacetTable([], [], 0, "no votes")
    names = sorted({v[0] for v in votes} | {v[1] for v in votes}, key=str)
    values = sorted({str(v[3]) for v in votes})
    size, n_values = len(names), len(values)
    if size < 2:
        return FacetTable([], values, len(votes), "fewer than two systems have votes")
    system = {name: i for i, name in enumerate(names)}
    value = {name: f for f, name in enumerate(values)}
    first = np.array([system[v[0]] for v in votes])
    second = np.array([system[v[1]] for v in votes])
    facet = np.array([value[str(v[3])] for v in votes])
    score = np.array([outcome_score(v[2]) for v in votes])
    pooled = np.zeros((size, size))
    np.add.at(pooled, (first, second), score)
    np.add.at(pooled, (second, first), 1 - score)
    if not mle_exists(pooled):  # the systems' overall strengths are unbounded
        return FacetTable([], values, len(votes), NO_MLE)
    # Parameters: θ_1..θ_{S−1} (θ_0 = 0), then δ_{i,f} for every system and value.
    n_theta = size - 1
    n_params = n_theta + size * n_values
    design = np.zeros((len(votes), n_params))
    rows = np.arange(len(votes))
    for column, sign in ((first, 1.0), (second, -1.0)):
        has_theta = column > 0
        design[rows[has_theta], column[has_theta] - 1] += sign
        design[rows, n_theta + column * n_values + facet] += sign
    penalty = np.r_[np.zeros(n_theta), np.full(size * n_values, 1.0 / tau ** 2)]
    params = np.zeros(n_params)
    for _ in range(max_steps):
        p = expit(design @ params)
        gradient = design.T @ (score - p) - penalty * params
        information = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        try:
            step = np.linalg.solve(information, gradient)
        except np.linalg.LinAlgError:
            return FacetTable([], values, len(votes), "the fit did not converge")
        params = params + np.clip(step, -3, 3)
        if np.abs(step).max() < tolerance:
            break
    p = expit(design @ params)
    information = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty)
    covariance = np.linalg.inv(information)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    factor = scale / np.log(base)
    counts = np.zeros((size, n_values), dtype=int)
    np.add.at(counts, (first, facet), 1)
    np.add.at(counts, (second, facet), 1)
    table = []
    for f, name in enumerate(values):
        # strength_i(f) = θ_i + δ_{i,f}, centred over systems: rows of a linear map L.
        lift = np.zeros((size, n_params))
        for i in range(size):
            if i > 0:
                lift[i, i - 1] = 1.0
            lift[i, n_theta + i * n_values + f] = 1.0
        centred = lift - lift.mean(axis=0)
        strength = centred @ params
        spread = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", centred, covariance, centred), 0,
                                 None))
        cell = [FacetRating(name, names[i], float(initial + factor * strength[i]),
                            float(initial + factor * (strength[i] - z * spread[i])),
                            float(initial + factor * (strength[i] + z * spread[i])),
                            int(counts[i, f])) for i in range(size)]
        table.extend(sorted(cell, key=lambda row: (-row.rating, str(row.system))))
    return FacetTable(table, values, len(votes))


def simulated_facet_votes(n_votes: int, strengths: Sequence[float],
                          deviations: np.ndarray, *, seed: int = 0
                          ) -> list[tuple[str, str, str, str]]:
    """Votes where system i's log-strength under value f is strengths[i] + deviations[i, f];
    values drawn uniformly. For tests and calibration."""
    rng = np.random.default_rng(seed)
    size, n_values = deviations.shape
    votes = []
    for _ in range(n_votes):
        i, j = rng.choice(size, size=2, replace=False)
        f = int(rng.integers(n_values))
        gap = strengths[i] + deviations[i, f] - strengths[j] - deviations[j, f]
        votes.append((f"s{i}", f"s{j}", "a" if rng.random() < expit(gap) else "b", f"f{f}"))
    return votes
