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

λ is power-tuned on the dialogue level: each dialogue g has A_g = Σ_{i∈g} (Y_i − Ȳ) / n and
B_g = Σ_{j∈g} (f̃_j − f̃̄) / N − Σ_{i∈g} (f_i − f̄) / n (a dialogue may hold labelled and
unlabelled turns: their covariance is kept), the sandwich variance of θ̂(λ) is ∝ Σ_g (A_g +
λ B_g)², and λ̂ = −Σ A_g B_g / Σ B_g², clipped to [0, 1], its exact minimiser. With one unit per
dialogue and disjoint parts this is Cov(Y, f) / (Var_L(f) + (n/N) Var_U(f)), the paper's closed
form Cov(Y, f) / ((1 + n/N) Var(f)) with the evaluator's variance taken on each part.

The interval is that of every cluster mean in Concord (clustered.py): studentized, with a
delete-one-dialogue jackknife. Each dialogue is left out in turn and θ̂ recomputed, λ re-tuned
(so the interval pays for λ being estimated); labelled and unlabelled dialogues are two
independent samples, so the jackknife is stratified: Var = Σ_strata (G_s − 1)/G_s Σ_{g∈s}
(θ̂_(−g) − mean_s)², with the strata "dialogues holding labelled units" and the others; the
quantile is t with the Bell–McCaffrey df of the labelled dialogues (clustered.effective_df). At
λ = 0 this is exactly the human-only mean's cluster jackknife-t interval (clustered.cluster_mean).
When the PPI++ variance exceeds the human-only one, the judge does not help and PPI++ falls
back to the human-only mean (λ = 0, ``params["fallback_to_human_only"]``): the interval is never
wider than the human-only one. With λ fixed and one unit per dialogue the jackknife variance is
Var(Y − λf)/n + λ² Var(f̃)/N with divisors n − 1 and N − 1, the paper's (ppi-python's) variance.

