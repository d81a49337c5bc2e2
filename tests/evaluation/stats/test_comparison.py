"""Comparing two systems: per-dialogue paired t-test and the combined comparison record."""

import math

import pytest
from scipy import stats

from evaluation.lib.stats.comparison import compare_systems, paired_t_test, per_dialogue_means


def test_paired_t_test_matches_hand_computation():
    a = {"d1": 1.0, "d2": 2.0, "d3": 3.0, "d4": 4.0}
    b = {"d1": 0.0, "d2": 0.0, "d3": 1.0, "d4": 1.0}
    result = paired_t_test(a, b)
    # Differences 1, 2, 2, 3: mean 2, sd √(2/3), t = 2 / (√(2/3) / 2) = √24.
    assert result.t == pytest.approx(math.sqrt(24))
    assert result.p_value == pytest.approx(2 * stats.t.sf(math.sqrt(24), df=3))
    assert (result.n, result.mean_difference, result.mean_a, result.mean_b) == (4, 2.0, 2.5, 0.5)


def test_paired_t_test_uses_only_dialogues_both_systems_have():
    result = paired_t_test({"d1": 1.0, "d2": 3.0, "d3": 2.0}, {"d1": 0.5, "d3": 0.0, "d9": 7.0})
    assert result.n == 2
    assert result.mean_a == 1.5


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ({"d1": 1.0}, {"d1": 0.0}, "fewer than two dialogues"),
        ({"d1": 1.0, "d2": 2.0}, {"d1": 1.0, "d2": 2.0}, "identically"),
        ({"d1": 1.0, "d2": 2.0}, {"d1": 0.0, "d2": 1.0}, "no variance"),
    ],
)
def test_paired_t_test_explains_undefined_cases(a, b, reason):
    result = paired_t_test(a, b)
    assert result.t is None and result.p_value is None
    assert reason in result.undefined_reason


def test_per_dialogue_means_average_turns_and_skip_missing_values():
    means = per_dialogue_means([1.0, 3.0, None, 5.0], ["d1", "d1", "d2", "d3"])
    assert means == {"d1": 2.0, "d3": 5.0}


def test_compare_systems_combines_paired_bootstrap_and_t_test():
    dialogues = ["d1", "d1", "d2", "d3", "d4"]
    b = [0.2, 0.4, 0.1, 0.5, 0.3]
    a = [0.9, 0.7, 0.8, 1.0, 0.9]
    comparison = compare_systems("LLM", a, dialogues, "TF-IDF", b, dialogues)
    assert comparison.significant
    assert comparison.difference.value == pytest.approx(sum(a) / 5 - sum(b) / 5)
    assert comparison.t_test.n == 4
    assert comparison.to_dict()["system_a"] == "LLM"


def test_compare_from_sums_equals_the_per_dialogue_t_test_and_a_hand_jackknife():
    """From per-dialogue sums and counts (unsorted, a dialogue with no value, dialogues only one
    system has): the t-test is scipy's on the shared dialogues' means, the difference is that of
    the unit-weighted means over the shared dialogues, its SE the delete-one-dialogue jackknife."""
    from evaluation.lib.stats.comparison import compare_systems_from_sums

    a = {"d3": (2.4, 3), "d1": (0.9, 1), "d2": (1.0, 2), "d5": (0.0, 0), "d9": (0.5, 1)}
    b = {"d2": (0.6, 2), "d1": (0.2, 1), "d3": (1.2, 3), "d7": (0.4, 1)}
    comparison = compare_systems_from_sums(
        "A", list(a), [s for s, _ in a.values()], [n for _, n in a.values()],
        "B", list(b), [s for s, _ in b.values()], [n for _, n in b.values()])
    shared = ["d1", "d2", "d3"]
    means_a = [a[d][0] / a[d][1] for d in shared]
    means_b = [b[d][0] / b[d][1] for d in shared]
    reference = stats.ttest_rel(means_a, means_b)
    assert comparison.t_test.n == 3
    assert comparison.t_test.p_value == pytest.approx(reference.pvalue)

    def difference(kept):
        return (sum(a[d][0] for d in kept) / sum(a[d][1] for d in kept)
                - sum(b[d][0] for d in kept) / sum(b[d][1] for d in kept))

    assert comparison.difference.value == pytest.approx(difference(shared))  # 3.3/6 - 2.0/6
    leave_outs = [difference([d for d in shared if d != out]) for out in shared]
    mean = sum(leave_outs) / 3
    se = math.sqrt(2 / 3 * sum((x - mean) ** 2 for x in leave_outs))
    half = comparison.difference.ci_high - comparison.difference.value
    assert half == pytest.approx(stats.t.ppf(0.975, comparison.difference.params["df"]) * se)
    assert comparison.difference.n == {"shared_clusters": 3, "clusters_only_a": 1,
                                       "clusters_only_b": 1, "units_a": 7, "units_b": 7}
