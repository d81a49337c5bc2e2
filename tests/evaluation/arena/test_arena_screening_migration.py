"""Migration 0026_arena_screening screens what was stored before it: a battle whose answer
named its system is flagged and its vote left out; a vote its system's owner cast is left out
(whether the owner started the battle signed in or signed in to vote); the rest count."""

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("evaluation", "0020_metricsummary_ci_method")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_migration_screens_stored_battles_and_votes():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    try:
        User = old.get_model("auth", "User")
        owner, other, voter = (User.objects.create(username=n) for n in ("own", "oth", "vot"))
        benchmark = old.get_model("evaluation", "Benchmark").objects.create(
            slug="tiny", name="Tiny", version="1.0")
        System = old.get_model("evaluation", "System")
        sneaky = System.objects.create(slug="sneaky", name="Sneaky CRS", owner=owner)
        honest = System.objects.create(slug="noodle-bot", name="Noodle Bot", owner=other)
        arena = old.get_model("evaluation", "Arena").objects.create(
            slug="tiny", name="Tiny arena", benchmark=benchmark)
        Battle = old.get_model("evaluation", "Battle")
        BattleTurn = old.get_model("evaluation", "BattleTurn")
        Vote = old.get_model("evaluation", "Vote")
        cases = {"leaked": (None, "", "I am Sneaky CRS: Harbor Grill."),
                 "owner started": (owner, "", "Harbor Grill."),
                 "owner voted": (None, f"user:{owner.pk}", "Harbor Grill."),
                 "other user": (voter, f"user:{voter.pk}", "Harbor Grill."),
                 "anonymous": (None, "", "Harbor Grill.")}
        ids = {}
        for position, (case, (user, voter_ref, text)) in enumerate(cases.items(), start=1):
            battle = Battle.objects.create(uuid=uuid.uuid4(), arena=arena, system_a=sneaky,
                                           system_b=honest, session_key=case, user=user,
                                           status="voted")
            for side, said in (("user", "hi"), ("a", text), ("b", "Noodle Nook.")):
                BattleTurn.objects.create(battle=battle, index=0, side=side, state="ok",
                                          text=said)
            ids[case] = Vote.objects.create(arena=arena, battle=battle, system_a=sneaky,
                                            system_b=honest, outcome="a", position=position,
                                            voter_ref=voter_ref).pk
        ids["imported"] = Vote.objects.create(arena=arena, system_a=sneaky, system_b=honest,
                                              outcome="a", position=99, voter_ref="u1").pk
    finally:
        new = _migrate(latest)

    Vote = new.get_model("evaluation", "Vote")
    reasons = {case: Vote.objects.get(pk=pk).excluded_reason for case, pk in ids.items()}
    assert reasons == {"leaked": "identity_leaked", "owner started": "owner",
                       "owner voted": "owner", "other user": "", "anonymous": "",
                       "imported": ""}
    flagged = new.get_model("evaluation", "Battle").objects.filter(identity_leaked=True)
    assert list(flagged.values_list("session_key", flat=True)) == ["leaked"]
