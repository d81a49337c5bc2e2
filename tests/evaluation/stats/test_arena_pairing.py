"""Adaptive pairing and the top-k stability rule: hand-checkable cases, the Fisher-information
covariance against the bootstrap, and fewer votes than uniform pairing in a small simulation."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.lib.stats.arena import fit_bradley_terry
from evaluation.lib.stats.arena_pairing import (
    FLOOR,
    bt_covariance,
    pair_probabilities,
    simulate_votes_until_stable,
    top_k_stability,
)


def _wins(games: dict[tuple[int, int], tuple[float, float]], size: int) -> np.ndarray:
    wins = np.zeros((size, size))
    for (i, j), (won, lost) in games.items():
        wins[i, j], wins[j, i] = won, lost
    return wins


def test_before_the_fit_exists_every_pair_is_equally_likely():
    wins = _wins({(0, 1): (3, 0)}, 3)  # system 0 never lost: no maximum-likelihood fit
    probabilities = pair_probabilities(wins)
    assert probabilities == {pair: pytest.approx(1 / 3) for pair in [(0, 1), (0, 2), (1, 2)]}


def test_a_settled_pair_gets_its_floor_and_an_open_pair_the_rest():
    # 0 and 1 are close (21 : 19), both far above 2 (and 3): the close pair is the one to ask.
    wins = _wins({(0, 1): (21, 19), (0, 2): (38, 2), (1, 2): (37, 3), (0, 3): (39, 1),
                  (1, 3): (38, 2), (2, 3): (20, 20)}, 4)
    probabilities = pair_probabilities(wins, top_k=2)
    assert sum(probabilities.values()) == pytest.approx(1.0)
    assert min(probabilities.values()) >= FLOOR / 6 - 1e-12
    assert probabilities[(0, 1)] == max(probabilities.values())
    assert probabilities[(0, 1)] > 0.6
    # Neither 2 nor 3 is in the top 2: their pair gets only its floor, however open it is.
    assert probabilities[(2, 3)] == pytest.approx(FLOOR / 6)


def test_a_pair_over_its_cap_gets_only_its_floor():
    wins = _wins({(0, 1): (100, 100), (0, 2): (5, 5), (1, 2): (5, 5)}, 3)
    probabilities = pair_probabilities(wins, top_k=3, cap=0.25)
    assert probabilities[(0, 1)] == pytest.approx(FLOOR / 3)


def test_the_fisher_covariance_matches_the_bootstrap_spread():
    rng = np.random.default_rng(4)
    strengths = np.array([0.0, 0.4, 0.9])
    votes = []
    for _ in range(3000):
        i, j = rng.choice(3, size=2, replace=False)
        votes.append((i, j, float(rng.random() < 1 / (1 + np.exp(strengths[j] - strengths[i])))))
    votes = np.array(votes)

    def wins_of(rows):
        wins = np.zeros((3, 3))
        np.add.at(wins, (rows[:, 0].astype(int), rows[:, 1].astype(int)), rows[:, 2])
        np.add.at(wins, (rows[:, 1].astype(int), rows[:, 0].astype(int)), 1 - rows[:, 2])
        return wins

    wins = wins_of(votes)
    theta = fit_bradley_terry(wins)
    wald = np.sqrt(np.diag(bt_covariance(wins, theta)))
    boot = np.array([fit_bradley_terry(wins_of(votes[rng.integers(0, len(votes), len(votes))]))
                     for _ in range(300)])
    assert wald == pytest.approx(boot.std(axis=0), rel=0.15)


def test_top_k_stability_counts_replicates_with_the_same_order():
    point = [3.0, 2.0, 1.0, 0.0]
    replicates = np.array([[3, 2, 1, 0], [3, 2, 0, 1], [2, 3, 1, 0], [3, 1, 2, 0],
                           [np.nan, 1, 1, 1]], dtype=float)
    assert top_k_stability(point, replicates, 2) == pytest.approx(2 / 4)  # rows 1 and 2
    assert top_k_stability(point, replicates, 3) == pytest.approx(1 / 4)  # row 1
    assert top_k_stability(point, np.full((2, 4), np.nan), 2) is None


def test_adaptive_pairing_needs_fewer_votes_than_uniform_for_a_stable_top_3():
    strengths = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]
    runs = {adaptive: [simulate_votes_until_stable(strengths, adaptive=adaptive, seed=seed,
                                                   max_votes=3000, n_resamples=100)
                       for seed in range(6)]
            for adaptive in (False, True)}
    assert np.mean(runs[True]) < 0.85 * np.mean(runs[False])