The effective number of human labels is n × Var_human-only / Var_PPI++. The difference of two
systems is jackknifed the same way, each dialogue left out of both systems at once (systems
scored on the same dialogues are correlated; on disjoint dialogues the variances add), and
"significantly better" is Holm's procedure over all pairs, as on the leaderboards
(clustered.better_from_tests); a rank is 1 + the number of systems significantly better.
Pure numpy/scipy: no Django.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from evaluation.lib.stats.clustered import (
    DEFAULT_CONFIDENCE,
    cluster_mean,
    effective_df,
    ranked_by_pairwise_tests,
    t_quantile,
    variance_shares,
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
    """One system's three means, λ, the effective number of labels, and its leave-one-dialogue-
    out PPI++ estimates (for differences)."""

    ppi: Estimate
    human_only: Estimate
    evaluator_only: Estimate
    lam: float | None
    effective_labels: float | None
    n_labelled: int
    n_unlabelled: int
    leave_outs: Mapping[Hashable, float] = field(default_factory=dict)  # θ_(−g) per dialogue
    labelled_clusters: frozenset = frozenset()

    def to_dict(self) -> dict:
        def part(estimate: Estimate) -> dict:
            return {"mean": estimate.value, "ci": [estimate.ci_low, estimate.ci_high],
                    "method": estimate.method, "undefined_reason": estimate.undefined_reason}
        return {"human_only": part(self.human_only), "evaluator_only": part(self.evaluator_only),
                "ppi": part(self.ppi), "lambda": self.lam,
                "effective_labels": self.effective_labels,
                "n_labelled": self.n_labelled, "n_unlabelled": self.n_unlabelled}


def _codes(clusters: Sequence[Hashable]) -> tuple[np.ndarray, list]:
    distinct = list(dict.fromkeys(clusters))
    index = {cluster: k for k, cluster in enumerate(distinct)}
    return np.fromiter((index[c] for c in clusters), np.int64, len(clusters)), distinct


def _cluster_sums(y, f, f_u, codes_l, codes_u, size) -> np.ndarray:
    """Per cluster (rows): Σ Y, n, Σ f over labelled units, Σ f̃, Ñ over unlabelled ones."""
    def total(codes, weights=None):
        return np.bincount(codes, weights=weights, minlength=size).astype(float)
    return np.column_stack([total(codes_l, y), total(codes_l), total(codes_l, f),
                            total(codes_u, f_u), total(codes_u)])


def _thetas(totals: np.ndarray, moments: np.ndarray, lam: float | None):
    """θ̂ and λ from column totals (…, 5) and cross-product sums Σ z zᵀ (…, 5, 5), vectorised
    over leading axes (the full sample, or each leave-one-cluster-out sample): A_g = αᵀz_g,
    B_g = βᵀz_g, so Σ AB = αᵀMβ and Σ B² = βᵀMβ."""
    n, big_n = totals[..., 1], totals[..., 4]
    with np.errstate(invalid="ignore", divide="ignore"):
        y_bar, f_bar = totals[..., 0] / n, totals[..., 2] / n
        u_bar = np.where(big_n > 0, totals[..., 3] / big_n, 0.0)
        zero, inv_n = np.zeros_like(n), 1.0 / n
        inv_u = np.where(big_n > 0, 1.0 / big_n, 0.0)
        alpha = np.stack([inv_n, -y_bar * inv_n, zero, zero, zero], axis=-1)
        beta = np.stack([zero, f_bar * inv_n, -inv_n, inv_u, -u_bar * inv_u], axis=-1)
        if lam is None:
            cross = np.einsum("...i,...ij,...j->...", alpha, moments, beta)
            square = np.einsum("...i,...ij,...j->...", beta, moments, beta)
            tuned = np.clip(-cross / square, 0.0, 1.0)
            lam = np.where((square > 1e-300) & (big_n > 0), tuned, 0.0)
        return y_bar + lam * (u_bar - f_bar), lam


def _jackknife_variance(thetas: np.ndarray, strata: Sequence[np.ndarray]) -> float:
    """Stratified delete-one-cluster jackknife: Σ over strata (G_s − 1)/G_s Σ (θ_(−g) − θ̄_s)²
    (labelled and unlabelled dialogues are two independent samples)."""
    total = 0.0
    for members in strata:
        values = thetas[members]
        if values.size >= 2:
            total += (values.size - 1) / values.size * float(((values - values.mean())**2).sum())
    return total


def _evaluator_only(values: np.ndarray, clusters: np.ndarray, confidence: float) -> Estimate:
    """The evaluator's mean over all units of the system (labelled or not), with the cluster
    jackknife-t interval of every leaderboard mean (clustered.cluster_mean)."""
    if values.size == 0:
        return Estimate.undefined("the evaluator scored no unit", method=EVALUATOR_METHOD,
                                  n={"units": 0, "clusters": 0})
    estimate = cluster_mean(values, clusters, confidence=confidence)
    return Estimate(estimate.value, estimate.ci_low, estimate.ci_high, n=estimate.n,
                    method=EVALUATOR_METHOD, params=estimate.params)


def _interval(mean: float, variance: float, df: float, confidence: float):
    half = float(t_quantile(df, confidence)) * float(np.sqrt(max(variance, 0.0)))
    return mean - half, mean + half


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
    codes, distinct = _codes([*sample.clusters, *sample.unlabelled_clusters])
    evaluator_only = _evaluator_only(np.concatenate([f, f_u]), codes, confidence)
    labelled = frozenset(sample.clusters)
    n = {"labelled": n_l, "unlabelled": n_u, "labelled_clusters": len(labelled)}
    if len(labelled) < 2:
        reason = "fewer than two labelled dialogues: no interval" if n_l else "no labelled unit"
        human = Estimate.undefined(reason, method=HUMAN_METHOD, n=n)
        return Anchored(Estimate.undefined(reason, method=PPI_METHOD, n=n), human,
                        evaluator_only, None, None, n_l, n_u, {}, labelled)
    z = _cluster_sums(y, f, f_u, codes[:n_l], codes[n_l:], len(distinct))
    totals, moments = z.sum(axis=0), z.T @ z
    strata = [np.flatnonzero(z[:, 1] > 0), np.flatnonzero(z[:, 1] == 0)]
    # the df of every cluster mean (clustered.mean_intervals), from the labelled dialogues
    shares = variance_shares(z[strata[0], 1][None, :])
    df = float(effective_df(shares.sum(), (shares**2).sum()))
    theta, lam_hat = _thetas(totals, moments, lam)
    outs, _ = _thetas(totals - z, moments - np.einsum("gi,gj->gij", z, z),
                      None if lam is None else float(lam_hat))
    human_outs, _ = _thetas(totals - z, moments, 0.0)
    var_ppi, var_human = _jackknife_variance(outs, strata), _jackknife_variance(human_outs,
                                                                                strata)
    lam_hat, fallback = float(lam_hat), lam is None and var_ppi > var_human
    if fallback:  # the judge does not help: PPI++ is the human-only mean
        theta, lam_hat, outs, var_ppi = float(totals[0] / totals[1]), 0.0, human_outs, var_human
    y_bar = float(totals[0] / totals[1])
    params = {"confidence": confidence, "lambda": lam_hat, "df": df,
              "interval": "stratified_jackknife_t"}
    ppi = Estimate(float(theta), *_interval(float(theta), var_ppi, df, confidence), n=n,
                   method=PPI_METHOD, params={**params, "se": float(np.sqrt(var_ppi)),
                                              "fallback_to_human_only": bool(fallback)})
    human = Estimate(y_bar, *_interval(y_bar, var_human, df, confidence), n=n,
                     method=HUMAN_METHOD, params={**params, "lambda": 0.0,
                                                  "se": float(np.sqrt(var_human))})
    effective = n_l * var_human / var_ppi if var_ppi > 0 else None
    return Anchored(ppi, human, evaluator_only, lam_hat, effective, n_l, n_u,
                    dict(zip(distinct, np.asarray(outs, dtype=float).tolist(), strict=True)),
                    labelled)


def anchored_difference(a: Anchored, b: Anchored, *,
                        confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """PPI++(A) − PPI++(B) with a stratified cluster jackknife-t interval: each dialogue is left
    out of both systems at once (systems that answered the same dialogues are correlated), the
    strata being dialogues holding labelled units of either system and the others; t with the
    smaller of the two systems' df. ``params["p_value"]``: two-sided."""
    union = a.labelled_clusters | b.labelled_clusters
    n = {"labelled_clusters": len(union)}
    if a.ppi.value is None or b.ppi.value is None:
        return Estimate.undefined("a system has no PPI++ estimate", method=DIFFERENCE_METHOD,
                                  n=n)
    keys = list(dict.fromkeys([*a.leave_outs, *b.leave_outs]))
    outs = np.fromiter((a.leave_outs.get(k, a.ppi.value) - b.leave_outs.get(k, b.ppi.value)
                        for k in keys), float, len(keys))
    in_union = np.fromiter((k in union for k in keys), bool, len(keys))
    variance = _jackknife_variance(outs, [np.flatnonzero(in_union),
                                          np.flatnonzero(~in_union)])
    df = min(a.ppi.params["df"], b.ppi.params["df"])
    difference = a.ppi.value - b.ppi.value
    se = float(np.sqrt(variance))
    p_value = float(2 * stats.t.sf(abs(difference) / se, df)) if se > 0 else \
        (1.0 if difference == 0 else 0.0)
    return Estimate(difference, *_interval(difference, variance, df, confidence), n=n,
                    method=DIFFERENCE_METHOD,
                    params={"confidence": confidence, "df": df, "se": se,
                            "p_value": p_value})


def anchored_ranking(systems: Mapping[str, Anchored], *, higher_is_better: bool = True,
                     confidence: float = DEFAULT_CONFIDENCE) -> list[RankedSystem]:
    """Tie-aware ranks on the PPI++ means ("human-anchored ranking"): 1 + the number of systems
    significantly better, Holm over all pairs; systems without an estimate have no rank.
    Sorted by rank, then name."""
    return ranked_by_pairwise_tests(
        {name: result.ppi for name, result in systems.items()},
        lambda a, b: anchored_difference(systems[a], systems[b], confidence=confidence),
        method=RANK_METHOD, higher_is_better=higher_is_better, confidence=confidence)


def keep_labelled_share(keys: Sequence[Hashable], fraction: float, seed: int) -> set:
    """A seeded random share FRACTION of KEYS (at least one when KEYS is not empty) to keep as
    labelled; the rest are treated as unlabelled (`manage.py anchored --labelled-fraction`)."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"the labelled fraction must be in (0, 1], not {fraction}")
    ordered = sorted(keys, key=repr)
    count = max(1, round(fraction * len(ordered))) if ordered else 0
    return set(random.Random(seed).sample(ordered, count))
