"""Comparing two systems (spec: statistics.md "Comparing systems"; Trace §7.1 and appendix K.3,
Table 15 "per-dialogue paired t-tests"; appendix L, Table 21 paired cluster bootstrap).

Both pair the systems by dialogue: the t-test on per-dialogue means with ``scipy.stats.ttest_rel``,
the interval of the difference of unit-weighted means with the delete-one-dialogue jackknife and a
t quantile (clustered.py), which is the same test when dialogues are equally long.

With few shared dialogues (RANDOMISATION_DIALOGUES: 6 to 12) the interval and the test are an
exact randomisation test over dialogues instead (issue 30): under "no difference" the two systems'
values of one dialogue are exchangeable, so every one of the 2^G ways of swapping A and B
within dialogues is as likely as the data. The p-value is the share of swaps whose difference of
unit-weighted means is at least as far from 0 as the observed one; the 95% interval is every
shift δ the test does not reject once δ is taken off A's values (found by bisection). At 10
dialogues of 2–13 turns the jackknife-t with Satterthwaite's df called equal systems different
only 0.018–0.026 of the time; the randomisation test is exact whatever the lengths
(docs/statistics.md, "The paired test at few dialogues").
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from evaluation.lib.stats.clustered import (
    DEFAULT_CONFIDENCE,
    cluster_sums,
    paired_cluster_difference_from_sums,
    shared_cluster_sums,
)
from evaluation.lib.stats.results import Estimate, PairedTest, finite_or_none

RANDOMISATION_METHOD = "cluster_randomisation_difference"
# Shared dialogues for which the exact randomisation test replaces the jackknife-t: from 6 (with
# fewer, no swap pattern can reach p ≤ 0.05: 2 × 1/32 > 0.05) to 12 (4,096 swap patterns).
RANDOMISATION_DIALOGUES = range(6, 13)


def per_dialogue_means(
    values: Sequence[float], dialogues: Sequence[Hashable]
) -> dict[Hashable, float]:
    """Mean of the (finite) unit values of each dialogue."""
    if len(values) != len(dialogues):
        raise ValueError("values and dialogues must have the same length")
    grouped: dict[Hashable, list[float]] = {}
    for value, dialogue in zip(values, dialogues, strict=True):
        number = finite_or_none(value)
        if number is not None:
            grouped.setdefault(dialogue, []).append(number)
    return {dialogue: float(np.mean(numbers)) for dialogue, numbers in grouped.items()}


def paired_t_test(
    per_dialogue_a: Mapping[Hashable, float], per_dialogue_b: Mapping[Hashable, float]
) -> PairedTest:
    """Paired t-test of A − B over the dialogues both systems have a value for (two-sided)."""
    shared = [
        dialogue
        for dialogue, value in per_dialogue_a.items()
        if finite_or_none(value) is not None
        and finite_or_none(per_dialogue_b.get(dialogue)) is not None
    ]
    return paired_t_test_arrays(np.array([float(per_dialogue_a[d]) for d in shared]),
                                np.array([float(per_dialogue_b[d]) for d in shared]))


def paired_t_test_arrays(a: np.ndarray, b: np.ndarray) -> PairedTest:
    """`paired_t_test` of per-dialogue means already paired by position (finite values)."""
    n = len(a)
    means = {
        "mean_a": float(a.mean()) if n else None,
        "mean_b": float(b.mean()) if n else None,
        "mean_difference": float((a - b).mean()) if n else None,
    }
    if n < 2:
        reason = "fewer than two dialogues scored for both systems"
        return PairedTest(None, None, n, undefined_reason=reason, **means)
    differences = a - b
    if np.ptp(differences) == 0:
        reason = (
            "the systems score identically on every shared dialogue"
            if differences[0] == 0
            else "the per-dialogue differences are all equal (no variance, t is infinite)"
        )
        return PairedTest(None, None, n, undefined_reason=reason, **means)
    result = stats.ttest_rel(a, b)
    return PairedTest(result.statistic, result.pvalue, n, **means)


@dataclass(frozen=True)
class SystemComparison:
    """Two systems on one metric: paired cluster difference (A − B) and paired t-test."""

    system_a: Hashable
    system_b: Hashable
    difference: Estimate
    t_test: PairedTest

    @property
    def significant(self) -> bool:
        """True when the randomisation test rejects "no difference" at 1 − confidence (few
        dialogues), else when the jackknife-t CI of the difference excludes 0."""
        params = self.difference.params
        if self.difference.method == RANDOMISATION_METHOD:
            return params["p_value"] <= 1.0 - params["confidence"] + 1e-12
        return self.difference.ci_excludes(0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "system_a": self.system_a,
            "system_b": self.system_b,
            "difference": self.difference.to_dict(),
            "significant": self.significant,
            "t_test": self.t_test.to_dict(),
        }


def compare_systems(
    system_a: Hashable,
    values_a: Sequence[float],
    dialogues_a: Sequence[Hashable],
    system_b: Hashable,
    values_b: Sequence[float],
    dialogues_b: Sequence[Hashable],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> SystemComparison:
    """Unit values of two systems (with each unit's dialogue) → jackknife-t CI and t-test."""
    return compare_systems_from_sums(
        system_a, *cluster_sums(values_a, dialogues_a),
        system_b, *cluster_sums(values_b, dialogues_b), confidence=confidence)


def compare_systems_from_sums(
    system_a: Hashable,
    dialogues_a: Sequence[Hashable],
    sums_a: Sequence[float],
    counts_a: Sequence[float],
    system_b: Hashable,
    dialogues_b: Sequence[Hashable],
    sums_b: Sequence[float],
    counts_b: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> SystemComparison:
    """`compare_systems` from each system's per-dialogue sums and counts of its finite unit
    values: both the jackknife-t interval and the t-test on per-dialogue means use nothing
    else, so a page can compare two runs of a million values from their stored sums."""
    shared = shared_cluster_sums(dialogues_a, sums_a, counts_a, dialogues_b, sums_b, counts_b)
    distinct, sums, counts, n = shared
    if len(distinct) in RANDOMISATION_DIALOGUES:
        difference = randomisation_difference(sums, counts, n=n, confidence=confidence)
    else:
        difference = paired_cluster_difference_from_sums(shared=shared, confidence=confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return SystemComparison(system_a, system_b, difference,
                            paired_t_test_arrays(means[0], means[1]))


# --- the exact randomisation test over dialogues (few dialogues) -------------------------------


def _swap_patterns(g: int) -> np.ndarray:
    """(2^G, G) booleans: every way of keeping (True) or swapping (False) A and B per dialogue."""
    codes = np.arange(2**g, dtype=np.int64)[:, None]
    return ((codes >> np.arange(g, dtype=np.int64)) & 1).astype(bool)


def _swapped_differences(sums: np.ndarray, counts: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """mean(A) − mean(B) (unit-weighted) under each swap pattern (rows of KEEP)."""
    kept = keep.astype(float)
    swapped = 1.0 - kept
    sum_a = kept @ sums[0] + swapped @ sums[1]
    sum_b = kept @ sums[1] + swapped @ sums[0]
    count_a = kept @ counts[0] + swapped @ counts[1]
    count_b = kept @ counts[1] + swapped @ counts[0]
    return sum_a / count_a - sum_b / count_b


def randomisation_p_value(sums: np.ndarray, counts: np.ndarray, shift: float = 0.0,
                          keep: np.ndarray | None = None) -> float:
    """Two-sided mid-p-value of "mean(A) − mean(B) = SHIFT" from the (2, G) per-dialogue sums
    and counts: the share of the 2^G swap patterns whose |difference| exceeds the observed one,
    plus half the share that equals it, after SHIFT is taken off every A value. Mid-p, because
    identical values (binary turns, a dialogue both systems score alike) tie many patterns and
    the plain p-value then rejects far less than 5% of true nulls (0.028 at 10 dialogues of
    binary turns, our simulation)."""
    keep = _swap_patterns(sums.shape[1]) if keep is None else keep
    shifted = np.vstack([sums[0] - shift * counts[0], sums[1]])
    differences = np.abs(_swapped_differences(shifted, counts, keep))
    observed = abs(shifted[0].sum() / counts[0].sum() - shifted[1].sum() / counts[1].sum())
    slack = 1e-12 * max(observed, 1e-300) + 1e-15
    above = np.mean(differences > observed + slack)
    tied = np.mean(np.abs(differences - observed) <= slack)
    return float(above + 0.5 * tied)


def _interval_end(sums, counts, keep, inside: float, outside: float, alpha: float) -> float:
    """The shift between INSIDE (not rejected) and OUTSIDE (rejected) where the test starts to
    reject, by bisection to 1e-9 of the span."""
    tolerance = 1e-9 * max(abs(outside - inside), 1e-12)
    while abs(outside - inside) > tolerance:
        middle = (inside + outside) / 2.0
        if randomisation_p_value(sums, counts, middle, keep) > alpha:
            inside = middle
        else:
            outside = middle
    return (inside + outside) / 2.0


def randomisation_difference(sums: np.ndarray, counts: np.ndarray, *, n: dict,
                             confidence: float = DEFAULT_CONFIDENCE) -> Estimate:
    """mean(A) − mean(B) with the exact randomisation test over dialogues and its inverted
    interval (every shift the test at 1 − CONFIDENCE does not reject)."""
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    keep = _swap_patterns(sums.shape[1])
    means = sums.sum(axis=1) / counts.sum(axis=1)
    value = float(means[0] - means[1])
    alpha = 1.0 - confidence
    per_dialogue = sums / counts
    span = float(np.ptp(per_dialogue[0] - per_dialogue[1])) + abs(value) + 1.0
    low = _interval_end(sums, counts, keep, value, value - 4.0 * span, alpha)
    high = _interval_end(sums, counts, keep, value, value + 4.0 * span, alpha)
    params = {"confidence": confidence, "interval": "randomisation_over_dialogues",
              "patterns": int(keep.shape[0]), "mean_a": float(means[0]),
              "mean_b": float(means[1]), "p_value": randomisation_p_value(sums, counts, 0.0, keep)}
    return Estimate(value, low, high, n=n, method=RANDOMISATION_METHOD, params=params)
