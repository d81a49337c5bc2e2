"""Hand-written statements for the few things every request does (docs/hot-path.md).

Through the ORM, compiling a query costs more Python than the database spends answering it
(docs/performance-history.md, "Annotation"). For the reads on every request (the session, the user,
an annotator's assignment) and the rows a submission inserts, the statement is instead built
once per process from the models' own metadata: every table is the model's `db_table`, every
column a field's `column` (`table`, `column`, `Columns`, `where`), so a migration that renames
one changes the statement with it. Rows read become ordinary model instances (or named rows)
through the same converters the ORM applies, and values written go through each field's own
`pre_save` and `get_db_prep_save`. Where a request writes several rows, `batched` sends the
statements to PostgreSQL without waiting for each one's reply.
"""

from __future__ import annotations

import contextlib
import functools

from django.db import connection, models


def table(model: type[models.Model]) -> str:
    """MODEL's table, quoted for a statement."""
    return connection.ops.quote_name(model._meta.db_table)


def field_of(model: type[models.Model], name: str) -> models.Field:
    """MODEL's field NAME: "pk" is the primary key, a foreign key may be named either way
    ("member" or "member_id")."""
    return model._meta.pk if name == "pk" else model._meta.get_field(name)


def column(model: type[models.Model], name: str, alias: str = "") -> str:
    """The column of MODEL's field NAME (see `field_of`), quoted, under the table ALIAS."""
    quoted = connection.ops.quote_name(field_of(model, name).column)
    return f"{alias}.{quoted}" if alias else quoted


def where(model: type[models.Model], conditions: tuple[tuple[str, str], ...],
          alias: str = "") -> str:
    """`col op %s AND …` for (field name, operator) pairs: the statement's WHERE clause."""
    return " AND ".join(f"{column(model, name, alias)} {op} %s" for name, op in conditions)


def converters(field, alias: str) -> tuple[list, object]:
    """The ORM's converters of FIELD read as ALIAS.column (for `convert`)."""
    column = field.get_col(alias)
    return (connection.ops.get_db_converters(column) + column.get_db_converters(connection),
            column)


def convert(value, plan):
    """VALUE as the ORM would hand it over, by PLAN from `converters`."""
    functions, column = plan
    for function in functions:
        value = function(value, column, connection)
    return value


class Columns:
    """Some of one model's concrete columns (all by default, or the fields NAMES) under a
    table alias: the SELECT list, and turning that part of a row into an instance (`build`)
    or into the converted values in order (`values`)."""

    def __init__(self, model: type[models.Model], alias: str, names: tuple[str, ...] = ()):
        fields = ([field_of(model, name) for name in names] if names
                  else model._meta.concrete_fields)
        quote = connection.ops.quote_name
        self.model, self.width = model, len(fields)
        self.names = [field.attname for field in fields]
        self.sql = ", ".join(f"{alias}.{quote(field.column)}" for field in fields)
        self.plans = [converters(field, alias) for field in fields]

    def values(self, row, at: int = 0) -> list:
        cells = zip(row[at:at + self.width], self.plans, strict=True)
        # most columns have no converter: their value is handed over as the driver read it
        return [convert(value, plan) if plan[0] else value for value, plan in cells]

    def build(self, row, at: int = 0) -> models.Model:
        return self.model.from_db(connection.alias, self.names, self.values(row, at))


@functools.cache
def _single(model: type[models.Model], conditions: tuple[tuple[str, str], ...]
            ) -> tuple[str, Columns]:
    columns = Columns(model, "t")
    return (f"SELECT {columns.sql} FROM {table(model)} t WHERE {where(model, conditions, 't')}",
            columns)


def one(model: type[models.Model], conditions: tuple[tuple[str, str], ...], params: list):
    """The MODEL row matching CONDITIONS, (field name, operator) pairs each compared with its
    parameter in PARAMS (`(("session_key", "="), ("expire_date", ">"))`), or None."""
    sql, columns = _single(model, conditions)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else columns.build(row)


def prep(model: type[models.Model], name: str, value):
    """VALUE as a statement parameter for MODEL's field NAME (what the ORM would send)."""
    return field_of(model, name).get_db_prep_save(value, connection)


def locks_rows() -> bool:
    """Whether the database takes `SELECT … FOR UPDATE` (PostgreSQL does; SQLite refuses it, and
    serialises writers by its transaction's one write lock instead: settings begin SQLite
    transactions IMMEDIATE)."""
    return connection.features.has_select_for_update


def placeholders(count: int) -> str:
    """COUNT statement parameters, comma-separated: `%s, %s, …`."""
    return ", ".join(["%s"] * count)


@functools.cache
def _insert(model: type[models.Model], returning: bool) -> tuple[str, list]:
    quote = connection.ops.quote_name
    fields = [field for field in model._meta.concrete_fields if not field.db_returning]
    return (f"INSERT INTO {table(model)} "
            f"({', '.join(quote(field.column) for field in fields)}) "
            f"VALUES ({placeholders(len(fields))})"
            + (f" RETURNING {column(model, 'pk')}" if returning else "")), fields


def insert(instance: models.Model, *, returning: bool = True) -> models.Model:
    """Save the new INSTANCE with one statement; an automatic primary key is set from it
    (RETURNING=False: not read, so in a `batched` block nothing waits for the insert)."""
    sql, fields = _insert(type(instance), returning)
    params = [field.get_db_prep_save(field.pre_save(instance, True), connection)
              for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if returning:
            instance.pk = cursor.fetchone()[0]
    instance._state.adding, instance._state.db = False, connection.alias
    return instance


def insert_all(instances: list[models.Model]) -> None:
    """Save the new INSTANCES of one model with one statement (`bulk_create` without reading
    their keys back)."""
    sql, fields = _insert(type(instances[0]), False)
    head, values = sql.split(" VALUES ")
    params = [field.get_db_prep_save(field.pre_save(instance, True), connection)
              for instance in instances for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(f"{head} VALUES {', '.join([values] * len(instances))}", params)
    for instance in instances:
        instance._state.adding, instance._state.db = False, connection.alias


@contextlib.contextmanager
def batched():
    """Inside a transaction: send the block's statements to PostgreSQL without waiting for each
    reply (psycopg's pipeline mode). A reply is awaited only where a result is read and once at
    the end of the block: the `BEGIN`, an `UPDATE` and the `SELECT` after it cost one round
    trip, not three. Errors are raised as Django's, at the latest when the block ends. On other
    databases (SQLite, in-process) the statements simply run one by one."""
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    with connection.wrap_database_errors, connection.connection.pipeline():
        yield
