"""The one bootstrap: cluster CIs, paired differences, tie-aware ranks, generic percentile CIs."""

import numpy as np
import pytest

from evaluation.lib.stats.bootstrap import (
    cluster_bootstrap_mean,
    cluster_replicate_means,
    cluster_sums,
    paired_cluster_bootstrap_difference,
    percentile_bootstrap,
    percentile_interval,
    rank_systems,
    rank_systems_by_metric,
    resample_counts,
    significantly_better_matrix,
    tie_aware_ranks,
)


def test_replicate_mean_weights_each_unit_of_each_drawn_dialogue():
    # Dialogue 0 has units 1 and 3, dialogue 1 has unit 5: unit-weighted mean 9 / 3 = 3.
    sums, counts = cluster_sums(np.array([1.0, 3.0, 5.0]), np.array([0, 0, 1]), 2)
    weights = np.array([[2, 0], [0, 2], [1, 1]])
    assert cluster_replicate_means(sums, counts, weights).tolist() == [2.0, 5.0, 3.0]


def test_resample_counts_draw_as_many_clusters_as_there_are_and_depend_on_the_seed():
    counts = resample_counts(7, n_resamples=50, seed=3)
    assert counts.shape == (50, 7)
    assert (counts.sum(axis=1) == 7).all()
    assert (counts == resample_counts(7, n_resamples=50, seed=3)).all()
    assert not (counts == resample_counts(7, n_resamples=50, seed=4)).all()


def test_cluster_bootstrap_of_two_opposite_dialogues_spans_both_dialogue_means():
    # Each replicate draws {d1, d1} (mean 0), {d2, d2} (mean 1) or one of each (mean 0.5),
    # with probabilities ¼, ¼, ½, so the 2.5th and 97.5th percentiles are 0 and 1.
    estimate = cluster_bootstrap_mean([0, 0, 1, 1], ["d1", "d1", "d2", "d2"])
    assert estimate.value == 0.5
    assert (estimate.ci_low, estimate.ci_high) == (0.0, 1.0)
    assert estimate.n == {"units": 4, "clusters": 2}
    assert estimate.params == {"n_resamples": 1000, "seed": 42, "confidence": 0.95}


def test_cluster_bootstrap_ignores_missing_values_and_is_reproducible():
    values = [0.2, None, 0.4, float("nan"), 0.9, 0.1]
    clusters = ["a", "a", "b", "b", "c", "c"]
    first = cluster_bootstrap_mean(values, clusters)
    assert first.n == {"units": 4, "clusters": 3}
    assert first.value == pytest.approx(0.4)
    assert first == cluster_bootstrap_mean(values, clusters)
    assert cluster_bootstrap_mean([None], ["a"]).undefined_reason == "no unit has a value"


def test_paired_difference_of_a_constant_gap_is_that_gap_and_significant():
    dialogues = ["d1", "d1", "d2", "d3"]
    b = [0.1, 0.5, 0.3, 0.9]
    a = [value + 0.25 for value in b]
    difference = paired_cluster_bootstrap_difference(a, dialogues, b, dialogues)
    assert difference.value == pytest.approx(0.25)
    assert difference.ci_low == pytest.approx(0.25) and difference.ci_high == pytest.approx(0.25)
    assert difference.ci_excludes(0)


def test_paired_difference_uses_only_shared_dialogues():
    difference = paired_cluster_bootstrap_difference(
        [1.0, 1.0, 9.0], ["d1", "d2", "only_a"], [0.0, 0.0], ["d1", "d2"]
    )
    assert difference.value == 1.0
    assert difference.n["shared_clusters"] == 2 and difference.n["clusters_only_a"] == 1
    assert difference.params["mean_a"] == 1.0


def test_paired_difference_of_identical_systems_is_not_significant():
    values, dialogues = [0.3, 0.7, 0.2, 0.9], ["d1", "d2", "d3", "d4"]
    difference = paired_cluster_bootstrap_difference(values, dialogues, values, dialogues)
    assert difference.value == 0.0 and not difference.ci_excludes(0)


def test_paired_difference_without_shared_dialogues_is_undefined():
    difference = paired_cluster_bootstrap_difference([1.0], ["d1"], [1.0], ["d2"])
    assert difference.value is None
    assert "share no dialogue" in difference.undefined_reason


def test_rank_is_one_plus_number_of_significantly_better_systems():
    # A is always ahead by 1; B and C trade places: 1 + 0 for A, 1 + 1 for both B and C.
    wobble = np.array([0.2, -0.2] * 50)
    replicates = np.column_stack([np.full(100, 2.0), 1.0 + wobble, 1.0 - wobble])
    better = significantly_better_matrix(replicates)
    assert better.tolist() == [
        [False, False, False],
        [True, False, False],
        [True, False, False],
    ]
    assert tie_aware_ranks(better).tolist() == [1, 2, 2]
    lower_better = significantly_better_matrix(replicates, higher_is_better=False)
    assert tie_aware_ranks(lower_better).tolist() == [3, 1, 1]


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
    assert strong.method == "cluster_bootstrap_mean"


def test_rank_systems_respects_lower_is_better():
    values, systems, dialogues = _leaderboard_rows()
    rows = rank_systems(values, systems, dialogues, higher_is_better=False)
    assert [(row.system, row.rank) for row in rows][-1] == ("strong", 3)


def test_many_metrics_at_once_equal_one_metric_at_a_time():
    values, systems, dialogues = _leaderboard_rows()
    reversed_values = [-v for v in values]
    boards = rank_systems_by_metric(
        {"recall": values, "turns_to_hit": reversed_values},
        systems,
        dialogues,
        higher_is_better={"recall": True, "turns_to_hit": False},
    )
    assert boards["recall"] == rank_systems(values, systems, dialogues)
    assert [row.system for row in boards["turns_to_hit"]][0] == "strong"


def test_pair_difference_significance_agrees_with_leaderboard_ranks():
    values, systems, dialogues = _leaderboard_rows()
    pick = {name: [i for i, s in enumerate(systems) if s == name] for name in set(systems)}

    def rows_of(name):
        return [values[i] for i in pick[name]], [dialogues[i] for i in pick[name]]

    strong_vs_weak = paired_cluster_bootstrap_difference(*rows_of("strong"), *rows_of("weak_1"))
    weak_vs_weak = paired_cluster_bootstrap_difference(*rows_of("weak_2"), *rows_of("weak_1"))
    assert strong_vs_weak.ci_excludes(0)
    assert not weak_vs_weak.ci_excludes(0)


def test_percentile_bootstrap_skips_undefined_resamples():
    data = np.array([1.0, 2.0, 3.0, 4.0])

    def mean_unless_first_unit_drawn(indices):
        return None if 0 in indices else float(data[indices].mean())

    interval = percentile_bootstrap(mean_unless_first_unit_drawn, 4, n_resamples=200)
    assert 0 < interval.valid_resamples < 200
    assert 2.0 <= interval.low <= interval.high <= 4.0


def test_percentile_bootstrap_can_resample_clusters():
    seen_sizes = set()

    def size(indices):
        seen_sizes.add(len(indices))
        return float(len(indices))

    percentile_bootstrap(size, 3, clusters=["a", "a", "b"], n_resamples=50)
    assert seen_sizes <= {2, 3, 4}


def test_percentile_interval_matches_numpy_and_handles_empty_samples():
    samples = np.random.default_rng(1).normal(size=999)
    low, high = percentile_interval(samples, 0.9)
    assert (low, high) == tuple(np.quantile(samples, [0.05, 0.95]))
    assert percentile_interval([], 0.95) == (None, None)
