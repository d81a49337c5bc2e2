"""Run summaries record their interval's method and version (docs/statistics.md, "Stored
intervals and their method"). Rows stored before have "" and 0: computed with an older method,
so `manage.py recompute_intervals` (queued after `migrate`) recomputes them."""

from django.db import migrations, models

import evaluation.models


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0019_job_submission_validation")]

    operations = [
        migrations.AddField("metricsummary", "ci_method",
                            models.CharField(default="", max_length=60)),
        migrations.AddField("metricsummary", "ci_version",
                            models.PositiveSmallIntegerField(default=0)),
        migrations.AlterField("metricsummary", "ci_method",
                              models.CharField(default="cluster_t_mean", max_length=60)),
        migrations.AlterField("metricsummary", "ci_version", models.PositiveSmallIntegerField(
            default=evaluation.models.mean_interval_version)),
    ]
