"""The item page's hot path: the one-statement assignment lookup and the per-process "items"
cache of what a fresh item looks like (docs/hot-path.md) must change nothing an annotator
sees."""

from datetime import timedelta

import pytest
from django.core.cache import caches
from django.test import Client
from django.urls import reverse
from django.utils.safestring import mark_safe

from annotation import rows, selectors
from annotation.models import (
    Annotation,
    Assignment,
    BlindingEntry,
    Draft,
    Study,
    StudyItem,
    StudyMember,
)
from annotation.services.annotations import annotation_submit, draft_save
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from evaluation.models import Review

from .conftest import full_answers

pytestmark = pytest.mark.django_db


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def test_the_lookup_builds_the_same_objects_as_the_orm(study, member, annotator, outsider):
    assignment = assignment_next(member=member)
    draft_save(assignment=assignment, data={"likert-naturalness": "2"})
    found = rows.assignment_lookup(user_id=annotator.pk, slug=study.slug,
                                   position=assignment.position)
    orm = Assignment.objects.select_related("member", "item", "item__study").get(pk=assignment.pk)
    assert _fields(found) == _fields(orm)
    assert _fields(found.member) == _fields(StudyMember.objects.get(pk=member.pk))
    assert _fields(found.item) == _fields(StudyItem.objects.get(pk=assignment.item_id))
    assert _fields(found.item.study) == _fields(Study.objects.get(pk=study.pk))
    assert found.member.study is found.item.study
    assert isinstance(found.item.context, list) and isinstance(found.item.study.forms, list)
    assert found.draft_values == {"likert": {"naturalness": 2}}
    # someone else's queue, another study, a position not handed out: nothing
    assert rows.assignment_lookup(user_id=outsider.pk, slug=study.slug,
                                  position=assignment.position) is None
    assert rows.assignment_lookup(user_id=annotator.pk, slug="no-such-study",
                                  position=assignment.position) is None
    assert rows.assignment_lookup(user_id=annotator.pk, slug=study.slug, position=99) is None


def test_the_lookup_without_a_draft(study, member, annotator):
    assignment = assignment_next(member=member)
    found = rows.assignment_lookup(user_id=annotator.pk, slug=study.slug,
                                   position=assignment.position)
    assert found.draft_values is None


def test_a_fresh_item_is_rendered_once_and_drafts_stay_private(study, annotator,
                                                               other_annotator):
    members = [study_member_add(study=study, user=u)
               for u in (annotator, other_annotator)]
    first = assignment_next(member=members[0])
    # the second annotator gets the same item (overlap k > 1), wherever it is in their queue
    second = Assignment.objects.create(
        member=members[1], item=first.item, position=1, handed_out_at=first.handed_out_at,
        last_active_at=first.handed_out_at, queue_total=1)
    items = caches["items"]
    items.clear()
    static_key = selectors.item_cache_key(first.item, study, "static")
    body_key = selectors.item_cache_key(first.item, study, "body", first.swapped)

    def page(user, assignment):
        client = Client()
        client.force_login(user)
        response = client.get(reverse("annotation:item_detail",
                                      args=[study.slug, assignment.position]))
        assert response.status_code == 200
        return response.content.decode()

    fresh = page(annotator, first)
    assert items.get(static_key) is not None  # the item's letters and cited reviews
    body = items.get(body_key)
    assert body is not None and body[0] in fresh  # and its fresh body, rendered once
    second_key = selectors.item_cache_key(first.item, study, "body", second.swapped)
    items.set(second_key, (mark_safe("<p>kept main</p>"), mark_safe("<p>kept panel</p>")))
    assert "<p>kept main</p>" in page(other_annotator, second)  # the second one reuses it
    items.set(second_key, body)
    assert body[0] in page(other_annotator, second)  # as markup, not escaped text
    assert page(other_annotator, second).count('value="2" data-key="2" checked') == 0
    draft_save(assignment=first, data={"likert-naturalness": "2", "comment": "mine"})
    drafted = page(annotator, first)
    assert "Draft restored" in drafted and ">mine</textarea>" in drafted
    assert 'name="likert-naturalness" value="2" data-key="2" checked' in drafted
    other = page(other_annotator, second)
    assert "mine" not in other and "Draft restored" not in other
    assert 'name="likert-naturalness" value="2" data-key="2" checked' not in other
    assert "Autosave on" in fresh and "Autosave on" in other


