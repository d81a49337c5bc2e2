"""System-level meta-evaluation (evaluation/lib/stats/system_meta.py) against a hand computation
and against google-research/mt-metrics-eval's own formulas, reimplemented here from its source
(commit 68a481aea1a787392d55af8f76ac8ef40c5f4664):

- pairwise accuracy: mt_metrics_eval/stats.py, `Agreement`, lines 350-358;
- soft pairwise accuracy: mt_metrics_eval/pce.py, `compute_pairwise_p_values` lines 98-123 and
  `compute_one_minus_pce` lines 146-148;
- tie calibration: mt_metrics_eval/tau_optimization.py, `_RankedPair` (lines 140-168),
  `tau_optimization` (lines 252-296) with `TauSufficientStats.acc_23` (line 68).
"""

import itertools

import numpy as np
import pytest

from evaluation.lib.stats import system_meta
from evaluation.lib.stats.system_meta import _Design, _side, meta_evaluate, tie_calibrated

# --- mt-metrics-eval's reference formulas ---------------------------------------------------


def ref_agreement(gold, metric):
    """stats.py:350-358."""
    agree, num_pairs = 0, 0
    for a, b in itertools.combinations(zip(gold, metric, strict=True), 2):
        agree += np.sign(a[0] - b[0]) == np.sign(a[1] - b[1])
        num_pairs += 1
    return agree, num_pairs


def ref_pairwise_p_values(seg_scores, two_m_minus_one):
    """pce.py:98-123, with the ±1 matrix given instead of drawn (lines 100-107)."""
    num_systems = seg_scores.shape[0]
    sys_scores = np.sum(seg_scores, axis=1)
    partial = np.matmul(two_m_minus_one, seg_scores.T)
    p_vals = np.empty((num_systems, num_systems)) * np.nan
    for ii in range(num_systems):
        for jj in range(ii + 1, num_systems):
            null_delta = partial[:, ii] - partial[:, jj]
            test_delta = sys_scores[ii] - sys_scores[jj]
            p_vals[ii, jj] = np.sum(null_delta >= test_delta) / two_m_minus_one.shape[0]
    return p_vals


def ref_one_minus_pce(human, metric):
    """pce.py:146-148."""
    upper = np.triu_indices(human.shape[0], 1)
    return 1.0 - np.mean(np.abs(human - metric)[upper])


def ref_tau_optimization_acc23(metric, human):
    """tau_optimization.py:140-168 and 252-296 for one row and acc_23: (best acc, threshold)."""
    pairs = []
    for i in range(len(human)):
        for j in range(i + 1, len(human)):
            h1, h2, m1, m2 = human[i], human[j], metric[i], metric[j]
            if h1 == h2 and m1 == m2:
                stats = "tie_both"
            elif h1 == h2:
                stats = "tie_h"
            elif m1 == m2:
                stats = "tie_m"
            elif (h1 > h2 and m1 > m2) or (h1 < h2 and m1 < m2):
                stats = "con"
            else:
                stats = "dis"
            tie_stats = "tie_both" if h1 == h2 else "tie_m"
            pairs.append((abs(m1 - m2), stats, tie_stats))
    count = {"con": 0, "dis": 0, "tie_h": 0, "tie_m": 0, "tie_both": 0}
    for _, stats, _ in pairs:
        count[stats] += 1

    def acc23():
        return (count["con"] + count["tie_both"]) / len(pairs)
    thresholds, taus = [0.0], [acc23()]
    for diff, stats, tie_stats in sorted(pairs, key=lambda p: p[0]):
        count[stats] -= 1
        count[tie_stats] += 1
        if thresholds[-1] == diff:
            taus[-1] = acc23()
        else:
            thresholds.append(diff)
            taus.append(acc23())
    best = int(np.nanargmax(taus))
    return taus[best], thresholds[best]


# --- data -------------------------------------------------------------------------------------


