"""Recommendation accuracy for Trace (§3, §6.1 and Appendices J, P, Q, S).

All functions score one evaluated turn: the system's ranked list against the reference turn's
gold items (and, for multi-reference recall, its acceptable alternatives). The ranking is taken
as submitted; whether it was drawn from the closed pool (the dialogue's candidates) or the open
pool (every item of the same city and type) is a property of the run, checked with
:func:`items_outside_pool`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

from evaluation.lib.metrics.types import ItemInfo

DEFAULT_K_VALUES = (1, 3, 5, 10)
CityTypeIndex = Mapping[tuple[str | None, str], tuple[str, ...]]


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """Recall@k = |top-k ∩ gold| / |gold|; None when the turn has no gold (it is not scored)."""
    if not gold:
        return None
    gold_set = set(gold)
    return len(gold_set.intersection(ranked[:k])) / len(gold_set)


def hit_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """Hit@k = 1 if any gold item is in the top k, else 0; None without gold."""
    if not gold:
        return None
    gold_set = set(gold)
    return 1.0 if any(item in gold_set for item in ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: Collection[str]) -> float | None:
    """1 / (1-based rank of the first gold item), 0 if none is ranked; None without gold.

    Averaged over turns this is MRR (Appendix J).
    """
    if not gold:
        return None
    gold_set = set(gold)
    for position, item in enumerate(ranked, start=1):
        if item in gold_set:
            return 1.0 / position
    return 0.0


def multi_reference_recall_at_k(
    ranked: Sequence[str], gold: Collection[str], alternatives: Collection[str], k: int
) -> float | None:
    """Multi-reference Recall@k (Appendix S): 1 if the top k holds the gold or any acceptable
    alternative, else 0. The denominator stays one per turn, so turns without alternatives reduce
    to single-reference Hit@k. None without gold."""
    if not gold:
        return None
    return hit_at_k(ranked, set(gold).union(alternatives), k)


def closed_pool(candidate_item_ids: Sequence[str]) -> tuple[str, ...]:
    """The closed set: the dialogue's own candidate pool, as shown to systems."""
    return tuple(dict.fromkeys(candidate_item_ids))


def build_city_type_index(
    items: Iterable[ItemInfo],
) -> dict[tuple[str | None, str], tuple[str, ...]]:
    """Item ids grouped by (city, type) in catalogue order; build once, reuse per dialogue."""
    groups: dict[tuple[str | None, str], list[str]] = defaultdict(list)
    for item in items:
        groups[(item.city, item.type)].append(item.id)
    return {key: tuple(ids) for key, ids in groups.items()}


def open_pool(
    candidate_item_ids: Sequence[str],
    items: Mapping[str, ItemInfo],
    index: CityTypeIndex | None = None,
) -> tuple[str, ...]:
    """The open set: every item sharing a (city, type) with one of the dialogue's candidates.

    The candidates come first so the closed pool is always a prefix of the open pool; unknown
    candidate ids are kept (validation reports them elsewhere) but contribute no group.
    """
    if index is None:
        index = build_city_type_index(items.values())
    pool = dict.fromkeys(candidate_item_ids)
    groups = dict.fromkeys(
        (items[item_id].city, items[item_id].type)
        for item_id in candidate_item_ids
        if item_id in items
    )
    for key in groups:
        pool.update(dict.fromkeys(index.get(key, ())))
    return tuple(pool)


def items_outside_pool(ranked: Sequence[str], pool: Collection[str]) -> list[str]:
    """Ranked items the system could not have been offered (not in the pool), in rank order."""
    pool_set = pool if isinstance(pool, (set, frozenset)) else set(pool)
    return [item for item in ranked if item not in pool_set]


def out_of_pool_rate(ranked: Sequence[str], pool: Collection[str]) -> float | None:
    """Fraction of the ranked list outside the pool (lower is better); None for an empty list."""
    if not ranked:
        return None
    return len(items_outside_pool(ranked, pool)) / len(ranked)


def turn_accuracy(
    ranked: Sequence[str],
    gold: Collection[str],
    alternatives: Collection[str],
    k_values: Sequence[int] = DEFAULT_K_VALUES,
) -> dict[str, float]:
    """All accuracy metrics of one turn from a single pass over the ranking.

    Same values as :func:`recall_at_k`, :func:`hit_at_k`, :func:`multi_reference_recall_at_k`
    and :func:`reciprocal_rank` (tests check this); an empty dict when the turn has no gold.
    """
    gold_set = set(gold)
    if not gold_set:
        return {}
    accepted = gold_set.union(alternatives)
    gold_ranks: list[int] = []  # 1-based ranks of gold items (first occurrence of each)
    seen: set[str] = set()
    first_accepted = 0
    for position, item in enumerate(ranked, start=1):
        if item in accepted and not first_accepted:
            first_accepted = position
        if item in gold_set and item not in seen:
            seen.add(item)
            gold_ranks.append(position)
    first_gold = gold_ranks[0] if gold_ranks else 0
    values: dict[str, float] = {}
    for k in k_values:
        values[f"recall@{k}"] = sum(rank <= k for rank in gold_ranks) / len(gold_set)
        values[f"hit@{k}"] = 1.0 if first_gold and first_gold <= k else 0.0
        values[f"mr_recall@{k}"] = 1.0 if first_accepted and first_accepted <= k else 0.0
    values["mrr"] = 1.0 / first_gold if first_gold else 0.0
    return values
