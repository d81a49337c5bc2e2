"""Reference baselines are public (issue: "reference baselines are public"): their stored
submissions become public, so their runs and numbers are visible without logging in."""

from django.db import migrations


def publish_baselines(apps, schema_editor):
    Submission = apps.get_model("leaderboard", "Submission")
    Submission.objects.filter(system__is_baseline=True).update(is_public=True)


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0002_quota_and_rank_cache"),
    ]

    operations = [
        migrations.RunPython(publish_baselines, migrations.RunPython.noop),
    ]
