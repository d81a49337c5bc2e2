"""Active statistical inference (evaluation/lib/stats/active.py; Zrnic & Candès 2024): the
inverse-probability-weighted PPI estimate by hand, its coverage by simulation, the inclusion
probabilities, and the projected widths the author's chart shows."""

import numpy as np
import pytest

from evaluation.lib.stats import active


def test_estimate_by_hand():
    # Pool of 4: f = 1, 2, 3, 4; units 0 and 2 labelled (Y = 2, 5) with π = 0.5 and 0.25.
    # λ = 1: Z = f + (Y − f) ξ/π = [1 + 1/0.5, 2, 3 + 2/0.25, 4] = [3, 2, 11, 4]; mean 5.
    est = active.active_mean([1, 2, 3, 4], [0.5, 0.5, 0.25, 0.25], [True, False, True, False],
                             [2, None, 5, None], lam=1.0)
    assert est.value == pytest.approx(5.0)
    z = np.array([3, 2, 11, 4])
    assert est.ci_high - est.value == pytest.approx(1.959964 * z.std(ddof=1) / 2, rel=1e-5)
    # λ = 0 is the Horvitz–Thompson mean: (2/0.5 + 5/0.25) / 4 = 6
    assert active.active_mean([1, 2, 3, 4], [0.5, 0.5, 0.25, 0.25],
                              [True, False, True, False], [2, None, 5, None],
                              lam=0.0).value == pytest.approx(6.0)


def test_everything_labelled_is_the_human_mean():
    rng = np.random.default_rng(0)
    y, f = rng.normal(size=50), rng.normal(size=50)
    est = active.active_mean(f, np.ones(50), np.ones(50, dtype=bool), y)
    assert est.value == pytest.approx(y.mean())


def test_inclusion_probabilities_spend_the_budget_and_follow_the_error():
    error = np.array([0.1] * 90 + [5.0] * 10)
    pi = active.inclusion_probabilities(error, 20)
    assert pi.sum() == pytest.approx(20)
    assert pi.max() <= 1.0 and pi.min() > 0
    assert pi[-1] > pi[0]
    capped = active.inclusion_probabilities(error, 60, mix=0.0)
    assert capped[-10:] == pytest.approx(1.0) and capped.sum() == pytest.approx(60)
    assert active.inclusion_probabilities(np.ones(10), 4) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="budget"):
        active.inclusion_probabilities(error, 0)


@pytest.mark.parametrize("policy", ["uniform", "active"])
def test_the_interval_covers_at_95_percent(policy):
    """400 pools of 400 units, a judge with uneven error, 80 labels: coverage of the pool's
    population mean (0) within Monte Carlo error of 0.95, the estimate unbiased."""
    rng = np.random.default_rng(1 if policy == "uniform" else 2)
    hits, values = [], []
    for _ in range(400):
        q = rng.normal(size=400)
        y = q + rng.normal(0, 0.5, 400)
        f = q + rng.normal(size=400) * np.where(rng.random(400) < 0.2, 3.0, 0.3)
        error = np.where(np.abs(f) > 2, 2.0, 0.6)  # a rough, fixed error model
        pi = (np.full(400, 0.2) if policy == "uniform"
              else active.inclusion_probabilities(error, 80))
        xi = active.draw_selection(pi, int(rng.integers(1 << 30)))
        est = active.active_mean(f, pi, xi, y)
        hits.append(est.ci_low <= 0 <= est.ci_high)
        values.append(est.value)
    assert np.mean(hits) == pytest.approx(0.95, abs=0.03)
    assert abs(np.mean(values)) < 3 * np.std(values) / np.sqrt(400)


def test_predicted_error_is_larger_where_the_judge_is_wrong():
    rng = np.random.default_rng(3)
    q = rng.normal(size=2000)
    hard = rng.random(2000) < 0.2
    f = q + rng.normal(size=2000) * np.where(hard, 4.0, 0.2)
    y = q + rng.normal(0, 0.3, 2000)
    labelled = rng.choice(2000, 300, replace=False)
    error = active.predicted_error(f, labelled, y[labelled])
    assert error[hard].mean() > 1.3 * error[~hard].mean()
    assert active.predicted_error(f, [0, 1], y[:2]) == pytest.approx(1.0)  # too few labels


def test_projected_width_matches_simulated_widths():
    rng = np.random.default_rng(4)
    n = 500
    error = np.where(rng.random(n) < 0.2, 2.0, 0.4)
    curve = active.width_curve(error, 1.0, [50, 100, 600])
    assert [row["labels"] for row in curve] == [50, 100]  # more labels than units: left out
    assert curve[0]["uniform"] > curve[1]["uniform"]
    assert curve[0]["active"] < curve[0]["uniform"]  # uneven error: active is narrower
    # by simulation: Y − f has sd ERROR, Y has sd 1
    widths = []
    for _ in range(300):
        y = rng.normal(size=n)
        f = y - rng.normal(size=n) * error
        pi = np.full(n, 0.1)
        xi = active.draw_selection(pi, int(rng.integers(1 << 30)))
        est = active.active_mean(f, pi, xi, y, lam=1.0)
        widths.append(est.ci_high - est.ci_low)
    assert np.mean(widths) == pytest.approx(curve[0]["uniform"], rel=0.08)
