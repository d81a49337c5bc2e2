"""bench_calibration's "label these next" designs (leaderboard/lib/calibration_active.py): each
judge correlates about 0.6 with the humans, and each design's bound 1 − (E ê)²/E ê² (what the
oracle's simulated saving is checked against) equals its closed form."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from evaluation.lib.stats import active_handout
from leaderboard.lib import calibration_active as ca


@pytest.mark.parametrize("design", list(ca.DESIGNS))
def test_every_judge_correlates_about_0_6_with_the_humans(design):
    assert ca.judge_correlation(design) == pytest.approx(ca.RHO, abs=0.02)


def test_bound_of_the_two_level_judges_by_formula():
    # ê² = (1 − λ)² + h² + λ² s², λ = 1/(1 + E s²); two values of s with shares (share, 1 − share)
    for design in ("even", "mixed", "failures"):
        d = ca.DESIGNS[design]
        lam = 1 / (1 + d.share * d.hard ** 2 + (1 - d.share) * d.easy ** 2)
        e = np.sqrt((1 - lam) ** 2 + d.human_sd ** 2 + lam ** 2 * np.array([d.hard, d.easy]) ** 2)
        w = np.array([d.share, 1 - d.share])
        expected = 1 - (w @ e) ** 2 / (w @ e ** 2)
        assert ca.bound(design) == pytest.approx(expected, abs=0.003)
    assert ca.bound("even") == pytest.approx(0.0, abs=1e-9)


def test_bound_of_the_likert_judge_by_integration():
    d = ca.DESIGNS["uncertain"]
    low, high = math.log(d.low), math.log(d.low * ca.LIKERT_RANGE)
    mean_square = d.low ** 2 * (ca.LIKERT_RANGE ** 2 - 1) / (2 * math.log(ca.LIKERT_RANGE))
    lam = 1 / (1 + mean_square)
    # ρ = 0.6 by construction: corr² = 1 / ((1 + h²)(1 + E s²))
    assert 1 / ((1 + d.human_sd ** 2) * (1 + mean_square)) == pytest.approx(0.36)

    def moment(power):
        return integrate.quad(lambda t: ((1 - lam) ** 2 + d.human_sd ** 2
                                         + lam ** 2 * math.exp(2 * t)) ** (power / 2),
                              low, high)[0] / (high - low)

    assert ca.bound("uncertain") == pytest.approx(1 - moment(1) ** 2 / moment(2), abs=0.002)


def test_bound_of_the_yes_no_judge_by_formula():
    # p ~ Beta(a, b), ê = sqrt(p(1 − p)): E ê = B(a + ½, b + ½)/B(a, b), E ê² = ab/((a+b)(a+b+1))
    a, b = ca._beta_shape()
    assert a / (a + b) == pytest.approx(87 / 474) and 1 / (a + b + 1) == pytest.approx(0.36)
    mean = math.exp(special.betaln(a + 0.5, b + 0.5) - special.betaln(a, b))
    expected = 1 - mean ** 2 / (a * b / ((a + b) * (a + b + 1)))
    assert expected == pytest.approx(0.305, abs=0.001)
    assert ca.bound("binary") == pytest.approx(expected, abs=0.005)


def test_the_likert_judge_reports_a_noisy_version_of_its_error():
    y, f, reported, sd = ca.simulate_pool(np.random.default_rng(1), "uncertain", 20000)
    ratio = np.log(reported / sd)
    assert ratio.std() == pytest.approx(ca.REPORT_NOISE, abs=0.02)
    assert sd.max() / sd.min() == pytest.approx(ca.LIKERT_RANGE, rel=0.01)
    assert y.mean() == pytest.approx(3.0, abs=0.03) and f.mean() == pytest.approx(2.0, abs=0.05)
    assert ca.simulate_pool(np.random.default_rng(1), "mixed")[2] is None  # reports nothing


def test_the_retuned_bound_by_hand_for_the_failures_judge():
    # ê_λ² = (1 − λ)² + 0.3² + λ² s², s = 4 on 10% of units and 0.2 elsewhere: (E ê_λ)² minimised
    # over a fine grid of λ, against E ê² at λ = 1/(1 + E s²); never below the fixed-λ bound
    grid = np.linspace(0, 1, 100001)
    mean = (0.1 * np.sqrt((1 - grid) ** 2 + 0.09 + 16 * grid ** 2)
            + 0.9 * np.sqrt((1 - grid) ** 2 + 0.09 + 0.04 * grid ** 2))
    lam = 1 / (1 + 0.1 * 16 + 0.9 * 0.04)
    uniform = (1 - lam) ** 2 + 0.09 + lam ** 2 * (0.1 * 16 + 0.9 * 0.04)
    assert ca.bound_retuned("failures") == pytest.approx(1 - (mean ** 2).min() / uniform,
                                                         abs=0.005)
    for design in ca.DESIGNS:
        assert ca.bound_retuned(design) >= ca.bound(design) - 1e-9
    assert ca.bound_retuned("binary") == ca.bound("binary")


@pytest.mark.parametrize("design", ["binary", "uncertain", "mixed"])
def test_the_bench_runs_the_study_waves_plan_wave_plans(design):
    """The bench's active policy is the study's: wave by wave, its π equal `plan_wave`'s on the
    same pool, split and labels of the waves before (the judge's uncertainty drives wave 1
    where it reports one; quintiles of f from wave 2 where it does not)."""
    rng = np.random.default_rng(17)
    y, f, reported, _ = ca.simulate_pool(rng, design, 400)
    wave, pi, drawn, predictors = ca.study_waves(rng, y, f, reported, 120)
    waves_of = {k: int(wave[k]) for k in range(400)}
    for number in range(1, ca.WAVES + 1):
        before = drawn & (wave < number)
        pool = [active_handout.PoolUnit(k, "S", float(f[k]), float(y[k]) if before[k] else None,
                                        None if reported is None else float(reported[k]))
                for k in range(400)]
        planned = {d.key: d for d in active_handout.plan_wave(pool, waves_of, wave=number,
                                                              budget=120, seed=number)}
        inside = np.flatnonzero(wave == number)
        assert sorted(planned) == list(inside)
        assert [planned[k].pi for k in inside] == pytest.approx(list(pi[inside]), rel=1e-12)
        assert {planned[k].predictor for k in inside} == {predictors[number - 1]}
    expected = {"binary": ["bernoulli"] * 4, "uncertain": ["prior"] + ["uncertainty"] * 3,
                "mixed": ["none"] + ["quintiles"] * 3}[design]
    assert predictors == expected
    assert pi.sum() == pytest.approx(120)
    if design != "mixed":
        first = pi[wave == 1]
        assert first.max() > 1.5 * first.min()  # wave 1 already follows the uncertainty
