"""The profile-likelihood interval of a yes/no field rated twice per unit (statistics.md,
"Yes/no fields rated twice"): the model against scipy, the estimate against its closed form,
the interval against a brute-force grid, and how ``alpha_with_ci`` chooses it."""

import math

import numpy as np
import pytest
from scipy import special, stats

from evaluation.lib.stats import binary_icc
from evaluation.lib.stats.agreement import (
    ALPHA_INTERVAL,
    ALPHA_PAIR_INTERVAL,
    ALPHA_TEST_INTERVAL,
    alpha_with_ci,
    compute_alpha,
)


def _counts(sizes, yes):
    sizes, yes = np.array(sizes), np.array(yes)
    return binary_icc.UnitCounts(sizes, yes, np.ones(len(sizes)))


def _pairs(none: int, one: int, both: int) -> np.ndarray:
    """Two annotators × units: NONE units where neither says yes, ONE where one does, BOTH."""
    first = [0] * none + [1] * one + [1] * both
    second = [0] * none + [0] * one + [1] * both
    return np.array([first, second])


def test_the_log_likelihood_is_scipys_beta_binomial_for_positive_correlation():
    counts = _counts([2, 3, 3, 5, 4], [1, 0, 3, 2, 4])
    for pi, rho in [(0.3, 0.4), (0.7, 0.05), (0.5, 0.9)]:
        a, b = pi * (1 - rho) / rho, (1 - pi) * (1 - rho) / rho
        coefficients = np.sum(special.gammaln(counts.sizes + 1) - special.gammaln(counts.yes + 1)
                              - special.gammaln(counts.sizes - counts.yes + 1))
        expected = stats.betabinom.logpmf(counts.yes, counts.sizes, a, b).sum()
        got = binary_icc.log_likelihood(pi, rho, counts) + coefficients
        assert got == pytest.approx(expected, abs=1e-10)


def test_two_ratings_per_unit_follow_the_common_correlation_model_below_zero_too():
    # P(both yes) = π² + ρπ(1 − π), P(one yes) = 2π(1 − π)(1 − ρ), P(none) = (1 − π)² + ρπ(1 − π)
    counts = _counts([2, 2, 2], [0, 1, 2])
    for pi, rho in [(0.4, -0.3), (0.5, -0.9), (0.2, 0.6)]:
        spread = pi * (1 - pi)
        cells = [(1 - pi) ** 2 + rho * spread, 2 * spread * (1 - rho), pi ** 2 + rho * spread]
        # binomial coefficients: 1, 2, 1
        expected = math.log(cells[0]) + math.log(cells[1] / 2) + math.log(cells[2])
        assert binary_icc.log_likelihood(pi, rho, counts) == pytest.approx(expected, abs=1e-12)
    assert binary_icc.rho_floor(counts) == -1.0
    assert binary_icc.rho_floor(_counts([2, 3], [0, 1])) == pytest.approx(-1 / 3)


def test_the_estimate_with_two_ratings_per_unit_has_its_closed_form():
    # n units, n1 of them with one yes, y yes values and w no values: π̂ = y / 2n and
    # ρ̂ = 1 − n1 / (2n π̂(1 − π̂)) = 1 − 2n·n1 / (y·w).
    for none, one, both in [(12, 5, 3), (3, 4, 1), (20, 2, 8)]:
        n, yes = none + one + both, one + 2 * both
        no = 2 * n - yes
        rho_hat, low, high = binary_icc.profile_interval(
            binary_icc.unit_counts(_pairs(none, one, both)))
        assert rho_hat == pytest.approx(1 - 2 * n * one / (yes * no), abs=1e-6)
        assert low < rho_hat < high


def _grid_interval(none: int, one: int, both: int, cut: float) -> tuple[float, float]:
    """Every ρ on a fine grid whose best π (on a fine grid) keeps the log-likelihood within
    CUT / 2 of the best of all: an interval found by looking, not by solving."""
    pis = np.linspace(1e-4, 1 - 1e-4, 1001)[:, None]
    rhos = np.linspace(-0.999, 0.9999, 4001)[None, :]
    spread = pis * (1 - pis)
    cells = [(1 - pis) ** 2 + rhos * spread, 2 * spread * (1 - rhos), pis ** 2 + rhos * spread]
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = sum(k * np.log(np.where(c > 0, c, np.nan))
                     for k, c in zip((none, one, both), cells, strict=True))
    profile = np.nanmax(np.where(np.isnan(loglik), -np.inf, loglik), axis=0)
    inside = rhos[0][profile >= profile.max() - cut / 2]
    return float(inside.min()), float(inside.max())


@pytest.mark.parametrize("study", [(12, 5, 3), (3, 4, 1), (20, 2, 8), (6, 6, 0)])
def test_the_interval_is_the_one_a_brute_force_grid_finds(study):
    cut = stats.chi2.ppf(0.95, 1)
    _, low, high = binary_icc.profile_interval(binary_icc.unit_counts(_pairs(*study)))
    grid_low, grid_high = _grid_interval(*study, cut)
    assert low == pytest.approx(grid_low, abs=3e-3)
    assert high == pytest.approx(grid_high, abs=3e-3)


