"""Krippendorff's alpha: Krippendorff (2011) reference values, MASI, undefined cases, and
property tests against the ``krippendorff`` package."""

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from evaluation.lib.stats import agreement
from evaluation.lib.stats.agreement import alpha_with_ci, compute_alpha
from evaluation.lib.stats.alpha import _coincidence_parts, alpha_parts, masi_distance, prepare

_ = None
EXAMPLE_C = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
]
EXAMPLE_B = [
    [1, 1, 2, 2, 4, 3, 3, 3, 5, 4, 4, 1],
    [2, 1, 2, 2, 2, 3, 3, 3, 5, 4, 4, 4],
]


def test_alpha_reproduces_krippendorff_2011_example_c_nominal():
    assert round(compute_alpha(EXAMPLE_C, "nominal").value, 3) == 0.743


def test_alpha_reproduces_krippendorff_2011_example_c_ordinal():
    assert round(compute_alpha(EXAMPLE_C, "ordinal").value, 3) == 0.815


def test_alpha_reproduces_krippendorff_2011_example_c_interval():
    assert round(compute_alpha(EXAMPLE_C, "interval").value, 3) == 0.849


def test_alpha_reproduces_krippendorff_2011_example_c_ratio():
    assert round(compute_alpha(EXAMPLE_C, "ratio").value, 3) == 0.797


def test_alpha_reproduces_krippendorff_2011_example_b_two_observers_nominal():
    assert round(compute_alpha(EXAMPLE_B, "nominal").value, 3) == 0.692


def test_alpha_reports_pairable_units_annotators_and_values():
    estimate = compute_alpha(EXAMPLE_C, "interval")
    # Unit 12 has a single value, so 11 of 12 units and 40 of 41 values are pairable.
    assert estimate.n == {
        "units": 11,
        "units_total": 12,
        "annotators": 4,
        "pairable_values": 40,
    }
    assert estimate.method == "krippendorff_alpha"
    assert estimate.params["level"] == "interval"


def test_alpha_accepts_string_labels_for_nominal_and_ordered_labels_for_ordinal():
    words = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    labelled = [[words.get(v) for v in row] for row in EXAMPLE_C]
    assert round(compute_alpha(labelled, "nominal").value, 3) == 0.743
    ordinal = compute_alpha(labelled, "ordinal", value_order=list(words.values()))
    assert round(ordinal.value, 3) == 0.815


def test_alpha_accepts_nan_as_missing():
    as_array = np.array(EXAMPLE_C, dtype=float)
    assert compute_alpha(as_array, "interval").value == pytest.approx(0.8491071428571428)


def test_alpha_is_undefined_with_one_annotator():
    estimate = compute_alpha([[1, 2, 3]], "interval")
    assert estimate.value is None
    assert "fewer than two annotators" in estimate.undefined_reason


def test_alpha_is_undefined_without_pairable_values():
    estimate = compute_alpha([[1, None, 3], [None, 2, None]], "nominal")
    assert estimate.value is None
    assert "no pairable values" in estimate.undefined_reason


def test_alpha_is_undefined_when_everyone_gives_the_same_value():
    estimate = compute_alpha([[3, 3, 3], [3, 3, None]], "interval")
    assert estimate.value is None
    assert "no variation" in estimate.undefined_reason
    assert "NaN" not in str(estimate.to_dict())


def test_alpha_is_one_for_perfect_agreement_and_rejects_unknown_levels():
    assert compute_alpha([[1, 2, 3], [1, 2, 3]], "ordinal").value == 1.0
    with pytest.raises(ValueError):
        compute_alpha([[1, 2], [1, 2]], "cardinal")


def test_masi_distance_matches_nltk_values():
    assert masi_distance({1, 2}, {1, 2, 3, 4}) == pytest.approx(0.665)
    assert masi_distance({"a"}, {"a"}) == 0.0
    assert masi_distance(set(), set()) == 0.0
    assert masi_distance({"a", "b"}, {"b", "c"}) == pytest.approx(1 - 1 / 3 * 0.33)
    assert masi_distance({"a"}, {"b"}) == 1.0
    assert masi_distance(set(), {"a"}) == 1.0


