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
