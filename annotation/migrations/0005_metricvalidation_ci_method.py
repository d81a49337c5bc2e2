"""Stored metric–human correlations record their interval's method and version (docs/
statistics.md, "Stored intervals and their method"); rows stored before have "" and 0 and are
recomputed by `manage.py recompute_intervals`."""

from django.db import migrations, models

import annotation.models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_metric_validation")]

    operations = [
        migrations.AddField("metricvalidation", "ci_method",
                            models.CharField(default="", max_length=60)),
        migrations.AddField("metricvalidation", "ci_version",
                            models.PositiveSmallIntegerField(default=0)),
        migrations.AlterField("metricvalidation", "ci_method",
                              models.CharField(default="evaluator_correlation", max_length=60)),
        migrations.AlterField("metricvalidation", "ci_version", models.PositiveSmallIntegerField(
            default=annotation.models.validation_interval_version)),
    ]
