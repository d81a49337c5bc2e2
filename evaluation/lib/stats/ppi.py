"""Human-anchored system scores: prediction-powered inference, PPI++ (statistics.md,
"Human-anchored system scores").

An evaluator f scored every unit of a system; humans labelled n of them (Y_i, with f(X_i)), the
other N units have only the evaluator's score f(X̃_j). The PPI++ estimate of the human mean
(Angelopoulos, Duchi & Zrnic 2024, "PPI++: Efficient Prediction-Powered Inference", the mean
example) is

    θ̂(λ) = λ · mean_j f(X̃_j) + mean_i (Y_i − λ f(X_i)),

unbiased for the humans' mean for every fixed λ (the rectifier Y − λf corrects the evaluator's
bias, whatever its scale). λ is power-tuned: the value minimising the estimated variance of
θ̂(λ), clipped to [0, 1] (λ = 0 is the human-only mean, λ = 1 plain PPI).

The variance is cluster-robust: turns of one dialogue are correlated, so each dialogue g
contributes one influence value

    e_g(λ) = A_g + λ B_g,   A_g = Σ_{i∈g} (Y_i − Ȳ) / n,
                            B_g = Σ_{j∈g} (f̃_j − f̃̄) / N − Σ_{i∈g} (f_i − f̄) / n,

(a dialogue may hold labelled and unlabelled units: their covariance is kept), and
Var θ̂(λ) = c Σ_g e_g(λ)², c = G/(G − 1), G the dialogues holding labelled units. λ* =
−Σ A_g B_g / Σ B_g² (clipped), the exact minimiser; with one unit per dialogue and disjoint
labelled and unlabelled dialogues, −Σ AB / Σ B² = Cov(Y, f) / (Var_L(f) + (n/N) Var_U(f)),
the paper's closed form Cov(Y, f) / ((1 + n/N) Var(f)) with the evaluator's variance estimated
on each part. The interval is θ̂ ± t_{G−1, 0.975} × SE. At λ = 0 the estimate, SE and interval
are exactly the human-only ones (same c and df), so the PPI++ interval is never wider than the
human-only one: a useless judge gets λ ≈ 0 and PPI++ falls back to the human mean.

The effective number of human labels is n × Var_human-only / Var_PPI++. Differences between
systems sum their influence values dialogue by dialogue (systems that answered the same
dialogues are correlated; on disjoint dialogues the variances add), and "significantly better"
is Holm's procedure over all pairs, as on the leaderboards (clustered.better_from_tests); a
rank is 1 + the number of systems significantly better. Pure numpy/scipy: no Django.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from evaluation.lib.stats.clustered import (
    DEFAULT_CONFIDENCE,
    better_from_tests,
    t_quantile,
    tie_aware_ranks,
)
from evaluation.lib.stats.results import Estimate, RankedSystem

PPI_METHOD = "ppi_mean"
HUMAN_METHOD = "ppi_human_only_mean"
EVALUATOR_METHOD = "ppi_evaluator_only_mean"
DIFFERENCE_METHOD = "ppi_difference"
RANK_METHOD = "ppi_holm_tie_aware_rank"


@dataclass(frozen=True)
class AnchoredSample:
    """One system's units: labelled pairs (human, evaluator) and unlabelled evaluator scores,
    each with its cluster (its dialogue; for dialogue units the unit itself)."""

    human: Sequence[float]
    predicted: Sequence[float]
    clusters: Sequence[Hashable]
    unlabelled: Sequence[float] = ()
    unlabelled_clusters: Sequence[Hashable] = ()

    def __post_init__(self) -> None:
        if not len(self.human) == len(self.predicted) == len(self.clusters):
            raise ValueError("human, predicted and clusters must have one entry per unit")
        if len(self.unlabelled) != len(self.unlabelled_clusters):
            raise ValueError("unlabelled and unlabelled_clusters must have one entry per unit")


@dataclass(frozen=True)
class Anchored:
    """One system's three means, λ, the effective number of labels, and its influence values
    per cluster (for differences)."""

    ppi: Estimate
    human_only: Estimate
    evaluator_only: Estimate
    lam: float | None
    effective_labels: float | None
    n_labelled: int
    n_unlabelled: int
    influence: Mapping[Hashable, float] = field(default_factory=dict)
    labelled_clusters: frozenset = frozenset()

    def to_dict(self) -> dict:
        def part(estimate: Estimate) -> dict:
            return {"mean": estimate.value, "ci": [estimate.ci_low, estimate.ci_high],
                    "method": estimate.method, "undefined_reason": estimate.undefined_reason}
        return {"human_only": part(self.human_only), "evaluator_only": part(self.evaluator_only),
                "ppi": part(self.ppi), "lambda": self.lam,
                "effective_labels": self.effective_labels,
                "n_labelled": self.n_labelled, "n_unlabelled": self.n_unlabelled}


def _deviation_sums(values: np.ndarray, codes: np.ndarray, size: int, scale: float) -> np.ndarray:
    """Σ_{i∈g} (v_i − v̄) / scale per cluster code (zeros when there are no values)."""
    if values.size == 0:
        return np.zeros(size)
    return np.bincount(codes, weights=values - values.mean(), minlength=size) / scale


def power_tuned_lambda(a: np.ndarray, b: np.ndarray) -> float:
    """argmin over λ ∈ [0, 1] of Σ_g (A_g + λ B_g)²: −Σ AB / Σ B², clipped (0 when B is 0)."""
    denominator = float(b @ b)
    if denominator <= 0.0:
        return 0.0
    return float(np.clip(-(a @ b) / denominator, 0.0, 1.0))


def _interval(mean: float, variance: float, g: int, confidence: float):
    if g < 2:
        return None, None
    half = float(t_quantile(g - 1, confidence)) * float(np.sqrt(max(variance, 0.0)))
    return mean - half, mean + half


def _factor(g: int) -> float:
    return g / (g - 1) if g > 1 else float("nan")


def _evaluator_only(values: np.ndarray, clusters: list, confidence: float) -> Estimate:
    """The evaluator's mean over all units of the system (labelled or not), clustered CI."""
    n = {"units": int(values.size), "clusters": len(set(clusters))}
    if values.size == 0:
        return Estimate.undefined("the evaluator scored no unit", method=EVALUATOR_METHOD, n=n)
    codes, distinct = _codes(clusters)
    e = _deviation_sums(values, codes, len(distinct), values.size)
    g = len(distinct)
    low, high = _interval(float(values.mean()), _factor(g) * float(e @ e), g, confidence)
    return Estimate(float(values.mean()), low, high, n=n, method=EVALUATOR_METHOD,
                    params={"confidence": confidence})


