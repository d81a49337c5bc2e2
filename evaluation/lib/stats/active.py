"""Active statistical inference for a system's human mean: "label these next" (statistics.md,
"Label these next: active handout").

Zrnic & Candès (2024), "Active Statistical Inference" (ICML), the mean example. A pool of n units
has the evaluator's score f_i; unit i is sent to the humans with probability π_i (Poisson
sampling: ξ_i ~ Bernoulli(π_i), independently), and

    θ̂ = (1/n) Σ_i Z_i,   Z_i = λ f_i + (Y_i − λ f_i) ξ_i / π_i,

unbiased for the humans' mean over the pool for every fixed λ and every π > 0 (E[ξ_i / π_i] = 1):
the inverse-probability weight keeps the estimate honest however the units were chosen. The
prediction may carry an intercept, λ f_i + c (unbiased for every fixed c as well): under Poisson
sampling the number of labels is random, so without it a judge on another scale than the humans
(FACE's 0–4 against a 1–5 Likert question) adds the squared mean gap (E[Y − λf])² to every
summand's variance; with c tuned only the residual's spread is left (the regression estimator of
survey sampling). Uniform handout is π_i = m/n (then θ̂ is PPI with Poisson sampling); the active
policy spends the same expected number of labels m = Σ π_i where the evaluator is least
trusted: π_i ∝ ê_i, the predicted |Y − λf − c| of unit i, which minimises Σ ê_i² (1/π_i − 1),
the variance the sampling adds (their Proposition: π ∝ sqrt(E[(Y − λf)² | X])). π is mixed
with the uniform rule (share UNIFORM_MIX) so that no unit's weight explodes when ê is badly
predicted, and capped at 1.

λ and c are power-tuned (the minimisers of the summands' sample variance, Z_i(λ, c) = Y_i w_i +
(λ f_i + c)(1 − w_i), w_i = ξ_i/π_i: a least-squares fit), λ clipped to [0, 1]; the interval is
θ̂ ± z sd(Z)/√n (the summands are independent given the pool; with clusters, the
dialogue-clustered sandwich).

The predicted error ê comes from the labels already in, by one of these predictors
(`error_model`, which names the one it used):

- "uncertainty": the judge reports its own uncertainty u_i on every unit (FACE: the sd of its
  grade distribution, `UnitScore.detail["uncertainty"]["sd"]`); the residuals r = Y − (a + b f)
  of the labelled units fit the variance function E[r² | u] = α + β u² by least squares (α, β ≥
  0) and ê_i = sqrt(α + β u_i²). α is what no judge can predict (the humans' own noise, the part
  of Y the judge misses everywhere), β u² the judge's own doubt. Needs MIN_FIT labelled units
  with an uncertainty; a unit without one gets the overall root mean squared residual.
- "bernoulli": a probabilistic judge of a yes/no outcome whose u is its own Bernoulli spread
  sqrt(f (1 − f)): ê = u (its residual sd, if calibrated), from the first label on, nothing
  fitted.
- "prior": any other reported uncertainty before MIN_FIT labels exist (a study's first wave):
  ê² = PRIOR_FLOOR · mean(u²) + u², a floor for the error the judge's doubt does not see (the
  annotators' noise, what it misses everywhere), without which a judge whose doubt spans an
  order of magnitude would starve its sure units of labels (statistics.md, "Label these next").
- "quintiles" (the fallback when no uncertainty is stored): the evaluator's scores are cut into
  quantile bins and ê of a bin is the root mean squared residual of its labelled units (a bin
  with fewer than MIN_BIN labels gets the overall value).

Pure numpy: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

UNIFORM_MIX = 0.2
BINS = 5
MIN_BIN = 5
MIN_FIT = 10  # labelled units with an uncertainty before the variance function is fitted
DEFAULT_CONFIDENCE = 0.95
FLOOR = 0.05  # no unit's predicted error below this share of the overall one
PRIOR_FLOOR = 1.0  # the "prior" predictor's ê² = PRIOR_FLOOR · mean(u²) + u²
BERNOULLI_TOLERANCE = 1e-6

# The predictors of the error, as the label plan and the report name them.
PREDICTORS = {
    "uncertainty": "the judge's own uncertainty: ê² = α + β·u² fitted on the labels so far",
    "bernoulli": "the judge's own uncertainty, a probability f's Bernoulli spread: "
                 "ê = u = sqrt(f(1 − f)), the error of a calibrated yes/no judge (nothing fitted)",
    "prior": "the judge's own uncertainty before labels can fit it: ê² = mean(u²) + u² (as much "
             "error again as the judge's doubt cannot see)",
    "quintiles": "per quintile of the judge's score: root mean squared residual of the labels "
                 "so far",
    "none": "too few labels to predict the error: the same everywhere",
}


@dataclass(frozen=True)
class ActiveEstimate:
    value: float
    ci_low: float
    ci_high: float
    lam: float
    n_labelled: int
    n_pool: int
    offset: float = 0.0

    def to_dict(self) -> dict:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "lambda": self.lam, "offset": self.offset, "n_labelled": self.n_labelled,
                "n_pool": self.n_pool}


@dataclass(frozen=True)
class ErrorModel:
    """ê per unit of the pool, the predictor that gave it (a key of PREDICTORS) and its fitted
    numbers (α and β for "uncertainty", the bin edges and values for "quintiles")."""

    error: np.ndarray
    predictor: str
    params: dict

    @property
    def description(self) -> str:
        return PREDICTORS[self.predictor]


def _line_residuals(fl: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Y − (a + b f), the least-squares line of the labelled units (what λf + c leaves)."""
    slope = np.cov(fl, y)[0, 1] / np.var(fl, ddof=1) if np.var(fl) > 0 else 0.0
    return y - (y.mean() + slope * (fl - fl.mean()))


