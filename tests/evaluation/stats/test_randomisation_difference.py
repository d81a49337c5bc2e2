"""The paired test at few dialogues of unequal length (issue 30.8): the compare page's exact
randomisation test over dialogues, checked against a brute-force enumeration, its interval by
inversion, where it applies, and its size by simulation."""

import itertools

import numpy as np
import pytest

from evaluation.lib.stats.comparison import (
    RANDOMISATION_DIALOGUES,
    RANDOMISATION_METHOD,
    compare_systems,
    randomisation_p_value,
)
from evaluation.lib.stats.methods import METHOD_DESCRIPTIONS
from leaderboard.lib import calibration

# Six dialogues of 1–4 turns; A's and B's unit values per dialogue.
A = [[0.9, 0.7], [0.4], [0.8, 0.6, 0.9, 0.5], [0.3, 0.2, 0.4], [1.0], [0.6, 0.9]]
B = [[0.5, 0.6], [0.5], [0.4, 0.3, 0.7, 0.2], [0.1, 0.3, 0.2], [0.6], [0.4, 0.5]]


def flatten(per_dialogue):
    values = [v for dialogue in per_dialogue for v in dialogue]
    labels = [f"d{i}" for i, dialogue in enumerate(per_dialogue) for _ in dialogue]
    return values, labels


def brute_force_p(a, b, shift=0.0):
    """Every swap pattern written out; mid-p, the unit-weighted difference of means."""
    a = [[v - shift for v in dialogue] for dialogue in a]

    def difference(pattern):
        left = [v for keep, x, y in zip(pattern, a, b, strict=True) for v in (x if keep else y)]
        right = [v for keep, x, y in zip(pattern, a, b, strict=True) for v in (y if keep else x)]
        return abs(sum(left) / len(left) - sum(right) / len(right))

    observed = difference([True] * len(a))
    all_ = [difference(p) for p in itertools.product([True, False], repeat=len(a))]
    above = sum(d > observed + 1e-12 for d in all_)
    tied = sum(abs(d - observed) <= 1e-12 for d in all_)
    return (above + 0.5 * tied) / len(all_)


def sums_counts(a, b):
    return (np.array([[sum(x) for x in a], [sum(y) for y in b]]),
            np.array([[len(x) for x in a], [len(y) for y in b]], dtype=float))


def test_p_value_equals_the_enumeration_of_every_swap():
    sums, counts = sums_counts(A, B)
    for shift in (0.0, 0.1, 0.25, -0.05):
        assert randomisation_p_value(sums, counts, shift) == pytest.approx(
            brute_force_p(A, B, shift), abs=1e-12)


def test_compare_uses_it_for_few_dialogues_and_its_interval_is_the_inverted_test():
    (va, la), (vb, lb) = flatten(A), flatten(B)
    comparison = compare_systems("A", va, la, "B", vb, lb)
    difference = comparison.difference
    assert difference.method == RANDOMISATION_METHOD
    assert difference.value == pytest.approx(np.mean(va) - np.mean(vb))
    assert difference.params["patterns"] == 2**6
    assert difference.params["p_value"] == pytest.approx(brute_force_p(A, B))
    # Two swaps beyond the observed |difference| and the observed pair itself, half: 3/64.
    assert difference.params["p_value"] == pytest.approx(3 / 64)
    assert comparison.significant
    low, high = difference.ci_low, difference.ci_high
    assert low < difference.value < high
    for end, outward in ((low, -1e-6), (high, 1e-6)):
        assert brute_force_p(A, B, end - outward) > 0.05  # just inside: not rejected
        assert brute_force_p(A, B, end + outward) <= 0.05  # just outside: rejected
    assert "randomisation test over dialogues" in METHOD_DESCRIPTIONS[RANDOMISATION_METHOD]


def test_outside_six_to_twelve_dialogues_the_jackknife_t_stays():
    assert list(RANDOMISATION_DIALOGUES) == list(range(6, 13))
    rng = np.random.default_rng(3)
    for dialogues in (5, 13):
        labels = [f"d{i}" for i in range(dialogues) for _ in range(3)]
        a, b = rng.normal(size=len(labels)), rng.normal(size=len(labels))
        assert compare_systems("A", a, labels, "B", b, labels).difference.method == \
            "cluster_t_difference"


def test_equal_systems_on_ten_unequal_dialogues_are_called_different_about_5_percent():
    # bench_calibration's diff_unequal row (2–13 turns) at a smaller number of repetitions.
    rng = np.random.default_rng(11)
    reps = 400
    rejected = np.mean([calibration.unequal_difference(rng, 10)[0] for _ in range(reps)])
    assert 0.025 <= rejected <= 0.08, rejected
    binary = np.mean([calibration.unequal_difference(rng, 10, kind="binary")[0]
                      for _ in range(reps)])
    assert 0.025 <= binary <= 0.08, binary
