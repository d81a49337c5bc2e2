"""Battles as the services run them (docs/arena.md): pairs, turns, faults, the one vote.

The systems are real HTTP servers on 127.0.0.1 (tests/support/live_server.py) called through
`live_client`; each system's reply is run synchronously here (the web process runs both at
once on its call threads; tests/browser/test_arena.py drives that path).
"""

import random
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from evaluation.models import Battle, BattleTurn, System, Vote
from evaluation.selectors.arena import battle_view
from evaluation.services.arena import (
    arena_open,
    battle_abandon,
    battle_reply_run,
    battle_say,
    battle_start,
    battle_vote,
    pair_choose,
)
from evaluation.services.live import live_system_create
from tests.support.live_server import Raw, first_items, live_server


@pytest.fixture
def two_servers():
    with live_server(first_items(["r1", "r2"], "Harbor Grill is quiet.")) as one, \
            live_server(first_items(["r2"], "Noodle Nook is cheap.")) as two:
        yield one, two


@pytest.fixture
def arena(tiny_benchmark, researcher, two_servers):
    one, two = two_servers
    systems = [live_system_create(name="Seafood Bot", owner=researcher, endpoint=one.url,
                                  timeout_seconds=2, max_retries=0),
               live_system_create(name="Noodle Bot", owner=researcher, endpoint=two.url,
                                  timeout_seconds=2, max_retries=0)]
    return arena_open(benchmark=tiny_benchmark, systems=systems)


def _reply_both(battle, index):
    for side in ("a", "b"):
        battle_reply_run(battle_id=battle.pk, index=index, side=side)


def test_a_whole_battle_stores_every_turn_and_one_vote(arena, two_servers):
    battle = battle_start(arena=arena, session_key="s1", rng=random.Random(3))
    assert battle.scenario["dialogue_id"] in {"d1", "d2"}  # public dialogues only, never hidden
    with pytest.raises(ValidationError, match="at least one exchange"):
        battle_vote(battle=battle, outcome="a")
    index = battle_say(battle=battle, text="Somewhere quiet for seafood?")
    with pytest.raises(ValidationError, match="wait until both"):
        battle_say(battle=battle, text="too early")
    _reply_both(battle, index)
    battle_say(battle=battle, text="Cheaper?")
    _reply_both(battle, 1)
    # each system saw its own conversation only, with the same dialogue id
    for server in two_servers:
        last = server.requests[-1]
        assert last["utterance"] == "Cheaper?" and last["turn_index"] == 3
        assert [t["role"] for t in last["history"]] == ["user", "system"]
        assert last["dialogue_id"] == f"arena-{battle.uuid}"
    texts = {t.text for t in battle.turns.filter(side__in="ab")}
    assert texts == {"Harbor Grill is quiet.", "Noodle Nook is cheap."}
    vote = battle_vote(battle=battle, outcome="b", reason="  cheaper  ")
    assert (vote.position, vote.reason, vote.system_a_id) == (1, "cheaper", battle.system_a_id)
    battle.refresh_from_db()
    assert battle.status == "voted" and battle.turns.count() == 6
    with pytest.raises(ValidationError, match="already has its vote"):
        battle_vote(battle=battle, outcome="a")
    with pytest.raises(ValidationError, match="already has its vote"):
        battle_say(battle=battle, text="more?")
    assert Vote.objects.count() == 1
    assert battle_view(battle=battle).reveal["a"] == battle.system_a


def test_a_timeout_of_one_system_keeps_the_others_answer(tiny_benchmark, researcher):
    with live_server(lambda r: Raw(200, b'{"response": "late", "ranked_item_ids": []}',
                                   delay=1.5)) as slow, \
            live_server(first_items(["r1"], "Right away.")) as fast:
        slow_system = live_system_create(name="Slow", owner=researcher, endpoint=slow.url,
                                         timeout_seconds=0.3, max_retries=0)
        fast_system = live_system_create(name="Fast", owner=researcher, endpoint=fast.url)
        arena = arena_open(benchmark=tiny_benchmark, systems=[slow_system, fast_system])
        battle = battle_start(arena=arena, session_key="s", own_request=True)
        assert battle.scenario == {}
        battle_say(battle=battle, text="hello")
        _reply_both(battle, 0)
    rows = {t.side: t for t in battle.turns.all()}
    slow_side = "a" if battle.system_a == slow_system else "b"
    fast_side = "b" if slow_side == "a" else "a"
    assert (rows[slow_side].state, rows[slow_side].error_kind) == ("error", "timeout")
    assert (rows[fast_side].state, rows[fast_side].text) == ("ok", "Right away.")
    view = battle_view(battle=battle)
    assert view.can_vote and not view.pending
    shown = getattr(view.exchanges[0], slow_side)
    assert shown.state == "error" and shown.text == "" and shown.latency_ms is None
    assert battle_vote(battle=battle, outcome=fast_side).outcome == fast_side


