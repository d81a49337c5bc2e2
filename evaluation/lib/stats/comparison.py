"""Comparing two systems (spec: statistics.md "Comparing systems"; Trace §7.1 and appendix K.3,
Table 15 "per-dialogue paired t-tests"; appendix L, Table 21 paired cluster bootstrap).

Both pair the systems by dialogue: the t-test on per-dialogue means with ``scipy.stats.ttest_rel``,
the interval of the difference of unit-weighted means with the delete-one-dialogue jackknife and a
t quantile (clustered.py), which is the same test when dialogues are equally long.
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
        """True when the 95% (or chosen) jackknife-t CI of the difference excludes 0."""
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
    difference = paired_cluster_difference_from_sums(shared=shared, confidence=confidence)
    _, sums, counts, _ = shared
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return SystemComparison(system_a, system_b, difference,
                            paired_t_test_arrays(means[0], means[1]))