def test_masi_alpha_on_error_checklists_matches_hand_computation():
    data = [
        [{"vague"}, {"vague"}, {"wrong_item"}],
        [{"vague"}, {"vague", "fabricated"}, {"factual"}],
    ]
    # Pairable values: 3 × {vague}, {vague, fabricated}, {wrong_item}, {factual}.
    # MASI({vague}, {vague, fabricated}) = 1 − ½·0.67 = 0.665; every other distinct pair is 1.
    # D_o = (0 + 2·0.665 + 2·1) / 6 pairable values.
    # D_e = 2·(3·0.665 + 3·1 + 3·1 + 1 + 1 + 1) / (6·5) over all ordered pairs of values.
    expected = 1 - (3.33 / 6) / (21.99 / 30)
    estimate = compute_alpha(data, "masi")
    assert estimate.value == pytest.approx(expected)
    assert estimate.params["level"] == "masi"


def test_masi_alpha_treats_an_empty_set_as_an_answer_and_none_as_missing():
    data = [[set(), {"vague"}, None], [set(), {"vague"}, {"vague"}]]
    estimate = compute_alpha(data, "masi")
    assert estimate.n["units"] == 2
    assert estimate.value == 1.0


def _root_icc_z(alpha, m):
    """The interval's scale written out from its closed form: −2/√(m(m − 1)) artanh(√((m − 1)
    (1 − α)/m))."""
    return -2 / np.sqrt(m * (m - 1)) * np.arctanh(np.sqrt((m - 1) * (1 - np.asarray(alpha)) / m))


def _root_icc_z_inverse(z, m):
    root = np.tanh(-z * np.sqrt(m * (m - 1)) / 2) * np.sqrt(m / (m - 1))
    return 1 - root**2


def test_alpha_ci_is_a_jackknife_t_interval_over_units_on_the_root_icc_z_scale():
    # Two annotators, five units: m = 2 values per unit. By hand: alpha without each unit in
    # turn, z = −√2 artanh(√((1 − α)/2)), SE² = (G − 1)/G Σ (z_g − z̄)², t with 4 df.
    data = [[1, 2, 3, 4, 5], [1, 3, 3, 5, 4]]
    estimate = alpha_with_ci(data, "interval")
    full = compute_alpha(data, "interval").value
    assert estimate.value == pytest.approx(full)
    assert full == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                    level_of_measurement="interval"))
    leave = np.array([compute_alpha([row[:g] + row[g + 1:] for row in data], "interval").value
                      for g in range(5)])
    z = -np.sqrt(2) * np.arctanh(np.sqrt((1 - leave) / 2))
    se = np.sqrt(4 / 5 * ((z - z.mean()) ** 2).sum())
    half = stats.t.ppf(0.975, 4) * se
    centre = -np.sqrt(2) * np.arctanh(np.sqrt((1 - full) / 2))
    assert estimate.ci_low == pytest.approx(_root_icc_z_inverse(centre - half, 2))
    upper = centre + half
    assert estimate.ci_high == pytest.approx(1.0 if upper >= 0 else _root_icc_z_inverse(upper, 2))
    assert estimate.params["interval"] == "jackknife_root_icc_z_t"
    assert estimate.params["resampled"] == "units" and estimate.params["groups"] == 5
    assert alpha_with_ci(data, "interval") == estimate  # no random draws


def test_the_interval_scale_has_the_documented_slope_and_inverts():
    # statistics.md: dz/dα = 1 / ((1 + (m − 1)α) √(1 − α)); z → −∞ at α = −1/(m − 1), 0 at 1.
    from evaluation.lib.stats.agreement import _alpha_z, _alpha_z_inverse

    for m in (2.0, 3.0, 4.5):
        for a in (-0.2, 0.0, 0.4, 0.9):
            h = 1e-6
            slope = (_alpha_z(a + h, m) - _alpha_z(a - h, m)) / (2 * h)
            assert slope == pytest.approx(1 / ((1 + (m - 1) * a) * np.sqrt(1 - a)), rel=1e-6)
            assert _alpha_z_inverse(float(_alpha_z(a, m)), m) == pytest.approx(a, abs=1e-12)
        assert _alpha_z(1.0, m) == 0.0 and _alpha_z_inverse(0.3, m) == 1.0


