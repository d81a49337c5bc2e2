"""Studies point at `evaluation.System` / `evaluation.Submission` (moved from `leaderboard`):
state only, the foreign keys already reference the same tables."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0002_imported_labels'),
        ('evaluation', '0005_system_submission_from_leaderboard'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='blindingentry',
                    name='system',
                    field=models.ForeignKey(blank=True, help_text="empty: the benchmark's reference response", null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='evaluation.system'),
                ),
                migrations.AlterField(
                    model_name='studyitem',
                    name='submission',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='evaluation.submission'),
                ),
                migrations.AlterField(
                    model_name='studyitem',
                    name='submission_b',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='evaluation.submission'),
                ),
                migrations.AlterField(
                    model_name='studyitem',
                    name='system',
                    field=models.ForeignKey(blank=True, help_text="empty: the benchmark's reference response", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='evaluation.system'),
                ),
                migrations.AlterField(
                    model_name='studyitem',
                    name='system_b',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='evaluation.system'),
                ),
            ],
        ),
    ]
