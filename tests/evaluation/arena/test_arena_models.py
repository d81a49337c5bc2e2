"""The arena's tables keep their invariants in the database (docs/architecture.md, "Arena")."""

import uuid

import pytest
from django.db import IntegrityError, transaction

from evaluation.models import Arena, Battle, BattleTurn, System, Vote


@pytest.fixture
def arena_pair(db):
    arena = Arena.objects.create(slug="a1", name="Arena one")
    one = System.objects.create(slug="one", name="One")
    two = System.objects.create(slug="two", name="Two")
    return arena, one, two


def _battle(arena, one, two):
    return Battle.objects.create(uuid=uuid.uuid4(), arena=arena, system_a=one, system_b=two,
                                 session_key="s")


def test_one_vote_per_battle_and_one_position_per_arena(arena_pair):
    arena, one, two = arena_pair
    battle = _battle(arena, one, two)
    Vote.objects.create(arena=arena, battle=battle, system_a=one, system_b=two, outcome="a",
                        position=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Vote.objects.create(arena=arena, battle=battle, system_a=one, system_b=two,
                            outcome="b", position=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        Vote.objects.create(arena=arena, system_a=one, system_b=two, outcome="b", position=1)
    Vote.objects.create(arena=arena, system_a=two, system_b=one, outcome="tie", position=2)
    assert list(arena.votes.values_list("outcome", flat=True)) == ["a", "tie"]


def test_a_battle_and_a_vote_need_two_different_systems(arena_pair):
    arena, one, _ = arena_pair
    with pytest.raises(IntegrityError), transaction.atomic():
        _battle(arena, one, one)
    with pytest.raises(IntegrityError), transaction.atomic():
        Vote.objects.create(arena=arena, system_a=one, system_b=one, outcome="a", position=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Vote.objects.create(arena=arena, system_a=one, system_b=arena_pair[2],
                            outcome="maybe", position=1)


def test_one_row_per_turn_and_side_and_user_turns_are_settled(arena_pair):
    battle = _battle(*arena_pair)
    BattleTurn.objects.create(battle=battle, index=0, side="user", text="hi")
    BattleTurn.objects.create(battle=battle, index=0, side="a", state="pending")
    with pytest.raises(IntegrityError), transaction.atomic():
        BattleTurn.objects.create(battle=battle, index=0, side="a", state="pending")
    with pytest.raises(IntegrityError), transaction.atomic():
        BattleTurn.objects.create(battle=battle, index=1, side="user", state="pending")
    with pytest.raises(IntegrityError), transaction.atomic():
        BattleTurn.objects.create(battle=battle, index=1, side="c")
