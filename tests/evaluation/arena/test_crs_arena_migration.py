"""Migration 0037_crs_arena gives votes of battles stored before it their style, words shown
and session hash from their stored turns, as `battle_vote` computes them; imported votes and
the new per-side fields stay empty."""

import hashlib
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("evaluation", "0036_arena_requests")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_stored_battle_votes_get_their_style():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    try:
        benchmark = old.get_model("evaluation", "Benchmark").objects.create(
            slug="tiny", name="Tiny", version="1.0")
        System = old.get_model("evaluation", "System")
        one, two = (System.objects.create(slug=s, name=s) for s in ("one", "two"))
        arena = old.get_model("evaluation", "Arena").objects.create(
            slug="tiny", name="Tiny arena", benchmark=benchmark)
        battle = old.get_model("evaluation", "Battle").objects.create(
            uuid=uuid.uuid4(), arena=arena, system_a=one, system_b=two, session_key="sess",
            status="voted")
        BattleTurn = old.get_model("evaluation", "BattleTurn")
        for index, (a, b) in enumerate((("Harbor Grill is quiet [R1].", "Noodle Nook."),
                                        ("Try Fish House.", "Sorry."))):
            BattleTurn.objects.create(battle=battle, index=index, side="user", text="hi")
            BattleTurn.objects.create(battle=battle, index=index, side="a", text=a,
                                      ranked_item_ids=["r1", "r2"][: index + 1])
            BattleTurn.objects.create(battle=battle, index=index, side="b", text=b,
                                      ranked_item_ids=[])
        Vote = old.get_model("evaluation", "Vote")
        voted = Vote.objects.create(arena=arena, battle=battle, system_a=one, system_b=two,
                                    outcome="a", position=1).pk
        imported = Vote.objects.create(arena=arena, system_a=one, system_b=two, outcome="b",
                                       position=2).pk
    finally:
        new = _migrate(latest)
    Vote = new.get_model("evaluation", "Vote")
    vote = Vote.objects.get(pk=voted)
    # A: (5 words incl. R1 + 3) / 2 = 4, items r1, r2, citations 1; B: (2 + 1) / 2
    assert vote.style == {"a": {"length": 4.0, "items": 2.0, "citations": 1.0},
                          "b": {"length": 1.5, "items": 0.0, "citations": 0.0}}
    assert vote.words_shown == 3 + 1  # the final answers: "Try Fish House." and "Sorry."
    assert vote.session_ref == hashlib.sha256(b"sess").hexdigest()[:32]
    assert (vote.satisfaction_a, vote.accepted_item_a, vote.seconds_to_vote) == ("", "", None)
    assert Vote.objects.get(pk=imported).style == {}
