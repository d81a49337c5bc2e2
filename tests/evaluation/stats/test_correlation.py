"""Metric–human correlation: item and system level, QWK, factor coupling, sample efficiency,
bootstrap CIs and the evaluator leaderboard."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from evaluation.lib.stats.annotators import cohen_kappa
from evaluation.lib.stats.correlation import (
    ASPECT_MEAN,
    POOLED,
    correlate,
    correlation_from_arrays,
    correlation_with_ci,
    coupling_by_rater,
    inter_factor_kendall,
    item_level_correlations,
    quadratic_weighted_kappa,
    rank_evaluators,
    rowwise_correlation,
    sample_efficiency_curve,
    system_level_correlation,
    unit_means,
)

SKLEARN_Y1 = [0] * 46 + [1] * 44 + [2] * 10
SKLEARN_Y2 = [0] * 50 + [1] * 40 + [2] * 10


def test_qwk_reproduces_scikit_learn_reference_values():
    assert round(cohen_kappa(SKLEARN_Y1, SKLEARN_Y2).value, 4) == 0.9315
    linear = cohen_kappa(SKLEARN_Y1, SKLEARN_Y2, weights="linear", labels=[0, 1, 2])
    assert round(linear.value, 4) == 0.9412
    qwk = quadratic_weighted_kappa(SKLEARN_Y1, SKLEARN_Y2, labels=[0, 1, 2])
    assert round(qwk.value, 4) == 0.9541
    assert qwk.method == "quadratic_weighted_kappa" and qwk.n == {"units": 100}



def test_qwk_matches_a_hand_computed_example():
    # Observed disagreement: one (0, 1) pair, weight 1/16. Expected: (0,1) 1.5 and (1,0) 0.5
    # pairs by chance, weight 1/16 each, so kappa = 1 - (1/16) / (2/16) = 0.5 (scale 0-4).
    assert quadratic_weighted_kappa([0, 0, 1, 1], [0, 1, 1, 1], labels=range(5)).value == \
        pytest.approx(0.5)
    assert quadratic_weighted_kappa([0, 1, 2, 3, 4], [0, 1, 2, 3, 4],
                                    labels=range(5)).value == pytest.approx(1.0)


def test_qwk_is_over_the_declared_scale_and_skips_missing_pairs():
    human = [0, 2, 4, 3, None, 1]
    model = [1, 2, 3, 3, 2, None]
    expected = cohen_kappa_score([0, 2, 4, 3], [1, 2, 3, 3], weights="quadratic",
                                 labels=list(range(5)))
    assert quadratic_weighted_kappa(human, model, labels=range(5)).value == \
        pytest.approx(expected)
    # nobody said 3 on a 1-5 scale: over the declared scale 2-vs-4 is two points apart, while
    # labels inferred from the data ([1, 2, 4, 5]) would make it one
    a, b = [1, 2, 4, 5, 2], [2, 4, 4, 5, 1]
    declared = quadratic_weighted_kappa(a, b, labels=range(1, 6)).value
    assert declared == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5]))
    assert declared != pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    assert quadratic_weighted_kappa([2], [2], labels=range(5)).value is None
    # one label used by both: undefined, not 0 or 1
    assert quadratic_weighted_kappa([2, 2, 2], [2, 2, 2], labels=range(5)).value is None


def test_weighted_kappa_refuses_to_guess_the_scale():
    with pytest.raises(TypeError):
        quadratic_weighted_kappa([0, 1], [1, 0])
    with pytest.raises(ValueError, match="declared scale"):
        cohen_kappa([0, 1], [1, 0], weights="linear")


def test_item_correlation_hand_example_joins_on_shared_units():
    metric = {"u1": 1.0, "u2": 2.0, "u3": 3.0, "only_metric": 9.0, "u4": None}
    human = {"u3": 2.0, "u2": 3.0, "u1": 1.0, "u4": 5.0}
    result = correlate(metric, human)
    # x = 1, 2, 3 and y = 1, 3, 2: r = ρ = 0.5; τ_b = (2 concordant − 1 discordant) / 3.
    assert result["pearson"].statistic == pytest.approx(0.5)
    assert result["spearman"].statistic == pytest.approx(0.5)
    assert result["kendall"].statistic == pytest.approx(1 / 3)
    assert all(c.n == 3 for c in result.values())
    assert result["pearson"].p_value == pytest.approx(stats.pearsonr([1, 2, 3], [1, 3, 2]).pvalue)


def test_correlation_is_undefined_for_constant_scores_or_too_few_units():
    constant = correlate({"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 2, "c": 3})
    assert constant["spearman"].statistic is None
    assert "no variance" in constant["spearman"].undefined_reason
    tiny = correlate({"a": 1, "b": 2}, {"a": 1, "b": 2})
    assert tiny["kendall"].statistic is None and tiny["kendall"].n == 2


def test_item_level_rows_per_aspect_pooled_and_per_subset():
    metric = {
        "relevance": {"u1": 1, "u2": 2, "u3": 3, "u4": 4},
        "overall": {"u1": 4, "u2": 3, "u3": 2, "u4": 1},
    }
    human = {
        "relevance": {"u1": 1, "u2": 2, "u3": 3, "u4": 4},
        "overall": {"u1": 1, "u2": 2, "u3": 3, "u4": 4},
        "unused": {"u1": 1},
    }
    subsets = {"u1": "ReDial", "u2": "ReDial", "u3": "ReDial", "u4": "OpenDialKG"}
    rows = item_level_correlations(metric, human, subsets=subsets, methods=("spearman",))
    table = {(row.aspect, row.subset): row.correlations["spearman"] for row in rows}
    assert table[("relevance", "all")].statistic == pytest.approx(1.0)
    assert table[("overall", "all")].statistic == pytest.approx(-1.0)
    assert table[("pooled", "all")].n == 8
    assert table[("relevance", "ReDial")].n == 3
    assert table[("relevance", "OpenDialKG")].statistic is None  # one unit only
    assert ("unused", "all") not in table


def test_system_level_correlation_uses_system_means_of_shared_units():
    systems = {f"{s}{i}": s for s in "ABC" for i in range(3)}
    human = {unit: {"A": 1.0, "B": 2.0, "C": 3.0}[system] for unit, system in systems.items()}
    metric = {
        unit: value * 10 + (0.5 if unit.endswith("0") else 0) for unit, value in human.items()
    }
    result = system_level_correlation(metric, human, systems)
    assert result["spearman"].statistic == pytest.approx(1.0)
    assert result["kendall"].statistic == pytest.approx(1.0)
    assert result["spearman"].n == 3
    assert result["spearman"].params == {"level": "system", "units": 9}


def test_inter_factor_kendall_matrix_is_symmetric_with_mean_absolute_coupling():
    scores = {
        "coherence": {"u1": 1, "u2": 2, "u3": 3, "u4": 4},
        "naturalness": {"u1": 1, "u2": 2, "u3": 4, "u4": 3},
        "novelty": {"u1": 4, "u2": 3, "u3": 2, "u4": 1},
    }
    matrix = inter_factor_kendall(scores)
    values = np.array(matrix.values, dtype=float)
    assert np.allclose(values, values.T)
    assert np.allclose(np.diag(values), 1.0)
    # τ_b: coherence–naturalness 4/6, coherence–novelty −1, naturalness–novelty −4/6.
    assert values[0, 1] == pytest.approx(4 / 6)
    assert matrix.mean_abs_off_diagonal == pytest.approx((4 / 6 + 1 + 4 / 6) / 3)
    assert matrix.n[0][1] == 4
    by_rater = coupling_by_rater({"humans": scores, "gpt": scores})
    assert set(by_rater) == {"humans", "gpt"}


def _system_scores(noise, noise_seed=1):
    """Six systems × 30 dialogues of human scores (always the same) and a noisy metric."""
    rng, noise_rng = np.random.default_rng(0), np.random.default_rng(noise_seed)
    systems, human, metric = {}, {}, {}
    for s in range(6):
        for d in range(30):
            unit = f"s{s}-d{d}"
            systems[unit] = f"s{s}"
            human[unit] = s + rng.normal(0, 1.0)
            metric[unit] = human[unit] + noise_rng.normal(0, noise)
    return metric, human, systems


def test_sample_efficiency_curve_rises_towards_the_full_ranking_and_is_seeded():
    metric, human, systems = _system_scores(noise=2.0)
    curve = sample_efficiency_curve(metric, human, systems, sizes=(1, 5, 30), n_repeats=50)
    assert [point.dialogues_per_system for point in curve] == [1, 5, 30]
    assert curve[0].mean < curve[1].mean <= curve[2].mean
    assert curve[2].ci_low == curve[2].ci_high  # all 30 dialogues: no sampling left
    again = sample_efficiency_curve(metric, human, systems, sizes=(1, 5, 30), n_repeats=50)
    assert curve == again


def test_correlation_ci_contains_the_point_and_is_reproducible():
    metric, human, _ = _system_scores(noise=1.0)
    result = correlation_with_ci(metric, human, "spearman")
    assert result.ci_low < result.statistic < result.ci_high
    assert result == correlation_with_ci(metric, human, "spearman")
    kendall = correlation_with_ci(metric, human, "kendall")
    assert kendall.ci_low < kendall.statistic < kendall.ci_high


def test_correlation_ci_is_a_dialogue_jackknife_on_fisher_z():
    # Brute force: drop each dialogue, Pearson r of the rest, jackknife SE of atanh(r),
    # tanh(atanh(r) ± t_{G−1} · SE).
    rng = np.random.default_rng(5)
    units = [f"d{d}#{t}" for d in range(12) for t in range(3)]
    human = {u: float(rng.normal()) for u in units}
    metric = {u: human[u] + float(rng.normal()) for u in units}
    clusters = {u: u.split("#")[0] for u in units}
    result = correlation_with_ci(metric, human, "pearson", clusters=clusters)
    x = np.array([metric[u] for u in units])
    y = np.array([human[u] for u in units])
    dialogue = np.array([clusters[u] for u in units])
    leave = np.array([
        np.arctanh(np.corrcoef(x[dialogue != d], y[dialogue != d])[0, 1])
        for d in sorted(set(dialogue))
    ])
    se = np.sqrt(11 / 12 * ((leave - leave.mean()) ** 2).sum())
    z = np.arctanh(stats.pearsonr(x, y).statistic)
    half = stats.t.ppf(0.975, 11) * se
    assert result.ci_low == pytest.approx(np.tanh(z - half))
    assert result.ci_high == pytest.approx(np.tanh(z + half))
    assert result.params["clusters"] == 12


def test_evaluator_leaderboard_ranks_the_better_aligned_evaluator_first():
    good, human, _ = _system_scores(noise=0.3)
    noisy, _, _ = _system_scores(noise=5.0)
    close, _, _ = _system_scores(noise=0.3, noise_seed=2)
    constant = dict.fromkeys(human, 1.0)
    rows = rank_evaluators(
        {"noisy": noisy, "good": good, "close": close, "constant": constant},
        human,
    )
    names = [row.system for row in rows]
    assert names[:2] in (["good", "close"], ["close", "good"])
    assert rows[0].rank == rows[1].rank == 1
    assert (rows[2].system, rows[2].rank) == ("noisy", 3)
    assert rows[3].system == "constant" and rows[3].estimate.value is None
    assert rows[3].rank is None and rows[3].estimate.ci_low is None  # undefined: not ranked
    assert rows[0].estimate.ci_low < rows[0].estimate.value < rows[0].estimate.ci_high
    assert rows[0].estimate.params["correction"] == "holm"


def test_evaluator_leaderboard_resamples_dialogues_not_turns():
    # Two evaluators equally good, each dialogue's three turns share one value: turn-level
    # leave-outs would see 3x the units. With dialogues as clusters n_clusters is 20.
    rng = np.random.default_rng(11)
    human, first, second, clusters = {}, {}, {}, {}
    for d in range(20):
        h = float(rng.normal())
        a, b = h + float(rng.normal()), h + float(rng.normal())
        for t in range(3):
            unit = f"d{d}#{t}"
            human[unit], first[unit], second[unit], clusters[unit] = h, a, b, f"d{d}"
    rows = rank_evaluators({"a": first, "b": second}, human, clusters=clusters)
    assert {row.estimate.n["clusters"] for row in rows} == {20}
    turns = rank_evaluators({"a": first, "b": second}, human)
    assert {row.estimate.n["clusters"] for row in turns} == {60}
    width = rows[0].estimate.ci_high - rows[0].estimate.ci_low
    turn_width = turns[0].estimate.ci_high - turns[0].estimate.ci_low
    assert width > turn_width  # honest: dependent turns are not extra evidence


def test_unit_means_average_annotators_and_skip_units_without_ratings():
    means = unit_means({"u1": [1, 2, None], "u2": [None], "u3": [4]})
    assert means == {"u1": 1.5, "u3": 4.0}


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_rowwise_correlation_equals_scipy_row_by_row(method):
    rng = np.random.default_rng(3)
    matrix = rng.integers(0, 4, size=(40, 6)).astype(float)  # ties included
    matrix[0] = 2.0  # a constant row: undefined
    target = rng.normal(size=6)
    values = rowwise_correlation(matrix, target, method)
    assert np.isnan(values[0])
    for row, value in zip(matrix[1:], values[1:], strict=True):
        expected = correlation_from_arrays(row, target, method).statistic
        assert (expected is None and np.isnan(value)) or value == pytest.approx(expected)
    assert np.isnan(rowwise_correlation(matrix[:, :2], target[:2], method)).all()  # < 3 systems
    assert np.isnan(rowwise_correlation(matrix, np.ones(6), method)).all()


def test_mean_over_aspects_is_face_all_column_not_the_pooled_correlation():
    # Aspect a: metric = human (r = 1); aspect b: metric = −human (r = −1). FACE's "All" is the
    # mean of the two, 0; the pooled correlation of all six pairs is a different number.
    human = {"a": {1: 1.0, 2: 2.0, 3: 3.0}, "b": {1: 10.0, 2: 20.0, 3: 40.0}}
    metric = {"a": {1: 1.0, 2: 2.0, 3: 3.0}, "b": {1: -10.0, 2: -20.0, 3: -40.0}}
    rows = {row.aspect: row for row in item_level_correlations(metric, human)}
    mean = rows[ASPECT_MEAN].correlations["pearson"]
    assert mean.statistic == pytest.approx(0.0) and mean.n == 2 and mean.p_value is None
    pooled = rows[POOLED].correlations["pearson"]
    xs = [1, 2, 3, -10, -20, -40]
    ys = [1, 2, 3, 10, 20, 40]
    assert pooled.statistic == pytest.approx(stats.pearsonr(xs, ys).statistic)
    assert pooled.statistic != pytest.approx(mean.statistic)


@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_leave_one_cluster_out_at_once_equals_the_loop(method):
    """rowwise_leave_outs (the metric board's jackknife) against the loop it replaces, on
    designs with ties, single-unit and large dialogues, dialogues absent from a block, a row
    constant but on one dialogue, and too few units left; in chunks of a few dialogues too."""
    from evaluation.lib.stats.clustered import cluster_groups, jackknife_leave_outs
    from evaluation.lib.stats.correlation import rowwise_correlation, rowwise_leave_outs

    rng = np.random.default_rng(7)
    for trial in range(40):
        units = int(rng.integers(2, 60))
        clusters = rng.integers(0, int(rng.integers(1, 25)), size=units)
        matrix = rng.integers(0, int(rng.integers(2, 6)), size=(4, units)).astype(float)
        matrix[1] = rng.normal(size=units)
        matrix[2] = 1.0
        matrix[2, clusters == clusters[0]] = 2.0  # constant without the first unit's dialogue
        target = rng.integers(0, 4, size=units) + (rng.normal(size=units) if trial % 2 else 0)
        groups = cluster_groups(list(clusters), units)
        group_of = np.empty(units, dtype=np.intp)
        for g, members in enumerate(groups):
            group_of[members] = g
        loop = jackknife_leave_outs(
            lambda idx, m=matrix, t=target: rowwise_correlation(m[:, idx], t[idx], method),
            groups, units)
        for chunk in (2_000_000, 3 * units):
            at_once = rowwise_leave_outs(matrix, target, group_of, len(groups), method,
                                         chunk=chunk)
            assert np.array_equal(np.isnan(at_once), np.isnan(loop)), trial
            if method == "spearman":  # sums of half-integers: the same to the last bit
                assert np.array_equal(at_once[~np.isnan(loop)], loop[~np.isnan(loop)])
            else:
                np.testing.assert_allclose(at_once, loop, rtol=0, atol=1e-12)
    # a block without some dialogues: those leave nothing out of it
    group_of = np.array([0, 0, 2, 2, 3, 3])
    out = rowwise_leave_outs(np.arange(6.0)[None, :] ** 2, np.arange(6.0), group_of, 5, method)
    whole = rowwise_correlation(np.arange(6.0)[None, :] ** 2, np.arange(6.0), method)
    assert out[1, 0] == pytest.approx(whole[0], abs=1e-15) and out[4, 0] == out[1, 0]
