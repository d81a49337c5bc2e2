"""A study's active handout in waves (evaluation/lib/stats/active_handout.py; Zrnic & Candès
2024, the sequential form): the split into waves, each wave's inclusion probabilities, the
weighted estimate by hand, and — through the same `plan_wave` the study's handout calls, wave by
wave, each wave's error model fitted on the labels of the waves before — coverage of the 95%
interval 0.95 ± 0.03 over 400 simulated studies, for a system's mean and for a difference."""

from collections import Counter

import numpy as np
import pytest

from evaluation.lib.stats import active, active_handout
from evaluation.lib.stats.methods import INTERVAL_PHRASES, METHOD_DESCRIPTIONS


def test_every_unit_is_in_one_wave_and_each_system_splits_evenly():
    units = [("A", k) for k in range(10)] + [("B", 100 + k) for k in range(7)]
    waves = active_handout.assign_waves(units, seed=3)
    assert set(waves) == {k for _, k in units} and set(waves.values()) == {1, 2, 3, 4}
    sizes_a = Counter(waves[k] for g, k in units if g == "A")
    sizes_b = Counter(waves[k] for g, k in units if g == "B")
    assert sorted(sizes_a.values()) == [2, 2, 3, 3] and sorted(sizes_b.values()) == [1, 2, 2, 2]
    assert active_handout.assign_waves(units, seed=3) == waves  # fixed by the pool and seed
    assert active_handout.assign_waves(units, seed=4) != waves


def test_wave_one_without_an_uncertainty_is_uniform_and_later_waves_follow_the_error():
    rng = np.random.default_rng(5)
    f = rng.normal(size=80)
    pool = [active_handout.PoolUnit(k, "A", float(f[k])) for k in range(80)]
    waves = active_handout.assign_waves([("A", u.key) for u in pool], seed=1)
    first = active_handout.plan_wave(pool, waves, wave=1, budget=20, seed=9)
    assert {d.key for d in first} == {k for k, w in waves.items() if w == 1}
    assert all(d.pi == pytest.approx(20 / 80) for d in first)
    assert all(d.predicted_error is None and d.predictor == "none" for d in first)
    assert first == active_handout.plan_wave(pool, waves, wave=1, budget=20, seed=9)
    # labels of the units of waves 1, 3 and 4 (60): the evaluator is badly wrong where f > 0.8
    y = {k: f[k] + (3.0 if f[k] > 0.8 else 0.1) * (-1) ** k for k in range(80)}
    pool = [active_handout.PoolUnit(u.key, "A", u.score, y[u.key] if waves[u.key] != 2
                                    else None) for u in pool]
    second = active_handout.plan_wave(pool, waves, wave=2, budget=20, seed=9)
    assert {d.key for d in second} == {k for k, w in waves.items() if w == 2}
    # the wave spends its share of the budget: 20 × (its units) / 80
    assert sum(d.pi for d in second) == pytest.approx(20 * len(second) / 80)
    index = [i for i, u in enumerate(pool) if u.label is not None]
    error = active.predicted_error([u.score for u in pool], index,
                                   [pool[i].label for i in index])  # 60 labels: 5 bins
    chunk = [d.key for d in second]
    expected = active.inclusion_probabilities(error[chunk], 20 * len(chunk) / 80)
    assert [d.pi for d in second] == pytest.approx(list(expected))
    assert [d.predicted_error for d in second] == pytest.approx(list(error[chunk]))
    hard = [d.pi for d in second if f[d.key] > 0.8]
    easy = [d.pi for d in second if f[d.key] < 0.5]
    assert hard and easy and min(hard) > max(easy)  # more labels where the judge errs
    # with fewer than 10 labels a system's ê is one number: π stays uniform
    few = [active_handout.PoolUnit(u.key, "A", u.score, u.label if u.key < 8 else None)
           for u in pool]
    assert len({round(d.pi, 9) for d in active_handout.plan_wave(few, waves, wave=2,
                                                                 budget=20, seed=9)}) == 1


