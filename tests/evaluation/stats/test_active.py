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
    # a uniform first quarter (the handout's wave 1 without a reported uncertainty): the active
    # variance is a quarter of uniform's plus three quarters of π ∝ ê's, by hand from the widths
    blended = active.width_curve(error, 1.0, [50], uniform_share=0.25)[0]
    z = 1.959963984540054
    pi = active.inclusion_probabilities(error, 50)
    by_error = (1 / n + np.sum(error ** 2 * (1 / pi - 1)) / n ** 2)
    uniform = (1 / n + np.sum(error ** 2 * (1 / 0.1 - 1)) / n ** 2)
    assert blended["uniform"] == pytest.approx(2 * z * np.sqrt(uniform))
    assert blended["active"] == pytest.approx(2 * z * np.sqrt(0.25 * uniform + 0.75 * by_error))
    assert curve[0]["active"] < blended["active"] < curve[0]["uniform"]


# --- the judge's own uncertainty as the error predictor, and the tuned intercept ------------

# Ten labelled units whose f is the same (so the line fit is flat and the residuals are
# Y − mean Y = R) and whose squared residuals lie exactly on 0.5 + 0.5 u².
R = np.array([1, -1, 1, -1, 2, -2, 2, -2, 3, -3], dtype=float)
U = np.sqrt(2 * R ** 2 - 1)  # u² = 1, 1, 1, 1, 7, 7, 7, 7, 17, 17


def _pool(u_extra):
    f = np.concatenate([np.ones(10), [0.0, 2.0, 5.0]])
    y = 4.0 + R
    u = list(U) + list(u_extra)
    return f, list(range(10)), y, u


def test_uncertainty_predictor_by_hand():
    f, labelled, y, u = _pool([3.0, None, 0.0])
    model = active.error_model(f, labelled, y, uncertainty=u)
    assert model.predictor == "uncertainty"
    assert model.params == {"alpha": pytest.approx(0.5), "beta": pytest.approx(0.5),
                            "fitted_on": 10}
    # ê = sqrt(0.5 + 0.5 u²); a unit without an uncertainty gets the overall root mean squared
    # residual sqrt(mean R²) = sqrt(3.8); u = 0 gives sqrt(α) = sqrt(0.5)
    assert model.error[:10] == pytest.approx(np.sqrt(0.5 + 0.5 * U ** 2))
    assert model.error[10:] == pytest.approx([np.sqrt(5.0), np.sqrt(3.8), np.sqrt(0.5)])
    assert active.predicted_error(f, labelled, y, uncertainty=u) == pytest.approx(model.error)
    assert "α + β·u²" in model.description


def test_uncertainty_predictor_keeps_alpha_and_beta_non_negative():
    f = np.ones(10)
    # r² = u² − 1 exactly: the free fit has α = −1; with α = 0 the least-squares β through the
    # origin is Σ u² r² / Σ u⁴
    x = R ** 2 + 1
    model = active.error_model(f, list(range(10)), 4.0 + R, uncertainty=np.sqrt(x))
    beta = float(np.sum(x * R ** 2) / np.sum(x ** 2))
    assert model.params == {"alpha": 0.0, "beta": pytest.approx(beta), "fitted_on": 10}
    assert model.error == pytest.approx(np.sqrt(beta * x))
    # a larger uncertainty on the smaller residuals: β would be negative, so the error is the
    # same everywhere (the judge's doubt does not predict its error)
    flat = active.error_model(f, list(range(10)), 4.0 + R, uncertainty=1 / np.abs(R))
    assert flat.params["beta"] == 0.0
    assert flat.error == pytest.approx(np.sqrt(3.8))


def test_without_enough_uncertainties_the_quintile_predictor_is_kept():
    rng = np.random.default_rng(5)
    f, y = rng.normal(size=60), rng.normal(size=60)
    labelled = list(range(40))
    plain = active.error_model(f, labelled, y[:40])
    assert plain.predictor == "quintiles" and len(plain.params["values"]) == 5
    few = [1.0] * 9 + [None] * 51  # nine labelled units report one: fewer than MIN_FIT
    assert active.error_model(f, labelled, y[:40], uncertainty=few).predictor == "quintiles"
    assert active.error_model(f, [0, 1], y[:2], uncertainty=[1.0] * 60).predictor == "none"
    with pytest.raises(ValueError, match="one uncertainty per scored unit"):
        active.error_model(f, labelled, y[:40], uncertainty=[1.0] * 3)


