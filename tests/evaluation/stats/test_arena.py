"""Arena ratings: online Elo and Bradley–Terry, with bootstrap CIs over votes."""

import math

import numpy as np
import pytest

from evaluation.lib.stats.arena import (
    bradley_terry_ratings,
    bradley_terry_with_ci,
    elo_ratings,
    elo_with_ci,
    fit_bradley_terry,
)


def test_elo_two_votes_by_hand():
    ratings = elo_ratings([("A", "B", "a"), ("A", "B", "tie")])
    # Vote 1: E_A = ½, A gains 16·½ = 8 → 1008 / 992.
    # Vote 2: E_A = 1 / (1 + 10^(−16/400)), A gains 16·(½ − E_A) (a small loss).
    expected_a = 1 / (1 + 10 ** (-16 / 400))
    assert ratings["A"] == pytest.approx(1008 + 16 * (0.5 - expected_a))
    assert ratings["B"] == pytest.approx(992 - 16 * (0.5 - expected_a))
    assert ratings["A"] == pytest.approx(1007.632, abs=1e-3)


def test_elo_depends_on_vote_order_and_keeps_the_rating_total():
    votes = [("A", "B", "a"), ("B", "C", "b"), ("C", "A", "tie"), ("A", "C", "B")]
    forward, backward = elo_ratings(votes), elo_ratings(votes[::-1])
    assert forward != backward
    assert sum(forward.values()) == pytest.approx(3000)


def test_elo_rejects_bad_votes():
    with pytest.raises(ValueError):
        elo_ratings([("A", "A", "a")])
    with pytest.raises(ValueError):
        elo_ratings([("A", "B", "draw")])


def test_bradley_terry_two_wins_to_one_by_hand():
    ratings = bradley_terry_ratings([("A", "B", "a"), ("A", "B", "a"), ("B", "A", "a")])
    # MLE: P(A beats B) = 2/3, so the strengths are 2 : 1 → 400·log10(2) apart around 1000.
    assert ratings["A"] == pytest.approx(1000 + 200 * math.log10(2))
    assert ratings["B"] == pytest.approx(1000 - 200 * math.log10(2))


def test_bradley_terry_counts_ties_as_half_wins():
    ratings = bradley_terry_ratings([("A", "B", "tie"), ("B", "A", "tie")])
    assert ratings == {"A": pytest.approx(1000), "B": pytest.approx(1000)}
    lopsided = bradley_terry_ratings([("A", "B", "a"), ("A", "B", "tie")])
    # A scored 1.5 of 2 → P = 3/4 → strengths 3 : 1.
    assert lopsided["A"] - lopsided["B"] == pytest.approx(400 * math.log10(3))


def test_bradley_terry_is_undefined_when_a_system_never_wins():
    estimates = bradley_terry_with_ci([("A", "B", "a"), ("A", "B", "a")])
    assert estimates["B"].value is None
    assert "unbounded" in estimates["B"].undefined_reason
    assert bradley_terry_ratings([("A", "B", "a")]) is None


def _simulated_votes(n_votes=600, seed=0):
    rng = np.random.default_rng(seed)
    strength = {"A": 1.0, "B": 0.0, "C": -1.0}
    names = list(strength)
    votes = []
    for _ in range(n_votes):
        a, b = rng.choice(names, size=2, replace=False)
        p = 1 / (1 + math.exp(strength[b] - strength[a]))
        votes.append((a, b, "a" if rng.random() < p else "b"))
    return votes


def test_bradley_terry_solves_the_likelihood_equations():
    votes = _simulated_votes()
    names = sorted({v[0] for v in votes} | {v[1] for v in votes})
    index = {name: i for i, name in enumerate(names)}
    wins = np.zeros((3, 3))
    for a, b, outcome in votes:
        winner, loser = (a, b) if outcome == "a" else (b, a)
        wins[index[winner], index[loser]] += 1
    theta = fit_bradley_terry(wins)
    probability = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    expected_wins = ((wins + wins.T) * probability).sum(axis=1)
    assert expected_wins == pytest.approx(wins.sum(axis=1))
    assert theta.mean() == pytest.approx(0)


def test_arena_cis_order_the_systems_and_report_vote_counts():
    votes = _simulated_votes()
    for estimates in (elo_with_ci(votes, n_resamples=200), bradley_terry_with_ci(votes)):
        a, c = estimates["A"], estimates["C"]
        assert a.ci_low <= a.value <= a.ci_high
        assert a.ci_low > c.ci_high
        assert a.n["votes"] == a.n["wins"] + a.n["losses"] + a.n["ties"]
    bt = bradley_terry_with_ci(votes)
    assert bt["A"].params["valid_resamples"] == 1000
    assert bt == bradley_terry_with_ci(votes)
