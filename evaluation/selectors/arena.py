"""Reads of the arena (docs/arena.md): a battle as its page shows it, a session's battles.

Before the vote a battle is shown by side only ("System A", "System B"); `BattleView.reveal`
is filled only once the battle has its vote. A system's answer still pending after the
longest call its settings allow (the web process restarted mid-call) reads as interrupted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from evaluation.lib import scenarios
from evaluation.lib.arena_signals import shown_items
from evaluation.lib.highlight import Segment, quote_segments
from evaluation.models import Arena, Battle, BattleTurn, Benchmark, Item, Review, System
from evaluation.rows import battle_turns

SIDES = (BattleTurn.Side.A, BattleTurn.Side.B)
SIDE_LABELS = {BattleTurn.Side.A: "System A", BattleTurn.Side.B: "System B"}


def call_deadline_seconds(system: System) -> float:
    """The longest a call to SYSTEM can take: the live client ends every call, retries and
    their waits included, within timeout × attempts (docs/operations.md, "Deadlines and hostile
    answers"); ten seconds more for the row's own write."""
    return system.live_timeout_seconds * (system.live_max_retries + 1) + 10.0


# What a failed answer's kind means, as the battle page says it. A system's own error text is
# never shown before the vote: it may name the system.
FAILURES = {
    "timeout": "it took longer than its time limit",
    "unreachable": "it could not be reached",
    "refused": "this server may not call it",
    "http_status": "it answered with an HTTP error",
    "too_large": "its answer was too large to read",
    "not_json": "its answer was not JSON",
    "too_deep": "its answer was nested too deeply",
    "bad_number": "its answer held a number that cannot be used",
    "wrong_type": "its answer had a field of the wrong type",
    "invalid": "its answer broke the contract",
    "crashed": "it crashed",
    "interrupted": "the call was cut off (Concord restarted)",
}


def _system(battle: Battle, side: str) -> System:
    return battle.system_a if side == BattleTurn.Side.A else battle.system_b


def turn_is_stale(turn: BattleTurn, system: System, now=None) -> bool:
    """A pending answer whose call cannot still be running (the process that made it is gone)."""
    now = now or timezone.now()
    return (turn.state == BattleTurn.State.PENDING
            and now - turn.created_at > timedelta(seconds=call_deadline_seconds(system)))


def exchanges(turns: list[BattleTurn], battle: Battle, now=None) -> int:
    """Messages both systems have settled (answered, failed, or cut off by a restart)."""
    settled: Counter = Counter()
    for turn in turns:
        if turn.side == BattleTurn.Side.USER:
            continue
        if turn.state != BattleTurn.State.PENDING or turn_is_stale(
                turn, _system(battle, turn.side), now):
            settled[turn.index] += 1
    return sum(1 for count in settled.values() if count == 2)


def pending(turns: list[BattleTurn], battle: Battle, now=None) -> bool:
    """Is an answer still on its way?"""
    return any(t.state == BattleTurn.State.PENDING
               and not turn_is_stale(t, _system(battle, t.side), now)
               for t in turns if t.side != BattleTurn.Side.USER)


@dataclass
class Reply:
    """One system's answer as a page shows it: no system name, no id, no latency before the
    vote; an error says only its kind (a system's own message may name it)."""

    index: int
    side: str
    label: str
    state: str  # pending | ok | error | interrupted
    text: str = ""
    error_kind: str = ""
    latency_ms: int | None = None
    # the answer's text with its quotes marked, and its [Rn] labels, each linked to the review
    # it cites on the benchmark's item page (as the dialogue viewer links them)
    segments: list[Segment] = field(default_factory=list)
    citations: list[dict] = field(default_factory=list)
    items: list[tuple[str, str]] = field(default_factory=list)  # the item cards: (id, name)

    @property
    def failure(self) -> str:
        return FAILURES.get(self.error_kind, "it failed")


@dataclass
class Exchange:
    index: int
    message: str
    a: Reply
    b: Reply


@dataclass
class BattleView:
    battle: Battle
    exchanges: list[Exchange]
    finished_exchanges: int
    pending: bool
    can_say: bool
    can_vote: bool
    can_retry: bool = False  # a system failed to answer the last message: ask it again
    reveal: dict | None = None  # after the vote: names, the outcome, latencies
    scenario: list[tuple[str, str]] = field(default_factory=list)
    cards: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # side: every card

    @property
    def signal_sides(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """(side, label, its item cards) for the vote form's per-side questions."""
        return [(side, SIDE_LABELS[side], self.cards.get(side, [])) for side in SIDES]


_ITEM_NAMES: dict[tuple, str] = {}  # (benchmark id, its creation, item id) -> name, this process
ITEM_NAMES_KEPT = 50_000


def item_names(battle: Battle, turns: list[BattleTurn]) -> dict[str, str]:
    """The names of the items the answers' cards show: kept per process (a benchmark's items
    do not change; a re-created benchmark is another key, as for `arena_catalogue`), so a turn
    reads only names it has not seen (at most one query; none when no card)."""
    ids = {i for t in turns if t.state == BattleTurn.State.OK for i in shown_items(
        t.ranked_item_ids)}
    if not ids or battle.arena.benchmark_id is None:
        return {}
    benchmark = (battle.arena.benchmark_id, battle.arena.benchmark.created_at)
    missing = [i for i in ids if (benchmark, i) not in _ITEM_NAMES]
    if missing:
        if len(_ITEM_NAMES) > ITEM_NAMES_KEPT:
            _ITEM_NAMES.clear()
        found = dict(Item.objects.filter(benchmark_id=benchmark[0], external_id__in=missing)
                     .values_list("external_id", "name"))
        _ITEM_NAMES.update({(benchmark, i): found.get(i, i) for i in missing})
    return {i: _ITEM_NAMES[(benchmark, i)] for i in ids}


def reply_of(turn: BattleTurn, battle: Battle, now=None,
             names: dict[str, str] | None = None) -> Reply:
    state = turn.state
    if turn_is_stale(turn, _system(battle, turn.side), now):
        state = "interrupted"
    revealed = battle.status == Battle.Status.VOTED
    text = turn.text if turn.state == BattleTurn.State.OK else ""
    citations = _citations(turn, battle) if text else []
    return Reply(index=turn.index, side=turn.side, label=SIDE_LABELS[turn.side], state=state,
                 text=text, error_kind=turn.error_kind,
                 latency_ms=turn.latency_ms if revealed else None,
                 segments=quote_segments(text, [(c["quote"], c) for c in citations
                                                if c["quote"] and c["href"]]),
                 citations=citations,
                 items=[(i, (names or {}).get(i, i)) for i in shown_items(turn.ranked_item_ids)]
                 if turn.state == BattleTurn.State.OK else [])


def _citations(turn: BattleTurn, battle: Battle) -> list[dict]:
    """The answer's citations {label, quote, review_id, item, href}: href links the review on
    its item's page when the arena's benchmark has it (one query), else is empty."""
    cited = [c for c in turn.citations or [] if isinstance(c, dict) and c.get("label")]
    benchmark = battle.arena.benchmark if cited else None
    if benchmark is None:
        return []
    reviews = {r.external_id: r for r in Review.objects.filter(
        benchmark=benchmark, external_id__in=[str(c.get("review_id")) for c in cited])
        .select_related("item")}
    out = []
    for c in cited:
        review = reviews.get(str(c.get("review_id")))
        href = (reverse("item_detail", args=[benchmark.slug, review.item.external_id])
                + f"#review-{review.external_id}") if review else ""
        out.append({"label": str(c["label"]), "quote": str(c.get("quote") or ""),
                    "review_id": str(c.get("review_id") or ""), "href": href,
                    "item": review.item.name if review else ""})
    return out


def battle_view(*, battle: Battle, fresh: bool = False,
                turns: list[BattleTurn] | None = None,
                names: dict[str, str] | None = None) -> BattleView:
    """BATTLE as its page shows it. FRESH: BATTLE was just read in this request (with its
    systems and its arena's benchmark), so it is used as it is; else it is read again. TURNS:
    its turns, when the caller has just read them."""
    if not fresh:
        battle = Battle.objects.select_related("system_a", "system_b", "arena__benchmark").get(
            pk=battle.pk)
    if turns is None:
        turns = battle_turns(battle)
    now = timezone.now()
    if names is None:
        names = item_names(battle, turns)
    rows = {}
    for turn in turns:
        rows.setdefault(turn.index, {})[turn.side] = turn
    views = [Exchange(index=i, message=row[BattleTurn.Side.USER].text,
                      a=reply_of(row[BattleTurn.Side.A], battle, now, names),
                      b=reply_of(row[BattleTurn.Side.B], battle, now, names))
             for i, row in sorted(rows.items())]
    is_open = battle.status == Battle.Status.OPEN
    waiting, finished = pending(turns, battle, now), exchanges(turns, battle, now)
    reveal = None
    if battle.status == Battle.Status.VOTED:
        vote = battle.vote
        reveal = {"a": battle.system_a, "b": battle.system_b, "outcome": vote.outcome,
                  "signals": [(SIDE_LABELS[side], vote.get_satisfaction_display_for(side),
                               names.get(vote.accepted_item(side), vote.accepted_item(side)))
                              for side in SIDES],
                  "outcome_label": vote.get_outcome_display(), "reason": vote.reason,
                  "not_counted": vote.get_excluded_reason_display() if vote.excluded_reason
                  else ""}
    failed_last = bool(views) and any(r.state != BattleTurn.State.OK and
                                      r.state != BattleTurn.State.PENDING
                                      for r in (views[-1].a, views[-1].b))
    return BattleView(battle=battle, exchanges=views, finished_exchanges=finished,
                      pending=waiting, can_say=is_open and not waiting,
                      can_retry=is_open and not waiting and failed_last,
                      can_vote=is_open and not waiting and finished > 0, reveal=reveal,
                      cards={side: list(dict.fromkeys(
                          item for e in views for item in getattr(e, side).items))
                          for side in SIDES},
                      scenario=scenarios.player_rows(battle.scenario or {}))


def reply_view(*, battle: Battle, index: int, side: str) -> tuple[Reply | None, BattleView | None]:
    """SIDE's answer to message INDEX and, once it is settled, the battle's view (its controls
    change with it); one read of the battle's turns. BATTLE was just read in this request."""
    turns = battle_turns(battle)
    turn = next((t for t in turns if t.index == index and t.side == side), None)
    if turn is None:
        return None, None
    if turn.state == BattleTurn.State.PENDING and not turn_is_stale(turn, _system(battle, side)):
        return reply_of(turn, battle), None
    names = item_names(battle, turns)  # one query for the reply and the battle's controls
    reply = reply_of(turn, battle, names=names)
    return reply, battle_view(battle=battle, fresh=True, turns=turns, names=names)


def arena_of_benchmark(benchmark: Benchmark) -> Arena | None:
    return Arena.objects.filter(benchmark=benchmark, slug=benchmark.slug).first()


def battles_of_session(*, arena: Arena, session_key: str | None, user=None, uuids=()):
    """The battles of this browser session (its key, or the battles it remembers) or, logged
    in, of this user, on ARENA."""
    mine = Q(uuid__in=list(uuids))
    if session_key:
        mine |= Q(session_key=session_key)
    if user and user.is_authenticated:
        mine |= Q(user=user)
    return arena.battles.filter(mine).order_by("-created_at")