def test_reported_uncertainty_predicts_the_error_better_than_quintiles():
    """A judge whose error sd is log-uniform over [0.2, 2] and who reports it within a factor of
    about 1.6: ê from the reported uncertainty follows the true error sd of Y − λf − c,
    sqrt((1 − λ)² + 0.3² + λ² sd²) at λ = 1/(1 + E sd²); quintiles of f cannot (correlation
    about 0). The noise in u attenuates β (errors in the variable), not the ordering."""
    rng = np.random.default_rng(6)
    n = 3000
    q = rng.normal(size=n)
    sd = np.exp(rng.uniform(np.log(0.2), np.log(2.0), n))
    y, f = q + rng.normal(0, 0.3, n), q + rng.normal(size=n) * sd
    u = sd * np.exp(rng.normal(0, 0.5, n))
    labelled = rng.choice(n, 300, replace=False)
    by_u = active.error_model(f, labelled, y[labelled], uncertainty=u)
    by_f = active.error_model(f, labelled, y[labelled])
    lam = 1 / (1 + np.mean(sd ** 2))
    truth = np.sqrt((1 - lam) ** 2 + 0.09 + lam ** 2 * sd ** 2)
    assert np.corrcoef(by_u.error, truth)[0, 1] > 0.5
    assert np.corrcoef(by_u.error, truth)[0, 1] > np.corrcoef(by_f.error, truth)[0, 1] + 0.3


def test_estimate_with_an_intercept_by_hand():
    # The pool of test_estimate_by_hand with λ = 1 and c = 1: Z = (f + 1) + (Y − f − 1) ξ/π
    # = [2 + 0, 3, 4 + 1/0.25, 5] = [2, 3, 8, 5]; mean 4.5.
    est = active.active_mean([1, 2, 3, 4], [0.5, 0.5, 0.25, 0.25], [True, False, True, False],
                             [2, None, 5, None], lam=1.0, offset=1.0)
    assert est.value == pytest.approx(4.5) and est.offset == 1.0
    z = active.summands([1, 2, 3, 4], [0.5, 0.5, 0.25, 0.25], [True, False, True, False],
                        [2, None, 5, None], 1.0, 1.0)
    assert z == pytest.approx([2, 3, 8, 5])
    assert est.to_dict()["offset"] == 1.0


def test_tuned_lambda_and_intercept_minimise_the_variance():
    """λ and c tuned together are the minimiser of the summands' variance (checked with
    scipy's optimiser), λ within [0, 1]."""
    from scipy import optimize

    rng = np.random.default_rng(7)
    n = 300
    q = rng.normal(size=n)
    y, f = 3 + q + rng.normal(0, 0.5, n), 2 + q + rng.normal(0, 0.8, n)
    pi = active.inclusion_probabilities(rng.uniform(0.2, 2.0, n), 60)
    xi = active.draw_selection(pi, 8)
    est = active.active_mean(f, pi, xi, y)

    def variance(params):
        return np.var(active.summands(f, pi, xi, y, params[0], params[1]))

    best = optimize.minimize(variance, [0.5, 0.0], method="Nelder-Mead",
                             options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 4000})
    assert 0 <= est.lam <= 1
    assert est.lam == pytest.approx(best.x[0], abs=1e-3)
    assert est.offset == pytest.approx(best.x[1], abs=1e-3)
    # λ given and c not: c = 0 (the paper's prediction λf)
    assert active.active_mean(f, pi, xi, y, lam=0.5).offset == 0.0


