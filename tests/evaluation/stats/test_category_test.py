"""The test-inversion interval of a nominal field (statistics.md, "Nominal fields: a
test-inversion interval"): the model against scipy, the constrained shares against a general
optimiser and the yes/no solver, alpha from unit counts against Concord's alpha, the simulated
tail probabilities against an exact enumeration of every possible study, the interval's ends
against its own test, and which fields ``alpha_with_ci`` gives it."""

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from evaluation.lib.stats import agreement, binary_icc, category_test
from evaluation.lib.stats.agreement import (
    ALPHA_INTERVAL,
    ALPHA_PAIR_INTERVAL,
    ALPHA_TEST_INTERVAL,
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


def _codes(matrix: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(matrix), -1, matrix).astype(int)


def _probability_of(size, shares, rho):
    outcomes, probabilities = category_test.outcome_probabilities(size, np.array(shares), rho)
    return {tuple(int(n) for n in row): p for row, p in zip(outcomes, probabilities, strict=True)}


def test_the_model_is_scipys_beta_binomial_and_dirichlet_multinomial():
    pi, rho = 0.3, 0.25
    a, b = pi * (1 - rho) / rho, (1 - pi) * (1 - rho) / rho
    for size in (2, 3, 5):
        model = _probability_of(size, [1 - pi, pi], rho)
        assert [model[(size - x, x)] for x in range(size + 1)] == pytest.approx(
            stats.betabinom.pmf(np.arange(size + 1), size, a, b), rel=1e-10)
    shares = np.array([0.5, 0.3, 0.2])
    for size in (2, 4):
        for outcome, p in _probability_of(size, shares, rho).items():
            assert p == pytest.approx(stats.dirichlet_multinomial.pmf(
                outcome, shares * (1 - rho) / rho, size), rel=1e-10)
    # ρ = 0: the multinomial; ρ = 1: every unit unanimous.
    for outcome, p in _probability_of(3, shares, 0.0).items():
        assert p == pytest.approx(stats.multinomial.pmf(outcome, 3, shares))
    assert {o: p for o, p in _probability_of(3, shares, 1.0).items() if p} == pytest.approx(
        {(3, 0, 0): 0.5, (0, 3, 0): 0.3, (0, 0, 3): 0.2})


@pytest.mark.parametrize("shares, rho", [([0.5, 0.5], -0.2), ([0.4, 0.35, 0.25], -0.1),
                                         ([0.6, 0.3, 0.1], 0.4)])
def test_the_model_has_the_shares_and_the_correlation_it_was_asked_for(shares, rho):
    # Below 0 too (inside the model's range): a distribution whose mean shares are p and whose
    # pairwise correlation 1 − E[Σ_c n_c(m − n_c)] / (m(m − 1)(1 − Σ p²)) is ρ.
    size = 3
    outcomes, probabilities = category_test.outcome_probabilities(size, np.array(shares), rho)
    assert probabilities.sum() == pytest.approx(1.0) and probabilities.min() >= 0
    assert probabilities @ outcomes / size == pytest.approx(shares)
    disagreeing = probabilities @ np.sum(outcomes * (size - outcomes), axis=1)
    assert 1 - disagreeing / (size * (size - 1) * (1 - np.sum(np.square(shares)))) == \
        pytest.approx(rho)


def test_alpha_from_unit_counts_is_krippendorffs_on_incomplete_designs():
    data = _units((2, 1), (3, 0), (3, 3), (4, 2), (2, 0), (3, 1), (4, 4), (3, 2), (2, 2))
    counts = category_test.category_counts(_codes(data))
    assert category_test.alpha_of_counts(counts) == pytest.approx(
        compute_alpha(data, "nominal").value, abs=1e-14)
    # Hand computation: N = 26 values, 15 yes and 11 no; Σ x(m − x)/(m − 1) = 1 + 0 + 0 + 4/3 +
    # 0 + 1 + 0 + 1 + 0 = 13/3, counted once per category: 26/3; alpha = 1 − 25 · (26/3) /
    # (15 · 11 + 11 · 15) = 1 − 65 / 99.
    assert category_test.alpha_of_counts(counts) == pytest.approx(1 - 65 / 99)
    rng = np.random.default_rng(4)
    three = rng.integers(0, 3, size=(4, 25)).astype(float)
    three[rng.random(three.shape) < 0.2] = np.nan
    assert category_test.alpha_of_counts(category_test.category_counts(_codes(three))) == \
        pytest.approx(compute_alpha(three, "nominal").value, abs=1e-14)


def _log_likelihood(shares, rho, counts):
    return sum(units * math.log(_probability_of(int(row.sum()), shares, rho)[tuple(row)])
               for row, units in zip(counts.counts, counts.units, strict=True))


@pytest.mark.parametrize("rho", [-0.15, 0.0, 0.3, 0.7])
def test_the_shares_maximise_the_likelihood_at_the_correlation(rho):
    rng = np.random.default_rng(8)
    data = np.digitize(rng.normal(size=20)[None, :] * 0.8 + rng.normal(size=(3, 20)) * 0.6,
                       (-0.3, 0.9)).astype(float)
    data[0, :4] = np.nan
    counts = category_test.category_counts(_codes(data))
    found = category_test.shares_at(rho, counts)
    assert found.sum() == pytest.approx(1.0)
    low = max(0.0, -(counts.largest - 1) * rho / (1 - rho))
    best = optimize.minimize(
        lambda x: -_log_likelihood(np.array([x[0], x[1], 1 - x[0] - x[1]]), rho, counts),
        x0=[0.34, 0.33], method="SLSQP", bounds=[(low + 1e-6, 1)] * 2,
        constraints=[{"type": "ineq", "fun": lambda x: 1 - x[0] - x[1] - low - 1e-6}],
        options={"ftol": 1e-13, "maxiter": 500})
    assert _log_likelihood(found, rho, counts) >= -best.fun - 1e-8
    assert found[:2] == pytest.approx(best.x, abs=1e-4)
    # Two categories: the yes/no solver (root of the score in π) finds the same share.
    yes_no = _units(*[(3, 0)] * 7, *[(3, 1)] * 4, *[(3, 2)] * 2, (3, 3), (2, 1), (2, 0))
    assert category_test.shares_at(rho, category_test.category_counts(_codes(yes_no)))[1] == \
        pytest.approx(binary_icc.mean_at(rho, binary_icc.unit_counts(_codes(yes_no))),
                      abs=1e-10)


def test_a_share_held_at_its_bound_below_zero():
    # A category seen once, with strong disagreement: at ρ < 0 its share stops at the bound
    # −(M − 1)γ where every probability of the model is still a probability.
    counts = category_test.CategoryCounts(np.array([[2, 1, 0], [1, 1, 1], [2, 0, 1]]),
                                          np.array([6.0, 5.0, 1.0]))
    rho = -0.1
    shares = category_test.shares_at(rho, counts)
    bound = -(counts.largest - 1) * rho / (1 - rho)
    assert shares.min() >= bound and shares.sum() == pytest.approx(1.0)
    assert category_test.outcome_probabilities(3, shares, rho)[1].min() >= 0


def _exact_tails(observed: float, composition, rho: float) -> tuple[float, float]:
    """Mid-p tails of alpha by enumerating every study of len(composition) − 1 values per
    unit on sum(composition) units (the multinomial over the units' yes counts)."""
    size, units = len(composition) - 1, sum(composition)
    rows = np.array([[size - x, x] for x in range(size + 1)])
    counts = category_test.CategoryCounts(rows, np.array(composition, float))
    _, probabilities = category_test.outcome_probabilities(
        size, category_test.shares_at(rho, counts), rho)
    low = tied = total = 0.0
    for cut in itertools.combinations(range(units + size), size):
        study = np.diff([-1, *cut, units + size]) - 1  # a composition of UNITS into size + 1
        alpha = category_test.alpha_of_counts(category_test.CategoryCounts(rows,
                                                                           study.astype(float)))
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
    rows = np.array([[3 - x, x] for x in range(4)])
    counts = category_test.CategoryCounts(rows, np.array(composition, float))
    observed = category_test.alpha_of_counts(counts)
    simulated = category_test.tail_probabilities(observed, rho, counts)
    # 4,000 draws: a tail's Monte Carlo standard error is at most 0.008
    assert simulated == pytest.approx(_exact_tails(observed, composition, rho), abs=0.025)
    assert sum(simulated) == pytest.approx(1.0)


def test_the_interval_holds_the_values_its_test_accepts():
    counts = category_test.category_counts(_codes(_units(
        *[(3, 0)] * 14, *[(3, 1)] * 5, *[(3, 2)] * 3, *[(3, 3)] * 3)))
    observed = category_test.alpha_of_counts(counts)
    low, high = category_test.test_inversion_interval(counts)
    assert low < observed < high < 1.0
    tails = lambda rho: category_test.tail_probabilities(observed, rho, counts)  # noqa: E731
    assert tails(low - 0.01)[1] <= 0.025 < tails(low + 0.001)[1]  # P(α̂ ≥ observed)
    assert tails(high + 0.01)[0] <= 0.025 < tails(high - 0.001)[0]  # P(α̂ ≤ observed)
    assert min(tails(observed)) > 0.025


def test_a_yes_no_field_with_three_annotators_gets_the_test_inversion_interval():
    rng = np.random.default_rng(5)
    latent = rng.normal(size=20)[None, :] * 0.77 + rng.normal(size=(3, 20)) * 0.63
    data = (latent > 1.0).astype(float)  # a rare "yes", as on an error checklist
    estimate = alpha_with_ci(data, "nominal")
    assert estimate.value == compute_alpha(data, "nominal").value
    assert estimate.params["interval"] == ALPHA_TEST_INTERVAL
    assert "ci_note" not in estimate.params  # the minority rule no longer applies
    assert estimate.ci_low < estimate.value < estimate.ci_high
    expected = category_test.test_inversion_interval(
        category_test.category_counts(data.astype(int)), seed=estimate.params["seed"])
    assert (estimate.ci_low, estimate.ci_high) == expected
    assert (alpha_with_ci(data, "nominal").ci_low, alpha_with_ci(data, "nominal").ci_high) \
        == expected  # seeded: the same study, the same interval
    # One unit rated three times is enough; labels work like numbers.
    one_more = np.vstack([data[:2], [np.nan] * 19 + [data[2, -1]]])
    assert alpha_with_ci(one_more, "nominal").params["interval"] == ALPHA_TEST_INTERVAL
    named = [["yes" if v else "no" for v in row] for row in data]
    assert alpha_with_ci(named, "nominal").ci_low == pytest.approx(estimate.ci_low)
    assert alpha_with_ci(data[:2], "nominal").params["interval"] == ALPHA_PAIR_INTERVAL


def test_three_categories_on_few_units_get_it_and_on_more_units_the_jackknife():
    # Pairwise preference (a / b / tie) or a citation verdict: three categories, from two
    # annotators on.
    verdicts = [["a", "b", "tie", "a", "a", "b", "b", "tie", "a", "b"],
                ["a", "b", "a", "a", "tie", "b", "b", "tie", "b", "b"],
                ["a", "tie", "tie", "a", "a", "b", "a", "tie", "a", "b"]]
    for annotators in (2, 3):
        estimate = alpha_with_ci(verdicts[:annotators], "nominal")
        assert estimate.params["interval"] == ALPHA_TEST_INTERVAL
        assert estimate.ci_low < estimate.value < estimate.ci_high < 1.0
    # From CATEGORY_TEST_UNITS = 20 pairable units the jackknife (statistics.md: calibrated
    # there for three categories, where the test's shared correlation is not); a unit rated
    # once does not count. Yes/no fields keep the test at any size.
    assert agreement.CATEGORY_TEST_UNITS == 20
    rng = np.random.default_rng(6)
    three = rng.integers(0, 3, size=(3, 20)).astype(float)
    assert alpha_with_ci(three, "nominal").params["interval"] == ALPHA_INTERVAL
    three[1:, 0] = np.nan
    assert alpha_with_ci(three, "nominal").params["interval"] == ALPHA_TEST_INTERVAL
    yes_no = rng.integers(0, 2, size=(3, 100)).astype(float)
    assert alpha_with_ci(yes_no, "nominal").params["interval"] == ALPHA_TEST_INTERVAL
    # Twelve categories rated by ten annotators: C(21, 11) = 352,716 ways to split a unit, too
    # many to simulate even on few units; the jackknife and its rules serve it.
    many = rng.integers(0, 12, size=(10, 15)).astype(float)
    assert category_test.outcome_count(category_test.category_counts(_codes(many))) > \
        category_test.MAX_OUTCOMES
    assert alpha_with_ci(many, "nominal").params["interval"] == ALPHA_INTERVAL


def test_alpha_is_never_outside_its_own_interval():
    # Random small designs, many with negative alpha at the model's floor, where the test's
    # alpha (from unit counts) and the estimate differed in the last bit.
    rng = np.random.default_rng(3)
    for _ in range(300):
        categories, annotators, units = rng.integers(2, 5), rng.integers(2, 6), rng.integers(1, 25)
        data = rng.integers(0, categories, size=(annotators, units)).astype(float)
        data[rng.random(data.shape) < 0.3] = np.nan
        estimate = alpha_with_ci(data, "nominal")
        if estimate.ci_low is not None:
            assert estimate.ci_low <= estimate.value <= estimate.ci_high


def test_perfect_agreement_reaches_one_and_an_impossible_correlation_is_excluded():
    same = alpha_with_ci(_units(*[(3, 0)] * 8, *[(3, 3)] * 3), "nominal")
    assert same.value == 1.0 and same.ci_high == 1.0 and same.ci_low < 0.8
    # Disagreement in a unit makes ρ = 1 impossible: the upper end stays below 1.
    some = alpha_with_ci(_units(*[(3, 0)] * 8, *[(3, 3)] * 3, (3, 1)), "nominal")
    assert some.ci_high < 1.0 and some.ci_low < some.value
    three = alpha_with_ci([[0, 1, 2, 0, 1, 2, 0, 0]] * 3, "nominal")
    assert three.value == 1.0 and three.ci_high == 1.0 and three.ci_low < 0.9
