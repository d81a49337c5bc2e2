"""The test-inversion interval of a yes/no field with three or more values in some unit
(statistics.md, "Yes/no fields with three or more values per unit"): the model against scipy,
alpha from unit counts against Concord's alpha, the simulated tail probabilities against an
exact enumeration of every possible study, the interval's ends against its own test, and how
``alpha_with_ci`` chooses it."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from evaluation.lib.stats import binary_icc
from evaluation.lib.stats.agreement import (
    ALPHA_PAIR_INTERVAL,
    ALPHA_YES_NO_INTERVAL,
    alpha_with_ci,
    compute_alpha,
)


def _units(*columns) -> np.ndarray:
    """Annotators × units from columns of yes counts: (m, x) is a unit with m values, x yes;
    annotators beyond m have no value (NaN)."""
    largest = max(m for m, _ in columns)
    matrix = np.full((largest, len(columns)), np.nan)
    for unit, (m, x) in enumerate(columns):
        matrix[:m, unit] = [1.0] * x + [0.0] * (m - x)
    return matrix


def test_unit_probabilities_are_scipys_beta_binomial_and_sum_to_one_below_zero():
    pi, rho = 0.3, 0.25
    a, b = pi * (1 - rho) / rho, (1 - pi) * (1 - rho) / rho
    for size in (2, 3, 5):
        assert binary_icc.unit_probabilities(size, pi, rho) == pytest.approx(
            stats.betabinom.pmf(np.arange(size + 1), size, a, b), rel=1e-10)
    # ρ = 0: the binomial; ρ < 0 inside the model's range: still a distribution, with the
    # correlation it was asked for (1 − E[x(m − x)] / (m(m − 1)π(1 − π)) = ρ).
    assert binary_icc.unit_probabilities(4, 0.4, 0.0) == pytest.approx(
        stats.binom.pmf(np.arange(5), 4, 0.4))
    probabilities = binary_icc.unit_probabilities(3, 0.5, -0.2)
    x = np.arange(4)
    assert probabilities.sum() == pytest.approx(1.0) and probabilities.min() >= 0
    assert probabilities @ x / 3 == pytest.approx(0.5)
    assert 1 - probabilities @ (x * (3 - x)) / (6 * 0.25) == pytest.approx(-0.2)
    assert list(binary_icc.unit_probabilities(3, 0.2, 1.0)) == [0.8, 0.0, 0.0, 0.2]


def test_alpha_from_unit_counts_is_krippendorffs_on_an_incomplete_design():
    data = _units((2, 1), (3, 0), (3, 3), (4, 2), (2, 0), (3, 1), (4, 4), (3, 2), (2, 2))
    counts = binary_icc.unit_counts(np.where(np.isnan(data), -1, data).astype(int))
    assert binary_icc.alpha_of_counts(counts) == pytest.approx(
        compute_alpha(data, "nominal").value, abs=1e-14)
    # Hand computation: N = 26 values, 15 yes and 11 no; Σ x(m − x)/(m − 1) = 1 + 0 + 0 + 4/3 +
    # 0 + 1 + 0 + 1 + 0 = 13/3; alpha = 1 − 25 · (13/3) / (15 · 11) = 1 − 65 / 99.
    assert binary_icc.alpha_of_counts(counts) == pytest.approx(1 - 65 / 99)


def _exact_tails(observed: float, composition, rho: float) -> tuple[float, float]:
    """Mid-p tails of alpha by enumerating every study of len(composition) − 1 values per
    unit on sum(composition) units (the multinomial over the units' yes counts)."""
    size, units = len(composition) - 1, sum(composition)
    counts = binary_icc.UnitCounts(np.full(size + 1, size), np.arange(size + 1),
                                   np.array(composition, float))
    probabilities = binary_icc.unit_probabilities(size, binary_icc.mean_at(rho, counts), rho)
    low = tied = total = 0.0
    for cut in itertools.combinations(range(units + size), size):
        study = np.diff([-1, *cut, units + size]) - 1  # a composition of UNITS into size + 1
        alpha = binary_icc.alpha_of_counts(binary_icc.UnitCounts(
            np.full(size + 1, size), np.arange(size + 1), study.astype(float)))
        if math.isnan(alpha):
            continue
        p = stats.multinomial.pmf(study, units, probabilities)
        total += p
        low += p * (alpha < observed - 1e-12)
        tied += p * (abs(alpha - observed) <= 1e-12)
    return (low + tied / 2) / total, (total - low - tied / 2) / total


@pytest.mark.parametrize("composition, rho", [((5, 3, 1, 1), 0.355), ((6, 2, 2, 0), 0.1),
                                              ((3, 5, 2, 0), 0.578), ((4, 3, 2, 1), -0.1)])
def test_the_simulated_tails_are_the_exact_ones(composition, rho):
    counts = binary_icc.UnitCounts(np.full(4, 3), np.arange(4), np.array(composition, float))
    observed = binary_icc.alpha_of_counts(counts)
    simulated = binary_icc.tail_probabilities(observed, rho, counts)
    # 4,000 draws: a tail's Monte Carlo standard error is at most 0.008
    assert simulated == pytest.approx(_exact_tails(observed, composition, rho), abs=0.025)
    assert sum(simulated) == pytest.approx(1.0)


def test_the_interval_holds_the_values_its_test_accepts():
    counts = binary_icc.unit_counts(np.where(np.isnan(data := _units(
        *[(3, 0)] * 14, *[(3, 1)] * 5, *[(3, 2)] * 3, *[(3, 3)] * 3)), -1, data).astype(int))
    observed = binary_icc.alpha_of_counts(counts)
    low, high = binary_icc.test_inversion_interval(counts)
    assert low < observed < high < 1.0
    tails = lambda rho: binary_icc.tail_probabilities(observed, rho, counts)  # noqa: E731
    assert tails(low - 0.01)[1] <= 0.025 < tails(low + 0.001)[1]  # P(α̂ ≥ observed)
    assert tails(high + 0.01)[0] <= 0.025 < tails(high - 0.001)[0]  # P(α̂ ≤ observed)
    assert min(tails(observed)) > 0.025


def test_a_yes_no_field_with_three_annotators_gets_the_test_inversion_interval():
    rng = np.random.default_rng(5)
    latent = rng.normal(size=20)[None, :] * 0.77 + rng.normal(size=(3, 20)) * 0.63
    data = (latent > 1.0).astype(float)  # a rare "yes", as on an error checklist
    estimate = alpha_with_ci(data, "nominal")
    assert estimate.value == compute_alpha(data, "nominal").value
    assert estimate.params["interval"] == ALPHA_YES_NO_INTERVAL
    assert "ci_note" not in estimate.params  # the minority rule no longer applies
    assert estimate.ci_low < estimate.value < estimate.ci_high
    expected = binary_icc.test_inversion_interval(binary_icc.unit_counts(data.astype(int)),
                                                  seed=estimate.params["seed"])
    assert (estimate.ci_low, estimate.ci_high) == expected
    assert (alpha_with_ci(data, "nominal").ci_low, alpha_with_ci(data, "nominal").ci_high) \
        == expected  # seeded: the same study, the same interval
    # One unit rated three times is enough; labels work like numbers.
    one_more = np.vstack([data[:2], [np.nan] * 19 + [data[2, -1]]])
    assert alpha_with_ci(one_more, "nominal").params["interval"] == ALPHA_YES_NO_INTERVAL
    named = [["yes" if v else "no" for v in row] for row in data]
    assert alpha_with_ci(named, "nominal").ci_low == pytest.approx(estimate.ci_low)
    assert alpha_with_ci(data[:2], "nominal").params["interval"] == ALPHA_PAIR_INTERVAL


def test_perfect_agreement_reaches_one_and_an_impossible_correlation_is_excluded():
    same = alpha_with_ci(_units(*[(3, 0)] * 8, *[(3, 3)] * 3), "nominal")
    assert same.value == 1.0 and same.ci_high == 1.0 and same.ci_low < 0.8
    # Disagreement in a unit makes ρ = 1 impossible: the upper end stays below 1.
    some = alpha_with_ci(_units(*[(3, 0)] * 8, *[(3, 3)] * 3, (3, 1)), "nominal")
    assert some.ci_high < 1.0 and some.ci_low < some.value
