"""Active statistical inference for a system's human mean: "label these next" (statistics.md,
"Label these next: active handout").

Zrnic & Candès (2024), "Active Statistical Inference" (ICML), the mean example. A pool of n units
has the evaluator's score f_i; unit i is sent to the humans with probability π_i (Poisson
sampling: ξ_i ~ Bernoulli(π_i), independently), and

    θ̂ = (1/n) Σ_i Z_i,   Z_i = λ f_i + (Y_i − λ f_i) ξ_i / π_i,

unbiased for the humans' mean over the pool for every fixed λ and every π > 0 (E[ξ_i / π_i] = 1):
the inverse-probability weight keeps the estimate honest however the units were chosen. Uniform
handout is π_i = m/n (then θ̂ is PPI with Poisson sampling); the active policy spends the same
expected number of labels m = Σ π_i where the evaluator is least trusted: π_i ∝ ê_i, the
predicted |Y − λf| of unit i, which minimises Σ ê_i² (1/π_i − 1), the variance the sampling adds
(their Proposition: π ∝ sqrt(E[(Y − λf)² | X])). π is mixed with the uniform rule (share
UNIFORM_MIX) so that no unit's weight explodes when ê is badly predicted, and capped at 1.

λ is power-tuned (the minimiser of the summands' sample variance, Z_i(λ) = Y_i w_i + λ f_i (1 −
w_i), w_i = ξ_i/π_i), clipped to [0, 1]; the interval is θ̂ ± z sd(Z)/√n (the summands are
independent given the pool; with clusters, the dialogue-clustered sandwich).

The predicted error ê comes from the labels already in: the evaluator's scores are cut into
quantile bins and ê of a bin is the root mean squared |Y − λf| of its labelled units (λ from the
same labels; a bin with fewer than MIN_BIN labels gets the overall value). Any other predictor of
the error (a judge's disagreement with itself over repeated samples) can be passed instead.
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
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class ActiveEstimate:
    value: float
    ci_low: float
    ci_high: float
    lam: float
    n_labelled: int
    n_pool: int

    def to_dict(self) -> dict:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "lambda": self.lam, "n_labelled": self.n_labelled, "n_pool": self.n_pool}


def predicted_error(scores: Sequence[float], labelled: Sequence[int],
                    human: Sequence[float], *, bins: int = BINS) -> np.ndarray:
    """ê for every unit of the pool (SCORES) from the units LABELLED (indices) with their HUMAN
    labels: root mean squared residual Y − (a + b f) per quantile bin of f."""
    f = np.asarray(scores, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    y = np.asarray(human, dtype=float)
    if len(idx) < 3:
        return np.ones_like(f)
    fl = f[idx]
    slope = np.cov(fl, y)[0, 1] / np.var(fl, ddof=1) if np.var(fl) > 0 else 0.0
    residual = y - (y.mean() + slope * (fl - fl.mean()))
    overall = float(np.sqrt(np.mean(residual ** 2))) or 1.0
    edges = np.unique(np.quantile(f, np.linspace(0, 1, bins + 1)[1:-1]))
    pool_bin, labelled_bin = np.searchsorted(edges, f), np.searchsorted(edges, fl)
    out = np.full(len(f), overall)
    for b in range(len(edges) + 1):
        inside = labelled_bin == b
        if inside.sum() >= MIN_BIN:
            out[pool_bin == b] = max(float(np.sqrt(np.mean(residual[inside] ** 2))),
                                     0.05 * overall)
    return out


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
                confidence: float = DEFAULT_CONFIDENCE, lam: float | None = None
                ) -> ActiveEstimate:
    """The inverse-probability-weighted PPI++ mean of the pool: SCORES f_i for every unit, PI its
    inclusion probability, SELECTED ξ_i, HUMAN Y_i (read where selected only)."""
    f = np.asarray(scores, dtype=float)
    p = np.asarray(pi, dtype=float)
    xi = np.asarray(selected, dtype=bool)
    y = np.array([h if s else 0.0 for h, s in zip(human, xi, strict=True)], dtype=float)
    w = np.where(xi, 1.0 / p, 0.0)
    a, b = y * w, f * (1 - w)  # Z(λ) = a + λ b
    if lam is None:
        var_b = np.var(b)
        lam = float(np.clip(-np.cov(a, b, ddof=0)[0, 1] / var_b, 0.0, 1.0)) if var_b > 0 else 1.0
    z = a + lam * b
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
    return ActiveEstimate(value, value - half, value + half, lam, int(xi.sum()), n)


def projected_width(error: np.ndarray, pi: np.ndarray, spread: float,
                    confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The expected interval width for inclusion probabilities PI when unit i's |Y − λf| is
    ERROR_i: Var θ̂ = SPREAD²/n + Σ ERROR_i² (1/π_i − 1) / n² (the pool's own spread of Y plus
    what the sampling adds)."""
    n = len(error)
    variance = spread ** 2 / n + float(np.sum(error ** 2 * (1 / pi - 1))) / n ** 2
    return 2 * float(stats.norm.ppf(0.5 + confidence / 2)) * float(np.sqrt(variance))


def width_curve(error: Sequence[float], spread: float, budgets: Sequence[int], *,
                mix: float = UNIFORM_MIX) -> list[dict]:
    """Projected interval width at each label budget, uniform and active (the author's chart)."""
    e = np.asarray(error, dtype=float)
    n = len(e)
    rows = []
    for m in budgets:
        if m <= 0 or m > n:
            continue
        rows.append({"labels": int(m),
                     "uniform": projected_width(e, np.full(n, m / n), spread),
                     "active": projected_width(e, inclusion_probabilities(e, m, mix=mix),
                                               spread)})
    return rows


def draw_selection(pi: Sequence[float], seed: int) -> np.ndarray:
    """ξ_i ~ Bernoulli(π_i), independently, from SEED (Poisson sampling)."""
    rng = np.random.default_rng(seed)
    return rng.random(len(pi)) < np.asarray(pi, dtype=float)
