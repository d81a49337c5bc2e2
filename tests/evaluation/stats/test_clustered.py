"""Studentized cluster (jackknife-t) intervals, their tests, Holm and tie-aware ranks.

Each definition is pinned by a hand computation or by scipy; calibration (coverage and level by
simulation) is measured by bench_calibration (tests/evaluation/stats/test_calibration.py).
"""

import numpy as np
import pytest
from scipy import stats

from evaluation.lib.stats.clustered import (
    better_from_tests,
    cluster_mean,
    holm_adjusted,
    holm_reject,
    jackknife_standard_error,
    paired_cluster_difference,
    pairwise_tests,
    rank_systems,
    rank_systems_by_metric,
    tie_aware_ranks,
)
from evaluation.lib.stats.comparison import compare_systems


def test_mean_interval_by_hand():
    # Dialogues d1 = {0, 2} and d2 = {4}: mean 6/3 = 2. Leave d1 out: 4; leave d2 out: 1.
    # Jackknife SE² = (G−1)/G · Σ(θ_(−g) − θ̄)² = ½ · (1.5² + 1.5²) = 2.25, SE = 1.5;
    # t_{1, .975} = 12.706, so 2 ± 19.059.
    estimate = cluster_mean([0, 2, 4], ["d1", "d1", "d2"])
    half = stats.t.ppf(0.975, 1) * 1.5
    assert estimate.value == 2.0
    assert estimate.ci_low == pytest.approx(2 - half)
    assert estimate.ci_high == pytest.approx(2 + half)
    assert estimate.n == {"units": 3, "clusters": 2}
    assert estimate.method == "cluster_t_mean"


def test_mean_interval_with_equal_dialogues_is_the_t_interval_of_dialogue_means():
    rng = np.random.default_rng(3)
    values = rng.normal(size=30)
    dialogues = np.repeat(np.arange(10), 3)
    estimate = cluster_mean(values, dialogues)
    means = values.reshape(10, 3).mean(axis=1)
    low, high = stats.t.interval(0.95, 9, loc=means.mean(), scale=stats.sem(means))
    assert (estimate.ci_low, estimate.ci_high) == (pytest.approx(low), pytest.approx(high))


def _df(counts):
    """Satterthwaite df by hand: q_g = (n_g/N)² (1 + 1/n_g), df = (Σq)² / Σq² − 1."""
    counts = np.asarray(counts, dtype=float)
    q = (counts / counts.sum()) ** 2 * (1 + 1 / counts)
    return q.sum() ** 2 / (q**2).sum() - 1


def test_mean_interval_equals_a_brute_force_jackknife_on_unequal_dialogues():
    rng = np.random.default_rng(4)
    dialogues = rng.integers(0, 8, 40)
    values = rng.normal(size=40)
    leave_outs = np.array([values[dialogues != g].mean() for g in np.unique(dialogues)])
    g = len(leave_outs)
    se = np.sqrt((g - 1) / g * ((leave_outs - leave_outs.mean()) ** 2).sum())
    estimate = cluster_mean(values, dialogues)
    df = _df(np.bincount(dialogues))
    assert 1 < df < g - 1  # unequal dialogues: fewer effective clusters than G − 1
    assert estimate.ci_low == pytest.approx(values.mean() - stats.t.ppf(0.975, df) * se)
    assert float(jackknife_standard_error(leave_outs)) == pytest.approx(se)


def test_mean_ignores_missing_values_and_one_dialogue_has_no_interval():
    estimate = cluster_mean([0.2, None, 0.4, float("nan")], ["a", "a", "a", "b"])
    assert estimate.value == pytest.approx(0.3) and estimate.ci_low is None
    assert estimate.n == {"units": 2, "clusters": 1}
    assert cluster_mean([None], ["a"]).undefined_reason == "no unit has a value"


def test_difference_with_equal_dialogues_is_the_paired_t_test():
    # 20 dialogues: above the 6–12 where the compare page takes the randomisation test
    rng = np.random.default_rng(0)
    dialogues = np.repeat(np.arange(20), 3)
    a, b = rng.normal(size=60), rng.normal(size=60) + 0.3
    comparison = compare_systems("A", a, dialogues, "B", b, dialogues)
    per_a, per_b = a.reshape(20, 3).mean(axis=1), b.reshape(20, 3).mean(axis=1)
    reference = stats.ttest_rel(per_a, per_b)
    low, high = reference.confidence_interval()
    assert comparison.difference.params["p_value"] == pytest.approx(reference.pvalue)
    assert comparison.t_test.p_value == pytest.approx(reference.pvalue)
    assert comparison.difference.ci_low == pytest.approx(low)
    assert comparison.difference.ci_high == pytest.approx(high)


def test_difference_of_a_constant_gap_is_significant_with_a_zero_width_interval():
    dialogues = ["d1", "d1", "d2", "d3"]
    b = [0.1, 0.5, 0.3, 0.9]
    a = [value + 0.25 for value in b]
    difference = paired_cluster_difference(a, dialogues, b, dialogues)
    assert difference.value == pytest.approx(0.25)
    assert difference.ci_low == pytest.approx(0.25) and difference.ci_high == pytest.approx(0.25)
    assert difference.ci_excludes(0) and difference.params["p_value"] == 0.0


