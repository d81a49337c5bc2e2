"""Blind battles between live systems and the votes they end in (docs/arena.md).

A battle is stored as it happens, never only in memory: `battle_start` draws the pair and the
scenario, `battle_say` writes the person's message and one *pending* row per system in one
transaction, and each system's answer settles its own row (`battle_reply_run`), so a system that
fails or times out never touches the other's answer. Both calls of a turn run at once on this
process's call threads (`battle_replies_start`); each goes through `live_client`, which keeps the
system's timeout, retries and concurrency limit. A row still pending after its system's longest
possible call (the web process restarted mid-call) reads as `interrupted`, and the next write on
the battle settles it so: the person can go on, vote or abandon.

`battle_vote` locks the battle and its arena: one vote per battle (the one-to-one column refuses
a replay that slips past the lock), at least one finished exchange, nothing pending, and the
vote's `position` is the arena's next one.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.db.models import Count, Max
from django.utils import timezone
from django.utils.text import slugify

from evaluation.lib.arena_signals import Answer, shown_items, side_style, words_in
from evaluation.lib.live.client import LiveCallError
from evaluation.lib.live.contract import HistoryTurn, LiveRequest
from evaluation.lib.rankers import Catalogue
from evaluation.lib.stats.arena import fit_bradley_terry, outcome_score
from evaluation.lib.stats.arena_pairing import pair_probabilities
from evaluation.models import Arena, Battle, BattleTurn, Benchmark, Dialogue, Split, System, Vote
from evaluation.rows import (
    battle_status_locked,
    battle_touch,
    battle_turn_settle,
    battle_turns,
    turns_insert,
)
from evaluation.selectors.arena import SIDES, exchanges, pending, turn_is_stale
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.services.arena_screening import battle_identity_screen, vote_excluded_reason
from evaluation.services.live import live_client

MAX_MESSAGE_CHARS = 1000
MAX_REASON_CHARS = 2000
MAX_TURNS = 10
PUBLIC_SPLITS = (Split.TRAIN, Split.DEV, Split.TEST)
INTERRUPTED = "interrupted"


# --- arenas -----------------------------------------------------------------------------------


@transaction.atomic
def arena_open(*, benchmark: Benchmark, systems: list[System], name: str = "") -> Arena:
    """The benchmark's arena (slug = the benchmark's), created if needed, with SYSTEMS added to
    the systems battles draw from. Every system must be live; nothing changes otherwise."""
    not_live = [s.slug for s in systems if not s.is_live]
    if not_live:
        raise ValidationError(f"only live systems can battle; not live: {', '.join(not_live)}")
    arena, _ = Arena.objects.get_or_create(
        slug=benchmark.slug, defaults={"name": name or f"{benchmark.name} arena",
                                       "benchmark": benchmark})
    if arena.benchmark_id != benchmark.pk:
        raise ValidationError(f"arena {arena.slug!r} belongs to another benchmark")
    arena.systems.add(*systems)
    return arena


def arena_live_systems(arena: Arena) -> list[System]:
    return list(arena.systems.exclude(live_kind="").order_by("pk"))


# An arena filled from imported votes (CRS Arena's vote files, `import_public crs_arena_dial`).


def _unique_arena_slug(base: str) -> str:
    base = slugify(base)[:90] or "arena"
    slug, number = base, 1
    while Arena.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return slug


@transaction.atomic
def arena_import_votes(*, benchmark: Benchmark, votes: list[dict],
                       system_for: Callable[[str], System]) -> Arena:
    """A new arena named after ``benchmark`` holding ``votes`` in the given (cast) order:
    positions 0, 1, …; each vote {system_a, system_b (names), outcome, reason, voter_ref} and
    optionally satisfaction_a / satisfaction_b (the sides' conversations' sentiment) and
    session_id.
    ``system_for`` maps a system name to its System."""
    arena = Arena.objects.create(slug=_unique_arena_slug(benchmark.slug), name=benchmark.name,
                                 benchmark=benchmark)
    systems: dict[str, System] = {}
    for vote in votes:
        for name in (vote["system_a"], vote["system_b"]):
            if name not in systems:
                systems[name] = system_for(name)
    Vote.objects.bulk_create(
        [Vote(arena=arena, system_a=systems[vote["system_a"]],
              system_b=systems[vote["system_b"]], outcome=vote["outcome"],
              reason=vote.get("reason", ""), position=position,
              voter_ref=vote.get("voter_ref", "")[:200],
              satisfaction_a=vote.get("satisfaction_a") or "",
              satisfaction_b=vote.get("satisfaction_b") or "",
              session_ref=(vote.get("session_id") or "")[:200])
         for position, vote in enumerate(votes)], batch_size=2000)
    return arena


# --- starting a battle ------------------------------------------------------------------------


def pair_choose(systems: list[System], counts: Counter, rng: random.Random,
                wins: np.ndarray | None = None) -> tuple[System, System]:
    """The pair for the next battle, then a random side for each (A is either system).

    Adaptive pairing (docs/arena.md, "Adaptive pairing"): once the arena's counted votes give
    Bradley–Terry ratings (WINS, systems × systems in the order of SYSTEMS, ties half), pairs
    are drawn with `pair_probabilities` (pairs whose order is least settled most often, with a
    floor for every pair and a cap on any pair's share). Before that, the least-battled pair
    (votes plus open battles, either order; ties at random), so every pair gets votes first."""
    pairs = [(x, y) for i, x in enumerate(systems) for y in systems[i + 1:]]
    if not pairs:
        raise ValidationError("this arena needs at least two live systems")
    theta = fit_bradley_terry(wins) if wins is not None else None
    if theta is not None:
        probabilities = pair_probabilities(wins, theta=theta)
        index = {(x.pk, y.pk): (i, j) for i, x in enumerate(systems)
                 for j, y in enumerate(systems) if i < j}
        weights = [probabilities[index[(x.pk, y.pk)]] for x, y in pairs]
        first, second = rng.choices(pairs, weights=weights)[0]
    else:
        load = {pair: counts[frozenset((pair[0].pk, pair[1].pk))] for pair in pairs}
        fewest = min(load.values())
        first, second = rng.choice([pair for pair in pairs if load[pair] == fewest])
    return (first, second) if rng.random() < 0.5 else (second, first)


def _pair_counts(arena: Arena, systems: list[System]) -> tuple[Counter, np.ndarray]:
    """Votes plus open battles per pair, and the counted votes' win matrix over SYSTEMS (ties
    and "both bad" half a win each): two grouped queries, however many votes the arena has."""
    counts: Counter = Counter()
    position = {system.pk: i for i, system in enumerate(systems)}
    wins = np.zeros((len(systems), len(systems)))
    grouped = (arena.votes.order_by().values_list("system_a_id", "system_b_id", "outcome",
                                                  "excluded_reason").annotate(n=Count("pk")))
    for a, b, outcome, excluded, n in grouped:
        counts[frozenset((a, b))] += n
        if not excluded and a in position and b in position:
            score = outcome_score(outcome)
            wins[position[a], position[b]] += n * score
            wins[position[b], position[a]] += n * (1 - score)
    open_battles = (arena.battles.filter(status=Battle.Status.OPEN).order_by()
                    .values_list("system_a_id", "system_b_id").annotate(n=Count("pk")))
    for a, b, n in open_battles:
        counts[frozenset((a, b))] += n
    return counts, wins


def scenario_draw(benchmark: Benchmark, rng: random.Random) -> dict:
    """A scenario of one of the benchmark's public dialogues (never a hidden one)."""
    ids = list(Dialogue.objects.filter(benchmark=benchmark, split__in=PUBLIC_SPLITS)
               .order_by("pk").values_list("pk", flat=True))
    if not ids:
        return {}
    dialogue = Dialogue.objects.get(pk=rng.choice(ids))
    return {"dialogue_id": dialogue.external_id, **(dialogue.scenario or {})}


