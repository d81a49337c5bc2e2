"""The hand-written statements of the annotation hot path (docs/performance.md).

Every item page, autosave and submission starts by looking up the annotator's assignment with
its member, item, study and draft; a submission then locks the assignment, reads the item's
labels and stores the annotation. The first time a web process shows an item it also reads the
item's letters and cited reviews. Through the ORM each of these statements costs about a
millisecond of query compilation, more than the database spends on it, so they are written
here, built once per process from the models' metadata: tables, joins, WHERE and SET columns
all come from `core.rows` (`table`, `column`, `where`, `Columns`), none is spelled out.
Rows come back as model instances or named rows (`Label`); tests check that they hold what
the ORM would (docs/hot-path.md).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from django.db import connection

from core import rows
from core.rows import column as col
from core.rows import table
from evaluation.models import Item, Review

from .models import Annotation, Assignment, BlindingEntry, Draft, Study, StudyItem, StudyMember


class Lookup(NamedTuple):
    """The statement that finds an annotator's assignment, and how to read its row."""

    sql: str
    assignment: rows.Columns
    member: rows.Columns
    item: rows.Columns
    study: rows.Columns
    draft: rows.Columns  # the draft's values only (LEFT JOIN: None without a draft)


@functools.cache
def _lookup() -> Lookup:
    a, m, i, s = (rows.Columns(Assignment, "a"), rows.Columns(StudyMember, "m"),
                  rows.Columns(StudyItem, "i"), rows.Columns(Study, "s"))
    d = rows.Columns(Draft, "d", ("values",))
    sql = (f"SELECT {a.sql}, {m.sql}, {i.sql}, {s.sql}, {d.sql} "
           f"FROM {table(Assignment)} a "
           f"JOIN {table(StudyMember)} m "
           f"ON {col(StudyMember, 'pk', 'm')} = {col(Assignment, 'member', 'a')} "
           f"JOIN {table(StudyItem)} i "
           f"ON {col(StudyItem, 'pk', 'i')} = {col(Assignment, 'item', 'a')} "
           f"JOIN {table(Study)} s ON {col(Study, 'pk', 's')} = {col(StudyMember, 'study', 'm')} "
           f"LEFT JOIN {table(Draft)} d "
           f"ON {col(Draft, 'assignment', 'd')} = {col(Assignment, 'pk', 'a')} "
           f"WHERE {rows.where(StudyMember, (('user', '='),), 'm')} "
           f"AND {rows.where(Study, (('slug', '='),), 's')} "
           f"AND {rows.where(Assignment, (('position', '='),), 'a')}")
    return Lookup(sql, a, m, i, s, d)


def assignment_lookup(*, user_id: int, slug: str, position: int) -> Assignment | None:
    """USER_ID's assignment at POSITION in study SLUG, or None; its member, item and study
    attached, and the draft's values in `draft_values` (None without a draft)."""
    lookup = _lookup()
    with connection.cursor() as cursor:
        cursor.execute(lookup.sql, [user_id, slug, position])
        row = cursor.fetchone()
    if row is None:
        return None
    at = 0
    built = {}
    for name in ("assignment", "member", "item", "study"):
        part = getattr(lookup, name)
        built[name] = part.build(row, at)
        at += part.width
    assignment, study = built["assignment"], built["study"]
    built["member"].study = built["item"].study = study
    assignment.member, assignment.item = built["member"], built["item"]
    draft = row[at]  # the draft part of the row: NULL without a draft, no conversion then
    assignment.draft_values = None if draft is None else lookup.draft.values(row, at)[0]
    return assignment


