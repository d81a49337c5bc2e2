"""Vote-quality flags and the annotator-ability (am-ELO-style) ratings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from evaluation.lib.stats.arena import bradley_terry_ratings
from evaluation.lib.stats.arena_quality import (
    SAME_SIDE_MIN_VOTES,
    VoteRecord,
    ability_weighted_ratings,
    reading_seconds,
    vote_flags,
)


def test_a_vote_faster_than_skimming_both_answers_is_flagged():
    assert reading_seconds(350) == pytest.approx(30.0)  # 700 words a minute
    assert reading_seconds(5) == 2.0
    flags = vote_flags([VoteRecord(1, "s", "a", 10.0, 350), VoteRecord(2, "s", "b", 31.0, 350),
                        VoteRecord(3, "s", "tie", None, 350)])
    assert flags == {1: ["too_fast"], 2: [], 3: []}


def test_a_session_that_always_picks_one_side_is_flagged_only_from_enough_votes():
    one_sided = [VoteRecord(k, "x", "a", 60.0, 10) for k in range(SAME_SIDE_MIN_VOTES)]
    short = [VoteRecord(100 + k, "y", "b", 60.0, 10) for k in range(SAME_SIDE_MIN_VOTES - 1)]
    mixed = [VoteRecord(200 + k, "z", "ab"[k % 2], 60.0, 10) for k in range(12)]
    flags = vote_flags(one_sided + short + mixed + [VoteRecord(300, "x", "tie", 60.0, 10,
                                                                by_owner=True)])
    assert all(flags[k] == ["same_side"] for k in range(SAME_SIDE_MIN_VOTES))
    assert not any(flags[100 + k] for k in range(SAME_SIDE_MIN_VOTES - 1))
    assert not any(flags[200 + k] for k in range(12))
    assert flags[300] == ["same_side", "owner"]


def _votes(strengths, abilities, per_voter, seed):
    rng = np.random.default_rng(seed)
    votes = []
    for voter, ability in enumerate(abilities):
        for _ in range(per_voter):
            i, j = rng.choice(len(strengths), size=2, replace=False)
            won = rng.random() < expit(ability * (strengths[i] - strengths[j]))
            votes.append((f"s{i}", f"s{j}", "a" if won else "b", f"v{voter}"))
    return votes


def test_random_clickers_get_low_ability_and_careful_voters_high():
    strengths = [0.0, 0.5, 1.0, 1.5]
    abilities = [1.0] * 20 + [0.0] * 10
    fit = ability_weighted_ratings(_votes(strengths, abilities, 60, seed=2))
    careful = np.mean([fit.abilities[f"v{k}"] for k in range(20)])
    clickers = np.mean([fit.abilities[f"v{k}"] for k in range(20, 30)])
    assert careful > 0.8 and clickers < 0.35
    ranked = sorted(fit.ratings, key=fit.ratings.get)
    assert ranked == ["s0", "s1", "s2", "s3"]
    # Clickers shrink plain Bradley–Terry towards the middle; the ability fit undoes it.
    true_spread = 1.5 * 400 / np.log(10)
    plain = bradley_terry_ratings([v[:3] for v in _votes(strengths, abilities, 60, seed=2)])
    fitted_spread = fit.ratings["s3"] - fit.ratings["s0"]
    assert abs(fitted_spread - true_spread) < 0.5 * abs(plain["s3"] - plain["s0"] - true_spread)


def test_with_only_careful_voters_the_ratings_stay_near_plain_bradley_terry():
    votes = _votes([0.0, 0.6, 1.2], [1.0] * 15, 80, seed=7)
    fit = ability_weighted_ratings(votes)
    plain = bradley_terry_ratings([v[:3] for v in votes])
    for name, rating in plain.items():
        assert fit.ratings[name] == pytest.approx(rating, abs=15)
    assert ability_weighted_ratings([("x", "y", "a", "v")]) is None  # no plain fit either