@pytest.mark.parametrize("policy", ["uniform", "active"])
def test_a_judge_on_another_scale_covers_and_the_intercept_narrows(policy):
    """Humans on a 1–5 scale (centre 3), the judge on FACE's 0–4 (centre 2), reporting a noisy
    uncertainty; the active policy from the uncertainty predictor fitted on a uniform first
    quarter, as the bench does. 300 pools of 400 units, 80 labels: coverage of the population
    mean 3 within 0.95 ± 0.03; the interval with the tuned intercept is narrower than without."""
    rng = np.random.default_rng(11 if policy == "uniform" else 12)
    hits, widths, without = [], [], []
    for _ in range(300):
        q = rng.normal(size=400)
        sd = np.exp(rng.uniform(np.log(0.24), np.log(2.4), 400))
        y, f = 3 + q + rng.normal(0, 0.5, 400), 2 + q + rng.normal(size=400) * sd
        u = sd * np.exp(rng.normal(0, 0.5, 400))
        if policy == "uniform":
            pi = np.full(400, 0.2)
        else:
            first = rng.random(400) < 0.05
            error = active.predicted_error(f, np.flatnonzero(first), y[first], uncertainty=u)
            pi = active.inclusion_probabilities(error, 80)
        xi = active.draw_selection(pi, int(rng.integers(1 << 30)))
        est = active.active_mean(f, pi, xi, y)
        hits.append(est.ci_low <= 3 <= est.ci_high)
        widths.append(est.ci_high - est.ci_low)
        plain = active.active_mean(f, pi, xi, y, lam=est.lam)  # the same λ, c = 0
        without.append(plain.ci_high - plain.ci_low)
    assert np.mean(hits) == pytest.approx(0.95, abs=0.03)
    assert np.mean(widths) < 0.8 * np.mean(without)


def test_prior_predictor_before_labels_can_fit_by_hand():
    # No label yet, u = 1, 2, 3 and one unit without: ê² = mean(u²) + u² with mean(u²) = 14/3
    # (PRIOR_FLOOR = 1), the unit without one the root mean square of the others, on the judge's
    # own scale; no unit below FLOOR of the root mean square
    f = [2.0, 3.0, 1.0, 4.0]
    model = active.error_model(f, [], [], uncertainty=[1.0, 2.0, 3.0, None])
    assert active.PRIOR_FLOOR == 1.0 and model.predictor == "prior"
    square = 14 / 3 + np.array([1.0, 4.0, 9.0])
    assert model.error[:3] == pytest.approx(np.sqrt(square))
    assert model.error[3] == pytest.approx(np.sqrt(square.mean()))
    assert model.params == {"floor": pytest.approx(14 / 3), "scale": 1.0}
    assert "mean(u²) + u²" in model.description
    # with 3 labels (fewer than MIN_FIT) the same shape, scaled to the labels' root mean squared
    # residual about their least-squares line: Y = 1, 3, 2 on f = 2, 3, 1 → slope 0.5, line
    # 2 + 0.5 (f − 2), residuals −1, 0.5, 0.5 → mean square 0.5
    scaled = active.error_model(f, [0, 1, 2], [1.0, 3.0, 2.0], uncertainty=[1.0, 2.0, 3.0, None])
    assert scaled.predictor == "prior"
    all_squares = np.append(square, square.mean())
    assert scaled.error == pytest.approx(np.sqrt(all_squares / all_squares.mean() * 0.5))
    # an uncertainty that is the same everywhere says nothing: no predictor
    assert active.error_model(f, [], [], uncertainty=[1.0] * 4).predictor == "none"


def test_bernoulli_predictor_is_the_judges_own_spread_at_any_number_of_labels():
    # a probability f whose uncertainty is sqrt(f(1 − f)): ê = u, before labels and after (no
    # α + β u² fitted), scaled to the labels' root mean squared residual once there are 3
    rng = np.random.default_rng(3)
    f = rng.beta(0.5, 2.0, 40)
    u = np.sqrt(f * (1 - f))
    model = active.error_model(f, [], [], uncertainty=u)
    assert model.predictor == "bernoulli" and model.params["floor"] == 0.0
    rms = np.sqrt(np.mean(u ** 2))
    assert model.error == pytest.approx(np.maximum(u, active.FLOOR * rms))
    y = (rng.random(40) < f).astype(float)
    labelled = list(range(30))  # 30 labels: the "prior" judge would be fitted by now
    fitted = active.error_model(f, labelled, y[:30], uncertainty=u)
    assert fitted.predictor == "bernoulli"
    slope = np.cov(f[:30], y[:30])[0, 1] / np.var(f[:30], ddof=1)
    residual = y[:30] - (y[:30].mean() + slope * (f[:30] - f[:30].mean()))
    scale = np.sqrt(np.mean(residual ** 2)) / rms
    assert fitted.params["scale"] == pytest.approx(scale)
    assert fitted.error == pytest.approx(np.maximum(u * scale, active.FLOOR * rms * scale))
    # an uncertainty off the Bernoulli spread is not one: the floored prior, then the fit
    other = u * 1.1
    assert active.error_model(f, [], [], uncertainty=other).predictor == "prior"
    assert active.error_model(f, labelled, y[:30], uncertainty=other).predictor == "uncertainty"
