"""Style-controlled Bradley–Terry ratings (docs/arena.md, "Style control").

Chatbot Arena's style control (lmarena's FastChat, ``construct_style_matrices`` in
``fastchat/serve/monitor/elo_analysis.py``; ComparIA PR 532 does the same) adds to the
Bradley–Terry design one covariate per style feature, so that a system is not ranked up only
because its answers are longer or show more items:

    P(A beats B) = σ(θ_A − θ_B + Σ_k β_k z_k),

where, for feature k with values a (side A's answer) and b (side B's), z_k is the normalised
difference (a − b) / (a + b + 1), standardised over the votes (minus its mean, over its
population standard deviation), exactly as FastChat builds it (``apply_ratio`` and
``add_one`` on). A tie (or "both bad") counts as half a win for each side, as FastChat counts it
(one battle duplicated: one A win plus one B win). θ and β are fitted together by maximum
likelihood (Newton's method on the concave log-likelihood, θ centred on mean 0; FastChat uses
scikit-learn's logistic regression without intercept, which reaches the same maximum).

Intervals (a named variant): FastChat bootstraps battles; Concord uses the sandwich (robust)
covariance H⁻¹ (Σ g gᵀ) H⁻¹ of the maximum-likelihood estimate, whose per-vote scores g make it
valid with half-win ties, and Wald intervals from it: θ and β ± z·se. Rank intervals come from
1,000 draws (seed 42) of the normal approximation. Coverage is measured by ``bench_calibration``
("style-controlled Bradley–Terry"); a test checks the point estimate against statsmodels'
weighted logistic regression.

Pure code: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy.special import expit

from evaluation.lib.stats.arena import (
    ELO_BASE,
    ELO_INITIAL,
    ELO_SCALE,
    MIN_VOTES_FOR_INTERVAL,
    outcome_score,
)
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_SEED, encode_labels

STYLE_FEATURES = {
    "length": "answer length (words)",
    "items": "items shown",
    "citations": "citations",
}
METHOD = "bradley_terry_style_control"
METHOD_LABEL = ("Bradley–Terry with style covariates (maximum likelihood; sandwich 95% Wald "
                "intervals; rank intervals from 1,000 normal draws)")
RANK_DRAWS = 1000


@dataclass(frozen=True)
class StyledVote:
    """One vote with the style of each side's answers (features by name, e.g. mean words per
    answer, items shown, citations)."""

    system_a: Hashable
    system_b: Hashable
    outcome: str
    style_a: Mapping[str, float]
    style_b: Mapping[str, float]


@dataclass(frozen=True)
class StyleCoefficient:
    feature: str
    label: str
    coefficient: float | None  # log-odds per standard deviation of the normalised difference
    ci_low: float | None
    ci_high: float | None
    note: str | None = None  # why there is no coefficient (the feature never varies)


@dataclass(frozen=True)
class StyledRating:
    system: Hashable
    rating: float
    ci_low: float | None
    ci_high: float | None
    rank: int
    rank_low: int | None
    rank_high: int | None
    votes: int


@dataclass(frozen=True)
class StyleControlledTable:
    """Ratings under style control (best first), the style coefficients, or why none."""

    rows: list[StyledRating]
    coefficients: list[StyleCoefficient]
    n_votes: int
    features: tuple[str, ...]
    undefined_reason: str | None = None
    method: str = METHOD
    method_label: str = METHOD_LABEL


def style_design(votes: Sequence[StyledVote], features: Sequence[str]) -> np.ndarray:
    """The (votes × features) covariates: (a − b) / (a + b + 1), standardised per column; a
    column with no spread (every vote alike) is all zeros."""
    a = np.array([[float(v.style_a.get(f, 0.0)) for f in features] for v in votes], dtype=float)
    b = np.array([[float(v.style_b.get(f, 0.0)) for f in features] for v in votes], dtype=float)
    a, b = a.reshape(len(votes), len(features)), b.reshape(len(votes), len(features))
    if (a < 0).any() or (b < 0).any():
        raise ValueError("style features are counts: none may be negative")
    ratio = (a - b) / (a + b + 1.0)
    spread = ratio.std(axis=0)
    centred = ratio - ratio.mean(axis=0)
    return np.divide(centred, spread, out=np.zeros_like(centred), where=spread > 0)


def _newton(design: np.ndarray, score: np.ndarray, *, steps: int = 100,
            tolerance: float = 1e-10) -> np.ndarray | None:
    """Maximise Σ s log σ(xβ) + (1 − s) log σ(−xβ); None when the maximum is not finite."""
    params = np.zeros(design.shape[1])

    def loglik(p):
        eta = design @ p
        return float((score * -np.logaddexp(0.0, -eta) + (1 - score) * -np.logaddexp(0.0, eta))
                     .sum())

    current = loglik(params)
    for _ in range(steps):
        prob = expit(design @ params)
        gradient = design.T @ (score - prob)
        hessian = -(design * (prob * (1 - prob))[:, None]).T @ design
        try:
            step = np.linalg.solve(hessian, -gradient)
        except np.linalg.LinAlgError:
            return None
        factor = 1.0
        while factor > 1e-8:
            candidate = params + factor * step
            value = loglik(candidate)
            if value >= current - 1e-12:
                break
            factor /= 2
        params, improvement, current = candidate, value - current, value
        if np.abs(factor * step).max() < tolerance or abs(improvement) < tolerance ** 2:
            break
    if not np.isfinite(params).all() or np.abs(params).max() > 30:
        return None  # separated data: some system or style never lost (or never won)
    return params


def style_controlled_ratings(
    votes: Sequence[StyledVote],
    *,
    features: Sequence[str] = tuple(STYLE_FEATURES),
    base: float = ELO_BASE,
    scale: float = ELO_SCALE,
    initial: float = ELO_INITIAL,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> StyleControlledTable:
    """Bradley–Terry ratings on the Elo scale (mean INITIAL) with style covariates FEATURES."""
    features = tuple(features)
    unknown = [f for f in features if f not in STYLE_FEATURES]
    if unknown:
        raise ValueError(f"unknown style features {unknown}; known: {', '.join(STYLE_FEATURES)}")
    if not votes:
        return StyleControlledTable([], [], 0, features, "no votes")
    codes, names = encode_labels([v.system_a for v in votes] + [v.system_b for v in votes])
    n, size = len(votes), len(names)
    first, second = codes[:n], codes[n:]
    if (first == second).any():
        raise ValueError("a vote compares a system with itself")
    score = np.array([outcome_score(v.outcome) for v in votes])
    if size < 2:
        return StyleControlledTable([], [], n, features, "fewer than two systems have votes")
    # θ_0 is fixed at 0 (only differences are identified); systems 1..S−1 and the features.
    systems = np.zeros((n, size))
    systems[np.arange(n), first] += 1.0
    systems[np.arange(n), second] -= 1.0
    style = style_design(votes, features)
    varies = [k for k in range(len(features)) if np.any(style[:, k] != 0)]
    design = np.hstack([systems[:, 1:], style[:, varies]])
    params = _newton(design, score)
    if params is None:
        return StyleControlledTable([], [], n, features, (
            "the maximum-likelihood fit does not exist: some system (or style) never lost "
            "or never won"))
    prob = expit(design @ params)
    hessian = (design * (prob * (1 - prob))[:, None]).T @ design
    scores = design * (score - prob)[:, None]
    bread = np.linalg.pinv(hessian)
    covariance = bread @ (scores.T @ scores) @ bread
    # Centre θ (mean 0): θ = C θ_free, with θ_0 = 0 prepended.
    lift = np.vstack([np.zeros(size - 1), np.eye(size - 1)])
    centre = np.eye(size) - 1.0 / size
    to_theta = centre @ lift
    theta = to_theta @ params[: size - 1]
    theta_cov = to_theta @ covariance[: size - 1, : size - 1] @ to_theta.T
    beta = params[size - 1:]
    beta_se = np.sqrt(np.clip(np.diag(covariance)[size - 1:], 0, None))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    factor = scale / np.log(base)
    ratings = initial + factor * theta
    rating_se = factor * np.sqrt(np.clip(np.diag(theta_cov), 0, None))
    draws = np.random.default_rng(seed).multivariate_normal(
        theta, theta_cov, size=RANK_DRAWS, method="eigh")
    draw_ranks = 1 + (draws[:, None, :] > draws[:, :, None]).sum(axis=-1)
    tail = (1 - confidence) / 2
    rank_low = np.floor(np.quantile(draw_ranks, tail, axis=0))
    rank_high = np.ceil(np.quantile(draw_ranks, 1 - tail, axis=0))
    point_ranks = 1 + (theta[None, :] > theta[:, None]).sum(axis=-1)
    per_system = np.bincount(first, minlength=size) + np.bincount(second, minlength=size)
    rows = []
    for s, name in enumerate(names):
        enough = per_system[s] >= MIN_VOTES_FOR_INTERVAL
        rows.append(StyledRating(
            name, float(ratings[s]),
            float(ratings[s] - z * rating_se[s]) if enough else None,
            float(ratings[s] + z * rating_se[s]) if enough else None,
            int(point_ranks[s]), int(rank_low[s]) if enough else None,
            int(rank_high[s]) if enough else None, int(per_system[s])))
    rows.sort(key=lambda row: (-row.rating, str(row.system)))
    coefficients = []
    for k, feature in enumerate(features):
        if k not in varies:
            coefficients.append(StyleCoefficient(
                feature, STYLE_FEATURES[feature], None, None, None,
                "left out of the fit: every vote has the same value"))
            continue
        j = varies.index(k)
        coefficients.append(StyleCoefficient(
            feature, STYLE_FEATURES[feature], float(beta[j]), float(beta[j] - z * beta_se[j]),
            float(beta[j] + z * beta_se[j])))
    return StyleControlledTable(rows, coefficients, n, features)


def simulated_styled_votes(n_votes: int, strengths: Sequence[float], style_effect: float, *,
                           seed: int = 0) -> list[StyledVote]:
    """Votes between systems of the given log-strengths where the longer answer wins more
    often: the true model has coefficient STYLE_EFFECT on the standardised length covariate
    (up to the standardisation, which the fit re-estimates). Systems differ in their typical
    answer length, so a plain fit confounds length with strength. For tests and calibration."""
    rng = np.random.default_rng(seed)
    size = len(strengths)
    typical = np.linspace(20, 80, size)[rng.permutation(size)]
    pairs = rng.integers(0, size, size=(n_votes, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    length_a = rng.poisson(typical[pairs[:, 0]])
    length_b = rng.poisson(typical[pairs[:, 1]])
    ratio = (length_a - length_b) / (length_a + length_b + 1.0)
    standardised = (ratio - ratio.mean()) / ratio.std()
    eta = np.asarray(strengths)[pairs[:, 0]] - np.asarray(strengths)[pairs[:, 1]] \
        + style_effect * standardised
    wins = rng.random(len(pairs)) < expit(eta)
    return [StyledVote(f"s{a}", f"s{b}", "a" if won else "b", {"length": float(la)},
                       {"length": float(lb)})
            for (a, b), won, la, lb in zip(pairs.tolist(), wins, length_a, length_b,
                                           strict=True)]
