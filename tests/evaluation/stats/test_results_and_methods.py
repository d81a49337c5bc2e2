"""Result records never hold NaN, serialise to JSON, name a documented method; the package is
pure Python (no Django)."""

import json
import math
import subprocess
import sys

import numpy as np

from evaluation.lib.stats import (
    agreement,
    annotators,
    arena,
    clustered,
    comparison,
    correlation,
    label_summaries,
    ppi,
)
from evaluation.lib.stats.methods import METHOD_DESCRIPTIONS
from evaluation.lib.stats.results import Correlation, Estimate, PairedTest


def test_estimate_turns_nan_into_an_explained_missing_value():
    estimate = Estimate(float("nan"), np.float64("nan"), math.inf, n={"units": np.int64(3)})
    assert estimate.value is None and estimate.ci_low is None and estimate.ci_high is None
    assert estimate.undefined_reason
    assert estimate.n == {"units": 3}
    assert Correlation(float("nan"), float("nan"), 2, "pearson").undefined_reason
    assert PairedTest(float("nan"), None, 1, None, None, None).t is None


def test_estimate_to_dict_is_plain_json():
    estimate = Estimate(
        np.float64(0.5),
        0.25,
        0.75,
        n={"units": 4},
        method="cluster_t_mean",
        params={"seed": np.int64(42), "bounds": np.array([0.1, float("nan")])},
    )
    payload = json.loads(json.dumps(estimate.to_dict()))
    assert payload["value"] == 0.5
    assert payload["params"] == {"seed": 42, "bounds": [0.1, None]}
    assert estimate.ci_excludes(0) and not estimate.ci_excludes(0.5)


def _every_method_name():
    data = [[1, 2, 3, 4], [1, 2, 4, 4], [2, 2, 3, None]]
    votes = [("A", "B", "a"), ("B", "A", "a"), ("A", "B", "tie")]
    names = {
        agreement.compute_alpha(data).method,
        annotators.cohen_kappa([1, 2, 1], [1, 2, 2]).method,
        label_summaries.citation_precision({"q": ["Supported"]}, {"q": "S"})["S"].method,
        clustered.cluster_mean([1, 2], ["d1", "d2"]).method,
        clustered.paired_cluster_difference([1], ["d"], [2], ["d"]).method,
        comparison.paired_t_test({"d": 1}, {"d": 2}).method,
        arena.elo_with_ci(votes, n_resamples=10)["A"].method,
        arena.bradley_terry_with_ci(votes, n_resamples=10)["A"].method,
    }
    names |= {e.method for e in annotators.pairwise_annotator_correlation(data).values()}
    blind = label_summaries.blind_recommendation_agreement({"d": [{1}]})
    names |= {e.method for e in blind.values()}
    names |= {c.method for c in correlation.correlate({1: 1}, {1: 1}).values()}
    ranked = correlation.rank_evaluators(
        {"m": {1: 1, 2: 2, 3: 3}}, {1: 1, 2: 3, 3: 2}
    )
    names.add(ranked[0].estimate.method)
    sample = ppi.AnchoredSample([1, 2, 3], [1, 3, 2], ["a", "b", "c"], [2, 3], ["d", "e"])
    a = ppi.anchored_mean(sample)
    names |= {a.ppi.method, a.human_only.method, a.evaluator_only.method,
              ppi.anchored_difference(a, a).method,
              ppi.anchored_ranking({"A": a})[0].estimate.method}
    return names


def test_every_method_on_a_result_has_a_description_for_exports():
    names = _every_method_name()
    assert names <= set(METHOD_DESCRIPTIONS), names - set(METHOD_DESCRIPTIONS)
    assert all(len(text) > 80 for text in METHOD_DESCRIPTIONS.values())


def test_statistics_package_imports_no_django():
    code = (
        "import sys, evaluation.lib.stats.agreement, evaluation.lib.stats.arena, "
        "evaluation.lib.stats.bootstrap, evaluation.lib.stats.comparison, "
        "evaluation.lib.stats.clustered, leaderboard.lib.calibration, "
        "evaluation.lib.stats.correlation, "
        "evaluation.lib.stats.methods, evaluation.lib.stats.timing, evaluation.lib.stats.ppi; "
        "sys.exit(any(name.split('.')[0] == 'django' for name in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