@pytest.fixture
def jackknife_for_nominal(monkeypatch):
    """Nominal fields take the jackknife and its rules only when their design is too large for
    the test inversion to simulate (agreement.alpha_with_ci); the tests of those paths use small
    studies, so they lower the limit to nothing."""
    monkeypatch.setattr(agreement, "MAX_OUTCOMES", 0)


@pytest.mark.usefixtures("jackknife_for_nominal")
def test_nominal_alpha_ci_on_a_tiny_study_reproduces_an_independent_computation():
    # Three annotators, eight units with three categories (the jackknife, as for a nominal
    # design too large to simulate), one rating missing. Pinned values computed
    # independently: leave-outs by the krippendorff package, the scale by numerical
    # integration of its slope 1 / ((1 + (m − 1)x) √(1 − x)) from 0, limits by root finding.
    from scipy import integrate, optimize

    data = [[1, 1, 0, 0, 2, 0, 1, 0], [1, 0, 0, 0, 2, 1, 1, 0], [1, 1, 0, _, 2, 0, 0, 2]]
    estimate = alpha_with_ci(data, "nominal")
    assert estimate.value == pytest.approx(19 / 41)
    assert estimate.ci_low == pytest.approx(-0.04956830891286401, abs=1e-9)
    assert estimate.ci_high == pytest.approx(0.951124813105271, abs=1e-9)
    matrix = np.array([[np.nan if v is None else v for v in row] for row in data], float)
    m = 23 / 8
    leave = np.array([krippendorff.alpha(reliability_data=np.delete(matrix, g, axis=1),
                                         level_of_measurement="nominal") for g in range(8)])

    def z(a):
        return integrate.quad(lambda x: 1 / ((1 + (m - 1) * x) * np.sqrt(1 - x)), 0, a,
                              limit=200)[0]

    zs = np.array([z(a) for a in leave])
    half = stats.t.ppf(0.975, 7) * np.sqrt(7 / 8 * ((zs - zs.mean()) ** 2).sum())
    low = optimize.brentq(lambda a: z(a) - (z(19 / 41) - half), -1 / (m - 1) + 1e-9, 0.999999)
    high = optimize.brentq(lambda a: z(a) - (z(19 / 41) + half), -1 / (m - 1) + 1e-9, 0.999999)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high), abs=1e-7)
    assert estimate.params["mean_values_per_unit"] == pytest.approx(m)


@pytest.mark.usefixtures("jackknife_for_nominal")
def test_alpha_ci_uses_three_values_per_unit_on_the_root_icc_scale_and_skips_unpairable_units():
    # Example C: 11 of 12 units are rated by two or more (the last by one annotator only);
    # m = pairable values / pairable units.
    estimate = alpha_with_ci(EXAMPLE_C, "nominal")
    m = estimate.n["pairable_values"] / estimate.n["units"]
    assert estimate.params["groups"] == estimate.n["units"] == 11
    assert estimate.params["mean_values_per_unit"] == pytest.approx(m)
    pairable = [u for u in range(12) if sum(row[u] is not None for row in EXAMPLE_C) >= 2]
    leave = np.array([compute_alpha([[v for u, v in enumerate(row) if u != g]
                                     for row in EXAMPLE_C], "nominal").value for g in pairable])
    z = _root_icc_z(leave, m)
    se = np.sqrt(10 / 11 * ((z - z.mean()) ** 2).sum())
    low = _root_icc_z(estimate.value, m) - stats.t.ppf(0.975, 10) * se
    assert estimate.ci_low == pytest.approx(_root_icc_z_inverse(low, m))
    assert estimate.ci_low < estimate.value < estimate.ci_high <= 1


def test_alpha_ci_on_many_units_leaves_out_200_groups():
    rng = np.random.default_rng(1)
    data = np.round(rng.normal(size=(3, 1000)) + rng.normal(size=1000), 1)
    estimate = alpha_with_ci(data, "interval")
    assert estimate.params["groups"] == 200
    assert estimate.ci_low < estimate.value < estimate.ci_high
    assert estimate.value == pytest.approx(krippendorff.alpha(reliability_data=data,
                                                              level_of_measurement="interval"))


