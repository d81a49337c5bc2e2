"""Simulator validity (lib/stats/simulator_validity.py): τ_b against scipy.stats.kendalltau,
Spearman against scipy.stats.spearmanr, the two human sides, the undefined cases, and the
bench_calibration design's population values by hand."""

import numpy as np
import pytest
from scipy import stats

from evaluation.lib.stats import arena
from evaluation.lib.stats.simulator_validity import (
    simulator_validity,
    spearman_rows,
    tau_b_rows,
)
from leaderboard.lib.calibration_validity import (
    TRUE_SPEARMAN,
    TRUE_TAU_B,
    VALIDITY_ANNOTATORS,
    VALIDITY_LABEL_SPACING,
    VALIDITY_ORDER,
    validity_coverage,
    validity_label_coverage,
    validity_label_sample,
    validity_sample,
)


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
def test_tau_b_and_spearman_rows_match_scipy_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, (200, 7)).astype(float)  # many ties
    y = rng.integers(0, 3, (200, 7)).astype(float)
    taus, rhos = tau_b_rows(x, y), spearman_rows(x, y)
    for row in range(200):
        tau = stats.kendalltau(x[row], y[row]).statistic  # variant "b", the default
        rho = stats.spearmanr(x[row], y[row]).statistic
        if np.isnan(tau):
            assert np.isnan(taus[row])
        else:
            assert taus[row] == pytest.approx(tau, abs=1e-12)
        if np.isnan(rho):
            assert np.isnan(rhos[row])
        else:
            assert rhos[row] == pytest.approx(rho, abs=1e-12)


def _scores(means, users=40, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    return {name: {f"u{u}": float(m + rng.normal(0, noise)) for u in range(users)}
            for name, m in means.items()}


def test_against_arena_votes_point_values_are_the_packages():
    strengths = np.array([0.0, 0.6, 1.2, 1.8])
    votes = arena.simulated_votes(2000, 4, strengths=strengths, seed=5)
    names = [f"system-{s:03d}" for s in range(4)]
    # simulated order 0 < 2 < 1 < 3: one discordant pair of 6 -> tau_b = 2/3 exactly
    scores = _scores(dict(zip(names, (0.0, 2.0, 1.0, 3.0), strict=True)), noise=0.05)
    result = simulator_validity(scores, votes=votes, n_resamples=300, seed=1)
    assert result.reference == "arena" and result.systems == tuple(names)
    assert result.n_human == 2000
    bt = arena.bradley_terry_ratings(votes)
    assert stats.spearmanr([bt[n] for n in names], result.human).statistic == pytest.approx(1)
    tau = result.agreements["kendall_tau_b"]
    expected = stats.kendalltau(result.simulated, result.human).statistic
    assert tau.value == pytest.approx(expected) == pytest.approx(2 / 3)
    assert tau.ci_low <= tau.value <= tau.ci_high and tau.n_systems == 4
    rho = result.agreements["spearman"]
    assert rho.value == pytest.approx(stats.spearmanr(result.simulated, result.human).statistic)
    assert result.valid_resamples > 250


def test_against_human_labels_clustered_by_dialogue():
    scores = _scores({"A": 0.1, "B": 0.5, "C": 0.9})
    labels = {"A": [("d1", 1), ("d1", 2), ("d2", 1)], "B": [("d3", 3), ("d4", 3)],
              "C": [("d5", 5), ("d6", 4), ("d6", 5)]}
    result = simulator_validity(scores, labels=labels, n_resamples=200)
    assert result.reference == "labels" and result.n_human == 6
    assert result.human == pytest.approx((4 / 3, 3.0, 14 / 3))  # means over labels
    assert result.agreements["kendall_tau_b"].value == pytest.approx(1.0)
    assert result.agreements["spearman"].value == pytest.approx(1.0)


def test_undefined_below_three_systems_or_when_one_side_is_constant():
    votes = arena.simulated_votes(300, 3, seed=2)
    two = _scores({"system-000": 0.1, "system-001": 0.2, "other": 0.3})
    result = simulator_validity(two, votes=votes, n_resamples=50)
    assert result.agreements["kendall_tau_b"].value is None
    assert "2 systems" in result.agreements["kendall_tau_b"].undefined_reason
    flat = {f"system-00{s}": {"u1": 0.5, "u2": 0.5} for s in range(3)}
    result = simulator_validity(flat, votes=votes, n_resamples=50)
    assert "same score" in result.agreements["spearman"].undefined_reason
    with pytest.raises(ValueError, match="one of them"):
        simulator_validity(flat, n_resamples=10)


def test_calibration_design_population_values_by_hand():
    # VALIDITY_ORDER (2, 0, 1, 3, 5, 4) against 0..5: discordant pairs (0,1), (0,2), (4,5).
    assert TRUE_TAU_B == pytest.approx(stats.kendalltau(range(6), VALIDITY_ORDER).statistic)
    assert TRUE_SPEARMAN == pytest.approx(stats.spearmanr(range(6), VALIDITY_ORDER).statistic)
    assert TRUE_TAU_B == pytest.approx(0.6)
    scores, votes = validity_sample(np.random.default_rng(0), 10)
    assert len(scores) == 6 and len(votes) == 100
    assert validity_coverage(np.random.default_rng(1), 10, "kendall_tau_b") in (True, False)


def test_calibration_labels_design_population_values():
    # One large study: each system's label mean is its ν (dialogue effect and annotator noise
    # average out), so the label means rank the systems as VALIDITY_ORDER does: τ_b 0.6.
    scores, labels = validity_label_sample(np.random.default_rng(4), 4000)
    names = sorted(scores)
    means = [np.mean([v for _, v in labels[name]]) for name in names]
    assert means == pytest.approx([VALIDITY_LABEL_SPACING * o for o in VALIDITY_ORDER], abs=0.05)
    assert all(len(labels[name]) == 4000 * VALIDITY_ANNOTATORS for name in names)
    assert len({d for d, _ in labels[names[0]]}) == 4000  # the annotators share a dialogue
    simulated = [np.mean(list(scores[name].values())) for name in names]
    assert stats.kendalltau(simulated, means).statistic == pytest.approx(TRUE_TAU_B)
    assert validity_label_coverage(np.random.default_rng(1), 10, "spearman") in (True, False)