def error_model(scores: Sequence[float], labelled: Sequence[int], human: Sequence[float], *,
                uncertainty: Sequence[float | None] | None = None,
                bins: int = BINS) -> ErrorModel:
    """ê for every unit of the pool (SCORES) from the units LABELLED (indices) with their HUMAN
    labels: from the judge's own UNCERTAINTY per unit (None or NaN where it reported none) —
    from the uncertainty alone (`_prior_model`) while fewer than MIN_FIT units are labelled at
    all or when it is a probability's Bernoulli spread, else fitted (α + β u²) when at least
    MIN_FIT labelled units have one — else per quantile bin of the scores (with fewer than 3
    labels, the same everywhere)."""
    f = np.asarray(scores, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    y = np.asarray(human, dtype=float)
    u = None if uncertainty is None else np.array(uncertainty, dtype=float)  # None -> NaN
    if u is not None and len(u) != len(f):
        raise ValueError("one uncertainty per scored unit (None where there is none)")
    residual = _line_residuals(f[idx], y) if len(idx) >= 3 else None
    overall = (float(np.sqrt(np.mean(residual ** 2))) or 1.0) if residual is not None else None
    if u is not None and np.isfinite(u).sum() >= 2 and np.nanvar(u) > 0 \
            and (len(idx) < MIN_FIT or _bernoulli(f, u)):
        return _prior_model(f, u, overall)
    if residual is None:
        return ErrorModel(np.ones_like(f), "none", {})
    if u is not None:
        known = np.isfinite(u[idx])
        if known.sum() >= MIN_FIT and np.var(u[idx][known]) > 0:
            return _uncertainty_model(u, residual[known], u[idx][known], overall)
    return _quintile_model(f, f[idx], residual, overall, bins)


def _uncertainty_model(u: np.ndarray, residual: np.ndarray, u_labelled: np.ndarray,
                       overall: float) -> ErrorModel:
    """Least squares of r² on u² with α, β ≥ 0: the unconstrained fit, else the better of the
    two boundary fits (through the origin, β = 0: the same error everywhere)."""
    x, r2 = u_labelled ** 2, residual ** 2
    beta = float(np.cov(x, r2, ddof=0)[0, 1] / np.var(x))
    alpha = float(r2.mean() - beta * x.mean())
    if beta <= 0:
        alpha, beta = float(r2.mean()), 0.0
    elif alpha < 0:
        alpha, beta = 0.0, float(np.sum(x * r2) / np.sum(x ** 2))
    error = np.sqrt(alpha + beta * np.where(np.isfinite(u), u, 0.0) ** 2)
    error = np.where(np.isfinite(u), error, overall)
    return ErrorModel(np.maximum(error, FLOOR * overall), "uncertainty",
                      {"alpha": alpha, "beta": beta, "fitted_on": int(len(x))})


def _bernoulli(f: np.ndarray, u: np.ndarray) -> bool:
    """Is every reported U the Bernoulli spread sqrt(f (1 − f)) of a probability F in [0, 1]?"""
    known = np.isfinite(u)
    return bool(np.all((f[known] >= 0) & (f[known] <= 1)) and np.allclose(
        u[known], np.sqrt(np.clip(f[known] * (1 - f[known]), 0, None)), rtol=0,
        atol=BERNOULLI_TOLERANCE))


def _prior_model(f: np.ndarray, u: np.ndarray, overall: float | None) -> ErrorModel:
    """ê from the reported uncertainty alone. A probability f in [0, 1] whose uncertainty is its
    own Bernoulli spread sqrt(f (1 − f)) is a judge of a yes/no outcome, whose residual sd is u
    if it is calibrated: ê = u ("bernoulli", at any number of labels: there is nothing to fit,
    and a fitted α ≥ 0 only adds noise that flattens π). Any other uncertainty is the spread of
    the judge's grade on its own scale, blind to the annotators' noise and to what the judge
    misses everywhere: before MIN_FIT labels can fit α + β u², ê² = PRIOR_FLOOR · mean(u²) + u²
    ("prior"). A unit without an uncertainty gets the root mean square of the others; with
    OVERALL (the root mean squared residual of 3 or more labels) ê is scaled to it, else it
    stays on the judge's scale (π only needs ê up to a factor)."""
    known = np.isfinite(u)
    bernoulli = _bernoulli(f, u)
    floor = 0.0 if bernoulli else PRIOR_FLOOR * float(np.mean(u[known] ** 2))
    square = np.where(known, floor + np.where(known, u, 0.0) ** 2, np.nan)
    square = np.where(known, square, np.nanmean(square))
    scale = 1.0 if overall is None else overall / float(np.sqrt(np.mean(square)))
    error = np.sqrt(square) * scale
    rms = float(np.sqrt(np.mean(error ** 2)))
    return ErrorModel(np.maximum(error, FLOOR * rms), "bernoulli" if bernoulli else "prior",
                      {"floor": floor, "scale": scale})


def _quintile_model(f: np.ndarray, fl: np.ndarray, residual: np.ndarray, overall: float,
                    bins: int) -> ErrorModel:
    edges = np.unique(np.quantile(f, np.linspace(0, 1, bins + 1)[1:-1]))
    pool_bin, labelled_bin = np.searchsorted(edges, f), np.searchsorted(edges, fl)
    out = np.full(len(f), overall)
    values = []
    for b in range(len(edges) + 1):
        inside = labelled_bin == b
        value = overall
        if inside.sum() >= MIN_BIN:
            value = max(float(np.sqrt(np.mean(residual[inside] ** 2))), FLOOR * overall)
            out[pool_bin == b] = value
        values.append(value)
    return ErrorModel(out, "quintiles", {"edges": [float(e) for e in edges], "values": values})


def predicted_error(scores: Sequence[float], labelled: Sequence[int],
                    human: Sequence[float], *, bins: int = BINS,
                    uncertainty: Sequence[float | None] | None = None) -> np.ndarray:
    """ê for every unit of the pool (`error_model`'s, without the predictor's name)."""
    return error_model(scores, labelled, human, uncertainty=uncertainty, bins=bins).error


def inclusion_probabilities(error: Sequence[float], budget: float, *,
                            mix: float = UNIFORM_MIX) -> np.ndarray:
    """π with Σ π = BUDGET (expected labels), π ∝ ERROR mixed with the uniform rule (share MIX),
    capped at 1 (the excess goes to the others, as far as it can)."""
    e = np.maximum(np.asarray(error, dtype=float), 1e-12)
    n = len(e)
    budget = min(float(budget), float(n))
    if budget <= 0:
        raise ValueError("the label budget must be positive")
    weights = (1 - mix) * e / e.sum() + mix / n
    pi = np.zeros(n)
    free = np.ones(n, dtype=bool)
    left = budget
    for _ in range(n):  # water-filling: units that would exceed 1 are fixed at 1
        pi[free] = left * weights[free] / weights[free].sum()
        over = free & (pi > 1)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
        left = budget - (~free).sum()
        if left <= 0 or not free.any():
            break
    return np.clip(pi, 0.0, 1.0)


def active_mean(scores: Sequence[float], pi: Sequence[float], selected: Sequence[bool],
                human: Sequence[float | None], *,
                clusters: Sequence[Hashable] | None = None,
                confidence: float = DEFAULT_CONFIDENCE, lam: float | None = None,
                offset: float | None = None) -> ActiveEstimate:
    """The inverse-probability-weighted PPI++ mean of the pool: SCORES f_i for every unit, PI its
    inclusion probability, SELECTED ξ_i, HUMAN Y_i (read where selected only). LAM and OFFSET
    fix λ and c; by default both are tuned (with LAM given and OFFSET not, c = 0: the paper's
    fixed prediction λf)."""
    f = np.asarray(scores, dtype=float)
    p = np.asarray(pi, dtype=float)
    xi = np.asarray(selected, dtype=bool)
    y = np.array([h if s else 0.0 for h, s in zip(human, xi, strict=True)], dtype=float)
    if offset is None and lam is not None:
        offset = 0.0
    lam, offset = _tuned(y, f, xi, p, lam, offset)
    z = summands(f, p, xi, y, lam, offset)
    n = len(z)
    value = float(z.mean())
    if clusters is None:
        se = float(np.std(z, ddof=1) / np.sqrt(n))
    else:
        _, codes = np.unique(np.asarray([repr(c) for c in clusters]), return_inverse=True)
        sums = np.bincount(codes, weights=z - value)
        g = len(sums)
        se = float(np.sqrt(g / (g - 1) * np.sum(sums ** 2)) / n)
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * se
    return ActiveEstimate(value, value - half, value + half, lam, int(xi.sum()), n, offset)


def summands(scores, pi, selected, human, lam: float, offset: float = 0.0) -> np.ndarray:
    """Z_i = (λ f_i + c) + (Y_i − λ f_i − c) ξ_i / π_i for every unit of the pool (HUMAN read
    where selected only); their mean is the estimate."""
    f = np.asarray(scores, dtype=float)
    xi = np.asarray(selected, dtype=bool)
    w = np.where(xi, 1.0 / np.asarray(pi, dtype=float), 0.0)
    y = np.where(xi, np.asarray([0.0 if h is None else h for h in human], dtype=float), 0.0)
    return y * w + (lam * f + offset) * (1 - w)


def _tuned(y, f, xi, p, lam, offset) -> tuple[float, float]:
    """λ and c minimising the sample variance of Z = a + λ b + c d (a = Y w, b = f (1 − w),
    d = 1 − w), the free ones only; λ clipped to [0, 1] (c then refitted)."""
    w = np.where(xi, 1.0 / p, 0.0)
    a, b, d = y * w, f * (1 - w), 1 - w

    def best(target, x):  # the coefficient k minimising Var(target + k x)
        var = np.var(x)
        return float(-np.cov(target, x, ddof=0)[0, 1] / var) if var > 1e-15 else 0.0

    if lam is not None:
        return float(lam), float(offset) if offset is not None else best(a + lam * b, d)
    if offset is not None:
        lam = float(np.clip(best(a + offset * d, b), 0.0, 1.0)) if np.var(b) > 1e-15 else 1.0
        return lam, float(offset)
    design = np.column_stack([b - b.mean(), d - d.mean()])
    gram = design.T @ design
    if np.linalg.matrix_rank(gram) < 2:  # every unit labelled, or no label: one free direction
        lam = float(np.clip(best(a, b), 0.0, 1.0)) if np.var(b) > 1e-15 else 1.0
        return lam, best(a + lam * b, d)
    lam_free, _ = np.linalg.solve(gram, -design.T @ (a - a.mean()))
    lam = float(np.clip(lam_free, 0.0, 1.0))
    return lam, best(a + lam * b, d)


def projected_width(error: np.ndarray, pi: np.ndarray, spread: float,
                    confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The expected interval width for inclusion probabilities PI when unit i's |Y − λf − c| is
    ERROR_i: Var θ̂ = SPREAD²/n + Σ ERROR_i² (1/π_i − 1) / n² (the pool's own spread of Y plus
    what the sampling adds)."""
    n = len(error)
    variance = spread ** 2 / n + float(np.sum(error ** 2 * (1 / pi - 1))) / n ** 2
    return 2 * float(stats.norm.ppf(0.5 + confidence / 2)) * float(np.sqrt(variance))


def width_curve(error: Sequence[float], spread: float, budgets: Sequence[int], *,
                mix: float = UNIFORM_MIX, uniform_share: float = 0.0) -> list[dict]:
    """Projected interval width at each label budget, uniform and active (the author's chart).
    UNIFORM_SHARE: the share of the pool the active handout draws uniformly (its first wave when
    the judge reports no uncertainty, 1/WAVES): the active variance is then that share of the
    uniform one plus the rest of π ∝ ê's (the pool's spread term is common to both)."""
    e = np.asarray(error, dtype=float)
    n = len(e)
    rows = []
    for m in budgets:
        if m <= 0 or m > n:
            continue
        uniform = projected_width(e, np.full(n, m / n), spread)
        by_error = projected_width(e, inclusion_probabilities(e, m, mix=mix), spread)
        rows.append({"labels": int(m), "uniform": uniform,
                     "active": float(np.sqrt(uniform_share * uniform ** 2
                                             + (1 - uniform_share) * by_error ** 2))})
    return rows


def draw_selection(pi: Sequence[float], seed: int) -> np.ndarray:
    """ξ_i ~ Bernoulli(π_i), independently, from SEED (Poisson sampling)."""
    rng = np.random.default_rng(seed)
    return rng.random(len(pi)) < np.asarray(pi, dtype=float)
