"""Ratings per scenario facet: plain Bradley–Terry in the limit, a reversal the data show,
shrinkage of a sparse cell, and interval coverage over facets drawn from the prior."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.lib.stats.arena import bradley_terry_ratings
from evaluation.lib.stats.arena_facets import TAU, facet_ratings, simulated_facet_votes


def _by(table, value):
    return {row.system: row for row in table.rows if row.facet_value == value}


def test_with_one_value_and_a_flat_prior_it_is_plain_bradley_terry():
    votes = simulated_facet_votes(500, [0.0, 0.5, 1.0], np.zeros((3, 1)), seed=1)
    table = facet_ratings(votes, tau=1e4)
    plain = bradley_terry_ratings([v[:3] for v in votes])
    for system, row in _by(table, "f0").items():
        assert row.rating == pytest.approx(plain[system], abs=1e-3)


def test_a_reversal_between_values_is_found_when_the_votes_show_it():
    deviations = np.array([[1.0, -1.0], [-1.0, 1.0], [0.0, 0.0]])
    table = facet_ratings(simulated_facet_votes(4000, [0.0, 0.0, 0.0], deviations, seed=2))
    first, second = _by(table, "f0"), _by(table, "f1")
    assert first["s0"].ci_low > first["s1"].ci_high
    assert second["s1"].ci_low > second["s0"].ci_high


def test_a_sparse_value_is_pulled_towards_the_overall_ratings_with_a_wide_interval():
    votes = simulated_facet_votes(2000, [0.0, 1.0, 2.0], np.zeros((3, 1)), seed=3)
    votes += [("s0", "s2", "a", "rare"), ("s0", "s1", "a", "rare")]  # s0 won both rare votes
    table = facet_ratings(votes)
    common, rare = _by(table, "f0"), _by(table, "rare")
    assert rare["s0"].rating < rare["s2"].rating  # two votes do not overturn 2,000
    assert (rare["s0"].ci_high - rare["s0"].ci_low) > 2 * (common["s0"].ci_high
                                                           - common["s0"].ci_low)


def test_intervals_cover_about_95_percent_over_facets_drawn_from_the_prior():
    rng = np.random.default_rng(9)
    hits = total = 0
    for rep in range(120):
        strengths = rng.normal(0, 0.7, 4)
        deviations = rng.normal(0, TAU, (4, 3))
        table = facet_ratings(simulated_facet_votes(600, strengths, deviations, seed=rep))
        for f in range(3):
            truth = strengths + deviations[:, f]
            truth = 1000 + 400 / np.log(10) * (truth - truth.mean())
            for system, row in _by(table, f"f{f}").items():
                hits += row.ci_low <= truth[int(system[1:])] <= row.ci_high
                total += 1
    assert 0.92 <= hits / total <= 0.98


def test_no_votes_or_one_system_says_why():
    assert facet_ratings([]).undefined_reason == "no votes"
    assert "never won" in facet_ratings([("x", "y", "a", "c")] * 12, tau=1e4).undefined_reason
