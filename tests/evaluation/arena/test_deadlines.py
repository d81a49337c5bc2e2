"""Deadlines and hostile answers in a battle (issue 28.3 and 28.4; docs/arena.md): a system that
trickles its answer fails its side within its timeout, one whose answer is hostile fails its
side with the precise kind, the other side's answer stands, and the person can ask the failed
system again. Real HTTP servers on 127.0.0.1; this module also runs on SQLite
(tests/test_on_sqlite.py)."""

import time

import pytest
from django.core.exceptions import ValidationError

from evaluation.models import BattleTurn
from evaluation.selectors.arena import battle_view
from evaluation.services.arena import (
    arena_open,
    battle_reply_run,
    battle_retry,
    battle_say,
    battle_start,
    battle_vote,
)
from evaluation.services.live import live_system_create
from tests.support.live_server import Raw, first_items, live_server, trickled

pytestmark = pytest.mark.django_db


def _battle(tiny_benchmark, researcher, bad_url, good_url, timeout=2.0):
    bad = live_system_create(name="Bad", owner=researcher, endpoint=bad_url,
                             timeout_seconds=timeout, max_retries=0)
    good = live_system_create(name="Good", owner=researcher, endpoint=good_url)
    arena = arena_open(benchmark=tiny_benchmark, systems=[bad, good])
    battle = battle_start(arena=arena, session_key="s", own_request=True)
    bad_side = "a" if battle.system_a == bad else "b"
    return battle, bad_side, "b" if bad_side == "a" else "a"


def test_a_trickling_system_fails_its_side_within_its_timeout(tiny_benchmark, researcher):
    with live_server(lambda r: trickled(1.0)) as slow, \
            live_server(first_items(["r1"], "Right away.")) as fast:
        battle, slow_side, fast_side = _battle(tiny_benchmark, researcher, slow.url, fast.url)
        battle_say(battle=battle, text="hello")
        started = time.monotonic()
        assert battle_reply_run(battle_id=battle.pk, index=0, side=slow_side) == "error"
        took = time.monotonic() - started
        battle_reply_run(battle_id=battle.pk, index=0, side=fast_side)
    assert took <= 2.0 + 1.0  # the thread it ran on is free again after the system's timeout
    row = battle.turns.get(index=0, side=slow_side)
    assert (row.error_kind, row.error) == ("timeout", "timed out after 2 s")
    assert battle.turns.get(index=0, side=fast_side).text == "Right away."
    view = battle_view(battle=battle)
    assert view.can_say and view.can_vote and view.can_retry
    assert getattr(view.exchanges[0], slow_side).failure == "it took longer than its time limit"


@pytest.mark.parametrize(("body", "kind"), [
    (b"[" * 100_000 + b"]" * 100_000, "too_deep"),
    (b'{"response": "x", "ranked_item_ids": [], "score": NaN}', "bad_number"),
    (b'{"response": ["x"], "ranked_item_ids": []}', "wrong_type"),
])
def test_a_hostile_answer_fails_its_side_and_asking_again_recovers(tiny_benchmark, researcher,
                                                                   body, kind):
    replies = iter([Raw(200, body), {"response": "Better now.", "ranked_item_ids": ["r1"]}])
    with live_server(lambda r: next(replies)) as hostile, \
            live_server(first_items(["r2"], "Fine.")) as fine:
        battle, bad_side, good_side = _battle(tiny_benchmark, researcher, hostile.url,
                                              fine.url)
        battle_say(battle=battle, text="hello")
        for side in "ab":
            battle_reply_run(battle_id=battle.pk, index=0, side=side)
        assert battle.turns.get(index=0, side=bad_side).error_kind == kind
        index, sides = battle_retry(battle=battle)
        assert (index, sides) == (0, [bad_side])
        assert battle.turns.get(index=0, side=bad_side).state == BattleTurn.State.PENDING
        with pytest.raises(ValidationError, match="wait until both"):
            battle_retry(battle=battle)
        battle_reply_run(battle_id=battle.pk, index=0, side=bad_side)
        assert len(hostile.requests) == 2 and len(fine.requests) == 1  # only the failed side
    again = battle.turns.get(index=0, side=bad_side)
    assert (again.state, again.text, again.error_kind) == ("ok", "Better now.", "")
    assert battle.turns.get(index=0, side=good_side).text == "Fine."
    with pytest.raises(ValidationError, match="nothing to ask again"):
        battle_retry(battle=battle)
    assert not battle_view(battle=battle).can_retry
    assert battle_vote(battle=battle, outcome="tie").position == 1