@pytest.mark.parametrize("kind", ["prior", "bernoulli"])
def test_wave_one_of_a_judge_reporting_its_uncertainty_follows_it(kind):
    # 80 units of one system and 40 of another, no label yet: wave 1's π of each system is
    # inclusion_probabilities of the prior ê (error_model with no label) over its wave-1 units,
    # the wave spending 30 × (its units) / 120; not uniform
    rng = np.random.default_rng(8)
    f = rng.uniform(0.02, 0.98, 120) if kind == "bernoulli" else rng.normal(size=120)
    u = np.sqrt(f * (1 - f)) if kind == "bernoulli" else np.exp(rng.uniform(-1, 1, 120))
    group = ["A" if k < 80 else "B" for k in range(120)]
    pool = [active_handout.PoolUnit(k, group[k], float(f[k]), None, float(u[k]))
            for k in range(120)]
    waves = active_handout.assign_waves([(g, k) for k, g in enumerate(group)], seed=2)
    first = {d.key: d for d in active_handout.plan_wave(pool, waves, wave=1, budget=30, seed=4)}
    assert set(first) == {k for k, w in waves.items() if w == 1}
    for name, keys in (("A", range(80)), ("B", range(80, 120))):
        keys = list(keys)
        model = active.error_model(f[keys], [], [], uncertainty=u[keys])
        assert model.predictor == kind
        chunk = [i for i, k in enumerate(keys) if waves[k] == 1]
        expected = active.inclusion_probabilities(model.error[chunk], 30 * len(chunk) / 120)
        assert [first[keys[i]].pi for i in chunk] == pytest.approx(list(expected))
        assert [first[keys[i]].predicted_error for i in chunk] == pytest.approx(
            list(model.error[chunk]))
        assert {first[keys[i]].predictor for i in chunk} == {kind}
        assert max(expected) > 1.5 * min(expected), name  # not uniform
    assert sum(d.pi for d in first.values()) == pytest.approx(30 * len(first) / 120)


def test_an_unscored_unit_gets_the_largest_predicted_error():
    pool = [active_handout.PoolUnit(k, "A", float(k % 5), float(k % 5) + (k % 3))
            for k in range(30)] + [active_handout.PoolUnit(99, "A", None)]
    probabilities = active_handout.wave_probabilities(pool, {0, 1, 2, 99}, budget=10,
                                                      active_rule=True)
    assert probabilities[99][1] == max(e for _, e in probabilities.values())


def test_the_estimate_by_hand():
    # Pool of 4 units in 4 dialogues: f = 1, 2, 3, 4; units 0, 2, 3 drawn (π = 0.5, 1, 0.25)
    # with Y = 2, 3, 5. λ = 0 is the Horvitz–Thompson mean (2/0.5 + 3/1 + 5/0.25) / 4 = 6.75.
    result = active_handout.ipw_mean([1, 2, 3, 4], [0.5, 0.5, 1.0, 0.25],
                                     [True, False, True, True], [2, None, 3, 5],
                                     ["a", "b", "c", "d"])
    assert result.human_only.value == pytest.approx(6.75)
    # λ and the intercept c tuned together: Z(λ, c) = a + λ b + c d with a = Y ξ/π,
    # b = f (1 − ξ/π), d = 1 − ξ/π; least squares of −a on (b, d), λ clipped to [0, 1], c refitted
    a = np.array([4.0, 0.0, 3.0, 20.0])
    b = np.array([1 * (1 - 2), 2.0, 0.0, 4 * (1 - 4)])
    d = np.array([1 - 2, 1.0, 0.0, 1 - 4])
    design = np.column_stack([b - b.mean(), d - d.mean()])
    lam = float(np.clip(np.linalg.lstsq(design, -(a - a.mean()), rcond=None)[0][0], 0, 1))
    c = -np.cov(a + lam * b, d, ddof=0)[0, 1] / np.var(d)
    z = a + lam * b + c * d
    assert result.lam == pytest.approx(lam)
    assert result.estimate.params["offset"] == pytest.approx(c)
    assert result.estimate.value == pytest.approx(z.mean())
    se = np.sqrt(4 / 3 * np.sum((z - z.mean()) ** 2)) / 4  # one unit a dialogue: sd(z)/√n
    assert se == pytest.approx(z.std(ddof=1) / 2)
    assert result.estimate.ci_high - result.estimate.value == pytest.approx(1.959964 * se,
                                                                           rel=1e-5)
    assert result.estimate.method == "active_ipw_mean"
    assert result.estimate.params["interval"] in INTERVAL_PHRASES
    assert "Zrnic" in METHOD_DESCRIPTIONS["active_ipw_mean"]
    assert result.evaluator_only.value == pytest.approx(2.5)
    with pytest.raises(ValueError, match="label"):
        active_handout.ipw_mean([1, 2], [0.5, 0.5], [True, True], [1, None], ["a", "b"])