def _codes(clusters: Sequence[Hashable]) -> tuple[np.ndarray, list]:
    distinct = list(dict.fromkeys(clusters))
    index = {cluster: k for k, cluster in enumerate(distinct)}
    return np.fromiter((index[c] for c in clusters), np.int64, len(clusters)), distinct


def anchored_mean(sample: AnchoredSample, *, confidence: float = DEFAULT_CONFIDENCE,
                  lam: float | None = None) -> Anchored:
    """The human-only, evaluator-only and PPI++ means of one system (LAM: a fixed λ instead of
    the power-tuned one, for studies of the method)."""
    y = np.asarray(sample.human, dtype=float)
    f = np.asarray(sample.predicted, dtype=float)
    f_u = np.asarray(sample.unlabelled, dtype=float)
    if not (np.isfinite(y).all() and np.isfinite(f).all() and np.isfinite(f_u).all()):
        raise ValueError("human labels and evaluator scores must be finite numbers")
    n_l, n_u = int(y.size), int(f_u.size)
    evaluator_only = _evaluator_only(np.concatenate([f, f_u]),
                                     [*sample.clusters, *sample.unlabelled_clusters], confidence)
    codes, distinct = _codes([*sample.clusters, *sample.unlabelled_clusters])
    labelled = frozenset(sample.clusters)
    g = len(labelled)
    n = {"labelled": n_l, "unlabelled": n_u, "labelled_clusters": g}
    if g < 2:
        reason = "fewer than two labelled dialogues: no interval" if n_l else "no labelled unit"
        human = Estimate.undefined(reason, method=HUMAN_METHOD, n=n)
        return Anchored(Estimate.undefined(reason, method=PPI_METHOD, n=n), human,
                        evaluator_only, None, None, n_l, n_u, {}, labelled)
    size = len(distinct)
    a = _deviation_sums(y, codes[:n_l], size, n_l)
    b = _deviation_sums(f_u, codes[n_l:], size, max(n_u, 1)) - \
        _deviation_sums(f, codes[:n_l], size, n_l)
    if lam is None:
        lam = power_tuned_lambda(a, b) if n_u else 0.0
    c = _factor(g)
    influence = a + lam * b
    var_ppi, var_human = c * float(influence @ influence), c * float(a @ a)
    theta = (lam * float(f_u.mean()) if n_u else 0.0) + float((y - lam * f).mean())
    params = {"confidence": confidence, "lambda": lam, "df": g - 1}
    ppi = Estimate(theta, *_interval(theta, var_ppi, g, confidence), n=n, method=PPI_METHOD,
                   params={**params, "se": float(np.sqrt(var_ppi))})
    human = Estimate(float(y.mean()), *_interval(float(y.mean()), var_human, g, confidence),
                     n=n, method=HUMAN_METHOD, params={**params, "lambda": 0.0,
                                                       "se": float(np.sqrt(var_human))})
    effective = n_l * var_human / var_ppi if var_ppi > 0 else None
    return Anchored(ppi, human, evaluator_only, lam, effective, n_l, n_u,
                    dict(zip(distinct, influence.tolist(), strict=True)), labelled)


