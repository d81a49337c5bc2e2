"""Which arena votes count (docs/arena.md, "Which votes count"): a battle whose answers named
their system (`Battle.identity_leaked`), and why a vote is left out of the ratings
(`Vote.excluded_reason`). Battles and votes stored before are screened here, as
`evaluation.services.arena_screening` screens new ones."""

from django.db import migrations, models
from django.db.models import Q

from evaluation.lib.arena_identity import identity_leak


def screen_stored(apps, schema_editor):
    Battle, BattleTurn, Vote = (apps.get_model("evaluation", name)
                                for name in ("Battle", "BattleTurn", "Vote"))
    leaked = set()
    answers = (BattleTurn.objects.filter(state="ok", side__in=["a", "b"])
               .select_related("battle__system_a", "battle__system_b").order_by("pk"))
    for turn in answers.iterator(chunk_size=2000):
        system = turn.battle.system_a if turn.side == "a" else turn.battle.system_b
        if turn.battle_id not in leaked and identity_leak(
                turn.text, names=(system.name, system.slug), family=system.family):
            leaked.add(turn.battle_id)
    leaked = sorted(leaked)
    for start in range(0, len(leaked), 1000):
        chunk = leaked[start:start + 1000]
        Battle.objects.filter(pk__in=chunk).update(identity_leaked=True)
        Vote.objects.filter(battle_id__in=chunk).update(excluded_reason="identity_leaked")
    owners = []
    votes = Vote.objects.filter(excluded_reason="", battle__isnull=False).values_list(
        "pk", "battle__user_id", "voter_ref", "system_a__owner_id", "system_b__owner_id")
    for pk, user_id, voter_ref, owner_a, owner_b in votes.iterator(chunk_size=2000):
        voters = {voter_ref, f"user:{user_id}" if user_id else ""} - {""}
        if voters & {f"user:{owner}" for owner in (owner_a, owner_b) if owner}:
            owners.append(pk)
    for start in range(0, len(owners), 1000):
        Vote.objects.filter(pk__in=owners[start:start + 1000]).update(excluded_reason="owner")


class Migration(migrations.Migration):

    dependencies = [
        ("evaluation", "0023_simulation_privacy"),
    ]

    operations = [
        migrations.AddField(
            model_name="battle",
            name="identity_leaked",
            field=models.BooleanField(default=False, help_text="an answer named its system (evaluation/lib/arena_identity.py): its vote is not counted in the ratings"),
        ),
        migrations.AddField(
            model_name="vote",
            name="excluded_reason",
            field=models.CharField(blank=True, choices=[("", "counted"), ("identity_leaked", "an answer named its system"), ("owner", "cast by the owner of a system in the battle")], default="", max_length=20),
        ),
        migrations.AddConstraint(
            model_name="vote",
            constraint=models.CheckConstraint(condition=Q(("excluded_reason__in", ["", "identity_leaked", "owner"])), name="vote_excluded_reason"),
        ),
        migrations.AddIndex(
            model_name="vote",
            index=models.Index(fields=["arena", "excluded_reason", "position"], name="vote_arena_counted"),
        ),
        migrations.RunPython(screen_stored, migrations.RunPython.noop),
    ]