@transaction.atomic
def battle_start(*, arena: Arena, session_key: str, user=None, address_hash: str = "",
                 own_request: bool = False, rng: random.Random | None = None) -> Battle:
    """A new battle for the session: two of the arena's live systems and, unless the person
    writes their own request, a scenario from the benchmark."""
    if not session_key:
        raise ValidationError("a battle needs a browser session")
    rng = rng or random.SystemRandom()
    Arena.objects.select_for_update().get(pk=arena.pk)  # concurrent starts see each other's pair
    systems = arena_live_systems(arena)
    counts, wins = _pair_counts(arena, systems)
    system_a, system_b = pair_choose(systems, counts, rng, wins)
    scenario = {} if own_request or arena.benchmark is None else scenario_draw(arena.benchmark, rng)
    return Battle.objects.create(
        uuid=uuid.uuid4(), arena=arena, system_a=system_a, system_b=system_b,
        session_key=session_key, user=user if user and user.is_authenticated else None,
        address_hash=address_hash, scenario=scenario)


# --- turns ------------------------------------------------------------------------------------


def _settle_stale(battle: Battle) -> list[BattleTurn]:
    """Settle the answers a restart cut off; the battle's turns as they now are."""
    turns = battle_turns(battle)
    stale = [t for t in turns if turn_is_stale(
        t, battle.system_a if t.side == BattleTurn.Side.A else battle.system_b)]
    if stale:
        now = timezone.now()
        BattleTurn.objects.filter(pk__in=[t.pk for t in stale],
                                  state=BattleTurn.State.PENDING).update(
            state=BattleTurn.State.ERROR, error_kind=INTERRUPTED,
            error="no answer: the call was cut off (Concord restarted)", settled_at=now)
        for turn in stale:
            turn.state, turn.error_kind, turn.settled_at = BattleTurn.State.ERROR, INTERRUPTED, now
    return turns


