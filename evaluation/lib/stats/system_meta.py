"""System-level meta-evaluation of an evaluator against human labels (statistics.md,
"System-level meta-evaluation"), as the WMT metrics task computes it
(google-research/mt-metrics-eval):

- **pairwise accuracy** (Kocmi et al. 2021; mt-metrics-eval `stats.Agreement`): the share of
  system pairs the evaluator orders as the humans do, sign(h_a − h_b) == sign(m_a − m_b), on
  the systems' mean scores;
- **soft pairwise accuracy** (Thompson et al. 2024; mt-metrics-eval `pce.py`,
  `compute_one_minus_pce`): 1 − mean over system pairs of |p_human − p_metric|, where p is the
  one-sided permutation p-value for "system a is better than b" from the humans' labels and from
  the evaluator's scores, with the same random permutations on both sides (mt-metrics-eval draws
  both with seed 4);
- **tie-calibrated accuracy** (Deutsch, Foster & Freitag 2023, "Ties Matter", acc_eq; mt-metrics-
  eval `tau_optimization.py`): accuracy with a tie threshold ε chosen to maximise it, a metric
  difference |m_a − m_b| ≤ ε counting as a tie, a tie agreeing only with a human tie. Variant:
  system means of human labels almost never tie exactly, so a human tie is a pair the humans'
  permutation test does not separate (two-sided p ≥ 0.05); with exact ties (the paper's
  segment-level rule) the statistic would equal pairwise accuracy.

The permutation tests follow the design of the data, per pair of systems: where the two systems
were labelled on mostly the same dialogues (the shared dialogues are at least half of each
one's), mt-metrics-eval's paired sign-flip test on the per-dialogue difference of means over the
shared dialogues; otherwise (CRS data sets where every dialogue belongs to one system) an
unpaired test that relabels whole dialogues between the two systems, on the difference of
unit means. Turns are grouped by their dialogue throughout.

Each statistic has a 95 % percentile-bootstrap interval by resampling dialogues: dialogues are
resampled with replacement within strata (the dialogues held by the same set of systems), so
every system keeps its number of dialogues and a paired design stays paired; the permutations
are redrawn never, only the data, and ε is re-optimised in every resample. Pure numpy: no Django.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

DEFAULT_PERMUTATIONS = 200
DEFAULT_RESAMPLES = 200
DEFAULT_CONFIDENCE = 0.95
TIE_ALPHA = 0.05
DEFAULT_SEED = 4  # mt-metrics-eval's pce.compute_pairwise_p_values seed
STATISTICS = ("pairwise_accuracy", "soft_pairwise_accuracy", "tie_calibrated_accuracy")
LABELS = {"pairwise_accuracy": "pairwise accuracy",
          "soft_pairwise_accuracy": "soft pairwise accuracy",
          "tie_calibrated_accuracy": "tie-calibrated accuracy"}


@dataclass(frozen=True)
class Unit:
    """One unit both the humans (mean label) and the evaluator scored."""

    system: str
    cluster: Hashable
    human: float
    metric: float


@dataclass
class _Pair:
    a: int
    b: int
    paired: bool
    positions: np.ndarray  # paired: shared clusters; unpaired: a's clusters then b's
    n_a: int  # unpaired: how many of POSITIONS are a's
    signs: np.ndarray  # paired: P × n of ±1; unpaired: P × n of 0/1 (1 = in group a)


class _Design:
    """Systems, dialogues (clusters), strata and each pair's permutation test, shared by every
    evaluator scored on the same units."""

    def __init__(self, units: Sequence[Unit], n_permutations: int, seed: int):
        self.systems = sorted({u.system for u in units})
        self.clusters = sorted({(u.cluster) for u in units}, key=repr)
        s_index = {s: i for i, s in enumerate(self.systems)}
        c_index = {c: i for i, c in enumerate(self.clusters)}
        self.rows = np.array([c_index[u.cluster] for u in units], dtype=int)
        self.cols = np.array([s_index[u.system] for u in units], dtype=int)
        shape = (len(self.clusters), len(self.systems))
        self.counts = np.zeros(shape)
        np.add.at(self.counts, (self.rows, self.cols), 1.0)
        present = self.counts > 0
        strata: dict[tuple, list[int]] = defaultdict(list)
        for k in range(len(self.clusters)):
            strata[tuple(np.flatnonzero(present[k]))].append(k)
        self.strata = [np.array(v) for v in strata.values()]
        self._parts_for, self._parts = None, {}
        rng = np.random.default_rng(seed)
        self.pairs: list[_Pair] = []
        for a in range(len(self.systems)):
            for b in range(a + 1, len(self.systems)):
                in_a, in_b = np.flatnonzero(present[:, a]), np.flatnonzero(present[:, b])
                shared = np.flatnonzero(present[:, a] & present[:, b])
                if len(shared) >= 2 and 2 * len(shared) >= max(len(in_a), len(in_b)):
                    signs = (rng.integers(0, 2, size=(n_permutations, len(shared))) * 2.0
                             - 1.0).astype(np.float32)
                    self.pairs.append(_Pair(a, b, True, shared, 0, signs))
                else:
                    n = len(in_a) + len(in_b)
                    order = np.argsort(rng.random((n_permutations, n)), axis=1)
                    signs = (order < len(in_a)).astype(np.float32)
                    self.pairs.append(_Pair(a, b, False, np.concatenate([in_a, in_b]),
                                            len(in_a), signs))

    def count_parts(self, idx: np.ndarray, k: int) -> tuple:
        """Unpaired pair K's permuted unit counts of group a, its total, and the observed
        groups' counts, for the resamples IDX: the same for the humans and every evaluator."""
        if self._parts_for is not idx:
            self._parts_for, self._parts = idx, {}
        if k not in self._parts:
            pair = self.pairs[k]
            rows = idx[:, pair.positions]
            c = np.concatenate([self.counts[rows[:, :pair.n_a], pair.a],
                                self.counts[rows[:, pair.n_a:], pair.b]], axis=1)
            self._parts[k] = ((c.astype(np.float32) @ pair.signs.T).astype(float),
                              c.sum(axis=1)[:, None],
                              (c[:, :pair.n_a].sum(axis=1), c[:, pair.n_a:].sum(axis=1)))
        return self._parts[k]

    def sums(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.counts.shape)
        np.add.at(out, (self.rows, self.cols), values)
        return out

    def resamples(self, n_resamples: int, seed: int) -> np.ndarray:
        """B × C: row 0 the data itself, then dialogues drawn within their stratum."""
        rng = np.random.default_rng(seed)
        idx = np.tile(np.arange(len(self.clusters)), (n_resamples + 1, 1))
        for stratum in self.strata:
            idx[1:, stratum] = stratum[rng.integers(0, len(stratum),
                                                    size=(n_resamples, len(stratum)))]
        return idx


