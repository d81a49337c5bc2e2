"""Intervals respect their scale (issue 30.6): a metric bounded on both sides gets the
jackknife-t interval on the logit scale of its range (`cluster_t_logit_mean`), checked by hand,
at the bounds, on the system page's difficulty tiers and by simulation."""

import math

import numpy as np
import pytest

from evaluation.lib.stats.clustered import (
    BOUNDED_MEAN_METHOD,
    MEAN_METHOD,
    cluster_mean,
    mean_method,
)
from evaluation.lib.stats.methods import METHOD_DESCRIPTIONS, interval_version
from leaderboard.lib import calibration
from leaderboard.lib.rank_tables import ClusterTable
from leaderboard.selectors.systems import system_tiers

T_975 = {4: 2.7764451051977987}  # scipy.stats.t.ppf(0.975, df)


def _expit(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def test_logit_interval_by_hand_on_five_equally_long_dialogues():
    # Dialogue means 1, 1, 0.5, 1, 0.5 (two turns each): mean 0.8. Leaving one out gives 0.75
    # (a 1 left out) or 0.875 (a 0.5 left out); jackknife SE² = 4/5 × Σ (θ_(−g) − 0.8)²
    # = 4/5 × (3 × 0.05² + 2 × 0.075²) = 0.015, df = G − 1 = 4.
    values = [1, 1, 1, 1, 1, 0, 1, 1, 1, 0]
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e"]
    estimate = cluster_mean(values, clusters, bounds=(0.0, 1.0))
    se = math.sqrt(0.015)
    spread = T_975[4] * se / (0.8 * 0.2)
    assert estimate.value == pytest.approx(0.8)
    assert estimate.ci_low == pytest.approx(_expit(math.log(4) - spread), rel=1e-9)
    assert estimate.ci_high == pytest.approx(_expit(math.log(4) + spread), rel=1e-9)
    assert estimate.ci_high < 1.0  # the plain t-interval, 0.8 + 0.34, leaves the range
    plain = cluster_mean(values, clusters)
    assert plain.ci_high == pytest.approx(0.8 + T_975[4] * se) and plain.ci_high > 1.0
    assert estimate.method == BOUNDED_MEAN_METHOD and plain.method == MEAN_METHOD
    assert estimate.params["interval"] == "jackknife_t_logit"


def test_another_range_is_mapped_to_the_unit_interval_first():
    values = [5, 4, 5, 5, 3, 5, 4, 5]
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d"]
    on_scale = cluster_mean(values, clusters, bounds=(1.0, 5.0))
    unit = cluster_mean([(v - 1) / 4 for v in values], clusters, bounds=(0.0, 1.0))
    assert on_scale.value == pytest.approx(1 + 4 * unit.value)
    assert on_scale.ci_low == pytest.approx(1 + 4 * unit.ci_low)
    assert on_scale.ci_high == pytest.approx(1 + 4 * unit.ci_high)
    assert 1.0 < on_scale.ci_low < on_scale.ci_high < 5.0


def test_a_mean_on_a_bound_gets_the_clopper_pearson_interval_of_its_dialogues():
    ones = cluster_mean([1.0] * 12, [f"d{i % 6}" for i in range(12)], bounds=(0.0, 1.0))
    assert (ones.value, ones.ci_high) == (1.0, 1.0)
    assert ones.ci_low == pytest.approx(0.025 ** (1 / 6))  # 6 of 6 dialogues
    zeros = cluster_mean([0.0] * 8, [f"d{i % 4}" for i in range(8)], bounds=(0.0, 1.0))
    assert zeros.ci_low == 0.0 and zeros.ci_high == pytest.approx(1 - 0.025 ** (1 / 4))
    one_dialogue = cluster_mean([1.0, 0.0], ["d", "d"], bounds=(0.0, 1.0))
    assert one_dialogue.ci_low is None and one_dialogue.ci_high is None


def test_one_sided_or_open_ranges_keep_the_plain_interval():
    assert mean_method((0.0, None)) == MEAN_METHOD
    assert mean_method(None) == MEAN_METHOD
    assert mean_method((None, None)) == MEAN_METHOD
    assert mean_method((0.0, 1.0)) == BOUNDED_MEAN_METHOD
    estimate = cluster_mean([0.1, 0.2, 0.0, 0.0], ["a", "a", "b", "c"], bounds=(0.0, None))
    assert estimate.ci_low == 0.0  # cut at the only bound, as before


def test_the_method_is_documented_and_versioned():
    assert "logit" in METHOD_DESCRIPTIONS[BOUNDED_MEAN_METHOD]
    assert interval_version(BOUNDED_MEAN_METHOD) == 1
    assert interval_version(MEAN_METHOD) == 3  # bounded metrics moved away: rows recomputed


def test_system_page_tiers_stay_in_the_range_of_a_share():
    # The case: a hard tier where cgs is near 1 in most dialogues and tsr varies a lot;
    # the plain t-interval printed cgs [0.962, 1.014] and tsr [0.598, 1.027].
    rng = np.random.default_rng(7)
    clusters = [f"d{i:02d}" for i in range(10)]
    counts = rng.integers(2, 9, size=10).astype(float)
    cgs = np.where(np.arange(10) < 8, counts, counts - 1)
    tsr = np.round(counts * np.array([1, 1, 1, 0.5, 1, 1, 0.5, 1, 1, 0.9]))
    table = ClusterTable(["cgs", "tsr"], clusters, np.vstack([cgs, tsr]),
                         np.vstack([counts, counts]))
    tiers = system_tiers(table=table, dialogues=dict.fromkeys(clusters, "hard"))
    for row in tiers["table"]:
        assert row["method"] == BOUNDED_MEAN_METHOD
        low, high = (float(x) for x in row["cells"][0]["ci"].strip("[]").split(", "))
        assert 0.0 <= low <= float(row["cells"][0]["text"]) <= high <= 1.0


def test_coverage_near_the_bound_by_simulation():
    # bench_calibration's `mean_near_bound` row: a share of 0.95 at 10 and 30 dialogues.
    for dialogues, seed in ((10, 1), (30, 2)):
        rng = np.random.default_rng(seed)
        reps = 600
        covered = np.mean([calibration.mean_coverage(rng, dialogues, "near_bound")
                           for _ in range(reps)])
        assert 0.93 <= covered <= 0.99, (dialogues, covered)