def _locked_open(battle: Battle) -> tuple[Battle, list[BattleTurn]]:
    """The open battle, locked, and its turns (cut-off answers settled); else ValidationError.

    Only the row's status is read again under the lock: a battle's systems never change, so
    the ones BATTLE already holds (the view read them with it) serve."""
    status = battle_status_locked(battle)
    if status == Battle.Status.VOTED:
        raise ValidationError("this battle already has its vote")
    if status == Battle.Status.ABANDONED:
        raise ValidationError("this battle was abandoned")
    battle.status = status
    return battle, _settle_stale(battle)


@transaction.atomic
def battle_say(*, battle: Battle, text: str) -> int:
    """Store the person's next message and one pending answer row per system; its index."""
    text = (text or "").strip()
    if not text:
        raise ValidationError("write a message first")
    if len(text) > MAX_MESSAGE_CHARS:
        raise ValidationError(f"a message has at most {MAX_MESSAGE_CHARS} characters "
                              f"(this one has {len(text)})")
    battle, turns = _locked_open(battle)
    if any(t.state == BattleTurn.State.PENDING for t in turns):
        raise ValidationError("wait until both systems have answered")
    index = sum(1 for t in turns if t.side == BattleTurn.Side.USER)
    if index >= MAX_TURNS:
        raise ValidationError(f"a battle has at most {MAX_TURNS} messages: time to vote")
    turns_insert([
        BattleTurn(battle=battle, index=index, side=BattleTurn.Side.USER, text=text),
        *(BattleTurn(battle=battle, index=index, side=side, state=BattleTurn.State.PENDING)
          for side in SIDES)])
    battle_touch(battle, timezone.now())
    return index


@transaction.atomic
def battle_retry(*, battle: Battle) -> tuple[int, list[str]]:
    """Ask again the systems whose answer to the person's last message failed (or was cut
    off): their rows are pending again, the other side's answer stays. The message's index and
    the sides to call (`battle_replies_start`); refused while an answer is pending or when
    both answered."""
    battle, turns = _locked_open(battle)
    if any(t.state == BattleTurn.State.PENDING for t in turns):
        raise ValidationError("wait until both systems have answered")
    last = max((t.index for t in turns if t.side == BattleTurn.Side.USER), default=None)
    failed = [t for t in turns if t.index == last and t.side != BattleTurn.Side.USER
              and t.state == BattleTurn.State.ERROR]
    if not failed:
        raise ValidationError("nothing to ask again: both systems answered your last message")
    now = timezone.now()
    BattleTurn.objects.filter(pk__in=[t.pk for t in failed]).update(
        state=BattleTurn.State.PENDING, error_kind="", error="", latency_ms=None,
        settled_at=None, created_at=now)  # a new call: its own time before it reads as cut off
    battle_touch(battle, now)
    return last, [t.side for t in failed]


_CATALOGUES: dict[tuple, tuple[float, Catalogue]] = {}
_CATALOGUES_LOCK = threading.Lock()
CATALOGUE_SECONDS = 600.0


def arena_catalogue(benchmark: Benchmark) -> Catalogue:
    """The benchmark's catalogue, built once per process (one thread builds, the others wait)
    and kept ten minutes: every turn of every battle on the benchmark needs it, and building
    it reads the whole benchmark."""
    key = (benchmark.pk, benchmark.created_at)  # a re-created benchmark is another key
    with _CATALOGUES_LOCK:
        entry = _CATALOGUES.get(key)
        if entry is None or time.monotonic() - entry[0] >= CATALOGUE_SECONDS:
            bundle = benchmark_bundle(benchmark=benchmark)
            entry = (time.monotonic(), Catalogue.from_records(bundle.items, bundle.reviews))
            _CATALOGUES[key] = entry
        return entry[1]


