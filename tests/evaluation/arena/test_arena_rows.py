"""The hand-written statements of a battle's turn (evaluation/rows.py) hold what the ORM reads."""

import random

import pytest
from django.db import transaction

from evaluation.models import Arena, Battle, BattleTurn
from evaluation.rows import battle_status_locked, battle_turns, battle_with_systems
from evaluation.services.arena import battle_reply_run, battle_say, battle_start
from tests.evaluation.arena.test_battles import arena, two_servers  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_battle_read_equals_the_orms_with_its_arena_benchmark_and_systems(arena):  # noqa: F811
    battle = battle_start(arena=arena, session_key="s1", rng=random.Random(2))
    orm = Battle.objects.select_related("arena__benchmark", "system_a", "system_b").get(
        uuid=battle.uuid)
    mine = battle_with_systems(battle.uuid)
    assert _fields(mine) == _fields(orm)
    for related in ("arena", "system_a", "system_b"):
        assert Battle._meta.get_field(related).is_cached(mine)
        assert _fields(getattr(mine, related)) == _fields(getattr(orm, related))
    assert _fields(mine.arena.benchmark) == _fields(orm.arena.benchmark)
    assert battle_with_systems(str(battle.uuid)).pk == battle.pk  # the URL's text works too
    assert battle_with_systems("00000000-0000-0000-0000-000000000000") is None


def test_an_arena_without_a_benchmark_reads_as_none(arena):  # noqa: F811
    battle = battle_start(arena=arena, session_key="s1", rng=random.Random(2))
    Arena.objects.filter(pk=arena.pk).update(benchmark=None)
    assert battle_with_systems(battle.uuid).arena.benchmark is None


def test_the_turns_read_equals_the_orms_in_its_order(arena):  # noqa: F811
    battle = battle_start(arena=arena, session_key="s1", rng=random.Random(2))
    for index, text in enumerate(["Somewhere quiet?", "Cheaper?"]):
        battle_say(battle=battle, text=text)
        for side in "ab":
            battle_reply_run(battle_id=battle.pk, index=index, side=side)
    orm = list(battle.turns.all())
    mine = battle_turns(battle)
    assert [_fields(t) for t in mine] == [_fields(t) for t in orm] and len(mine) == 6
    assert [(t.index, t.side) for t in mine] == [(0, "a"), (0, "b"), (0, "user"), (1, "a"),
                                                 (1, "b"), (1, "user")]
    assert all(t.battle is battle for t in mine)
    assert all(t.state == BattleTurn.State.OK for t in mine)


def test_the_status_lock_reads_the_status(arena):  # noqa: F811
    battle = battle_start(arena=arena, session_key="s1", rng=random.Random(2))
    Battle.objects.filter(pk=battle.pk).update(status=Battle.Status.ABANDONED)
    with transaction.atomic():
        assert battle_status_locked(battle) == "abandoned"


def test_settling_writes_only_a_pending_row_and_keeps_the_other_fields_empty(arena):  # noqa: F811
    from django.utils import timezone

    from evaluation.rows import battle_turn_settle

    battle = battle_start(arena=arena, session_key="s1", rng=random.Random(2))
    battle_say(battle=battle, text="Somewhere quiet?")
    now = timezone.now()
    fields = {"state": "error", "error_kind": "timeout", "error": "no answer in 2 s",
              "latency_ms": 2000, "settled_at": now}
    battle_turn_settle(battle_id=battle.pk, index=0, side="a", fields=fields)
    battle_turn_settle(battle_id=battle.pk, index=0, side="a", fields={  # too late: ignored
        "state": "ok", "text": "late", "ranked_item_ids": ["r1"], "latency_ms": 1,
        "settled_at": now})
    row = BattleTurn.objects.get(battle=battle, index=0, side="a")
    assert (row.state, row.error_kind, row.error, row.latency_ms, row.settled_at) == (
        "error", "timeout", "no answer in 2 s", 2000, now)
    assert (row.text, row.ranked_item_ids, row.citations) == ("", [], [])
    assert BattleTurn.objects.get(battle=battle, index=0, side="b").state == "pending"
    assert Battle.objects.get(pk=battle.pk).updated_at >= battle.created_at