def _paired(rng, n_systems=5, n_dialogues=40, noise=1.0):
    """Every system answers the same dialogues (one unit each): mt-metrics-eval's design."""
    human, metric, system_of, cluster_of = {}, {}, {}, {}
    difficulty = rng.normal(size=n_dialogues)
    for s in range(n_systems):
        for d in range(n_dialogues):
            key = (f"s{s}", f"d{d}")
            human[key] = 0.15 * s + difficulty[d] + rng.normal()
            metric[key] = human[key] + noise * rng.normal()
            system_of[key], cluster_of[key] = key[0], key[1]
    return human, metric, system_of, cluster_of


def test_pairwise_accuracy_by_hand():
    # Three systems, one dialogue each way: humans A 3 > B 2 > C 1; the metric A 0.9 > C 0.5 >
    # B 0.2 orders (A,B) and (A,C) right and (B,C) wrong: accuracy 2/3.
    human, metric, system_of, cluster_of = {}, {}, {}, {}
    for system, h, m in (("A", 3.0, 0.9), ("B", 2.0, 0.2), ("C", 1.0, 0.5)):
        for d in range(4):  # the same value in each of its dialogues
            key = (system, f"{system}{d}")
            human[key], metric[key] = h, m
            system_of[key], cluster_of[key] = system, key[1]
    out = meta_evaluate(human, {"m": metric}, system_of, cluster_of, n_resamples=50,
                        n_permutations=50)["m"]
    assert out["pairwise_accuracy"]["value"] == pytest.approx(2 / 3)
    assert out["n_pairs"] == 3 and out["paired_pairs"] == 0
    # no spread inside a system: every resample gives the same answer
    assert out["pairwise_accuracy"]["ci_low"] == out["pairwise_accuracy"]["ci_high"] == \
        pytest.approx(2 / 3)


def test_pairwise_accuracy_matches_mt_metrics_eval_agreement():
    rng = np.random.default_rng(1)
    human, metric, system_of, cluster_of = _paired(rng, n_systems=7, noise=2.0)
    out = meta_evaluate(human, {"m": metric}, system_of, cluster_of, n_resamples=20)["m"]
    systems = sorted({s for s in system_of.values()})
    gold = [np.mean([v for k, v in human.items() if k[0] == s]) for s in systems]
    pred = [np.mean([v for k, v in metric.items() if k[0] == s]) for s in systems]
    agree, pairs = ref_agreement(gold, pred)
    assert out["pairwise_accuracy"]["value"] == pytest.approx(agree / pairs)
    assert out["system_means"]["s0"]["human"] == pytest.approx(gold[0])


def test_soft_pairwise_accuracy_matches_mt_metrics_eval_pce():
    rng = np.random.default_rng(2)
    n_systems, n_dialogues = 5, 40
    human, metric, system_of, cluster_of = _paired(rng, n_systems, n_dialogues)
    units = [system_meta.Unit(system_of[k], cluster_of[k], human[k], 0.0)
             for k in sorted(human, key=repr)]
    ordered = sorted(human, key=repr)
    design = _Design(units, 400, 4)
    assert all(pair.paired for pair in design.pairs)
    idx = design.resamples(0, 5)
    h = _side(design, design.sums(np.array([human[k] for k in ordered])), idx)
    m = _side(design, design.sums(np.array([metric[k] for k in ordered])), idx)
    # The reference on the same permutations: every pair of this design shares all dialogues,
    # in the design's cluster order.
    clusters = design.clusters
    seg_h = np.array([[human[(s, c)] for c in clusters] for s in design.systems])
    seg_m = np.array([[metric[(s, c)] for c in clusters] for s in design.systems])
    ref_h = np.full((n_systems, n_systems), np.nan)
    ref_m = np.full((n_systems, n_systems), np.nan)
    for k, pair in enumerate(design.pairs):
        signs = pair.signs.astype(float)
        ref_h[pair.a, pair.b] = ref_pairwise_p_values(seg_h, signs)[pair.a, pair.b]
        ref_m[pair.a, pair.b] = ref_pairwise_p_values(seg_m, signs)[pair.a, pair.b]
        assert h.p_greater[0, k] == pytest.approx(ref_h[pair.a, pair.b], abs=1 / 400)
        assert m.p_greater[0, k] == pytest.approx(ref_m[pair.a, pair.b], abs=1 / 400)
    out = meta_evaluate(human, {"m": metric}, system_of, cluster_of, n_permutations=400,
                        n_resamples=20)["m"]
    assert out["soft_pairwise_accuracy"]["value"] == pytest.approx(
        ref_one_minus_pce(ref_h, ref_m), abs=2 / 400)