def test_difference_uses_only_shared_dialogues_and_identical_systems_tie():
    difference = paired_cluster_difference(
        [1.0, 1.0, 9.0], ["d1", "d2", "only_a"], [0.0, 0.0], ["d1", "d2"]
    )
    assert difference.value == 1.0
    assert difference.n["shared_clusters"] == 2 and difference.n["clusters_only_a"] == 1
    values, dialogues = [0.3, 0.7, 0.2, 0.9], ["d1", "d2", "d3", "d4"]
    same = paired_cluster_difference(values, dialogues, values, dialogues)
    assert same.value == 0.0 and not same.ci_excludes(0) and same.params["p_value"] == 1.0
    none = paired_cluster_difference([1.0], ["d1"], [1.0], ["d2"])
    assert none.value is None and "share no dialogue" in none.undefined_reason


def test_pairwise_tests_match_the_two_system_difference():
    rng = np.random.default_rng(7)
    sums = rng.normal(size=(3, 9)) * 3
    counts = rng.integers(1, 4, size=(3, 9)).astype(float)
    difference, se, dialogues, p_value = pairwise_tests(sums, counts)
    # Brute force for the pair (0, 2): leave each dialogue out, difference of unit means.
    leave = [
        np.delete(sums[2], g).sum() / np.delete(counts[2], g).sum()
        - np.delete(sums[0], g).sum() / np.delete(counts[0], g).sum()
        for g in range(9)
    ]
    expected_se = np.sqrt(8 / 9 * ((np.array(leave) - np.mean(leave)) ** 2).sum())
    assert se[0, 2] == pytest.approx(expected_se) and se[2, 0] == pytest.approx(expected_se)
    assert dialogues[0, 2] == 9
    t = abs(difference[0, 2]) / expected_se
    q = sum((c / c.sum()) ** 2 * (1 + 1 / c) for c in (counts[0], counts[2]))
    df = q.sum() ** 2 / (q**2).sum() - 1
    assert p_value[0, 2] == pytest.approx(2 * stats.t.sf(t, df))


def test_pairwise_tests_count_only_the_dialogues_either_system_has():
    sums = np.array([[1.0, 2.0, 0.0, 0.0], [0.0, 1.0, 3.0, 0.0], [0.0, 0.0, 0.0, 5.0]])
    counts = (sums > 0).astype(float)
    _, _, dialogues, p_value = pairwise_tests(sums, counts)
    assert dialogues[0, 1] == 3 and dialogues[0, 2] == 3
    assert np.isnan(p_value[0, 2])  # system 2 has one dialogue: no leave-one-out test


def test_holm_by_hand():
    # Sorted 0.005, 0.01, 0.03, 0.04 against 0.05/4, 0.05/3, 0.05/2, 0.05/1: the first two pass,
    # 0.03 > 0.025 stops. Adjusted: 0.02, 0.03, max(0.06, 0.03), max(0.04, 0.06).
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm_reject(p).tolist() == [True, False, False, True]
    assert holm_adjusted(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_reject([np.nan, 0.01]).tolist() == [False, True]


def test_holm_is_stricter_than_one_test_per_pair():
    difference = np.array([[0, 1, 1], [-1, 0, 1], [-1, -1, 0]], dtype=float)
    p_value = np.array([[np.nan, 0.03, 0.001], [0.03, np.nan, 0.04], [0.001, 0.04, np.nan]])
    holm = better_from_tests(difference, p_value)
    plain = better_from_tests(difference, p_value, correction="none")
    assert tie_aware_ranks(plain).tolist() == [3, 2, 1]
    assert tie_aware_ranks(holm).tolist() == [2, 1, 1]
    lower = better_from_tests(difference, p_value, higher_is_better=False)
    assert tie_aware_ranks(lower).tolist() == [1, 1, 2]


def _leaderboard_rows():
    rng = np.random.default_rng(0)
    systems, dialogues, values = [], [], []
    for system, level in (("strong", 0.8), ("weak_1", 0.3), ("weak_2", 0.31)):
        for dialogue in range(40):
            for _turn in range(3):
                systems.append(system)
                dialogues.append(f"d{dialogue}")
                values.append(level + rng.normal(0, 0.1))
    return values, systems, dialogues


def test_rank_systems_gives_means_cis_and_shared_ranks_for_indistinguishable_systems():
    values, systems, dialogues = _leaderboard_rows()
    rows = rank_systems(values, systems, dialogues)
    assert [row.system for row in rows] == ["strong", "weak_2", "weak_1"]
    assert [row.rank for row in rows] == [1, 2, 2]
    assert rows[1].significantly_better == ("strong",)
    strong = rows[0].estimate
    assert strong.ci_low < strong.value < strong.ci_high
    assert strong.n == {"units": 120, "clusters": 40}
    assert strong.params["correction"] == "holm" and strong.params["pairs"] == 3
    lower = rank_systems(values, systems, dialogues, higher_is_better=False)
    assert [(row.system, row.rank) for row in lower][-1] == ("strong", 3)


def test_many_metrics_at_once_equal_one_metric_at_a_time():
    values, systems, dialogues = _leaderboard_rows()
    boards = rank_systems_by_metric(
        {"recall": values, "turns_to_hit": [-v for v in values]},
        systems,
        dialogues,
        higher_is_better={"recall": True, "turns_to_hit": False},
    )
    assert boards["recall"] == rank_systems(values, systems, dialogues)
    assert [row.system for row in boards["turns_to_hit"]][0] == "strong"
