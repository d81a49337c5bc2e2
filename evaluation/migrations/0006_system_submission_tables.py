"""The moved tables take evaluation's names; their content types (and so permissions and admin
history) follow them."""

from django.db import migrations

MOVED = ("system", "submission")


def content_types_to_evaluation(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label="evaluation", model=model).exists():
            ContentType.objects.filter(app_label="leaderboard", model=model).update(
                app_label="evaluation")


def content_types_to_leaderboard(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label="leaderboard", model=model).exists():
            ContentType.objects.filter(app_label="evaluation", model=model).update(
                app_label="leaderboard")


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('evaluation', '0005_system_submission_from_leaderboard'),
        ('leaderboard', '0004_system_submission_to_evaluation'),
    ]

    operations = [
        migrations.AlterModelTable(name='system', table=None),
        migrations.AlterModelTable(name='submission', table=None),
        migrations.RunPython(content_types_to_evaluation, content_types_to_leaderboard),
    ]