def _interval_alpha_by_hand(data: np.ndarray) -> float:
    """Krippendorff's interval alpha from sums, without a coincidence matrix: over the ordered
    pairs of one unit's m values, sum (x_i - x_j)^2 = 2 m sum x^2 - 2 (sum x)^2."""
    present = ~np.isnan(data)
    m = present.sum(axis=0)
    pairable = m >= 2
    x = np.where(present, data, 0.0)[:, pairable]
    m = m[pairable]
    s1, s2 = x.sum(axis=0), (x**2).sum(axis=0)
    n = m.sum()
    observed = ((2 * m * s2 - 2 * s1**2) / (m - 1)).sum() / n
    expected = (2 * n * s2.sum() - 2 * s1.sum() ** 2) / (n * (n - 1))
    return 1 - observed / expected


def test_alpha_on_100000_units_by_10_annotators_matches_the_sums_by_hand():
    """Study scale (the time is `manage.py bench_agreement`'s figure, docs/performance.md): the
    package cannot hold these 10,000 distinct values' coincidence matrix, so the reference is
    the closed form of interval alpha."""
    rng = np.random.default_rng(0)
    data = np.round(rng.normal(50, 15, size=(10, 100_000)) + rng.normal(0, 10, 100_000), 2)
    data[rng.random(data.shape) < 0.1] = np.nan
    data[:9, :50] = np.nan  # 50 units with one value: not pairable
    estimate = compute_alpha(data, "interval")
    assert estimate.n["units"] == 100_000 - 50
    assert estimate.value == pytest.approx(_interval_alpha_by_hand(data), abs=1e-9)
    assert 0.25 < estimate.value < 0.45  # 10^2 / (10^2 + 15^2) ≈ 0.31 by construction


# --- property tests against the krippendorff package -------------------------------------


@st.composite
def reliability_matrices(draw, positive=False, continuous=False):
    observers = draw(st.integers(2, 6))
    units = draw(st.integers(2, 20))
    if continuous:
        values = st.floats(0.5 if positive else -5, 10, allow_nan=False).map(lambda v: round(v, 2))
    else:
        values = st.integers(1 if positive else 0, 6)
    cell = st.one_of(st.none(), values, values, values)
    rows = draw(
        st.lists(
            st.lists(cell, min_size=units, max_size=units), min_size=observers, max_size=observers
        )
    )
    return np.array(rows, dtype=float)


def _package_alpha(matrix, level):
    present = ~np.isnan(matrix)
    if not (present.sum(axis=0) >= 2).any() or len(np.unique(matrix[present])) < 2:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        value = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    return float(value) if np.isfinite(value) else None