def live_request(battle: Battle, side: str, index: int, turns: list[BattleTurn]) -> LiveRequest:
    """What SIDE's system receives for message INDEX: its own conversation so far (the
    person's messages and its own answers; the other system's never)."""
    history, utterance = [], ""
    for turn in sorted(turns, key=lambda t: (t.index, t.side != BattleTurn.Side.USER)):
        if turn.side == BattleTurn.Side.USER:
            if turn.index == index:
                utterance = turn.text
            elif turn.index < index:
                history.append(HistoryTurn("user", turn.text))
        elif turn.side == side and turn.index < index and turn.state == BattleTurn.State.OK:
            history.append(HistoryTurn("system", turn.text, tuple(turn.ranked_item_ids)))
    return LiveRequest(benchmark=battle.arena.benchmark.slug, dialogue_id=f"arena-{battle.uuid}",
                       turn_index=len(history) + 1, history=tuple(history), utterance=utterance)


def battle_reply_run(*, battle_id: int, index: int, side: str, clock=time.perf_counter) -> str:
    """Call SIDE's system for message INDEX and settle its row; the row's new state.

    The row is settled only if it is still pending (a late answer to a call already settled as
    interrupted is dropped); the other side's row is never written here.
    """
    battle = Battle.objects.select_related("arena__benchmark", f"system_{side}").get(pk=battle_id)
    system = battle.system_a if side == BattleTurn.Side.A else battle.system_b
    turns = list(battle.turns.filter(index__lte=index))
    return _reply_settle(battle=battle, system=system, request=live_request(
        battle, side, index, turns), index=index, side=side, clock=clock)


def _reply_settle(*, battle: Battle, system, request: LiveRequest, index: int, side: str,
                  clock=time.perf_counter) -> str:
    """Send REQUEST to SYSTEM and settle SIDE's row for message INDEX (one UPDATE)."""
    started = clock()
    fields: dict
    try:
        client = live_client(system=system, benchmark=battle.arena.benchmark,
                             catalogue=arena_catalogue(battle.arena.benchmark))
        answer = client.turn(request)
        fields = {"state": BattleTurn.State.OK, "text": answer.response,
                  "ranked_item_ids": list(answer.ranked_item_ids),
                  "citations": [dict(c) for c in answer.citations]}
    except LiveCallError as error:
        fields = {"state": BattleTurn.State.ERROR, "error_kind": error.kind,
                  "error": error.message}
    except ValidationError as error:  # not live any more, or its key is missing here
        fields = {"state": BattleTurn.State.ERROR, "error_kind": "refused",
                  "error": "; ".join(error.messages)}
    except Exception as error:  # noqa: BLE001 - an in-process system's crash is its failure
        fields = {"state": BattleTurn.State.ERROR, "error_kind": "crashed",
                  "error": f"{type(error).__name__}: {error}"}
    fields["latency_ms"] = round((clock() - started) * 1000)
    fields["settled_at"] = timezone.now()
    battle_identity_screen(battle=battle, system=system, text=fields.get("text", ""))
    battle_turn_settle(battle_id=battle.pk, index=index, side=side, fields=fields)
    return fields["state"]


class _CallPool:
    """This process's threads for system calls (created on first use, after any fork)."""

    def __init__(self):
        self.executor: ThreadPoolExecutor | None = None
        self.lock = threading.Lock()

    def submit(self, fn, **kwargs):
        with self.lock:
            if self.executor is None:
                self.executor = ThreadPoolExecutor(max_workers=settings.ARENA_CALL_THREADS,
                                                   thread_name_prefix="arena-call")
        return self.executor.submit(_in_thread, fn, kwargs)


def _in_thread(fn, kwargs):
    close_old_connections()
    try:
        return fn(**kwargs)
    finally:
        connection.close()


CALLS = _CallPool()


def battle_replies_start(*, battle: Battle, index: int,
                         turns: list[BattleTurn] | None = None, sides=SIDES) -> list:
    """Call both systems for message INDEX at once (after the message's transaction committed);
    the futures, for callers that wait (the bench command, tests).

    BATTLE was read with its arena's benchmark and both systems (`get_battle_for_request`);
    TURNS, its turns including message INDEX's rows, when the caller has just read them (the
    page does). Each system's request is built here, so a call thread only calls and settles
    its row: one statement on its own connection. SIDES: the systems to call (a retry asks
    only the ones that failed)."""
    if turns is None:
        turns = battle_turns(battle)
    return [CALLS.submit(_reply_settle, battle=battle, system=system,
                         request=live_request(battle, side, index, turns), index=index, side=side)
            for side, system in zip(SIDES, (battle.system_a, battle.system_b), strict=True)
            if side in sides]


