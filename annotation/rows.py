"""The one hand-written statement: an annotator's assignment with everything around it.

Every item page, autosave and submission starts by looking up the annotator's assignment with
its member, item, study and draft. Through the ORM that lookup costs about a millisecond of
query compilation per request, more than everything else the database does for the request
(docs/performance.md). Here the statement is built once from the models' own field lists, so
it follows every migration, and its row becomes ordinary model instances through the same
converters the ORM applies.
"""

from __future__ import annotations

import functools

from django.db import connection

from .models import Assignment, Draft, Study, StudyItem, StudyMember

_JOINED = (("a", Assignment), ("m", StudyMember), ("i", StudyItem), ("s", Study))


def _converters(field, alias):
    column = field.get_col(alias)
    return (connection.ops.get_db_converters(column) + column.get_db_converters(connection),
            column)


@functools.cache
def _lookup() -> tuple[str, list, tuple]:
    table = {alias: model._meta.db_table for alias, model in _JOINED}
    quote = connection.ops.quote_name
    columns, plan = [], []
    for alias, model in _JOINED:
        fields = model._meta.concrete_fields
        columns += [f"{alias}.{quote(f.column)}" for f in fields]
        plan.append((model, [f.attname for f in fields],
                     [_converters(f, alias) for f in fields]))
    draft_values = Draft._meta.get_field("values")
    sql = (f"SELECT {', '.join(columns)}, d.{quote(draft_values.column)} "
           f"FROM {quote(table['a'])} a "
           f"JOIN {quote(table['m'])} m ON m.id = a.member_id "
           f"JOIN {quote(table['i'])} i ON i.id = a.item_id "
           f"JOIN {quote(table['s'])} s ON s.id = m.study_id "
           f"LEFT JOIN {quote(Draft._meta.db_table)} d ON d.assignment_id = a.id "
           "WHERE m.user_id = %s AND s.slug = %s AND a.position = %s")
    return sql, plan, _converters(draft_values, "d")


def _convert(value, converters):
    functions, column = converters
    for function in functions:
        value = function(value, column, connection)
    return value


def assignment_lookup(*, user_id: int, slug: str, position: int) -> Assignment | None:
    """USER_ID's assignment at POSITION in study SLUG, or None; related objects attached and
    the draft's values in `draft_values` (None without a draft)."""
    sql, plan, draft_converters = _lookup()
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, slug, position])
        row = cursor.fetchone()
    if row is None:
        return None
    built, at = [], 0
    for model, names, converters in plan:
        cells = zip(row[at:at + len(names)], converters, strict=True)
        values = [_convert(value, convert) for value, convert in cells]
        built.append(model.from_db(connection.alias, names, values))
        at += len(names)
    assignment, member, item, study = built
    member.study = item.study = study
    assignment.member, assignment.item = member, item
    draft = row[at]
    assignment.draft_values = None if draft is None else _convert(draft, draft_converters)
    return assignment
