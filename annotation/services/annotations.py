"""Drafts (autosave) and submitted annotations: idempotent, with history of edits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import rows
from annotation.lib import taskforms
from core.rows import batched, insert

from ..models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Draft,
    Study,
    StudyItem,
    StudyMember,
)
from ..selectors import item_layout
from .validation import study_validations_refresh_enqueue


def draft_save(*, assignment: Assignment, data: Mapping, focused_ms: int = 0) -> Draft:
    """Autosave whatever is valid of the form so far; one upsert, safe to repeat."""
    layout = item_layout(assignment.item, assignment.item.study, swapped=assignment.swapped)
    values = taskforms.parse_post(data, layout, partial=True).values
    now = timezone.now()
    with transaction.atomic(), batched():
        rows.touch(assignment.pk, focused_ms=focused_ms, now=now, submitted=False)
        Draft.objects.bulk_create([Draft(assignment=assignment, values=values, saved_at=now)],
                                  update_conflicts=True, unique_fields=["assignment"],
                                  update_fields=["values", "saved_at"])
    return Draft(assignment=assignment, values=values, saved_at=now)


@dataclass
class SubmitResult:
    annotation: Annotation | None
    errors: list[str]
    created: bool = False
    changed: bool = False


def annotation_submit(*, assignment: Assignment, data: Mapping, focused_ms: int = 0,
                      quote_checker=None) -> SubmitResult:
    """Validate and store the annotation; repeating it changes nothing, editing keeps history.

    Double clicks, retries and a second tab all end here: the assignment row is locked first
    (every submission of an item by an annotator goes through that one row), so the check for
    an existing annotation cannot race, and the unique constraint backs it up.
    """
    item, study = assignment.item, assignment.item.study
    layout = item_layout(item, study, swapped=assignment.swapped, quote_checker=quote_checker)
    parsed = taskforms.parse_post(data, layout, partial=False)
    if parsed.errors:
        return SubmitResult(None, parsed.errors)
    annotator_id = assignment.member.user_id
    spent = max(assignment.focused_ms, int(focused_ms))
    with transaction.atomic(), batched():  # 4 round trips to PostgreSQL instead of 7
        rows.touch(assignment.pk, focused_ms=spent, now=timezone.now(), submitted=True)
        # The item's labels: the idempotency check, and the tie check at the k-th label.
        labels = rows.item_labels(item.pk)  # its reply comes once the UPDATE has the lock
        now = timezone.now()  # after the lock: later than any submission that got it first
        mine = next((label for label in labels if label.annotator_id == annotator_id), None)
        if mine is not None and mine.values == parsed.values:
            return SubmitResult(Annotation(pk=mine.pk, item=item, annotator_id=annotator_id,
                                           values=mine.values), [])  # a retry or double click
        if mine is None:
            annotation = insert(Annotation(
                assignment=assignment, item=item, annotator_id=annotator_id,
                values=parsed.values, submitted_at=now, updated_at=now, time_spent_ms=spent))
        else:
            annotation = Annotation(pk=mine.pk, item=item, annotator_id=annotator_id,
                                    values=parsed.values, revision_count=mine.revision_count + 1)
            Annotation.objects.filter(pk=mine.pk).update(
                values=parsed.values, updated_at=now, time_spent_ms=spent,
                revision_count=F("revision_count") + 1)
        insert(AnnotationRevision(annotation=annotation, number=annotation.revision_count,
                                  values=parsed.values, time_spent_ms=spent, created_at=now),
               returning=False)
        rows.draft_delete(assignment.pk)
        if (mine is None and study.tie_break_extra and item.kind == StudyItem.Kind.NORMAL
                and len(labels) + 1 >= study.overlap_k):  # only the k-th label can tie
            excluded = set(StudyMember.objects.filter(
                study=study, user_id__in=[label.annotator_id for label in labels], excluded=True
            ).values_list("user_id", flat=True))
            counted = [label.values for label in labels if label.annotator_id not in excluded]
            counted += [] if assignment.member.excluded else [parsed.values]
            _maybe_extend_for_tie(item, study, counted)
    if item.kind == StudyItem.Kind.NORMAL:  # the labels behind the trust column changed
        study_validations_refresh_enqueue(study=study, soon=True)
    return SubmitResult(annotation, [], created=mine is None, changed=mine is not None)


def _maybe_extend_for_tie(item: StudyItem, study: Study, labels: list[dict]) -> None:
    """At the k-th label, a categorical field without a majority asks for one more label."""
    if item.target_labels != study.overlap_k or len(labels) != study.overlap_k:
        return
    if taskforms.categorical_tie(labels):
        StudyItem.objects.filter(pk=item.pk, target_labels=study.overlap_k).update(
            target_labels=study.overlap_k + 1)
