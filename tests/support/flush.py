"""A cheaper end for transactional tests on PostgreSQL (docs/performance.md, "Test suite time").

A transactional test (`transactional_db`, `django_db(transaction=True)`, every browser test)
ends with Django's `flush`, which on PostgreSQL is one TRUNCATE of every table: new files for
each of the ~100 tables and their indexes, about 2 s on a quiet machine whatever the tables
hold. A test fills a handful of them, so deleting the rows of the tables that hold any leaves
the same empty database (sequences are not reset by either) in a few milliseconds. Foreign keys
are checked at commit (Django creates them DEFERRABLE INITIALLY DEFERRED), when every table
holding rows has been emptied. SQLite, and a flush that resets sequences, keep Django's way.
"""

from django.core.management.commands import flush
from django.core.management.sql import sql_flush as django_sql_flush


def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
    if connection.vendor != "postgresql" or reset_sequences:
        return django_sql_flush(style, connection, reset_sequences=reset_sequences,
                                allow_cascade=allow_cascade)
    return ["SET CONSTRAINTS ALL DEFERRED"] + [
        f"DELETE FROM {connection.ops.quote_name(table)}" for table in tables_with_rows(connection)]


def tables_with_rows(connection) -> list[str]:
    """Django's tables that hold at least one row, in one statement."""
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    quote = connection.ops.quote_name
    probes = " UNION ALL ".join(
        f"SELECT %s WHERE EXISTS (SELECT 1 FROM {quote(table)})" for table in tables)
    with connection.cursor() as cursor:
        cursor.execute(probes, tables)
        return [row[0] for row in cursor.fetchall()]


def install() -> None:
    """Make `manage.py flush` (which TransactionTestCase calls) use `sql_flush` above."""
    flush.sql_flush = sql_flush
