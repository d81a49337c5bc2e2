"""PEPPER §3.3.1 preference coverage, computed by hand on small cases."""

import pytest

from evaluation.lib.metrics.preference import SimulatedUser, preference_report, user_curves
from evaluation.lib.stats.clustered import cluster_mean

# User a wants {x, y}; user b wants {z}. Lists shown at turns 1, 2, 3.
A = SimulatedUser("a", ("x", "y"), (("x", "q"), ("q", "r"), ("y", "x")))
B = SimulatedUser("b", ("z",), (("q", "z"), ("z",)))  # ended after turn 2 (accepted z)


def test_one_user_by_hand():
    coverage, recall = user_curves(A, turns=3, k=1)
    # turn 1 shows x (1 of 2), turn 2 shows q (nothing new), turn 3 shows y (both covered).
    assert coverage.tolist() == [0.5, 0.5, 1.0] and recall.tolist() == [0.5, 0.0, 0.5]
    coverage, recall = user_curves(A, turns=3, k=2)
    assert coverage.tolist() == [0.5, 0.5, 1.0] and recall.tolist() == [0.5, 0.0, 1.0]
    # B ended at turn 2: its last list stands at turn 3.
    coverage, recall = user_curves(B, turns=3, k=1)
    assert coverage.tolist() == [0.0, 1.0, 1.0] and recall.tolist() == [0.0, 1.0, 1.0]


def test_report_by_hand():
    report = preference_report([A, B], turns=3, ks=(1, 2), n_resamples=200)
    # PC_t@1 = mean over users: t1 (0.5 + 0)/2, t2 (0.5 + 1)/2, t3 (1 + 1)/2.
    assert report.pc[1] == pytest.approx([0.25, 0.75, 1.0])
    assert report.pcir[1] == pytest.approx([0.25, 0.5, 0.25])
    assert report.recall[1] == pytest.approx([0.25, 0.5, 0.75])
    # At K = 2, B's turn 1 shows z at rank 2: t1 (0.5 + 1)/2; A's turn 2 (q, r) covers nothing new.
    assert report.pc[2] == pytest.approx([0.75, 0.75, 1.0])
    assert report.recall[2] == pytest.approx([0.75, 0.5, 1.0])
    s = report.summaries
    assert s["pc@1"].value == pytest.approx(1.0)
    assert s["pcir_avg@1"].value == pytest.approx(sum(report.pcir[1]) / 3)
    # Recall@K summary: each user's mean over turns, then the mean over users.
    assert s["recall@1"].value == pytest.approx(((0.5 + 0 + 0.5) / 3 + (0 + 1 + 1) / 3) / 2)
    # The CI is the cluster interval over users (one cluster per user), cut to [0, 1].
    reference = cluster_mean([1 / 3, 2 / 3], ["a", "b"], bounds=(0.0, 1.0))
    assert (s["recall@1"].ci_low, s["recall@1"].ci_high) == (reference.ci_low, reference.ci_high)
    assert report.as_json()["pc@1"] == [0.25, 0.75, 1.0]


def test_a_user_without_targets_is_an_error():
    with pytest.raises(ValueError, match="no target items"):
        preference_report([SimulatedUser("c", (), ())], turns=2)
