"""The hand-written statements of an arena battle's turn (docs/performance-history.md, "Arena
battles").

Every request of a battle (a message, each answer fragment) reads the battle with its arena,
benchmark and both systems, and its turns; a message also locks the battle's row, writes its
three rows and the battle's time, and each system's answer settles its row. Through the
ORM, compiling these costs more Python than PostgreSQL spends answering them (the battle's read
with its four joins most of all), so they are built here once per process from the models'
metadata with `core.rows` (tables, joins and columns all come from the models, none is
spelled out), as `annotation/rows.py` does for the annotation pages. Rows come back as the
model instances the ORM would give, related objects attached; tests check that they match.
"""

from __future__ import annotations

import functools

from django.db import connection

from core import rows
from core.rows import column as col
from core.rows import table

from .models import Arena, Battle, BattleTurn, Benchmark, System


@functools.cache
def _battle() -> tuple[str, tuple[rows.Columns, ...]]:
    b, a, m = rows.Columns(Battle, "b"), rows.Columns(Arena, "a"), rows.Columns(Benchmark, "m")
    x, y = rows.Columns(System, "x"), rows.Columns(System, "y")
    sql = (f"SELECT {b.sql}, {a.sql}, {m.sql}, {x.sql}, {y.sql} FROM {table(Battle)} b "
           f"JOIN {table(Arena)} a ON {col(Arena, 'pk', 'a')} = {col(Battle, 'arena', 'b')} "
           f"LEFT JOIN {table(Benchmark)} m "
           f"ON {col(Benchmark, 'pk', 'm')} = {col(Arena, 'benchmark', 'a')} "
           f"JOIN {table(System)} x ON {col(System, 'pk', 'x')} = {col(Battle, 'system_a', 'b')} "
           f"JOIN {table(System)} y ON {col(System, 'pk', 'y')} = {col(Battle, 'system_b', 'b')} "
           f"WHERE {rows.where(Battle, (('uuid', '='),), 'b')}")
    return sql, (b, a, m, x, y)


def battle_with_systems(uuid) -> Battle | None:
    """The battle UUID with its arena, the arena's benchmark and both systems (what
    `select_related("arena__benchmark", "system_a", "system_b")` reads), or None."""
    sql, columns = _battle()
    with connection.cursor() as cursor:
        cursor.execute(sql, [rows.prep(Battle, "uuid", uuid)])
        row = cursor.fetchone()
    if row is None:
        return None
    at, built = 0, []
    for part in columns:
        pk = row[at + part.names.index(part.model._meta.pk.attname)]
        built.append(None if pk is None else part.build(row, at))
        at += part.width
    battle, arena, benchmark, system_a, system_b = built
    Battle._meta.get_field("arena").set_cached_value(battle, arena)
    Arena._meta.get_field("benchmark").set_cached_value(arena, benchmark)
    Battle._meta.get_field("system_a").set_cached_value(battle, system_a)
    Battle._meta.get_field("system_b").set_cached_value(battle, system_b)
    return battle


@functools.cache
def _turns() -> tuple[str, rows.Columns]:
    t = rows.Columns(BattleTurn, "t")
    return (f"SELECT {t.sql} FROM {table(BattleTurn)} t "
            f"WHERE {rows.where(BattleTurn, (('battle', '='),), 't')} "
            f"ORDER BY {col(BattleTurn, 'index', 't')}, {col(BattleTurn, 'side', 't')}"), t


def battle_turns(battle: Battle) -> list[BattleTurn]:
    """BATTLE's turns in the model's order (message, then side), as `battle.turns.all()`."""
    sql, columns = _turns()
    with connection.cursor() as cursor:
        cursor.execute(sql, [battle.pk])
        found = cursor.fetchall()
    field = BattleTurn._meta.get_field("battle")
    turns = [columns.build(row) for row in found]
    for turn in turns:
        field.set_cached_value(turn, battle)
    return turns


@functools.cache
def _status_locked(vendor: str) -> str:
    lock = " FOR UPDATE" if rows.locks_rows() else ""
    return (f"SELECT {col(Battle, 'status')} FROM {table(Battle)} "
            f"WHERE {rows.where(Battle, (('pk', '='),))}{lock}")


def battle_status_locked(battle: Battle) -> str:
    """BATTLE's status, its row locked until the transaction ends (`SELECT … FOR UPDATE` on the
    battle's row alone: no join, so no other table's row is locked). SQLite has no row locks
    and refuses `FOR UPDATE`: there the transaction itself serialises (it begins IMMEDIATE,
    taking the database's one write lock), so the plain SELECT is as safe."""
    with connection.cursor() as cursor:
        cursor.execute(_status_locked(connection.vendor), [battle.pk])
        return cursor.fetchone()[0]


_SETTLED = ("state", "text", "ranked_item_ids", "citations", "error_kind", "error", "latency_ms",
            "settled_at")
_UNSET = {"text": "", "ranked_item_ids": [], "citations": [], "error_kind": "", "error": ""}


@functools.cache
def _settle() -> str:
    sets = ", ".join(f"{col(BattleTurn, name)} = %s" for name in _SETTLED)
    return (f"UPDATE {table(BattleTurn)} SET {sets} WHERE "
            + rows.where(BattleTurn, (("battle", "="), ("index", "="), ("side", "="),
                                      ("state", "="))))


def battle_turn_settle(*, battle_id: int, index: int, side: str, fields: dict) -> None:
    """Settle SIDE's answer to message INDEX with FIELDS (state, latency_ms, settled_at and the
    answer's or the error's fields; the others keep a pending row's empty values), only if the
    row is still pending."""
    values = {**_UNSET, **fields}
    params = [rows.prep(BattleTurn, name, values[name]) for name in _SETTLED]
    with connection.cursor() as cursor:
        cursor.execute(_settle(), [*params, battle_id, index, side, BattleTurn.State.PENDING])


@functools.cache
def _touch() -> str:
    return (f"UPDATE {table(Battle)} SET {col(Battle, 'updated_at')} = %s "
            f"WHERE {rows.where(Battle, (('pk', '='),))}")


def battle_touch(battle: Battle, now) -> None:
    """Set BATTLE's `updated_at` to NOW."""
    with connection.cursor() as cursor:
        cursor.execute(_touch(), [rows.prep(Battle, "updated_at", now), battle.pk])


def turns_insert(turns: list[BattleTurn]) -> None:
    """Store a message's new rows with one statement."""
    rows.insert_all(turns)
