"""What a CRS arena records per vote (docs/arena.md, "What a vote records"): each side's
satisfied/frustrated verdict and accepted item, the style of its answers, the seconds from the
last answer to the vote, the words shown and a hash of the session. Votes of battles stored
before get their style, words shown and session hash from their stored turns, as `battle_vote`
computes them for new ones (their verdicts, accepted items and timing were never asked)."""

import hashlib

from django.db import migrations, models

from evaluation.lib.arena_signals import Answer, side_style, words_in


def style_stored(apps, schema_editor):
    Vote, BattleTurn = apps.get_model("evaluation", "Vote"), apps.get_model("evaluation",
                                                                           "BattleTurn")
    votes = Vote.objects.filter(battle__isnull=False).values_list("pk", "battle_id",
                                                                  "battle__session_key")
    for pk, battle_id, session_key in votes.iterator(chunk_size=500):
        turns = list(BattleTurn.objects.filter(battle_id=battle_id, side__in=["a", "b"],
                                               state="ok").order_by("index"))
        style, words = {}, 0
        for side in ("a", "b"):
            answers = [Answer(t.text, tuple(t.ranked_item_ids)) for t in turns if t.side == side]
            style[side] = side_style(answers)
            words += words_in(answers[-1].text) if answers else 0
        Vote.objects.filter(pk=pk).update(
            style=style, words_shown=words,
            session_ref=hashlib.sha256(session_key.encode()).hexdigest()[:32])


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0036_arena_requests'),
    ]

    operations = [
        migrations.AddField(
            model_name='vote',
            name='accepted_item_a',
            field=models.CharField(blank=True, help_text="the item id accepted from System A's cards", max_length=200),
        ),
        migrations.AddField(
            model_name='vote',
            name='accepted_item_b',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='vote',
            name='satisfaction_a',
            field=models.CharField(blank=True, choices=[('satisfied', 'Satisfied'), ('frustrated', 'Frustrated')], max_length=10),
        ),
        migrations.AddField(
            model_name='vote',
            name='satisfaction_b',
            field=models.CharField(blank=True, choices=[('satisfied', 'Satisfied'), ('frustrated', 'Frustrated')], max_length=10),
        ),
        migrations.AddField(
            model_name='vote',
            name='seconds_to_vote',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='vote',
            name='session_ref',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='vote',
            name='style',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='vote',
            name='words_shown',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='vote',
            constraint=models.CheckConstraint(condition=models.Q(('satisfaction_a__in', ['', 'satisfied', 'frustrated'])), name='vote_satisfaction_a'),
        ),
        migrations.AddConstraint(
            model_name='vote',
            constraint=models.CheckConstraint(condition=models.Q(('satisfaction_b__in', ['', 'satisfied', 'frustrated'])), name='vote_satisfaction_b'),
        ),
        migrations.RunPython(style_stored, migrations.RunPython.noop),
    ]
