"""PPI++ means (evaluation/lib/stats/ppi.py) against the `ppi-python` package (the paper's
authors' implementation), hand computations of the paper's formulas, and simulation."""

import numpy as np
import pytest
from scipy import stats

from evaluation.lib.stats import clustered, ppi
from evaluation.lib.stats.ppi import AnchoredSample, anchored_mean

ppi_py = pytest.importorskip("ppi_py")


def _draw(rng, n, n_unlabelled, correlation=0.8, bias=0.0):
    human = rng.normal(size=n + n_unlabelled)
    judge = correlation * human + np.sqrt(1 - correlation**2) * rng.normal(size=human.size) + bias
    return human[:n], judge[:n], judge[n:], human.mean()


def _independent(y, f, f_u):
    return AnchoredSample(y, f, list(range(len(y))), f_u,
                          [f"u{j}" for j in range(len(f_u))])


def test_matches_ppi_python_at_the_same_lambda():
    y, f, f_u, _ = _draw(np.random.default_rng(1), 60, 400)
    result = anchored_mean(_independent(y, f, f_u), lam=0.7)
    point = ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=0.7)
    low, high = ppi_py.ppi_mean_ci(y, f, f_u, alpha=0.05, lam=0.7)
    assert result.ppi.value == pytest.approx(float(np.squeeze(point)), abs=1e-12)
    # ppi_py: a normal interval, variances with divisor n (rectifier) and N (imputed part)
    z_half = float(np.squeeze(high - low)) / 2 / stats.norm.ppf(0.975)
    assert z_half**2 == pytest.approx(np.var(y - 0.7 * f) / 60 + 0.49 * np.var(f_u) / 400)
    # here the jackknife of the same linear estimate: divisors n − 1 and N − 1, t(n − 1)
    se = result.ppi.params["se"]
    assert se**2 == pytest.approx(np.var(y - 0.7 * f, ddof=1) / 60
                                  + 0.49 * np.var(f_u, ddof=1) / 400, rel=1e-10)
    assert result.ppi.params["df"] == pytest.approx(59)
    assert result.ppi.ci_high - result.ppi.value == pytest.approx(stats.t.ppf(0.975, 59) * se)


def _brute_force(y, f, clusters, f_u, u_clusters, lam=None):
    """θ̂ and its stratified jackknife variance, by deleting each dialogue and recomputing
    (λ re-tuned in each, when LAM is None): a loop over the paper's formulas."""
    y, f, f_u = map(np.asarray, (y, f, f_u))
    clusters, u_clusters = np.asarray(clusters), np.asarray(u_clusters)

    def estimate(keep_l, keep_u):
        yy, ff, uu = y[keep_l], f[keep_l], f_u[keep_u]
        if lam is not None:
            chosen = lam
        else:
            every = sorted(set(clusters[keep_l]) | set(u_clusters[keep_u]))
            a = np.array([(yy[clusters[keep_l] == g] - yy.mean()).sum() / len(yy)
                          for g in every])
            b = np.array([(uu[u_clusters[keep_u] == g] - uu.mean()).sum() / len(uu)
                          - (ff[clusters[keep_l] == g] - ff.mean()).sum() / len(yy)
                          for g in every])
            chosen = float(np.clip(-(a @ b) / (b @ b), 0, 1))
        return yy.mean() + chosen * (uu.mean() - ff.mean())

    theta = estimate(np.ones(len(y), bool), np.ones(len(f_u), bool))
    variance = 0.0
    for stratum in (sorted(set(clusters)), sorted(set(u_clusters) - set(clusters))):
        outs = np.array([estimate(clusters != g, u_clusters != g) for g in stratum])
        if len(outs) > 1:
            variance += (len(outs) - 1) / len(outs) * ((outs - outs.mean())**2).sum()
    return theta, variance


def test_power_tuned_lambda_is_the_papers_closed_form():
    y, f, f_u, _ = _draw(np.random.default_rng(2), 300, 3000)
    result = anchored_mean(_independent(y, f, f_u))
    n, big_n = len(y), len(f_u)
    # Cov(Y, f) / (Var_L(f) + n/N Var_U(f)), divisors n and N (hand computation)
    covariance = np.mean((y - y.mean()) * (f - f.mean()))
    by_hand = covariance / (f.var() + n / big_n * f_u.var())
    assert result.lam == pytest.approx(by_hand, rel=1e-12)
    # ppi_py estimates Var(f) pooled over both parts (the same λ in the limit; on 300 labels
    # the labelled part's variance differs from the pooled one by a few percent)
    y, f, f_u, _ = _draw(np.random.default_rng(2), 5000, 50000)
    result = anchored_mean(_independent(y, f, f_u))
    reference = ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=None)
    assert result.ppi.value == pytest.approx(float(np.squeeze(reference)), abs=2e-3)
    pooled = ppi_py.ppi._calc_lam_glm(y - y.mean(), f - y.mean(), f_u - y.mean(), np.eye(1),
                                      clip=True)
    assert result.lam == pytest.approx(pooled, abs=0.01)


