"""System and Submission now belong to `evaluation` (its migration 0005 took over their state);
the tables are not dropped, evaluation 0006 renames them."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0003_system_submission_in_evaluation'),
        ('evaluation', '0005_system_submission_from_leaderboard'),
        ('leaderboard', '0003_baseline_submissions_public'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='Submission'),
                migrations.DeleteModel(name='System'),
            ],
        ),
    ]
