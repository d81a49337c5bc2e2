"""Summaries of the labels themselves (spec: annotation.md forms 1 and 4; Trace §7.1, Table 10).

- ``majority_vote``: the label most annotators gave a unit.
- ``citation_precision`` (Trace Table 10) and ``blind_recommendation_agreement`` (Trace Task 2).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.lib.stats.alpha import is_missing
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE
from evaluation.lib.stats.clustered import cluster_mean
from evaluation.lib.stats.results import Estimate

SUPPORTED, PARTIAL, NOT_SUPPORTED = "supported", "partial", "not_supported"

# --- majority vote ------------------------------------------------------------------------


@dataclass(frozen=True)
class MajorityVote:
    """Plurality label per unit; a unit whose top count is shared is a tie."""

    labels: dict[Hashable, Any]
    ties: tuple[Hashable, ...]
    n_units: int

    @property
    def tie_count(self) -> int:
        return len(self.ties)


def majority_vote(
    labels_by_unit: Mapping[Hashable, Sequence[Any]], *, tie_label: Any = None
) -> MajorityVote:
    """The most frequent label per unit; ties get ``tie_label`` (None by default) and are listed.

    Missing labels are ignored; a unit with no label at all gets None and is not a tie.
    """
    winners: dict[Hashable, Any] = {}
    ties = []
    for unit, labels in labels_by_unit.items():
        counts = Counter(label for label in labels if not is_missing(label)).most_common()
        if not counts:
            winners[unit] = None
        elif len(counts) > 1 and counts[0][1] == counts[1][1]:
            winners[unit] = tie_label
            ties.append(unit)
        else:
            winners[unit] = counts[0][0]
    return MajorityVote(winners, tuple(ties), len(winners))


# --- citation precision (Trace Table 10) --------------------------------------------------


def normalise_citation_label(label: str) -> str:
    """ "Supported", "Partial", "Not supported" (any case, spaces or underscores) → canonical."""
    key = str(label).strip().lower().replace("-", " ").replace("_", " ")
    key = " ".join(key.split())
    canonical = {
        "supported": SUPPORTED,
        "partial": PARTIAL,
        "not supported": NOT_SUPPORTED,
        "partially supported": PARTIAL,
        "unsupported": NOT_SUPPORTED,
    }
    if key not in canonical:
        raise ValueError(f"unknown citation label {label!r}")
    return canonical[key]


def citation_precision(
    quote_labels: Mapping[Hashable, Sequence[str]],
    quote_systems: Mapping[Hashable, Hashable],
    *,
    quote_dialogues: Mapping[Hashable, Hashable] | None = None,
    tie_label: str = PARTIAL,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[Hashable, Estimate]:
    """Per system: quotes whose majority label is Supported / all its quotes (40/44 = 0.909).

    Each quote's label is the majority of its annotators' labels; a tie becomes ``tie_label``
    (Partial, the guidelines' answer when unsure), so Partial counts against precision. With
    ``quote_dialogues`` the CI is the studentized cluster (jackknife-t) interval over dialogues
    on the logit scale of [0, 1] (``cluster_mean`` with bounds (0, 1)); no random draws.
    """
    votes = majority_vote(
        {
            quote: [normalise_citation_label(label) for label in labels if not is_missing(label)]
            for quote, labels in quote_labels.items()
        },
        tie_label=normalise_citation_label(tie_label),
    )
    tied = set(votes.ties)
    by_system: dict[Hashable, list[Hashable]] = {}
    for quote, label in votes.labels.items():
        if label is not None:
            by_system.setdefault(quote_systems[quote], []).append(quote)
    results = {}
    for system, quotes in sorted(by_system.items(), key=lambda item: str(item[0])):
        counts = Counter(votes.labels[quote] for quote in quotes)
        n = {
            "quotes": len(quotes),
            "supported": counts[SUPPORTED],
            "partial": counts[PARTIAL],
            "not_supported": counts[NOT_SUPPORTED],
            "ties": sum(quote in tied for quote in quotes),
        }
        estimate = Estimate(
            counts[SUPPORTED] / len(quotes),
            n=n,
            method="citation_precision",
            params={"tie_label": tie_label},
        )
        if quote_dialogues is not None:
            indicator = [float(votes.labels[quote] == SUPPORTED) for quote in quotes]
            clustered = cluster_mean(
                indicator,
                [quote_dialogues[quote] for quote in quotes],
                confidence=confidence,
                bounds=(0.0, 1.0),
            )
            estimate = Estimate(
                estimate.value,
                clustered.ci_low,
                clustered.ci_high,
                n={**n, "dialogues": clustered.n["clusters"]},
                method=estimate.method,
                params={**estimate.params, **clustered.params, "clusters": "dialogues"},
            )
        results[system] = estimate
    return results


# --- blind recommendation (Trace Task 2) ----------------------------------------------------


def _as_item_set(gold: Any) -> set:
    if isinstance(gold, set | frozenset | list | tuple):
        return set(gold)
    return {gold}


def _jaccard(first: set, second: set) -> float | None:
    union = first | second
    return len(first & second) / len(union) if union else None


def _majority_items(selections: list[set]) -> set:
    """Most-picked item(s), provided they were picked by more than half of the annotators."""
    counts = Counter(item for selection in selections for item in selection)
    if not counts:
        return set()
    top = max(counts.values())
    if top * 2 <= len(selections):
        return set()
    return {item for item, count in counts.items() if count == top}


def blind_recommendation_agreement(
    picks: Mapping[Hashable, Sequence[Collection[Hashable]]],
    gold: Mapping[Hashable, Any] | None = None,
) -> dict[str, Estimate]:
    """Agreement among annotators' own picks, dialogue by dialogue.

    ``picks[dialogue]`` lists each annotator's selected item set. Returns
    ``mean_pairwise_jaccard`` (over all annotator pairs of all dialogues),
    ``strict_majority_share`` (dialogues where some item was picked by more than half),
    ``majority_gold_agreement`` (of those with gold: the majority pick is a gold item; ``gold``
    maps a dialogue to its gold item or set of acceptable items).
    """
    jaccards, with_majority, agreements = [], 0, []
    dialogues = 0
    for dialogue, selections in picks.items():
        selections = [set(selection) for selection in selections if selection is not None]
        if not selections:
            continue
        dialogues += 1
        for first, second in itertools.combinations(selections, 2):
            value = _jaccard(first, second)
            if value is not None:
                jaccards.append(value)
        majority = _majority_items(selections) if len(selections) >= 2 else set()
        with_majority += bool(majority)
        if majority and gold is not None and dialogue in gold:
            agreements.append(bool(majority & _as_item_set(gold[dialogue])))
    results = {
        "mean_pairwise_jaccard": _share_or_undefined(
            jaccards,
            {"pairs": len(jaccards), "dialogues": dialogues},
            "mean_pairwise_jaccard",
            "no dialogue has two annotators' picks",
        ),
        "strict_majority_share": _share_or_undefined(
            [1.0] * with_majority + [0.0] * (dialogues - with_majority),
            {"dialogues": dialogues, "with_majority": with_majority},
            "strict_majority_share",
            "no dialogue has picks",
        ),
        "majority_gold_agreement": _share_or_undefined(
            agreements,
            {"dialogues": len(agreements), "agreeing": sum(agreements)},
            "majority_gold_agreement",
            "no dialogue has both a majority pick and a gold answer",
        ),
    }
    return results


def _share_or_undefined(values, n, method, reason) -> Estimate:
    if not values:
        return Estimate.undefined(reason, method=method, n=n)
    return Estimate(float(np.mean(values)), n=n, method=method)
