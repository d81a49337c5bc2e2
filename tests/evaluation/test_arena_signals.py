"""evaluation/lib/arena_signals.py: the Wilson interval against statsmodels, the rates per
system, and the style features of one side's answers by hand."""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evaluation.lib.arena_signals import (
    Answer,
    SideSignal,
    side_style,
    system_rates,
    wilson_interval,
)


@pytest.mark.parametrize("k, n", [(0, 1), (1, 1), (3, 10), (51, 254), (0, 40), (40, 40)])
def test_wilson_matches_statsmodels(k, n):
    assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"))


def test_wilson_covers_about_95_percent_at_a_realistic_size():
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(4000):
        k = rng.binomial(60, 0.2)
        low, high = wilson_interval(int(k), 60)
        hits += low <= 0.2 <= high
    assert 0.93 <= hits / 4000 <= 0.97


def test_rates_count_only_the_sides_that_carry_the_signal():
    rates = system_rates([SideSignal("x", "satisfied", True), SideSignal("x", "frustrated", False),
                          SideSignal("x", "", None), SideSignal("y", "", None)])
    assert (rates["x"]["satisfaction"].successes, rates["x"]["satisfaction"].n) == (1, 2)
    assert (rates["x"]["acceptance"].successes, rates["x"]["acceptance"].n) == (1, 2)
    assert rates["y"]["satisfaction"].rate is None and rates["y"]["satisfaction"].ci_low is None
    assert wilson_interval(0, 0) == (None, None)


def test_style_of_one_side_by_hand():
    answers = [Answer('Try "great crab" [R1] and [R2, R1].', ["i1", "i2", "i1", "i3", "i4", "i5",
                                                             "i6"]),
               Answer("Or Noodle Nook.", ["i6"])]
    # words: Try great crab R1 and R2 R1 = 7; Or Noodle Nook = 3 -> mean 5
    # items: first 5 distinct of each: i1..i5, then i6 -> 6; citations: {R1, R2} + {} = 2
    assert side_style(answers) == {"length": 5.0, "items": 6.0, "citations": 2.0}
    assert side_style([]) == {"length": 0.0, "items": 0.0, "citations": 0.0}