def test_every_method_it_prints_is_described_with_its_interval():
    for method in (active_handout.MEAN_METHOD, active_handout.HUMAN_METHOD,
                   active_handout.DIFFERENCE_METHOD, active_handout.RANK_METHOD):
        assert INTERVAL_PHRASES[active_handout.INTERVAL] in METHOD_DESCRIPTIONS[method], method
    assert "Zrnic & Candès 2024" in active_handout.LABEL


def test_a_difference_pools_both_systems_per_dialogue():
    # two systems on the same three dialogues, every unit drawn with π = 1: the difference's
    # SE is the clustered sandwich of the per-dialogue differences (Y_A − Y_B)/n
    ya, yb = [3.0, 1.0, 2.0], [1.0, 1.0, 0.0]
    a = active_handout.ipw_mean([0, 0, 0], [1, 1, 1], [True] * 3, ya, ["d1", "d2", "d3"])
    b = active_handout.ipw_mean([0, 0, 0], [1, 1, 1], [True] * 3, yb, ["d1", "d2", "d3"])
    difference = active_handout.ipw_difference(a, b)
    d = np.array(ya) - np.array(yb)
    assert difference.value == pytest.approx(d.mean())
    se = np.sqrt(3 / 2 * np.sum(((d - d.mean()) / 3) ** 2))
    assert difference.params["se"] == pytest.approx(se)
    ranking = active_handout.ipw_ranking({"A": a, "B": b})
    assert [row.system for row in ranking] == ["A", "B"]
    assert ranking[0].estimate.method == "active_ipw_holm_tie_aware_rank"