def anchored_difference(a: Anchored, b: Anchored, *,
                        confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """PPI++(A) − PPI++(B) with a clustered t interval: the two systems' influence values are
    subtracted dialogue by dialogue (shared dialogues make them correlated), c and df from the
    dialogues holding labelled units of either system. ``params["p_value"]``: two-sided."""
    n = {"labelled_clusters": len(a.labelled_clusters | b.labelled_clusters)}
    if a.ppi.value is None or b.ppi.value is None:
        return Estimate.undefined("a system has no PPI++ estimate", method=DIFFERENCE_METHOD,
                                  n=n)
    g = n["labelled_clusters"]
    keys = set(a.influence) | set(b.influence)
    e = np.fromiter((a.influence.get(k, 0.0) - b.influence.get(k, 0.0) for k in keys), float,
                    len(keys))
    variance = _factor(g) * float(e @ e)
    difference = a.ppi.value - b.ppi.value
    se = float(np.sqrt(variance))
    p_value = float(2 * stats.t.sf(abs(difference) / se, g - 1)) if se > 0 else \
        (1.0 if difference == 0 else 0.0)
    return Estimate(difference, *_interval(difference, variance, g, confidence), n=n,
                    method=DIFFERENCE_METHOD,
                    params={"confidence": confidence, "df": g - 1, "se": se,
                            "p_value": p_value})


def anchored_ranking(systems: Mapping[str, Anchored], *, higher_is_better: bool = True,
                     confidence: float = DEFAULT_CONFIDENCE) -> list[RankedSystem]:
    """Tie-aware ranks on the PPI++ means ("human-anchored ranking"): 1 + the number of systems
    significantly better, Holm over all pairs; systems without an estimate have no rank.
    Sorted by rank, then name."""
    names = [name for name, result in systems.items() if result.ppi.value is not None]
    size = len(names)
    difference = np.zeros((size, size))
    p_value = np.full((size, size), np.nan)
    for i in range(size):
        for j in range(i + 1, size):
            test = anchored_difference(systems[names[j]], systems[names[i]],
                                       confidence=confidence)
            difference[i, j], difference[j, i] = test.value, -test.value
            p_value[i, j] = p_value[j, i] = test.params["p_value"]
    better = better_from_tests(difference, p_value, higher_is_better=higher_is_better,
                               alpha=1.0 - confidence)
    rank = tie_aware_ranks(better)
    ranked = [RankedSystem(name, _ranked(systems[name].ppi),
                           int(rank[i]), tuple(names[j] for j in np.flatnonzero(better[i])))
              for i, name in enumerate(names)]
    ranked += [RankedSystem(name, _ranked(result.ppi), None)
               for name, result in systems.items() if name not in names]
    return sorted(ranked, key=lambda row: (row.rank is None, row.rank or 0, row.system))


def _ranked(estimate: Estimate) -> Estimate:
    return Estimate(estimate.value, estimate.ci_low, estimate.ci_high, n=estimate.n,
                    method=RANK_METHOD, undefined_reason=estimate.undefined_reason,
                    params=estimate.params)


def keep_labelled_share(keys: Sequence[Hashable], fraction: float, seed: int) -> set:
    """A seeded random share FRACTION of KEYS (at least one when KEYS is not empty) to keep as
    labelled; the rest are treated as unlabelled (`manage.py anchored --labelled-fraction`)."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"the labelled fraction must be in (0, 1], not {fraction}")
    ordered = sorted(keys, key=repr)
    count = max(1, round(fraction * len(ordered))) if ordered else 0
    return set(random.Random(seed).sample(ordered, count))
