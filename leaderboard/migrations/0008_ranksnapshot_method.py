"""Rank snapshots record their test's method and version (docs/statistics.md, "Stored intervals
and their method"); snapshots stored before have "" and 0 and count as stale."""

from django.db import migrations, models

import leaderboard.models


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0007_cluster_stats_uncompressed")]

    operations = [
        migrations.AddField("ranksnapshot", "method", models.CharField(default="", max_length=60)),
        migrations.AddField("ranksnapshot", "method_version",
                            models.PositiveSmallIntegerField(default=0)),
        migrations.AlterField("ranksnapshot", "method",
                              models.CharField(default="holm_tie_aware_rank", max_length=60)),
        migrations.AlterField("ranksnapshot", "method_version", models.PositiveSmallIntegerField(
            default=leaderboard.models.rank_method_version)),
    ]