def simulate_study(rng, *, systems=("A", "B"), dialogues=100, turns=2, budget=90,
                   effect=0.0, reports=False):
    """One simulated study through the handout's pure path: per system a pool of
    DIALOGUES × TURNS units (Y = q + noise with a dialogue effect, a judge f = q + e whose error
    is large on 30% of units; with REPORTS it states a noisy version of its error sd, so wave 1
    already follows it), split into waves; each wave planned by `plan_wave` from the labels of
    the waves before, its drawn units then labelled. Returns each system's IPWResult and its
    population mean."""
    pools, truth, y_all, clusters = [], {}, {}, {}
    for s, system in enumerate(systems):
        dialogue = np.repeat(rng.normal(0, 0.5, dialogues), turns)
        q = rng.normal(size=dialogues * turns) + dialogue + effect * s
        y = q + rng.normal(0, 0.5, q.size)
        hard = rng.random(q.size) < 0.3
        sd = np.where(hard, 2.0, 0.25)
        f = q + rng.normal(size=q.size) * sd
        u = sd * np.exp(rng.normal(0, 0.5, q.size)) if reports else [None] * q.size
        truth[system] = effect * s
        for k in range(q.size):
            key = (system, k)
            pools.append(active_handout.PoolUnit(key, system, float(f[k]),
                                                 uncertainty=None if u[k] is None
                                                 else float(u[k])))
            y_all[key] = float(y[k])
            clusters[key] = (k // turns)
    seed = int(rng.integers(1 << 30))
    waves = active_handout.assign_waves([(u.group, u.key) for u in pools], seed=seed)
    draws = {}
    for number in range(1, active_handout.WAVES + 1):
        pool = [active_handout.PoolUnit(u.key, u.group, u.score,
                                        y_all[u.key] if draws.get(u.key, (0, False))[1]
                                        else None, u.uncertainty) for u in pools]
        for d in active_handout.plan_wave(pool, waves, wave=number, budget=budget * len(
                systems), seed=seed + number):
            draws[d.key] = (d.pi, d.drawn)
    results = {}
    for system in systems:
        keys = [u.key for u in pools if u.group == system]
        results[system] = active_handout.ipw_mean(
            [u.score for u in pools if u.group == system],
            [draws[k][0] for k in keys], [draws[k][1] for k in keys],
            [y_all[k] if draws[k][1] else None for k in keys], [clusters[k] for k in keys])
    return results, truth


@pytest.mark.parametrize("reports", [False, True], ids=["quantiles", "reported_uncertainty"])
def test_the_waves_interval_covers_at_95_percent(reports):
    """400 simulated studies of two systems (200 turns in 100 dialogues each, 90 labels each in
    expectation, four waves; the judge reporting its uncertainty or not): the 95% interval of
    each system's mean and of their difference covers the truth 0.95 ± 0.03 of the time, and
    the estimate is unbiased."""
    rng = np.random.default_rng(2026 + reports)
    hits, difference_hits, errors, labels = [], [], [], []
    for _ in range(400):
        results, truth = simulate_study(rng, effect=0.3, reports=reports)
        for system, result in results.items():
            est = result.estimate
            hits.append(est.ci_low <= truth[system] <= est.ci_high)
            errors.append(est.value - truth[system])
            labels.append(result.n_labelled)
        difference = active_handout.ipw_difference(results["B"], results["A"])
        difference_hits.append(difference.ci_low <= 0.3 <= difference.ci_high)
    assert abs(np.mean(hits) - 0.95) <= 0.03, np.mean(hits)
    assert abs(np.mean(difference_hits) - 0.95) <= 0.03, np.mean(difference_hits)
    assert abs(np.mean(errors)) < 3 * np.std(errors) / np.sqrt(len(errors))
    assert 80 <= np.mean(labels) <= 100  # the budget of 90 per system is spent


def test_a_judge_that_reports_its_uncertainty_drives_the_active_rule():
    # 40 units, the judge's error sd u_k (0.1 or 1.0, alternating in blocks) known to it: the
    # residuals follow u, so ê = sqrt(α + β u²) (active.error_model), not one number per score
    # bin, and π follows u, as the label plan projects it
    rng = np.random.default_rng(4)
    u = np.where(np.arange(40) % 4 < 2, 0.1, 1.0)
    f = rng.uniform(1, 5, 40)
    y = f + rng.normal(0, u)
    pool = [active_handout.PoolUnit(k, "A", float(f[k]), float(y[k]) if k < 24 else None,
                                    float(u[k])) for k in range(40)]
    chunk = set(range(24, 40))
    probabilities = active_handout.wave_probabilities(pool, chunk, budget=12, active_rule=True)
    index = list(range(24))
    model = active.error_model(list(f), index, list(y[:24]), uncertainty=list(u))
    assert model.predictor == "uncertainty"
    assert [probabilities[k][1] for k in sorted(chunk)] == pytest.approx(
        list(model.error[sorted(chunk)]))
    sure = [probabilities[k][0] for k in chunk if u[k] < 0.5]
    unsure = [probabilities[k][0] for k in chunk if u[k] > 0.5]
    assert min(unsure) > 2 * max(sure)