def _assert_same_as_package(matrix, level):
    expected = _package_alpha(matrix, level)
    ours = compute_alpha(matrix, level).value
    if expected is None:
        assert ours is None or ours == pytest.approx(1.0)
    else:
        assert ours == pytest.approx(expected, abs=1e-9, rel=1e-9)


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(reliability_matrices(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_equals_krippendorff_package_on_random_integer_data(matrix, level):
    _assert_same_as_package(matrix, level)


@PROPERTY
@given(reliability_matrices(positive=True))
def test_ratio_alpha_equals_krippendorff_package_on_random_data(matrix):
    _assert_same_as_package(matrix, "ratio")


@PROPERTY
@given(
    reliability_matrices(continuous=True, positive=True),
    st.sampled_from(["nominal", "ordinal", "interval", "ratio"]),
)
def test_alpha_equals_krippendorff_package_on_random_continuous_data(matrix, level):
    _assert_same_as_package(matrix, level)


@PROPERTY
@given(reliability_matrices(continuous=True))
def test_interval_closed_form_equals_coincidence_matrix_formulation(matrix):
    prepared = prepare(matrix, "interval")
    present = ~np.isnan(matrix)
    distinct, codes = np.unique(matrix[present], return_inverse=True)
    code_matrix = np.full(matrix.shape, -1)
    code_matrix[present] = codes
    squared = (distinct[:, None] - distinct[None, :]) ** 2
    closed, general = alpha_parts(prepared), _coincidence_parts(code_matrix, squared)
    assert closed.pairable_values == general.pairable_values
    assert closed.observed == pytest.approx(general.observed, rel=1e-9, abs=1e-9)
    assert closed.expected == pytest.approx(general.expected, rel=1e-9, abs=1e-9)


@pytest.mark.usefixtures("jackknife_for_nominal")
def test_a_nominal_field_with_too_few_rare_values_gets_alpha_but_no_interval():
    # 3 annotators x 10 units, "1" given 3 times (unit 0) and "2" once (unit 8); statistics.md
    # "Too few values of the rarer categories": below MIN_MINORITY_VALUES = 6 there is no
    # interval.
    from evaluation.lib.stats.agreement import MIN_MINORITY_VALUES

    few = [[1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
           [1, 0, 0, 0, 0, 0, 0, 0, 2, 0],
           [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    estimate = alpha_with_ci(few, "nominal")
    assert MIN_MINORITY_VALUES == 6
    assert estimate.value == compute_alpha(few, "nominal").value  # the statistic is unchanged
    assert round(estimate.value, 3) == 0.729  # docs/statistics.md, reference values
    assert estimate.ci_low is None and estimate.ci_high is None
    assert estimate.params["minority_values"] == 4
    assert "too few values outside the most frequent category" in estimate.params["ci_note"]
    # Two more yes values in a third unit: 6, and the interval is shown.
    enough = [row[:] for row in few]
    enough[0][5] = enough[1][5] = 1
    shown = alpha_with_ci(enough, "nominal")
    assert shown.ci_low is not None and shown.params["minority_values"] == 6
    # Only pairable values count (a unit rated once does not), as labels or numbers alike, and
    # every category but the most frequent one counts.
    labels = [["a", "b", "b", "c", "a", "a", "a", "z"],
              ["a", "b", "c", "c", "a", "a", "a", None],
              ["a", "a", "b", "c", "a", "a", "a", None]]
    # units 1-3 hold b b, b c b, c c c outside "a"; the lone "z" of unit 7 is not pairable
    assert alpha_with_ci(labels, "nominal").params["minority_values"] == 8
    # Other levels have no such rule.
    assert "minority_values" not in alpha_with_ci(few, "interval").params


@pytest.mark.usefixtures("jackknife_for_nominal")
def test_a_rare_category_needs_thirty_values_below_a_fifth_of_the_values():
    from evaluation.lib.stats.agreement import minority_rule

    assert minority_rule(6, 30) is None  # 6 values, 20%: shown
    assert "needs 6" in minority_rule(5, 10)
    assert "needs 30, or 20%" in minority_rule(29, 200)  # 14.5%: too few
    assert minority_rule(30, 200) is None and minority_rule(40, 200) is None
    # 40 units x 3 annotators, "1" and "2" 12 times in four units (10% of the values): no
    # interval.
    rare = np.zeros((3, 40))
    rare[:, :2] = 1
    rare[:, 2:4] = 2
    estimate = alpha_with_ci(rare, "nominal")
    assert estimate.value == 1.0 and estimate.ci_low is None
    assert "12, 10% of the pairable values" in estimate.params["ci_note"]


@pytest.mark.usefixtures("jackknife_for_nominal")
def test_a_nominal_field_with_perfect_agreement_gets_no_interval():
    # 3 annotators x 10 units, three categories, enough values outside the commonest (12) and
    # the same answers on every unit:
    # alpha is 1, so is every leave-one-out alpha, and the jackknife's interval would be the
    # point 1 (near-perfect agreement on 10 units covered 0.85-0.91; statistics.md, "Too few
    # values of the rarer categories").
    from evaluation.lib.stats.agreement import MIN_DISAGREEING_UNITS

    same = [[1, 1, 2, 0, 0, 0, 0, 0, 0, 2] for _ in range(3)]
    estimate = alpha_with_ci(same, "nominal")
    assert MIN_DISAGREEING_UNITS == 1
    assert estimate.value == compute_alpha(same, "nominal").value == 1.0
    assert estimate.ci_low is None and estimate.params["disagreeing_units"] == 0
    assert "the annotators agree on every unit" in estimate.params["ci_note"]
    one = [row[:] for row in same]
    one[1][9] = 0  # one unit with a disagreement
    shown = alpha_with_ci(one, "nominal")
    assert shown.ci_low is not None and shown.ci_low < shown.value <= shown.ci_high
    # Missing values make no disagreement: unit 9 rated once is not pairable.
    lone = [row[:] for row in one]
    lone[0][9] = lone[2][9] = None
    assert alpha_with_ci(lone, "nominal").params["disagreeing_units"] == 0