@functools.cache
def _touch(submitted: bool) -> str:
    def c(name: str) -> str:
        return col(Assignment, name)

    status = ("%s" if submitted else  # working on an item that timed out takes it back
              f"CASE WHEN {c('status')} = %s THEN %s ELSE {c('status')} END")
    done = (f", {c('released_at')} = NULL, "
            f"{c('submitted_at')} = COALESCE({c('submitted_at')}, %s)") if submitted else ""
    return (f"UPDATE {table(Assignment)} SET {c('last_active_at')} = %s, "
            f"{c('focused_ms')} = CASE WHEN {c('focused_ms')} < %s THEN %s "
            f"ELSE {c('focused_ms')} END, "
            f"{c('status')} = {status}{done} WHERE {rows.where(Assignment, (('pk', '='),))}")


def touch(assignment_id: int, *, now, focused_ms: int, submitted: bool) -> None:
    """Record activity and focused time (never less than before); SUBMITTED marks the
    assignment submitted (keeping the first submission time). The UPDATE locks the row."""
    when = rows.prep(Assignment, "last_active_at", now)
    if submitted:
        status = [Assignment.Status.SUBMITTED.value]
        done = [when]
    else:
        status = [Assignment.Status.RELEASED.value, Assignment.Status.ACTIVE.value]
        done = []
    with connection.cursor() as cursor:
        cursor.execute(_touch(submitted),
                       [when, focused_ms, focused_ms, *status, *done, assignment_id])


class Label(NamedTuple):
    """One annotation of an item, as a submission needs it."""

    pk: int
    annotator_id: int
    values: dict[str, Any]
    revision_count: int


@functools.cache
def _labels() -> tuple[str, rows.Columns]:
    columns = rows.Columns(Annotation, "t", Label._fields)
    return (f"SELECT {columns.sql} FROM {table(Annotation)} t "
            f"WHERE {rows.where(Annotation, (('item', '='),), 't')}"), columns


def item_labels(item_id: int) -> list[Label]:
    """Every annotation of the item."""
    sql, columns = _labels()
    with connection.cursor() as cursor:
        cursor.execute(sql, [item_id])
        found = cursor.fetchall()
    return [Label(*columns.values(row)) for row in found]


@functools.cache
def _draft_delete() -> str:
    return f"DELETE FROM {table(Draft)} WHERE {rows.where(Draft, (('assignment', '='),))}"


def draft_delete(assignment_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_draft_delete(), [assignment_id])


@functools.cache
def _letters(count: int) -> str:
    return (f"SELECT {col(BlindingEntry, 'pk')}, {col(BlindingEntry, 'letter')} "
            f"FROM {table(BlindingEntry)} "
            f"WHERE {col(BlindingEntry, 'pk')} IN ({rows.placeholders(count)})")


def letters(entry_ids: list[int]) -> dict[int, str]:
    """The letter of each blinding entry in ENTRY_IDS."""
    if not entry_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_letters(len(entry_ids)), entry_ids)
        return dict(cursor.fetchall())


@functools.cache
def _cited(count: int) -> tuple[str, rows.Columns, rows.Columns]:
    review, item = rows.Columns(Review, "r"), rows.Columns(Item, "i")
    return (f"SELECT {review.sql}, {item.sql} FROM {table(Review)} r "
            f"JOIN {table(Item)} i ON {col(Item, 'pk', 'i')} = {col(Review, 'item', 'r')} "
            f"WHERE {rows.where(Review, (('benchmark', '='),), 'r')} "
            f"AND {col(Review, 'external_id', 'r')} IN ({rows.placeholders(count)})"), \
        review, item


def reviews(benchmark_id: int, external_ids: list[str]) -> dict[str, Review]:
    """The benchmark's reviews with these external ids, by id, each with its item attached."""
    if not external_ids:
        return {}
    sql, review_columns, item_columns = _cited(len(external_ids))
    with connection.cursor() as cursor:
        cursor.execute(sql, [benchmark_id, *external_ids])
        found = cursor.fetchall()
    by_id = {}
    for row in found:
        review = review_columns.build(row)
        review.item = item_columns.build(row, review_columns.width)
        by_id[review.external_id] = review
    return by_id