# --- ending a battle --------------------------------------------------------------------------


def _side_answers(turns: list[BattleTurn], side: str) -> list[Answer]:
    return [Answer(t.text, tuple(t.ranked_item_ids)) for t in sorted(turns, key=lambda t: t.index)
            if t.side == side and t.state == BattleTurn.State.OK]


def vote_signals(*, turns: list[BattleTurn], satisfaction: dict, accepted: dict) -> dict:
    """The vote's per-side fields (docs/arena.md, "What a vote records"), checked: a verdict is
    satisfied, frustrated or none; an accepted item is one of the cards that side showed. Its
    style per side, and the words of both final answers (what a person had to read)."""
    fields, style, last = {}, {}, {}
    for side in SIDES:
        verdict = (satisfaction.get(side) or "").strip()
        if verdict not in ("", *Vote.Satisfaction.values):
            raise ValidationError(f"unknown verdict {verdict!r} for System {side.upper()}: "
                                  "choose satisfied or frustrated")
        answers = _side_answers(turns, side)
        item = (accepted.get(side) or "").strip()
        shown = {i for answer in answers for i in shown_items(answer.ranked_item_ids)}
        if item and item not in shown:
            raise ValidationError(f"System {side.upper()} did not show the item {item[:80]!r}: "
                                  "accept one of its item cards")
        fields[f"satisfaction_{side}"], fields[f"accepted_item_{side}"] = verdict, item
        style[side] = side_style(answers)
        last[side] = answers[-1].text if answers else ""
    fields["style"] = style
    fields["words_shown"] = sum(words_in(text) for text in last.values())
    return fields


@transaction.atomic
def battle_vote(*, battle: Battle, outcome: str, reason: str = "", voter_ref: str = "",
                user=None, satisfaction: dict | None = None,
                accepted: dict | None = None) -> Vote:
    """The battle's one vote, cast by USER; refused when replayed, before a finished exchange,
    while an answer is pending, or with an unknown outcome. Nothing is stored when refused. A
    vote the ratings leave out (an answer named its system, or USER owns one) says why.
    SATISFACTION, ACCEPTED: {side: verdict} and {side: item id} (`vote_signals`). The vote also
    stores the seconds since the last answer arrived, and a hash of the browser session (the
    vote-quality flags read them)."""
    if outcome not in Vote.Outcome.values:
        raise ValidationError(f"unknown choice {outcome!r}: choose A, B, tie or both bad")
    reason = (reason or "").strip()
    if len(reason) > MAX_REASON_CHARS:
        raise ValidationError(f"a reason has at most {MAX_REASON_CHARS} characters")
    battle, turns = _locked_open(battle)
    if pending(turns, battle):
        raise ValidationError("wait until both systems have answered")
    if not exchanges(turns, battle):
        raise ValidationError("talk to the systems first: a vote needs at least one exchange")
    signals = vote_signals(turns=turns, satisfaction=satisfaction or {}, accepted=accepted or {})
    now = timezone.now()
    shown_at = max((t.settled_at for t in turns if t.side != BattleTurn.Side.USER
                    and t.settled_at is not None), default=None)
    arena = Arena.objects.select_for_update().get(pk=battle.arena_id)  # positions in order
    position = (arena.votes.aggregate(last=Max("position"))["last"] or 0) + 1
    try:
        with transaction.atomic():
            vote = Vote.objects.create(
                arena=arena, battle=battle, system_a=battle.system_a, system_b=battle.system_b,
                outcome=outcome, reason=reason, position=position, voter_ref=voter_ref,
                excluded_reason=vote_excluded_reason(battle=battle, user=user),
                seconds_to_vote=(now - shown_at).total_seconds() if shown_at else None,
                session_ref=hashlib.sha256(battle.session_key.encode()).hexdigest()[:32],
                **signals)
    except IntegrityError:
        raise ValidationError("this battle already has its vote") from None
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.VOTED, updated_at=now)
    return vote


@transaction.atomic
def battle_abandon(*, battle: Battle) -> Battle:
    """End the battle without a vote (its dialogue stays stored)."""
    battle, _ = _locked_open(battle)
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.ABANDONED,
                                               updated_at=timezone.now())
    battle.status = Battle.Status.ABANDONED
    return battle
