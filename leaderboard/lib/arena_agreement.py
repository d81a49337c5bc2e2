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


def label_choices(fields: Iterable[tuple[str, str, str, bool]],
                  categories: Mapping[str, Iterable[str]]) -> list[dict]:
    """What the page can compare with the ratings: FIELDS are (name, title, unit_type,
    is_numeric); a numeric dialogue-level field by its mean, and each category of a nominal
    dialogue-level field (CRSArena-Dial's `satisfaction`) by the share of labels that chose it
    (`name=category`, a mean of 0/1 values)."""
    choices = []
    for name, title, unit_type, numeric in fields:
        if unit_type != "dialogue":
            continue
        if numeric:
            choices.append({"key": name, "field": name, "category": None, "title": title})
        else:
            choices += [{"key": f"{name}={c}", "field": name, "category": c,
                         "title": f"{title}: share {c}"} for c in sorted(categories.get(name, ()))]
    return choices


def choice_labels(rows: Iterable[tuple[str, str, str, object]], choice: dict) -> list[Label]:
    """(system, dialogue, field, value) rows as the labels of CHOICE: numeric values as they
    are, a nominal field's values as 1 (the category) or 0 (another one)."""
    labels = []
    for system, dialogue, name, value in rows:
        if name != choice["field"]:
            continue
        if choice["category"] is not None:
            labels.append(Label(system, dialogue, choice["key"],
                                float(str(value) == choice["category"])))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            labels.append(Label(system, dialogue, choice["key"], float(value)))
    return labels


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
