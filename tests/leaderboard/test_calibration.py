"""bench_calibration: a smoke run through the same code paths the pages use (the documented run,
1,000 repetitions, is in docs/statistics.md)."""

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy import stats

from leaderboard.lib.calibration import (
    TRUE_PEARSON,
    TRUE_SPEARMAN,
    Check,
    _correlated_units,
    report_text,
    run_checks,
)


def test_smoke_run_prints_every_check_at_every_dialogue_count(capsys):
    call_command("bench_calibration", "--reps", "20", "--dialogues", "10", "30", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["reps"] == 20
    keys = {check["key"] for check in payload["checks"]}
    assert {"mean_gaussian", "mean_binary", "diff_gaussian", "fwer_gaussian", "corr_spearman",
            "metric_board"} <= keys
    for check in payload["checks"]:
        assert set(check["values"]) == {"10", "30"}
        if check["kind"] in ("ratio", "saving", "reference"):  # e.g. a share of labels saved:
            continue  # signed
        assert all(value is None or 0.0 <= value <= 1.0 for value in check["values"].values())
    coverage = [c["values"]["30"] for c in payload["checks"] if c["kind"] == "coverage"
                and not c["key"].startswith("active_")]  # active: once per run, at 10 only
    assert None not in coverage  # at 30 units every design shows intervals
    assert min(coverage) >= 0.75  # 20 repetitions: loose, but a broken interval fails it


def test_table_marks_figures_outside_the_goal():
    check = Check("c", "coverage check", "coverage", "somewhere", {10: 0.80, 30: 0.95})
    text = report_text([check], reps=1000)
    assert "0.800!" in text and "0.950 " in text


def test_population_correlations_of_the_simulation_design():
    # The metric adds noise of the human's variance: Pearson 1/sqrt(2); Spearman for a bivariate
    # normal is 6/pi asin(rho/2). Checked on one large simulated study.
    rng = np.random.default_rng(0)
    _, human, (metric,), _ = _correlated_units(rng, 20000, [np.sqrt(2.0)])
    assert stats.pearsonr(human, metric).statistic == pytest.approx(TRUE_PEARSON, abs=0.01)
    assert stats.spearmanr(human, metric).statistic == pytest.approx(TRUE_SPEARMAN, abs=0.01)


def test_checks_are_reproducible():
    # Two simulated studies per check, as with five: a stream that is not seeded changes the
    # continuous figures (widths, ratios, savings, arena votes) from one run to the next.
    first = run_checks(2, dialogue_counts=(10,))
    again = run_checks(2, dialogue_counts=(10,))
    assert [c.values for c in first] == [c.values for c in again]


@pytest.mark.parametrize(("keys", "reps", "code_path"), [
    # alpha: 20 studies of 10 units; arena: 10 arenas of 100 votes, 9 intervals each.
    (["alpha_interval", "alpha_nominal", "alpha_categories"], 20, "agreement.alpha_with_ci"),
    (["arena_bt", "arena_elo"], 10, "arena.arena_table"),
    (["validity_tau", "validity_spearman"], 10, "simulator_validity"),
    (["validity_labels_tau", "validity_labels_spearman"], 10, "simulator_validity labels"),
])
def test_checks_run_through_the_page_code_path_and_can_run_alone(capsys, keys, reps, code_path):
    call_command("bench_calibration", "--reps", str(reps), "--dialogues", "10", "--only", *keys,
                 "--json")
    payload = json.loads(capsys.readouterr().out)
    # a yes/no or Bradley–Terry row comes with the share of studies given an interval
    assert [c["key"] for c in payload["checks"] if c["kind"] != "shown"] == keys
    assert all(code_path in c["code_path"] for c in payload["checks"])
    assert all(c["values"]["10"] >= 0.75 for c in payload["checks"]
               if c["kind"] != "shown")  # a broken interval fails


def test_an_unknown_check_is_refused():
    with pytest.raises(CommandError, match="unknown check"):
        call_command("bench_calibration", "--reps", "1", "--only", "alpha_ratio")


def test_population_alpha_of_the_design():
    # Interval: unit variance 0.6 over total 1. Nominal: the bivariate-normal value agrees with
    # one large simulated study.
    from evaluation.lib.stats.agreement import compute_alpha
    from leaderboard.lib.calibration import _ratings, true_alpha

    assert true_alpha("interval") == 0.6
    big = _ratings(np.random.default_rng(5), 100_000, "nominal")
    assert compute_alpha(big, "nominal").value == pytest.approx(true_alpha("nominal"), abs=0.01)
    # The rare design (16% yes, cut at 1.0): 0.355, the figure docs/statistics.md gives.
    rare = _ratings(np.random.default_rng(6), 100_000, "nominal", cut=1.0)
    assert true_alpha("nominal", 1.0) == pytest.approx(0.355, abs=5e-4)
    assert compute_alpha(rare, "nominal").value == pytest.approx(true_alpha("nominal", 1.0),
                                                                 abs=0.01)
    # Three categories cut at ±0.5: the bivariate-normal value, and a large study agrees.
    three = _ratings(np.random.default_rng(7), 100_000, "categories")
    assert sorted(np.unique(three)) == [0.0, 1.0, 2.0]
    assert true_alpha("categories") == pytest.approx(0.2984, abs=5e-4)
    assert compute_alpha(three, "nominal").value == pytest.approx(true_alpha("categories"),
                                                                  abs=0.01)


def test_population_bradley_terry_target_of_the_arena_design():
    # The target is the fit on the expected win table; one large simulated arena (its ratings'
    # standard error is about 2 points) lands on it. Ties pull it towards 1000.
    from evaluation.lib.stats.arena import bradley_terry_ratings
    from leaderboard.lib.calibration import (
        ARENA_ELO_SPREAD,
        _arena_votes,
        true_bradley_terry,
    )

    truth = true_bradley_terry()
    big = bradley_terry_ratings(_arena_votes(np.random.default_rng(3), 200_000))
    assert sorted(big) == sorted(truth)
    for name, rating in truth.items():
        assert big[name] == pytest.approx(rating, abs=7.0)
    ends = sorted(truth.values())
    assert 1000 - ARENA_ELO_SPREAD < ends[0] < 990 and 1010 < ends[-1] < 1000 + ARENA_ELO_SPREAD
    assert np.mean(list(truth.values())) == pytest.approx(1000.0)


def test_expected_elo_keeps_the_rating_total_and_the_strength_order():
    from leaderboard.lib.calibration import ARENA_SYSTEMS, expected_elo

    target = expected_elo(100)
    values = [target[f"system-{s:03d}"] for s in range(ARENA_SYSTEMS)]
    assert sum(values) == pytest.approx(1000.0 * ARENA_SYSTEMS)
    assert values == sorted(values) and values[0] < 1000 < values[-1]
    # Elo starts at 1000 and moves at most 16 per vote: after 100 votes it is still shrunk.
    assert values[-1] - values[0] < expected_elo(1000)[f"system-{ARENA_SYSTEMS - 1:03d}"] - \
        expected_elo(1000)["system-000"]


def test_yes_no_rows_show_every_interval_and_the_wide_arena_counts_only_those_shown(capsys):
    # A yes/no field gets an interval for every study whose alpha is defined (the test
    # inversion with three annotators, docs/statistics.md); an arena where more than 5% of the
    # resamples have no MLE shows none, and the bench reports coverage over what is shown and
    # the share shown.
    call_command("bench_calibration", "--reps", "40", "--dialogues", "10", "--only",
                 "alpha_rare", "alpha_rare_shown", "arena_bt_wide", "--json")
    payload = {c["key"]: c["values"]["10"] for c in json.loads(capsys.readouterr().out)["checks"]}
    assert set(payload) == {"alpha_rare", "alpha_rare_shown", "arena_bt_wide",
                            "arena_bt_wide_shown"}
    # 16% yes on 10 units x 3 annotators, about 5 yes values: the jackknife's rules showed an
    # interval for 36% of such studies; the test inversion shows one for each but the few
    # without a single yes (about 5%: alpha is undefined there).
    assert 0.9 <= payload["alpha_rare_shown"] < 1.0
    assert 0.85 <= payload["alpha_rare"] < 1.0
    assert 0.3 <= payload["arena_bt_wide_shown"] < 1.0
    assert payload["arena_bt_wide"] >= 0.85


def test_ppi_checks_cover_and_never_widen(capsys):
    """The human-anchored rows (ppi.anchored_mean): a useless judge keeps the human-only width,
    a good one narrows it; 60 studies of 30 labelled dialogues per design."""
    call_command("bench_calibration", "--reps", "60", "--dialogues", "30", "--json", "--only",
                 "ppi_r0", "ppi_r9", "ppi_r9_biased")
    checks = {c["key"]: c["values"]["30"] for c in json.loads(capsys.readouterr().out)["checks"]}
    assert set(checks) == {"ppi_r0", "ppi_r0_width", "ppi_r0_width_max", "ppi_r9",
                           "ppi_r9_width", "ppi_r9_width_max", "ppi_r9_biased",
                           "ppi_r9_biased_width", "ppi_r9_biased_width_max"}
    assert min(checks["ppi_r0"], checks["ppi_r9"], checks["ppi_r9_biased"]) >= 0.85
    assert checks["ppi_r0_width_max"] <= 1.0 + 1e-12 and checks["ppi_r0_width"] > 0.9
    assert checks["ppi_r9_width"] < 0.6


def test_system_level_meta_evaluation_checks_cover(capsys):
    """The metric leaderboard's system-level intervals (system_meta.meta_evaluate) in both
    designs: 30 studies of 10 dialogues per system; the documented run is in statistics.md."""
    keys = [f"meta_{design}_{name}" for design in ("paired", "unpaired")
            for name in ("pairwise_accuracy", "soft_pairwise_accuracy",
                         "tie_calibrated_accuracy")]
    call_command("bench_calibration", "--reps", "30", "--dialogues", "10", "--json", "--only",
                 *keys)
    checks = {c["key"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert set(checks) == set(keys)
    assert all("system_meta.meta_evaluate" in c["code_path"] for c in checks.values())
    # 30 studies: loose; a broken interval (or one around the wrong centre) fails it
    assert min(c["values"]["10"] for c in checks.values()) >= 0.7


def test_active_handout_rows_are_measured_once_per_run(capsys):
    """Label these next (active.py): the share of labels saved, both policies' coverage, the
    oracle's saving and the design's bound, per judge design, shown under the first dialogue
    count only; a design's rows come together."""
    call_command("bench_calibration", "--reps", "20", "--dialogues", "10", "30", "--json",
                 "--only", "active_saved_binary")
    checks = {c["key"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert set(checks) == {f"active_{row}_binary" for row in
                           ("saved", "coverage", "uniform_coverage", "oracle", "bound",
                            "bound_retuned")}
    assert checks["active_coverage_binary"]["values"]["30"] is None
    assert checks["active_coverage_binary"]["values"]["10"] >= 0.8
    assert checks["active_uniform_coverage_binary"]["values"]["10"] >= 0.8
    assert -0.5 < checks["active_saved_binary"]["values"]["10"] < 0.6
    assert checks["active_saved_binary"]["goal"] == "≥ 0.25"
    # the bound of a calibrated yes/no judge at 18% yes (test_calibration_active.py: by formula)
    assert checks["active_bound_binary"]["values"]["10"] == pytest.approx(0.305, abs=0.01)