@pytest.mark.parametrize("seed", range(6))
def test_tie_calibration_matches_mt_metrics_eval_tau_optimization(seed):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 4, size=8).astype(float)  # exact human ties, as the paper has
    metric = np.round(human + rng.normal(size=8), 1)
    a, b = zip(*itertools.combinations(range(8), 2), strict=True)
    a, b = np.array(a), np.array(b)
    accuracy, epsilon = tie_calibrated(np.sign(human[a] - human[b]), metric[a] - metric[b])
    ref_accuracy, ref_epsilon = ref_tau_optimization_acc23(metric, human)
    assert float(accuracy) == pytest.approx(ref_accuracy)
    assert float(epsilon) == pytest.approx(ref_epsilon)


def test_a_perfect_evaluator_scores_one_and_a_reversed_one_zero():
    rng = np.random.default_rng(3)
    human, _, system_of, cluster_of = _paired(rng, n_systems=4, n_dialogues=60)
    reverse = {k: -v for k, v in human.items()}
    out = meta_evaluate(human, {"same": dict(human), "reverse": reverse}, system_of,
                        cluster_of, n_resamples=50)
    assert out["same"]["pairwise_accuracy"]["value"] == 1.0
    assert out["same"]["soft_pairwise_accuracy"]["value"] == 1.0
    assert out["same"]["tie_calibrated_accuracy"]["value"] == 1.0
    assert out["reverse"]["pairwise_accuracy"]["value"] == 0.0
    assert out["reverse"]["soft_pairwise_accuracy"]["value"] < 0.5


def test_unpaired_permutation_p_values_are_uniform_under_the_null():
    """Dialogues of their own per system (CRS Arena's design), two equal systems: the one-sided
    relabelling p-value is uniform, so P(p ≤ 0.1) ≈ 0.1."""
    rng = np.random.default_rng(4)
    ps = []
    for _ in range(300):
        human = {}
        for s in ("A", "B"):
            for d in range(int(rng.integers(8, 20))):
                effect = rng.normal()
                for t in range(int(rng.integers(1, 5))):
                    human[(s, f"{s}{d}#{t}")] = effect + rng.normal()
        units = [system_meta.Unit(k[0], k[1].split("#")[0], v, 0.0)
                 for k, v in sorted(human.items())]
        design = _Design(units, 200, int(rng.integers(1 << 30)))
        assert not design.pairs[0].paired
        side = _side(design, design.sums(np.array([u.human for u in units])),
                     design.resamples(0, 0))
        ps.append(side.p_greater[0, 0])
    assert np.mean(np.array(ps) <= 0.1) == pytest.approx(0.1, abs=0.05)


def test_one_system_has_no_system_level_statistics():
    human = {("A", f"d{d}"): float(d) for d in range(5)}
    out = meta_evaluate(human, {"m": dict(human)}, {k: "A" for k in human},
                        {k: k[1] for k in human})["m"]
    assert out["pairwise_accuracy"]["value"] is None and out["n_pairs"] == 0


def test_resampling_keeps_each_system_its_dialogue_count():
    rng = np.random.default_rng(5)
    units = [system_meta.Unit(s, f"{s}{d}", 0.0, 0.0) for s, n in (("A", 5), ("B", 9))
             for d in range(n)] + [system_meta.Unit(s, f"x{d}", 0.0, 0.0) for s in "AB"
                                   for d in range(4)]
    design = _Design(units, 10, 0)
    idx = design.resamples(200, int(rng.integers(100)))
    counts = design.counts[idx].sum(axis=1)  # B × systems
    assert (counts == counts[0]).all()
