"""Simulated users get opaque ids (issue 28): each simulation a secret of its own, and each
stored dialogue the id of the benchmark dialogue it simulates, kept apart from the user's id.

Simulations stored before this migration keep the user ids they had (their source dialogues'
ids, which is also what their log submissions and unit values name): `source_dialogue_id` is
filled in from them so staff pages read both kinds alike.
"""

import secrets

import evaluation.models.simulations
from django.db import migrations, models
from django.db.models import F


def backfill(apps, schema_editor):
    Simulation = apps.get_model("evaluation", "Simulation")
    SimulatedDialogue = apps.get_model("evaluation", "SimulatedDialogue")
    for pk in Simulation.objects.values_list("pk", flat=True):
        Simulation.objects.filter(pk=pk).update(secret=secrets.token_hex(16))
    SimulatedDialogue.objects.update(source_dialogue_id=F("user_id"))


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0022_spending'),
    ]

    operations = [
        migrations.AddField(
            model_name='simulateddialogue',
            name='source_dialogue_id',
            field=models.CharField(blank=True, help_text='the benchmark dialogue it simulates: staff only, never sent or exported', max_length=200),
        ),
        migrations.AddField(
            model_name='simulation',
            name='secret',
            field=models.CharField(default=evaluation.models.simulations.new_simulation_secret, editable=False, help_text="keys the users' opaque ids; never shown", max_length=64),
        ),
        migrations.AlterField(
            model_name='simulateddialogue',
            name='user_id',
            field=models.CharField(help_text="the user's opaque id, what the live system saw", max_length=200),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
