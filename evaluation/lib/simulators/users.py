"""Simulated users from a benchmark bundle (docs/formats.md §1 and §5).

A simulated user is a benchmark dialogue that names both `seen_item_ids` (the user's history:
items the user has visited, with their reviews) and `target_item_ids` (the held-out items the
user would like, PEPPER's Y(u)). This is the seen/target split of PEPPER (Kim et al.), §3.2.1.
`pick_users` chooses N of them with a seeded shuffle, so a run names its users by (seed, N).

The split is kept apart from what simulators see: `HistoryView` (seen items and their reviews,
the scenario's city and item type) is all a target-free simulator gets; only a target-based
(iEvaLM-style) simulator is also given `TargetView`.

Privacy (issue 28): a benchmark's hidden-split dialogues carry its secret gold, so they make
simulated users only once their gold is released (`simulated_users(include_hidden=...)`). And no
one outside Concord learns which dialogue a user comes from: the live endpoint, the pages, the
API and the exports name a user by `opaque_user_id` (a keyed hash of the simulation's random
secret and the user's position), stable within one simulation and unlinkable across them; the
source dialogue id stays on the server (`SimUser.user_id`, the simulator's seed).
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_REVIEWS_PER_ITEM = 3
HIDDEN_SPLIT = "hidden"
OPAQUE_PREFIX = "u-"


def opaque_user_id(secret: str, position: int) -> str:
    """The id a simulation's user at POSITION is known by outside Concord: `u-` and 16 hex
    digits of HMAC-SHA256(SECRET, position). Without SECRET it says nothing of the user's
    source dialogue, and two simulations (two secrets) name the same user differently."""
    if not secret:
        raise ValueError("a simulation needs a secret to name its users")
    digest = hmac.new(secret.encode(), str(position).encode(), hashlib.sha256).hexdigest()
    return OPAQUE_PREFIX + digest[:16]


def paired_user_id(position: int) -> str:
    """The id a user's preference-coverage scores are stored under: its place in the
    simulation's order. Runs of one design (same seed, number of users and user pool) have the
    same users in the same order, so the simulated board pairs them by it (its paired tests
    over users) while the opaque ids differ from one simulation to the next. It names no
    dialogue: the order is a seeded shuffle of dialogues whose gold is public."""
    return f"user-{position + 1:04d}"


class NoSimulatedUsers(ValueError):
    """The benchmark cannot be simulated: no dialogue has both a seen and a target set."""


@dataclass(frozen=True)
class ItemCard:
    id: str
    name: str
    type: str
    city: str | None
    categories: tuple[str, ...]
    price_level: int | None
    stars: float | None
    description: str

    @classmethod
    def from_record(cls, record: Mapping) -> ItemCard:
        return cls(record["id"], record["name"], record["type"], record.get("city"),
                   tuple(record.get("categories") or ()), record.get("price_level"),
                   record.get("stars"), record.get("description") or "")

    def text(self, *, with_name: bool = True) -> str:
        facts = [self.name] if with_name else []
        facts.append(self.type + (f" in {self.city}" if self.city else ""))
        if self.categories:
            facts.append(", ".join(self.categories))
        if self.price_level:
            facts.append("$" * self.price_level)
        if self.stars is not None:
            facts.append(f"{self.stars:g} stars")
        if self.description:
            facts.append(self.description)
        return "; ".join(facts)


@dataclass(frozen=True)
class SeenItem:
    card: ItemCard
    reviews: tuple[tuple[str, float | None], ...]  # (text, stars)


@dataclass(frozen=True)
class HistoryView:
    """What a target-free simulator knows of its user (never a target id)."""

    user_id: str
    city: str | None
    item_type: str | None
    seen: tuple[SeenItem, ...]

    @property
    def seen_ids(self) -> frozenset[str]:
        return frozenset(s.card.id for s in self.seen)


@dataclass(frozen=True)
class TargetView:
    """What a target-based (iEvaLM-style) simulator also knows: the items it is looking for
    (iEvaLM gives its seeker every gold item of the dialogue, script/chat.py L240-242) and the
    dataset context its dialogue starts from (the turns before the recommendation, L238-257)."""

    target: ItemCard  # the first target
    targets: tuple[ItemCard, ...] = ()  # all of them, the first included
    context: tuple[tuple[str, str], ...] = ()  # (role, text) of the dataset's earlier turns

    @property
    def all_targets(self) -> tuple[ItemCard, ...]:
        return self.targets or (self.target,)


@dataclass(frozen=True)
class SimUser:
    user_id: str  # the benchmark dialogue the user comes from
    history: HistoryView
    target_item_ids: tuple[str, ...]
    candidate_item_ids: tuple[str, ...]
    target_card: ItemCard
    target_cards: tuple[ItemCard, ...] = ()
    context: tuple[tuple[str, str], ...] = ()  # the dialogue's turns before its recommendation

    @property
    def target_view(self) -> TargetView:
        return TargetView(self.target_card, self.target_cards or (self.target_card,),
                          self.context)


MAX_CONTEXT_TURNS = 10


def dataset_context(turns: Sequence[Mapping], targets: Sequence[str]
                    ) -> tuple[tuple[str, str], ...]:
    """The (role, text) turns of a benchmark dialogue before its first system turn whose gold
    is one of TARGETS (else before its first system turn with any gold; else none): the
    context iEvaLM's simulated dialogue continues from (its test data's `context` up to the
    recommendation turn, script/chat.py L222-257). At most MAX_CONTEXT_TURNS, the latest."""
    wanted = set(targets)
    cut = next((i for i, t in enumerate(turns) if t.get("role") == "system"
                and wanted & set(t.get("gold_item_ids") or ())), None)
    if cut is None:
        cut = next((i for i, t in enumerate(turns) if t.get("role") == "system"
                    and t.get("gold_item_ids")), None)
    if cut is None:
        return ()
    return tuple((t["role"], t["text"]) for t in turns[:cut]
                 if t.get("text"))[-MAX_CONTEXT_TURNS:]


def simulated_users(*, items: Sequence[Mapping], reviews: Sequence[Mapping],
                    dialogues: Sequence[Mapping], include_hidden: bool) -> list[SimUser]:
    """Every dialogue with a seen and a target set, as a simulated user (bundle order); those
    of the hidden split only with INCLUDE_HIDDEN (once the benchmark released its gold)."""
    cards = {r["id"]: ItemCard.from_record(r) for r in items}
    by_item: dict[str, list[tuple[str, float | None]]] = {}
    for review in reviews:
        by_item.setdefault(review["item_id"], []).append((review["text"], review.get("stars")))
    users = []
    for record in dialogues:
        seen, targets = record.get("seen_item_ids") or [], record.get("target_item_ids") or []
        if not seen or not targets or (record.get("split") == HIDDEN_SPLIT
                                        and not include_hidden):
            continue
        scenario = record.get("scenario") or {}
        history = HistoryView(
            user_id=record["id"], city=scenario.get("city") or cards[targets[0]].city,
            item_type=scenario.get("item_type") or cards[targets[0]].type,
            seen=tuple(SeenItem(cards[i], tuple(by_item.get(i, [])[:MAX_REVIEWS_PER_ITEM]))
                       for i in seen))
        users.append(SimUser(record["id"], history, tuple(targets),
                             tuple(record.get("candidate_item_ids") or ()), cards[targets[0]],
                             tuple(cards[i] for i in targets),
                             dataset_context(record.get("turns") or (), targets)))
    return users


def pick_users(users: Sequence[SimUser], n: int, seed: int) -> list[SimUser]:
    """N users chosen by a seeded shuffle of the users in id order."""
    if not users:
        raise NoSimulatedUsers(
            "this benchmark has no simulated users: user simulation needs dialogues with both "
            "seen_item_ids (the user's history) and target_item_ids (the held-out items it "
            "would like) outside the hidden split until its gold is released, see "
            "docs/formats.md §5")
    if n < 1:
        raise ValueError("at least one user is needed")
    ordered = sorted(users, key=lambda u: u.user_id)
    random.Random(seed).shuffle(ordered)
    if n > len(ordered):
        raise ValueError(f"the benchmark has {len(ordered)} simulated users, {n} were asked for")
    return ordered[:n]
