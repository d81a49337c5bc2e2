"""How an arena's ratings agree with human labels of the same systems' battle dialogues
(docs/arena.md, "Studies from battles"; docs/statistics.md, "Arena"). Pure Python.

Per system: the mean of a dialogue-level human label over every label its battle dialogues got
(several annotators label one dialogue, so the interval is the studentized cluster interval over
dialogues, `cluster_mean`, as for every other mean in Concord). Over systems: Spearman ρ and
Kendall τ_b between the ratings and those means (`correlate`), with n = the systems that have
both; undefined, with the reason, below three systems or when one side is constant.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evaluation.lib.stats.clustered import cluster_mean
from evaluation.lib.stats.correlation import correlate
from evaluation.lib.stats.results import Correlation, Estimate

RANK_METHODS = ("spearman", "kendall")


@dataclass(frozen=True)
class Label:
    """One annotator's value of one field on one dialogue of one system."""

    system: str
    dialogue: str
    field: str
    value: float


def human_means(labels: Iterable[Label], field: str, *,
                bounds: tuple[float | None, float | None] | None = None) -> dict[str, Estimate]:
    """System -> the mean of FIELD over its labels, with a 95% CI clustered by dialogue."""
    values: dict[str, list[float]] = defaultdict(list)
    clusters: dict[str, list[str]] = defaultdict(list)
    for label in labels:
        if label.field == field:
            values[label.system].append(label.value)
            clusters[label.system].append(label.dialogue)
    return {system: cluster_mean(values[system], clusters[system], bounds=bounds)
            for system in sorted(values)}


def rank_agreement(ratings: Mapping[str, float | None],
                   other: Mapping[str, float | None]) -> dict[str, Correlation]:
    """Spearman ρ and Kendall τ_b between the systems' ratings and another per-system number
    (a human mean, an automatic metric's mean); n = the systems both define."""
    return correlate(dict(ratings), dict(other), methods=RANK_METHODS)
