"""RunClusterStats' arrays stored uncompressed on PostgreSQL (STORAGE EXTERNAL), so that a page
reading a few metrics' slices of them (`selectors.ranks.MetricSlice`) fetches only those
bytes. A compressed value (pglz: `counts`, small whole numbers, compresses ~15×) is
decompressed from its start for every slice taken of it: 18 metrics of two runs at 10,000
dialogues took as long as reading both whole rows. The rows already stored are rewritten so
that they are stored the new way too. Nothing to do on SQLite, which stores blobs as they are."""

from django.db import migrations

TABLE = "leaderboard_runclusterstats"


def store_uncompressed(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in ("sums", "counts"):
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {column} SET STORAGE EXTERNAL")
    schema_editor.execute(f"UPDATE {TABLE} SET sums = sums || ''::bytea, "
                          "counts = counts || ''::bytea")


def store_compressed(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in ("sums", "counts"):
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {column} SET STORAGE EXTENDED")


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0006_rank_snapshot_per_coverage'),
    ]

    operations = [
        migrations.RunPython(store_uncompressed, store_compressed),
    ]