@dataclass
class _Side:
    """One side's (humans' or evaluator's) system means and pair p-values, per resample."""

    means: np.ndarray  # B × S
    p_greater: np.ndarray  # B × pairs: p for "a better than b"
    p_less: np.ndarray  # B × pairs: p for "b better than a" (its mirror, with ties)


def _side(design: _Design, sums: np.ndarray, idx: np.ndarray) -> _Side:
    counts = design.counts[idx]  # B × C × S
    totals = sums[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = totals.sum(axis=1) / counts.sum(axis=1)
        cluster_means = sums / design.counts
    greater, less = [], []
    for k, pair in enumerate(design.pairs):
        a, b = pair.a, pair.b
        if pair.paired:
            diff = (cluster_means[:, a] - cluster_means[:, b])[idx[:, pair.positions]]
            observed = diff.sum(axis=1)
            null = (diff.astype(np.float32) @ pair.signs.T).astype(float)  # B × P
        else:
            n_a = pair.n_a
            rows = idx[:, pair.positions]
            s = np.concatenate([sums[rows[:, :n_a], a], sums[rows[:, n_a:], b]], axis=1)
            c_a, c_t, c_obs = design.count_parts(idx, k)
            s_a = (s.astype(np.float32) @ pair.signs.T).astype(float)
            s_t = s.sum(axis=1)[:, None]
            null = s_a / c_a - (s_t - s_a) / (c_t - c_a)
            observed = s[:, :n_a].sum(axis=1) / c_obs[0] - s[:, n_a:].sum(axis=1) / c_obs[1]
        # float32 products: a tie with the observed value is a tie up to their precision
        tol = 1e-5 * (1.0 + np.abs(observed))[:, None]
        greater.append((null >= observed[:, None] - tol).mean(axis=1))
        less.append((null <= observed[:, None] + tol).mean(axis=1))
    shape = (idx.shape[0], 0)
    return _Side(means, np.array(greater).T if greater else np.zeros(shape),
                 np.array(less).T if less else np.zeros(shape))


def pairwise_signs(means: np.ndarray, design: _Design) -> np.ndarray:
    a = np.array([p.a for p in design.pairs], dtype=int)
    b = np.array([p.b for p in design.pairs], dtype=int)
    return np.sign(means[..., a] - means[..., b])


def tie_calibrated(human_signs: np.ndarray, metric_diffs: np.ndarray) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """acc_eq with the optimal tie threshold, per row (… × pairs): (accuracy, ε). A pair is a
    metric tie when |diff| ≤ ε; thresholds tried: 0 and every |diff| (mt-metrics-eval's
    tau_optimization: the first, i.e. smallest, of the best)."""
    gaps = np.abs(metric_diffs)
    candidates = np.concatenate([np.zeros(gaps.shape[:-1] + (1,)), np.sort(gaps, axis=-1)],
                                axis=-1)  # … × (K + 1)
    tied = gaps[..., None, :] <= candidates[..., :, None]  # … × (K+1) × K
    metric = np.where(tied, 0.0, np.sign(metric_diffs)[..., None, :])
    accuracy = (metric == human_signs[..., None, :]).mean(axis=-1)
    best = np.argmax(accuracy, axis=-1)
    pick = np.take_along_axis
    return (pick(accuracy, best[..., None], axis=-1)[..., 0],
            pick(candidates, best[..., None], axis=-1)[..., 0])


def _interval(values: np.ndarray, confidence: float) -> dict:
    point, rest = values[0], values[1:]
    rest = rest[np.isfinite(rest)]
    if not np.isfinite(point):
        return {"value": None, "ci_low": None, "ci_high": None}
    if not len(rest):
        return {"value": float(point), "ci_low": None, "ci_high": None}
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(rest, [tail, 100 - tail])
    return {"value": float(point), "ci_low": float(low), "ci_high": float(high)}


@cache
def _threadpools() -> ThreadpoolController:
    """The process's thread pools, found once: each search scans every loaded library (2 ms;
    the calibration bench evaluates hundreds of small boards)."""
    return ThreadpoolController()


def meta_evaluate(human: Mapping[Hashable, float], metrics: Mapping[str, Mapping[Hashable,
                                                                                   float]],
                  system_of: Mapping[Hashable, str], cluster_of: Mapping[Hashable, Hashable],
                  *, n_permutations: int = DEFAULT_PERMUTATIONS,
                  n_resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
                  seed: int = DEFAULT_SEED) -> dict[str, dict]:
    """For each evaluator of METRICS (label -> unit key -> score), its three system-level
    statistics against HUMAN (unit key -> mean label) on the units both scored, with their
    bootstrap intervals, and ε. Evaluators scored on the same units share the humans' part (the
    permutations and the resampled dialogues), so a board of many is cheap."""
    # Many small products: BLAS threads would only fight over the cores (5× slower here).
    with _threadpools().limit(limits=1, user_api="blas"):
        return _meta_evaluate(human, metrics, system_of, cluster_of, n_permutations,
                              n_resamples, confidence, seed)


def _meta_evaluate(human, metrics, system_of, cluster_of, n_permutations, n_resamples,
                   confidence, seed) -> dict[str, dict]:
    by_keys: dict[frozenset, list[str]] = defaultdict(list)
    for label, values in metrics.items():
        by_keys[frozenset(k for k in values if k in human)].append(label)
    out: dict[str, dict] = {}
    for keys, labels in by_keys.items():
        ordered = sorted(keys, key=repr)
        units = [Unit(system_of[k], cluster_of[k], human[k], 0.0) for k in ordered]
        if len({u.system for u in units}) < 2:
            for label in labels:
                out[label] = _empty(len({u.system for u in units}), len(keys))
            continue
        design = _Design(units, n_permutations, seed)
        idx = design.resamples(n_resamples, seed + 1)
        h = _side(design, design.sums(np.array([human[k] for k in ordered])), idx)
        h_signs = pairwise_signs(h.means, design)
        two_sided = np.minimum(1.0, 2 * np.minimum(h.p_greater, h.p_less))
        h_tie_signs = np.where(two_sided >= TIE_ALPHA, 0.0, h_signs)
        for label in labels:
            values = metrics[label]
            m = _side(design, design.sums(np.array([values[k] for k in ordered])), idx)
            m_signs = pairwise_signs(m.means, design)
            pa = (h_signs == m_signs).mean(axis=1)
            spa = 1.0 - np.abs(h.p_greater - m.p_greater).mean(axis=1)
            a = np.array([p.a for p in design.pairs])
            b = np.array([p.b for p in design.pairs])
            tc, eps = tie_calibrated(h_tie_signs, m.means[:, a] - m.means[:, b])
            out[label] = {
                "pairwise_accuracy": _interval(pa, confidence),
                "soft_pairwise_accuracy": _interval(spa, confidence),
                "tie_calibrated_accuracy": _interval(tc, confidence),
                "epsilon": float(eps[0]), "n_systems": len(design.systems),
                "n_pairs": len(design.pairs), "n_units": len(keys),
                "n_dialogues": len(design.clusters),
                "paired_pairs": sum(p.paired for p in design.pairs),
                "human_ties": int((h_tie_signs[0] == 0).sum()),
                "permutations": n_permutations, "resamples": n_resamples,
                "system_means": {s: {"human": float(h.means[0, i]), "metric": float(m.means[0, i])}
                                 for i, s in enumerate(design.systems)}}
    return out


def _empty(n_systems: int, n_units: int) -> dict:
    blank = {"value": None, "ci_low": None, "ci_high": None}
    return {**{name: dict(blank) for name in STATISTICS}, "epsilon": None,
            "n_systems": n_systems, "n_pairs": 0, "n_units": n_units, "n_dialogues": 0,
            "paired_pairs": 0, "human_ties": 0, "system_means": {}, "permutations": None,
            "resamples": None}


INFERENCE = {
    "pairwise_accuracy": "share of system pairs ordered as by the humans (mt-metrics-eval "
                         "Agreement)",
    "soft_pairwise_accuracy": "1 − mean |p_human − p_metric| over system pairs, one-sided "
                              f"permutation p-values ({DEFAULT_PERMUTATIONS} permutations, the "
                              "same on both sides; mt-metrics-eval pce.py)",
    "tie_calibrated_accuracy": "acc_eq with the optimal tie threshold ε (Deutsch et al. 2023); "
                               "human tie = pair the humans' test does not separate at 5 %",
    "interval": f"95 % percentile bootstrap, {DEFAULT_RESAMPLES} resamples of dialogues within "
                "strata",
}
