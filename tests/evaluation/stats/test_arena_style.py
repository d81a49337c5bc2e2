"""Style-controlled Bradley–Terry: the point estimate against statsmodels' logistic regression,
recovery of a known style effect, interval coverage by simulation, and agreement with plain
Bradley–Terry when no style varies."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from evaluation.lib.stats.arena import bradley_terry_ratings
from evaluation.lib.stats.arena_style import (
    StyledVote,
    simulated_styled_votes,
    style_controlled_ratings,
    style_design,
)


def test_the_design_is_fastchats_normalised_then_standardised_difference():
    votes = [StyledVote("x", "y", "a", {"length": 10}, {"length": 0}),
             StyledVote("x", "y", "b", {"length": 0}, {"length": 0}),
             StyledVote("y", "x", "tie", {"length": 3}, {"length": 5})]
    ratio = np.array([10 / 11, 0.0, -2 / 9])
    expected = (ratio - ratio.mean()) / ratio.std()
    assert np.allclose(style_design(votes, ["length"])[:, 0], expected)


def test_the_fit_matches_statsmodels_weighted_logistic_regression_with_half_win_ties():
    votes = simulated_styled_votes(600, [0.0, 0.4, -0.3, 0.8], 0.7, seed=3)
    rng = np.random.default_rng(1)
    votes = [StyledVote(v.system_a, v.system_b, "tie" if rng.random() < 0.15 else v.outcome,
                        {**v.style_a, "items": float(rng.integers(0, 6))},
                        {**v.style_b, "items": float(rng.integers(0, 6))}) for v in votes]
    table = style_controlled_ratings(votes, features=["length", "items"])

    names = sorted({v.system_a for v in votes} | {v.system_b for v in votes})
    index = {name: i for i, name in enumerate(names)}
    systems = np.zeros((len(votes), len(names)))
    for row, vote in enumerate(votes):
        systems[row, index[vote.system_a]] += 1
        systems[row, index[vote.system_b]] -= 1
    design = np.hstack([systems[:, 1:], style_design(votes, ["length", "items"])])
    y = np.array([{"a": 1.0, "b": 0.0, "tie": 0.5}[v.outcome] for v in votes])
    # A tie is one win for each side at half weight (FastChat duplicates the battle).
    fit = sm.GLM(np.r_[y, 1 - y], np.vstack([design, -design]),
                 family=sm.families.Binomial(), freq_weights=np.full(2 * len(y), 0.5)).fit()
    theta = np.r_[0.0, fit.params[: len(names) - 1]]
    theta -= theta.mean()
    ours = {row.system: row.rating for row in table.rows}
    for name in names:
        assert ours[name] == pytest.approx(1000 + 400 / np.log(10) * theta[index[name]],
                                           abs=1e-6)
    got = {c.feature: c.coefficient for c in table.coefficients}
    assert got["length"] == pytest.approx(fit.params[-2], abs=1e-7)
    assert got["items"] == pytest.approx(fit.params[-1], abs=1e-7)


def test_a_known_style_effect_is_recovered_and_the_plain_ranking_is_confounded():
    strengths = [0.0, 0.0, 0.0, 0.0, 0.0]
    votes = simulated_styled_votes(20_000, strengths, 1.0, seed=11)
    table = style_controlled_ratings(votes, features=["length"])
    (length,) = table.coefficients
    assert length.ci_low < 1.0 < length.ci_high
    assert length.ci_high - length.ci_low < 0.35  # wide: length and system are confounded
    # Equal systems: under control the ratings are close together; without it, length ranks.
    controlled = [row.rating for row in table.rows]
    plain = bradley_terry_ratings([(v.system_a, v.system_b, v.outcome) for v in votes])
    plain_spread = max(plain.values()) - min(plain.values())
    assert plain_spread > 100
    assert max(controlled) - min(controlled) < plain_spread / 4
    assert all(row.ci_low < 1000 < row.ci_high for row in table.rows)


def test_without_style_variation_the_ratings_are_plain_bradley_terry():
    votes = simulated_styled_votes(800, [0.0, 0.5, 1.0], 0.0, seed=5)
    flat = [StyledVote(v.system_a, v.system_b, v.outcome, {"length": 7}, {"length": 7})
            for v in votes]
    table = style_controlled_ratings(flat, features=["length"])
    plain = bradley_terry_ratings([(v.system_a, v.system_b, v.outcome) for v in flat])
    for row in table.rows:
        assert row.rating == pytest.approx(plain[row.system], abs=1e-6)
    assert table.coefficients[0].coefficient is None
    assert "same value" in table.coefficients[0].note


def test_the_style_coefficients_interval_covers_about_95_percent():
    hits = 0
    reps = 300
    for rep in range(reps):
        votes = simulated_styled_votes(400, [0.0, 0.3, -0.2, 0.5], 0.5, seed=100 + rep)
        (length,) = style_controlled_ratings(votes, features=["length"]).coefficients
        hits += length.ci_low <= 0.5 <= length.ci_high
    assert 0.91 <= hits / reps <= 0.99


def test_a_system_that_never_lost_has_no_fit_and_says_why():
    votes = [StyledVote("x", "y", "a", {"length": i}, {"length": 1}) for i in range(12)]
    table = style_controlled_ratings(votes, features=["length"])
    assert table.rows == [] and "never lost" in table.undefined_reason
    with pytest.raises(ValueError, match="unknown style features"):
        style_controlled_ratings(votes, features=["bold"])
