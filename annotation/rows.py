"""The hand-written statements of the annotation hot path (docs/performance.md).

Every item page, autosave and submission starts by looking up the annotator's assignment with
its member, item, study and draft; a submission then locks the assignment, reads the item's
labels and stores the annotation. The first time a web process shows an item it also reads the
item's letters and cited reviews. Through the ORM each of these statements costs about a
millisecond of query compilation, more than the database spends on it, so they are written
here, built once from the models' own field lists (`config.rows`); tests check that they do
what the ORM would.
"""

from __future__ import annotations

import functools

from django.db import connection

from config import rows
from evaluation.models import Item, Review

from .models import Annotation, Assignment, BlindingEntry, Draft, Study, StudyItem, StudyMember


@functools.cache
def _lookup() -> tuple[str, list[rows.Columns], tuple]:
    quote = connection.ops.quote_name
    parts = [rows.Columns(model, alias) for alias, model in
             (("a", Assignment), ("m", StudyMember), ("i", StudyItem), ("s", Study))]
    draft_values = Draft._meta.get_field("values")
    sql = (f"SELECT {', '.join(part.sql for part in parts)}, d.{quote(draft_values.column)} "
           f"FROM {quote(Assignment._meta.db_table)} a "
           f"JOIN {quote(StudyMember._meta.db_table)} m ON m.id = a.member_id "
           f"JOIN {quote(StudyItem._meta.db_table)} i ON i.id = a.item_id "
           f"JOIN {quote(Study._meta.db_table)} s ON s.id = m.study_id "
           f"LEFT JOIN {quote(Draft._meta.db_table)} d ON d.assignment_id = a.id "
           "WHERE m.user_id = %s AND s.slug = %s AND a.position = %s")
    return sql, parts, rows.converters(draft_values, "d")


def assignment_lookup(*, user_id: int, slug: str, position: int) -> Assignment | None:
    """USER_ID's assignment at POSITION in study SLUG, or None; related objects attached and
    the draft's values in `draft_values` (None without a draft)."""
    sql, parts, draft_plan = _lookup()
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, slug, position])
        row = cursor.fetchone()
    if row is None:
        return None
    built, at = [], 0
    for part in parts:
        built.append(part.build(row, at))
        at += part.width
    assignment, member, item, study = built
    member.study = item.study = study
    assignment.member, assignment.item = member, item
    draft = row[at]
    assignment.draft_values = None if draft is None else rows.convert(draft, draft_plan)
    return assignment


@functools.cache
def _touch(submitted: bool) -> str:
    quote = connection.ops.quote_name
    status = ("%s" if submitted else  # working on an item that timed out takes it back
              "CASE WHEN status = %s THEN %s ELSE status END")
    done = ", released_at = NULL, submitted_at = COALESCE(submitted_at, %s)" if submitted else ""
    return (f"UPDATE {quote(Assignment._meta.db_table)} SET last_active_at = %s, "
            "focused_ms = CASE WHEN focused_ms < %s THEN %s ELSE focused_ms END, "
            f"status = {status}{done} WHERE id = %s")


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


@functools.cache
def _labels() -> tuple[str, tuple]:
    quote = connection.ops.quote_name
    values = Annotation._meta.get_field("values")
    return (f"SELECT id, annotator_id, {quote(values.column)}, revision_count "
            f"FROM {quote(Annotation._meta.db_table)} t WHERE item_id = %s"), \
        rows.converters(values, "t")


def item_labels(item_id: int) -> list[tuple[int, int, dict, int]]:
    """(pk, annotator id, values, revision count) of every annotation of the item."""
    sql, plan = _labels()
    with connection.cursor() as cursor:
        cursor.execute(sql, [item_id])
        found = cursor.fetchall()
    return [(pk, annotator, rows.convert(values, plan), count)
            for pk, annotator, values, count in found]


def draft_delete(assignment_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {connection.ops.quote_name(Draft._meta.db_table)} "
                       "WHERE assignment_id = %s", [assignment_id])


@functools.cache
def _letters(count: int) -> str:
    return (f"SELECT id, letter FROM {connection.ops.quote_name(BlindingEntry._meta.db_table)} "
            f"WHERE id IN ({rows.placeholders(count)})")


def letters(entry_ids: list[int]) -> dict[int, str]:
    """The letter of each blinding entry in ENTRY_IDS."""
    if not entry_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_letters(len(entry_ids)), entry_ids)
        return dict(cursor.fetchall())


@functools.cache
def _cited(count: int) -> tuple[str, rows.Columns, rows.Columns]:
    quote = connection.ops.quote_name
    review, item = rows.Columns(Review, "r"), rows.Columns(Item, "i")
    return (f"SELECT {review.sql}, {item.sql} FROM {quote(Review._meta.db_table)} r "
            f"JOIN {quote(Item._meta.db_table)} i ON i.id = r.item_id "
            f"WHERE r.benchmark_id = %s AND r.external_id IN ({rows.placeholders(count)})"), \
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