def test_unanimous_units_give_an_interval_that_reaches_one():
    rho_hat, low, high = binary_icc.profile_interval(binary_icc.unit_counts(_pairs(8, 0, 4)))
    assert rho_hat == 1.0 and high == 1.0
    assert 0.0 < low < 0.9  # not the point 1 the jackknife gave
    # by hand: at ρ = 1 the likelihood is (2/3)^8 (1/3)^4; the lower end is where the profile
    # has fallen by χ²₁(0.95) / 2
    best = 8 * math.log(2 / 3) + 4 * math.log(1 / 3)
    counts = binary_icc.unit_counts(_pairs(8, 0, 4))
    assert binary_icc.profile_log_likelihood(1.0, counts) == pytest.approx(best)
    assert binary_icc.profile_log_likelihood(low, counts) == pytest.approx(
        best - stats.chi2.ppf(0.95, 1) / 2, abs=1e-6)


def test_a_yes_no_field_rated_twice_per_unit_gets_the_t_calibrated_profile_interval():
    data = _pairs(12, 5, 3)
    estimate = alpha_with_ci(data, "nominal")
    assert estimate.value == compute_alpha(data, "nominal").value  # alpha itself is unchanged
    assert estimate.params["interval"] == ALPHA_PAIR_INTERVAL
    cut = stats.t.ppf(0.975, 19) ** 2  # 20 pairable units
    assert estimate.params["likelihood_cut"] == pytest.approx(cut)
    _, low, high = binary_icc.profile_interval(binary_icc.unit_counts(data),
                                               stats.chi2.cdf(cut, 1))
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high))
    assert _grid_interval(12, 5, 3, cut) == pytest.approx((low, high), abs=3e-3)
    assert estimate.ci_low < estimate.value < estimate.ci_high
    # docs/statistics.md, reference values: alpha = 1 − 39·5 / (11·29), ρ̂ = 1 − 200 / 319
    assert estimate.value == pytest.approx(1 - 195 / 319)
    assert estimate.params["rho_mle"] == pytest.approx(1 - 200 / 319, abs=1e-7)
    assert (round(estimate.ci_low, 4), round(estimate.ci_high, 4)) == (-0.0995, 0.7687)


def test_rare_answers_and_perfect_agreement_rated_twice_get_an_interval_too():
    # 40 units, 4 "yes" values: the minority rule withholds the jackknife's interval, the
    # likelihood's is shown (wide, as it should be).
    rare = alpha_with_ci(_pairs(37, 2, 1), "nominal")
    assert rare.params["interval"] == ALPHA_PAIR_INTERVAL and "ci_note" not in rare.params
    assert rare.ci_low < rare.value < rare.ci_high and rare.ci_high - rare.ci_low > 0.5
    # Perfect agreement: alpha 1, an interval [low, 1] rather than none or the point 1.
    same = alpha_with_ci(_pairs(8, 0, 4), "nominal")
    assert same.value == 1.0 and same.ci_high == 1.0 and same.ci_low < 0.9


def test_three_values_in_a_unit_or_three_categories_take_the_test_inversion():
    three = np.vstack([_pairs(12, 5, 3), _pairs(12, 5, 3)[0]])  # three annotators
    assert alpha_with_ci(three, "nominal").params["interval"] == ALPHA_TEST_INTERVAL
    some_thrice = _pairs(12, 5, 3).astype(float)
    some_thrice = np.vstack([some_thrice, [np.nan] * 19 + [1.0]])  # one unit rated three times
    assert alpha_with_ci(some_thrice, "nominal").params["interval"] == ALPHA_TEST_INTERVAL
    labels = [["a", "b", "c", "a", "b", "c", "a", "a", "b", "c", "c", "a"],
              ["a", "b", "c", "b", "b", "c", "a", "c", "b", "c", "a", "a"]]  # three categories
    assert alpha_with_ci(labels, "nominal").params["interval"] == ALPHA_TEST_INTERVAL
    assert alpha_with_ci(_pairs(12, 5, 3), "interval").params["interval"] == ALPHA_INTERVAL
    # Units rated once do not count: two annotators with gaps are still pairs.
    gaps = _pairs(12, 5, 3).astype(float)
    gaps[1, :2] = np.nan
    assert alpha_with_ci(gaps, "nominal").params["interval"] == ALPHA_PAIR_INTERVAL
    # Labels work like numbers (either category may be "yes": ρ is symmetric in them).
    named = [["yes" if v else "no" for v in row] for row in _pairs(12, 5, 3)]
    flipped = [["no" if v else "yes" for v in row] for row in _pairs(12, 5, 3)]
    first, second = alpha_with_ci(named, "nominal"), alpha_with_ci(flipped, "nominal")
    assert first.params["interval"] == ALPHA_PAIR_INTERVAL
    assert (first.ci_low, first.ci_high) == pytest.approx((second.ci_low, second.ci_high))
