"""A study's active handout in waves, and the estimate its labels support (statistics.md, "Label
these next: active handout").

Zrnic & Candès (2024), "Active Statistical Inference" (ICML), the sequential form. A study's pool
is its items of the driving metric's unit type, one evaluator score f_i each; the humans label a
budget of B items in expectation. The pool of every system is split at random into WAVES equal
waves (`assign_waves`, a keyed hash of the item, so the split is fixed by the pool). Wave k
considers only its own items, each once, with an inclusion probability π_i fixed before the
wave is drawn, and draws them independently (Poisson sampling: ξ_i ~ Bernoulli(π_i)):

- every wave's π follows the evaluator's predicted error ê_i per system (`system_wave`,
  `active.error_model` on every label already in: with as many quantile bins of f as the labels
  fill with MIN_BIN each, at most BINS, so that until a system has 10 labels ê is one number and
  π stays uniform — or, where the judge reports its own uncertainty, from it: fitted as
  α + β u² once 10 units are labelled, from u alone before, so wave 1 is already active), π ∝ ê
  mixed with the uniform rule and capped at 1 (`active.inclusion_probabilities`), the wave's
  budget being B × (its items) / N, so every wave spends its share of B. Wave 1 of a judge that
  reports no uncertainty has no label to predict from: uniform, π = B / N.

The estimate over the items of the waves drawn so far is the one-shot formula,
θ̂ = (1/n) Σ_i Z_i with Z_i = λ f_i + (Y_i − λ f_i) ξ_i / π_i (`active.active_mean`), and the
one-shot variance estimate is right here: each item is considered in one wave only and its π is
fixed by the earlier waves, so the Z_i − θ are martingale differences (E[Z_i | earlier waves] =
θ: fresh items, π known beforehand), and the paper's sequential theorem gives
√n (θ̂ − θ) → N(0, σ²) with σ² estimated by the mean of (Z_i − θ̂)² — the same sd(Z)/√n
(dialogue-clustered when units are turns). Had every wave re-drawn over the whole pool, one unit
would carry several weights and per-wave estimates would have to be combined with fixed weights;
the split avoids that, and every item has exactly one (wave, π). A wave enters the estimate
only when every item it drew has a label: leaving out an unlabelled drawn item would bias it.
`tests/evaluation/stats/test_active_handout.py` checks coverage 0.95 ± 0.03 over 400 simulated
studies that go through `plan_wave` wave by wave.

Differences of two systems: θ̂_A − θ̂_B with the dialogue-clustered sandwich of both systems'
influence values ((Z_i − θ̂)/n per system, summed per dialogue: systems judged on the same
dialogues are correlated), a normal interval and two-sided p-value; ranks are 1 + the systems
significantly better, Holm over all pairs, as everywhere. Pure numpy/scipy: no Django.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evaluation.lib.stats import active
from evaluation.lib.stats.clustered import (
    DEFAULT_CONFIDENCE,
    cluster_mean,
    ranked_by_pairwise_tests,
)
from evaluation.lib.stats.results import Estimate, RankedSystem

WAVES = 4
MEAN_METHOD = "active_ipw_mean"
HUMAN_METHOD = "active_ipw_human_only_mean"
DIFFERENCE_METHOD = "active_ipw_difference"
RANK_METHOD = "active_ipw_holm_tie_aware_rank"
EVALUATOR_METHOD = "ppi_evaluator_only_mean"
INTERVAL = "clustered_sandwich_normal"
LABEL = "active inference (Zrnic & Candès 2024), IPW"


# --- the plan: waves and inclusion probabilities -------------------------------------------


def _rank(seed: int, key: Hashable) -> bytes:
    return hashlib.blake2b(f"{seed}:{key!r}".encode(), digest_size=8).digest()


def assign_waves(units: Sequence[tuple[str, Hashable]], *, seed: int,
                 waves: int = WAVES) -> dict[Hashable, int]:
    """Wave 1..WAVES of every unit (GROUP, KEY): each group (system) split at random into WAVES
    near-equal parts, in the order of a keyed hash of the key (fixed by SEED and the pool)."""
    by_group: dict[str, list] = defaultdict(list)
    for group, key in units:
        by_group[group].append(key)
    out = {}
    for keys in by_group.values():
        ordered = sorted(keys, key=lambda k: _rank(seed, k))
        for number, part in enumerate(np.array_split(np.arange(len(ordered)), waves), start=1):
            for i in part:
                out[ordered[int(i)]] = number
    return out


@dataclass(frozen=True)
class PoolUnit:
    """One item of the pool: its system (GROUP), the evaluator's score (None: unscored), the
    human label so far (None: not labelled yet) and the judge's own uncertainty about its score
    (None: it reports none)."""

    key: Hashable
    group: str
    score: float | None
    label: float | None = None
    uncertainty: float | None = None


@dataclass(frozen=True)
class Draw:
    key: Hashable
    pi: float
    drawn: bool
    predicted_error: float | None
    predictor: str = "none"  # a key of active.PREDICTORS ("none": uniform, nothing to predict)


def system_wave(scores: np.ndarray, labels: np.ndarray, uncertainty: np.ndarray | None,
                in_wave: np.ndarray, budget: float, *, mix: float = active.UNIFORM_MIX
                ) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(π, ê, predictor) of the units IN_WAVE (a mask) of one system's pool, the wave spending
    BUDGET labels: SCORES f (NaN: unscored), LABELS so far (NaN: not labelled), UNCERTAINTY
    (NaN where the judge reports none; None: it reports none anywhere). ê from
    `active.error_model` fitted on every label already in, with as many quantile bins of f as
    the labels fill with MIN_BIN each (a bin with fewer gets the overall error: one bin, the same
    ê, until there are 10) — or from the reported uncertainty, fitted or (fewer than MIN_FIT
    labels, as in wave 1) alone; an unscored unit gets the largest ê. π ∝ ê mixed with the
    uniform rule and capped at 1 (`active.inclusion_probabilities`); with nothing to predict
    from (predictor "none": no uncertainty, fewer than 3 labels) ê is 1 everywhere and π
    uniform. Vectorised: the bench (`calibration_active`) runs the study's waves through it."""
    size = int(np.count_nonzero(in_wave))
    if size == 0:
        return np.zeros(0), None, "none"
    scored = np.isfinite(scores)
    f = scores[scored]
    labelled = np.flatnonzero(np.isfinite(labels[scored]))
    bins = int(np.clip(len(labelled) // active.MIN_BIN, 1, active.BINS))
    model = active.error_model(f, labelled, labels[scored][labelled], bins=bins,
                               uncertainty=None if uncertainty is None
                               else uncertainty[scored]) if len(f) else None
    if model is None:
        return np.full(size, min(1.0, budget / size)), None, "none"
    error = np.full(len(scores), float(model.error.max()))
    error[scored] = model.error
    errors = error[in_wave]
    pi = (np.ones(size) if budget >= size else
          active.inclusion_probabilities(errors, budget, mix=mix))
    return pi, errors, model.predictor


def wave_probabilities(pool: Sequence[PoolUnit], wave_keys: set, *, budget: float,
                       active_rule: bool, mix: float = active.UNIFORM_MIX
                       ) -> dict[Hashable, tuple[float, float | None]]:
    """π (and ê) of the units WAVE_KEYS of POOL by `system_wave` per system (∝ the predicted
    error, fitted on the labelled units of the pool or from the judge's reported uncertainty),
    the wave's budget per system being BUDGET × (its units in the wave) / N. Without
    ACTIVE_RULE (wave 1: no label yet) a system whose judge reports no uncertainty has nothing
    to predict from: uniform B/N, no ê."""
    return {key: (pi, error) for key, (pi, error, _) in
            _wave_plan(pool, wave_keys, budget=budget, active_rule=active_rule,
                       mix=mix).items()}


def _wave_plan(pool: Sequence[PoolUnit], wave_keys: set, *, budget: float, active_rule: bool,
               mix: float = active.UNIFORM_MIX
               ) -> dict[Hashable, tuple[float, float | None, str]]:
    n = len(pool)
    if n == 0:
        return {}
    rate = min(1.0, budget / n)
    by_group: dict[str, list[PoolUnit]] = defaultdict(list)
    for unit in pool:
        by_group[unit.group].append(unit)
    out: dict[Hashable, tuple[float, float | None, str]] = {}
    for units in by_group.values():
        in_wave = np.array([u.key in wave_keys for u in units])
        if not in_wave.any():
            continue
        chunk = [u for u, inside in zip(units, in_wave, strict=True) if inside]
        reported = [u.uncertainty for u in units]
        if not active_rule and all(r is None for r in reported):
            out.update({u.key: (rate, None, "none") for u in chunk})
            continue
        pi, errors, predictor = system_wave(
            np.array([u.score for u in units], dtype=float),
            np.array([u.label for u in units], dtype=float),
            None if all(r is None for r in reported) else np.array(reported, dtype=float),
            in_wave, budget * len(chunk) / n, mix=mix)
        out.update({u.key: (float(p), None if errors is None else float(e), predictor)
                    for u, p, e in zip(chunk, pi, errors if errors is not None
                                       else [None] * len(chunk), strict=True)})
    return out


def plan_wave(pool: Sequence[PoolUnit], waves_of: Mapping[Hashable, int], *, wave: int,
              budget: float, seed: int) -> list[Draw]:
    """The draws of wave WAVE: its units' π by the active rule (`system_wave` per system: in
    wave 1, with no label yet, from the judge's reported uncertainty where it reports one, else
    uniform) and ξ ~ Bernoulli(π) from SEED, in key order."""
    keys = {u.key for u in pool if waves_of.get(u.key) == wave}
    probabilities = _wave_plan(pool, keys, budget=budget, active_rule=wave > 1)
    ordered = sorted(probabilities, key=repr)
    pi = np.array([probabilities[k][0] for k in ordered])
    drawn = active.draw_selection(pi, seed) if len(pi) else np.zeros(0, dtype=bool)
    return [Draw(k, float(p), bool(d), probabilities[k][1], probabilities[k][2])
            for k, p, d in zip(ordered, pi, drawn, strict=True)]


# --- the estimate -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IPWResult:
    """One system's active-inference estimate, its λ = 0 (Horvitz–Thompson) version, the
    evaluator's own mean, and the influence values per dialogue (for differences)."""

    estimate: Estimate
    human_only: Estimate
    evaluator_only: Estimate
    lam: float | None
    n_labelled: int
    n_pool: int
    influence: Mapping[Hashable, float]  # Σ (Z_i − θ̂) / n over a dialogue's units


def _undefined(reason: str, n: dict, method: str) -> Estimate:
    return Estimate.undefined(reason, method=method, n=n)


def _one(f, pi, xi, y, clusters, confidence, lam, method):
    estimate = active.active_mean(f, pi, xi, y, clusters=clusters, confidence=confidence,
                                  lam=lam)
    z = active.summands(f, pi, xi, y, estimate.lam, estimate.offset)
    n = len(z)
    influence: dict[Hashable, float] = defaultdict(float)
    for cluster, value in zip(clusters, (z - estimate.value) / n, strict=True):
        influence[cluster] += float(value)
    params = {"confidence": confidence, "lambda": estimate.lam, "offset": estimate.offset,
              "interval": INTERVAL,
              "se": (estimate.ci_high - estimate.value) / float(
                  stats.norm.ppf(0.5 + confidence / 2))}
    counts = {"pool": n, "labelled": int(xi.sum()), "clusters": len(influence)}
    return Estimate(estimate.value, estimate.ci_low, estimate.ci_high, n=counts, method=method,
                    params=params), estimate.lam, dict(influence)


def ipw_mean(scores: Sequence[float], pi: Sequence[float], drawn: Sequence[bool],
             labels: Sequence[float | None], clusters: Sequence[Hashable], *,
             confidence: float = DEFAULT_CONFIDENCE) -> IPWResult:
    """The active-inference mean of one system over the pool units of its completed waves:
    SCORES f_i, PI π_i, DRAWN ξ_i, LABELS Y_i (read where drawn), CLUSTERS (dialogues)."""
    f = np.asarray(scores, dtype=float)
    p = np.asarray(pi, dtype=float)
    xi = np.asarray(drawn, dtype=bool)
    y = np.array([0.0 if not d or v is None else float(v) for v, d in zip(labels, xi,
                                                                         strict=True)])
    if len(f) != len(p) or len(f) != len(clusters):
        raise ValueError("scores, pi, drawn, labels and clusters need one entry per unit")
    if any(d and v is None for v, d in zip(labels, xi, strict=True)):
        raise ValueError("every drawn unit needs its label")
    if ((p <= 0) | (p > 1)).any():
        raise ValueError("inclusion probabilities must be in (0, 1]")
    n = {"pool": len(f), "labelled": int(xi.sum()),
         "clusters": len(set(clusters))}
    evaluator = (cluster_mean(f, list(clusters), confidence=confidence) if len(f)
                 else _undefined("no unit in a completed wave", n, EVALUATOR_METHOD))
    evaluator = Estimate(evaluator.value, evaluator.ci_low, evaluator.ci_high, n=evaluator.n,
                         method=EVALUATOR_METHOD, params=evaluator.params,
                         undefined_reason=evaluator.undefined_reason)
    labelled_clusters = {c for c, d in zip(clusters, xi, strict=True) if d}
    if len(labelled_clusters) < 2 or len(set(clusters)) < 2:
        reason = ("no drawn unit labelled yet" if not xi.any() else
                  "fewer than two labelled dialogues: no interval")
        return IPWResult(_undefined(reason, n, MEAN_METHOD), _undefined(reason, n, HUMAN_METHOD),
                         evaluator, None, int(xi.sum()), len(f), {})
    estimate, lam, influence = _one(f, p, xi, y, clusters, confidence, None, MEAN_METHOD)
    human, _, _ = _one(f, p, xi, y, clusters, confidence, 0.0, HUMAN_METHOD)
    return IPWResult(estimate, human, evaluator, lam, int(xi.sum()), len(f), influence)


def ipw_difference(a: IPWResult, b: IPWResult, *,
                   confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """θ̂_A − θ̂_B with the dialogue-clustered sandwich of both systems' influence values (a
    dialogue's units of A and of B together), a normal interval and two-sided p-value."""
    keys = set(a.influence) | set(b.influence)
    n = {"clusters": len(keys)}
    if a.estimate.value is None or b.estimate.value is None:
        return _undefined("a system has no active-inference estimate", n, DIFFERENCE_METHOD)
    sums = np.array([a.influence.get(k, 0.0) - b.influence.get(k, 0.0) for k in keys])
    g = len(sums)
    se = float(np.sqrt(g / (g - 1) * np.sum(sums ** 2))) if g > 1 else 0.0
    difference = a.estimate.value - b.estimate.value
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p_value = float(2 * stats.norm.sf(abs(difference) / se)) if se > 0 else \
        (1.0 if difference == 0 else 0.0)
    return Estimate(difference, difference - z * se, difference + z * se, n=n,
                    method=DIFFERENCE_METHOD,
                    params={"confidence": confidence, "se": se, "p_value": p_value,
                            "interval": INTERVAL})


def ipw_ranking(systems: Mapping[str, IPWResult], *, higher_is_better: bool = True,
                confidence: float = DEFAULT_CONFIDENCE) -> list[RankedSystem]:
    """Tie-aware ranks on the active-inference means: 1 + the systems significantly better
    (Holm over all pairs); systems without an estimate have no rank."""
    return ranked_by_pairwise_tests(
        {name: result.estimate for name, result in systems.items()},
        lambda a, b: ipw_difference(systems[a], systems[b], confidence=confidence),
        method=RANK_METHOD, higher_is_better=higher_is_better, confidence=confidence)