def test_the_cached_body_is_built_from_nothing_per_assignment(study, annotator, other_annotator):
    """Two annotators' assignments of one item give the same body context, key for key."""
    members = [study_member_add(study=study, user=u)
               for u in (annotator, other_annotator)]
    first = assignment_next(member=members[0])
    second = Assignment.objects.create(
        member=members[1], item=first.item, position=1, handed_out_at=first.handed_out_at,
        last_active_at=first.handed_out_at, queue_total=1, focused_ms=1234,
        swapped=first.swapped)
    contexts = []
    for user, assignment in ((annotator, first), (other_annotator, second)):
        found = rows.assignment_lookup(user_id=user.pk, slug=study.slug,
                                       position=assignment.position)
        selectors.item_page(assignment=found,
                            render_body=lambda context: (contexts.append(context), ("", ""))[1])
    context = contexts[0]
    assert not {"assignment", "study", "state", "minutes_left"} & set(context)
    assert not any(isinstance(v, (Assignment, StudyMember)) for v in context.values())
    assert len(contexts) == 1  # the second page reused the first one's body


def test_touch_keeps_the_most_focused_time_and_the_first_submission(study, member):
    assignment = assignment_next(member=member)
    start = assignment.last_active_at
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.RELEASED,
                                                       released_at=start)
    later = start + timedelta(minutes=1)
    rows.touch(assignment.pk, now=later, focused_ms=500, submitted=False)
    touched = Assignment.objects.get(pk=assignment.pk)
    # working on a released item takes it back; focused time never goes down
    assert touched.status == Assignment.Status.ACTIVE and touched.last_active_at == later
    assert touched.focused_ms == 500 and touched.submitted_at is None
    rows.touch(assignment.pk, now=later, focused_ms=200, submitted=False)
    assert Assignment.objects.get(pk=assignment.pk).focused_ms == 500
    rows.touch(assignment.pk, now=later, focused_ms=900, submitted=True)
    done = Assignment.objects.get(pk=assignment.pk)
    assert (done.status, done.focused_ms, done.submitted_at, done.released_at) == (
        Assignment.Status.SUBMITTED, 900, later, None)
    rows.touch(assignment.pk, now=later + timedelta(minutes=5), focused_ms=100, submitted=True)
    again = Assignment.objects.get(pk=assignment.pk)
    assert again.submitted_at == later and again.focused_ms == 900  # the first submission stays
    assert again.status == Assignment.Status.SUBMITTED


def test_item_labels_and_draft_delete_match_the_orm(study, member, annotator, other_annotator):
    first = assignment_next(member=member)
    draft_save(assignment=first, data={"likert-naturalness": "2"})
    answers = full_answers(first.item)
    assert not annotation_submit(assignment=first, data=answers).errors
    assert not Draft.objects.filter(assignment=first).exists()  # the draft went with it
    other = study_member_add(study=study, user=other_annotator)
    second = Assignment.objects.create(
        member=other, item=first.item, position=1, handed_out_at=first.handed_out_at,
        last_active_at=first.handed_out_at, queue_total=1)
    assert not annotation_submit(assignment=second, data=answers).errors
    expected = [rows.Label(**row) for row in Annotation.objects.filter(item=first.item)
                .order_by("pk").values("pk", "annotator_id", "values", "revision_count")]
    found = sorted(rows.item_labels(first.item_id))
    assert found == expected and len(expected) == 2
    assert isinstance(found[0].values, dict) and found[0].annotator_id == annotator.pk
    assert rows.item_labels(first.item_id + 1000) == []


def test_letters_and_cited_reviews_match_the_orm(study):
    entries = list(BlindingEntry.objects.filter(study=study)[:3])
    assert rows.letters([e.pk for e in entries]) == {e.pk: e.letter for e in entries}
    assert rows.letters([]) == {} and rows.letters([entries[0].pk + 10000]) == {}
    chosen = list(Review.objects.filter(benchmark=study.benchmark).select_related("item")[:3])
    found = rows.reviews(study.benchmark_id, [r.external_id for r in chosen] + ["no-such-id"])
    assert sorted(found) == sorted(r.external_id for r in chosen) and len(chosen) == 3
    for review in chosen:
        assert _fields(found[review.external_id]) == _fields(review)
        assert _fields(found[review.external_id].item) == _fields(review.item)
    assert rows.reviews(study.benchmark_id + 1000, [chosen[0].external_id]) == {}
    assert rows.reviews(study.benchmark_id, []) == {}