def test_a_call_cut_off_by_a_restart_reads_as_interrupted_and_the_battle_goes_on(arena):
    battle = battle_start(arena=arena, session_key="s")
    battle_say(battle=battle, text="hello")  # the process "dies": nobody settles the rows
    view = battle_view(battle=battle)
    assert view.pending and not view.can_vote
    long_ago = battle.created_at - timedelta(minutes=10)
    BattleTurn.objects.filter(battle=battle).update(created_at=long_ago)
    view = battle_view(battle=battle)
    assert not view.pending and view.can_vote and view.exchanges[0].a.state == "interrupted"
    assert battle.turns.filter(state="pending").count() == 2  # the read wrote nothing
    battle_say(battle=battle, text="still there?")  # the next write settles the old rows
    assert set(battle.turns.filter(index=0).exclude(side="user")
               .values_list("error_kind", flat=True)) == {"interrupted"}
    _reply_both(battle, 1)
    # a late answer to a settled call is dropped, never overwrites
    battle_reply_run(battle_id=battle.pk, index=0, side="a")
    assert battle.turns.get(index=0, side="a").error_kind == "interrupted"
    assert battle_vote(battle=battle, outcome="tie").position == 1


def test_bad_input_is_refused_and_nothing_is_stored(arena):
    battle = battle_start(arena=arena, session_key="s")
    for text, message in (("   ", "write a message"), ("x" * 1001, "at most 1000")):
        with pytest.raises(ValidationError, match=message):
            battle_say(battle=battle, text=text)
    assert battle.turns.count() == 0
    battle_say(battle=battle, text="hi")
    _reply_both(battle, 0)
    with pytest.raises(ValidationError, match="unknown choice"):
        battle_vote(battle=battle, outcome="a-ish")
    with pytest.raises(ValidationError, match="at most 2000"):
        battle_vote(battle=battle, outcome="a", reason="r" * 2001)
    assert Vote.objects.count() == 0
    battle_abandon(battle=battle)
    with pytest.raises(ValidationError, match="abandoned"):
        battle_vote(battle=battle, outcome="a")
    assert battle.turns.count() == 3 and Vote.objects.count() == 0


def test_pairs_are_drawn_least_voted_first_in_both_orders():
    systems = [System(pk=n, slug=f"s{n}", name=f"S{n}") for n in range(1, 5)]
    counts = Counter({frozenset((1, 2)): 3, frozenset((1, 3)): 1, frozenset((1, 4)): 1,
                      frozenset((2, 3)): 1, frozenset((2, 4)): 1})
    rng = random.Random(0)
    drawn = [pair_choose(systems, counts, rng) for _ in range(200)]
    assert {frozenset((a.pk, b.pk)) for a, b in drawn} == {frozenset((3, 4))}
    assert {(a.pk, b.pk) for a, b in drawn} == {(3, 4), (4, 3)}
    with pytest.raises(ValidationError, match="at least two"):
        pair_choose(systems[:1], Counter(), rng)


def test_successive_battles_spread_over_every_pair(tiny_benchmark):
    systems = [System.objects.create(slug=f"s{n}", name=f"S{n}", live_kind="http",
                                     live_endpoint=f"http://127.0.0.1:9/{n}") for n in range(3)]
    arena = arena_open(benchmark=tiny_benchmark, systems=systems)
    pairs = Counter(frozenset((b.system_a_id, b.system_b_id))
                    for b in (battle_start(arena=arena, session_key=f"k{n}") for n in range(6)))
    assert sorted(pairs.values()) == [2, 2, 2]


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_votes_on_one_battle_store_one(tiny_benchmark, researcher, two_servers):
    one, two = two_servers
    arena = arena_open(benchmark=tiny_benchmark, systems=[
        live_system_create(name="One", owner=researcher, endpoint=one.url),
        live_system_create(name="Two", owner=researcher, endpoint=two.url)])
    battle = battle_start(arena=arena, session_key="s")
    battle_say(battle=battle, text="hi")
    _reply_both(battle, 0)
    barrier, outcomes = threading.Barrier(4), []

    def vote(outcome):
        barrier.wait()
        try:
            battle_vote(battle=Battle.objects.get(pk=battle.pk), outcome=outcome)
            outcomes.append("stored")
        except ValidationError as error:
            outcomes.append(error.messages[0])
        finally:
            connection.close()

    threads = [threading.Thread(target=vote, args=(o,)) for o in ("a", "b", "tie", "both_bad")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["stored"] + ["this battle already has its vote"] * 3
    assert Vote.objects.filter(battle=battle).count() == 1


def test_only_live_systems_join_an_arena(tiny_benchmark):
    dead = System.objects.create(slug="dead", name="Dead")
    with pytest.raises(ValidationError, match="not live: dead"):
        arena_open(benchmark=tiny_benchmark, systems=[dead])