def test_a_noise_judge_falls_back_to_the_human_only_mean():
    rng = np.random.default_rng(3)
    ratios, lambdas = [], []
    for _ in range(50):
        y, f, f_u, _ = _draw(rng, 40, 400, correlation=0.0, bias=1.5)
        result = anchored_mean(_independent(y, f, f_u))
        width = result.ppi.ci_high - result.ppi.ci_low
        ratios.append(width / (result.human_only.ci_high - result.human_only.ci_low))
        lambdas.append(result.lam)
    assert max(ratios) <= 1.0 + 1e-12  # never wider: λ = 0 is feasible
    assert np.median(lambdas) < 0.1
    at_zero = anchored_mean(_independent(y, f, f_u), lam=0.0)
    assert at_zero.ppi.value == pytest.approx(y.mean())
    assert (at_zero.ppi.ci_low, at_zero.ppi.ci_high) == pytest.approx(
        (at_zero.human_only.ci_low, at_zero.human_only.ci_high))
    t_interval = stats.t.interval(0.95, len(y) - 1, loc=y.mean(), scale=stats.sem(y))
    assert (at_zero.human_only.ci_low, at_zero.human_only.ci_high) == pytest.approx(t_interval)


def test_a_good_judge_is_worth_more_labels():
    y, f, f_u, _ = _draw(np.random.default_rng(4), 50, 2000, correlation=0.9, bias=-2.0)
    result = anchored_mean(_independent(y, f, f_u))
    assert result.lam > 0.7
    assert result.effective_labels > 2 * len(y)
    variance_ratio = ((result.human_only.ci_high - result.human_only.ci_low)
                      / (result.ppi.ci_high - result.ppi.ci_low)) ** 2
    assert result.effective_labels == pytest.approx(len(y) * variance_ratio)
    assert result.evaluator_only.value == pytest.approx(np.concatenate([f, f_u]).mean())
    assert result.to_dict()["n_unlabelled"] == 2000


def test_turns_clustered_by_dialogue_equal_ppi_on_dialogue_means():
    """Whole dialogues labelled or not, 4 turns each: the turn-level clustered estimate is the
    unit-level one on dialogue means (the paper's formulas on the cluster means)."""
    rng = np.random.default_rng(5)
    g, g_u, m = 30, 200, 4
    effect = rng.normal(size=g + g_u)
    human = np.repeat(effect, m) + rng.normal(size=(g + g_u) * m)
    judge = 0.8 * human + rng.normal(size=human.size) * 0.5
    dialogues = np.repeat(np.arange(g + g_u), m)
    split = g * m
    turns = anchored_mean(AnchoredSample(human[:split], judge[:split], dialogues[:split],
                                         judge[split:], dialogues[split:]))
    means = anchored_mean(_independent(human[:split].reshape(g, m).mean(1),
                                       judge[:split].reshape(g, m).mean(1),
                                       judge[split:].reshape(g_u, m).mean(1)))
    assert turns.lam == pytest.approx(means.lam)
    assert turns.ppi.value == pytest.approx(means.ppi.value)
    assert (turns.ppi.ci_low, turns.ppi.ci_high) == pytest.approx((means.ppi.ci_low,
                                                                   means.ppi.ci_high))
    ignoring = anchored_mean(_independent(human[:split], judge[:split], judge[split:]))
    assert (ignoring.ppi.ci_high - ignoring.ppi.ci_low) < (turns.ppi.ci_high - turns.ppi.ci_low)


@pytest.mark.parametrize("lam", [0.5, None])
def test_the_jackknife_by_brute_force_with_mixed_dialogues(lam):
    """Dialogues with labelled and unlabelled turns, unequal lengths; λ fixed or re-tuned."""
    rng = np.random.default_rng(9)
    effect = rng.normal(size=30)  # dialogues 0–11 hold labelled turns, 6–29 unlabelled ones
    clusters = list(rng.integers(0, 12, size=40))
    u_clusters = list(rng.integers(6, 30, size=150))
    y = effect[clusters] + rng.normal(size=40)
    f = 0.8 * y + 0.5 * rng.normal(size=40)
    f_u = 0.8 * (effect[u_clusters] + rng.normal(size=150)) + 0.5 * rng.normal(size=150)
    result = anchored_mean(AnchoredSample(y, f, clusters, f_u, u_clusters), lam=lam)
    theta, variance = _brute_force(y, f, clusters, f_u, u_clusters, lam)
    assert not result.ppi.params["fallback_to_human_only"] and result.lam > 0.1
    assert result.ppi.value == pytest.approx(theta, rel=1e-10)
    assert result.ppi.params["se"] ** 2 == pytest.approx(variance, rel=1e-9)
    # a judge whose unlabelled scores behave unlike its labelled ones: no gain, human-only
    shifted = anchored_mean(AnchoredSample(y, f, clusters, f_u * 3 + 5, u_clusters))
    if shifted.ppi.params["fallback_to_human_only"]:
        assert shifted.ppi.value == pytest.approx(np.mean(y)) and shifted.lam == 0.0


