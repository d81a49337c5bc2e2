"""What a reference baseline sees (Trace, §5 and Appendix F): the catalogue and, for
each turn it answers, the dialogue so far and the candidate pool — never the gold.

Baselines answer reference contexts (protocol `turn`, formats.md §2): for every turn a
submission must answer, the context is the reference dialogue up to that turn, without any
turn's gold or alternative items, without the dialogue's target items and without its scenario
(which describes the simulated user's hidden preferences). Items a user turn rejects
(`reject_and_refine` with its referenced items, else the system suggestion right before it)
are part of the visible conversation.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.formats.submission import item_infos, reference_dialogue
from evaluation.lib.metrics.accuracy import build_city_type_index, open_pool
from evaluation.lib.metrics.suite import CLOSED, evaluated_turn_keys

REJECT = "reject_and_refine"


@dataclass(frozen=True)
class Item:
    id: str
    name: str
    type: str
    city: str | None = None
    lat: float | None = None
    lon: float | None = None
    price_level: int | None = None
    stars: float | None = None
    categories: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    @property
    def located(self) -> bool:
        return self.lat is not None and self.lon is not None


@dataclass(frozen=True)
class Review:
    id: str
    item_id: str
    text: str
    stars: float | None = None


class Catalogue:
    """Items and their reviews, indexed once per baseline run."""

    def __init__(self, items: Iterable[Item], reviews: Iterable[Review]):
        self.items: dict[str, Item] = {item.id: item for item in items}
        self.reviews: dict[str, list[Review]] = {item_id: [] for item_id in self.items}
        for review in reviews:
            self.reviews.setdefault(review.item_id, []).append(review)
        self._groups: dict[tuple[str | None, str], list[str]] = {}
        for item in self.items.values():
            self._groups.setdefault((item.city, item.type), []).append(item.id)

    @classmethod
    def from_records(cls, items: Iterable[Mapping], reviews: Iterable[Mapping]) -> Catalogue:
        return cls(
            [Item(r["id"], r["name"], r["type"], r.get("city"), r.get("lat"), r.get("lon"),
                  r.get("price_level"), r.get("stars"), tuple(r.get("categories") or ()),
                  r.get("attributes") or {}, r.get("description") or "") for r in items],
            [Review(r["id"], r["item_id"], r["text"], r.get("stars")) for r in reviews],
        )

    @functools.cached_property
    def review_ids(self) -> frozenset[str]:
        """Every review's id (computed once: a live system's answers are checked against it)."""
        return frozenset(r.id for reviews in self.reviews.values() for r in reviews)

    def group_of(self, item_id: str) -> tuple[str | None, str]:
        item = self.items[item_id]
        return item.city, item.type

    def group(self, key: tuple[str | None, str]) -> list[str]:
        """Ids of every item of one (city, type), the unit TF-IDF indexes are built over."""
        return self._groups.get(key, [])


@dataclass(frozen=True)
class HistoryTurn:
    role: str
    text: str
    action: str
    referenced_item_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnContext:
    """One turn to answer: the conversation before it, its action and the pool to rank."""

    dialogue_id: str
    turn_index: int
    action: str
    history: tuple[HistoryTurn, ...]
    pool: tuple[str, ...]

    @property
    def user_text(self) -> str:
        """Everything the user said so far (TF-IDF's query in the paper)."""
        return " ".join(turn.text for turn in self.history if turn.role == "user")

    @property
    def rejected_item_ids(self) -> tuple[str, ...]:
        rejected: dict[str, None] = {}
        for position, turn in enumerate(self.history):
            if turn.role != "user" or turn.action != REJECT:
                continue
            ids = turn.referenced_item_ids
            if not ids and position and self.history[position - 1].role == "system":
                ids = self.history[position - 1].referenced_item_ids
            rejected.update(dict.fromkeys(ids))
        return tuple(rejected)


def _history(record: Mapping, before: int) -> tuple[HistoryTurn, ...]:
    return tuple(
        HistoryTurn(t["role"], t["text"], t["action"], tuple(t.get("referenced_item_ids", ())))
        for t in record["turns"] if t["index"] < before
    )


def turn_contexts(dialogues: Iterable[Mapping], *, catalogue: Catalogue,
                  item_records: Sequence[Mapping] | None = None,
                  splits: Sequence[str] | None = None,
                  pool_mode: str = CLOSED) -> list[TurnContext]:
    """Every turn a `turn` submission answers, in dialogue order, as the system sees it.

    In the open pool mode the pool is every item sharing a (city, type) with a candidate
    (`item_records` is needed then).
    """
    infos = item_infos(item_records or ())
    index = build_city_type_index(infos.values()) if pool_mode != CLOSED else None
    contexts = []
    for record in dialogues:
        if splits and record["split"] not in splits:
            continue
        dialogue = reference_dialogue(record)
        pool = (dialogue.candidate_item_ids if pool_mode == CLOSED
                else open_pool(dialogue.candidate_item_ids, infos, index))
        actions = {t.index: t.action for t in dialogue.turns}
        for _, turn_index in evaluated_turn_keys([dialogue]):
            contexts.append(TurnContext(dialogue.id, turn_index, actions[turn_index],
                                        _history(record, turn_index), tuple(pool)))
    return contexts