def test_the_human_only_mean_is_the_leaderboards_cluster_mean():
    rng = np.random.default_rng(10)
    clusters = list(np.repeat(np.arange(15), rng.integers(2, 9, size=15)))
    y = rng.normal(size=len(clusters))
    result = anchored_mean(AnchoredSample(y, y + 1, clusters, [0.5, 1.5], [90, 91]))
    reference = clustered.cluster_mean(y, clusters)
    assert (result.human_only.value, result.human_only.ci_low, result.human_only.ci_high) == \
        pytest.approx((reference.value, reference.ci_low, reference.ci_high), rel=1e-10)


def test_coverage_by_simulation():
    rng = np.random.default_rng(6)
    hits, reps = 0, 400
    for _ in range(reps):
        y, f, f_u, truth = _draw(rng, 40, 400, correlation=0.6, bias=0.5)
        # truth: the humans' mean over all units, which is what PPI++ estimates
        result = anchored_mean(_independent(y, f, f_u))
        hits += result.ppi.ci_low <= 0.0 <= result.ppi.ci_high
    assert 0.92 <= hits / reps <= 0.98


def test_differences_and_ranks():
    rng = np.random.default_rng(7)
    systems = {}
    for name, shift in (("low", 0.0), ("same", 0.0), ("high", 1.0)):
        y, f, f_u, _ = _draw(rng, 80, 800, correlation=0.8)
        systems[name] = anchored_mean(_independent(y + shift, f + shift, f_u + shift))
    difference = ppi.anchored_difference(systems["high"], systems["low"])
    assert difference.value == pytest.approx(systems["high"].ppi.value
                                             - systems["low"].ppi.value)
    assert difference.ci_excludes(0) and difference.params["p_value"] < 0.01
    ranked = {row.system: row for row in ppi.anchored_ranking(systems)}
    assert ranked["high"].rank == 1
    assert ranked["low"].rank == ranked["same"].rank == 2
    assert set(ranked["low"].significantly_better) == {"high"}


def test_a_shared_dialogue_effect_cancels_in_the_difference():
    rng = np.random.default_rng(8)
    effect = rng.normal(scale=3.0, size=100)  # the dialogue's difficulty, shared by systems
    results = []
    for shift in (0.0, 0.3):
        human = effect + shift + rng.normal(scale=0.3, size=100)
        judge = human + rng.normal(scale=0.3, size=100)
        results.append(anchored_mean(AnchoredSample(human[:40], judge[:40], range(40),
                                                    judge[40:], range(40, 100))))
    difference = ppi.anchored_difference(results[1], results[0])
    independent = np.hypot(results[0].ppi.params["se"], results[1].ppi.params["se"])
    assert difference.params["se"] < independent / 3
    assert difference.ci_excludes(0)


def test_bad_input_and_too_few_labels():
    with pytest.raises(ValueError, match="one entry per unit"):
        AnchoredSample([1, 2], [1], ["a", "b"])
    with pytest.raises(ValueError, match="finite"):
        anchored_mean(AnchoredSample([1, float("nan")], [1, 2], ["a", "b"]))
    one = anchored_mean(AnchoredSample([3.0], [2.0], ["a"], [1.0], ["b"]))
    assert one.ppi.value is None and "fewer than two" in one.ppi.undefined_reason
    assert one.evaluator_only.value == pytest.approx(1.5)
    assert ppi.anchored_ranking({"A": one})[0].rank is None


def test_keep_labelled_share_is_seeded():
    keys = [("s", f"d{k}") for k in range(50)]
    kept = ppi.keep_labelled_share(keys, 0.2, 3)
    assert len(kept) == 10 and kept == ppi.keep_labelled_share(list(reversed(keys)), 0.2, 3)
    assert kept != ppi.keep_labelled_share(keys, 0.2, 4)
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        ppi.keep_labelled_share(keys, 0.0, 1)
