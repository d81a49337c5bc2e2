"""Hand-out: unfinished work first, calibration, items short of k, gold, timeouts, ties."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, StudyItem
from annotation.selectors import item_layout
from annotation.services.annotations import annotation_submit, draft_save
from annotation.services.handout import assignment_next, assignments_release_stale
from annotation.services.members import study_member_add, study_member_set_excluded

from .conftest import full_answers, make_study

pytestmark = pytest.mark.django_db


def submit(assignment, **over):
    data = {**full_answers(item_layout(assignment.item, assignment.item.study)), **over}
    result = annotation_submit(assignment=assignment, data=data, focused_ms=1000)
    assert result.errors == []
    return result


def drain(member, limit=50):
    got = []
    for _ in range(limit):
        assignment = assignment_next(member=member)
        if assignment is None:
            return got
        got.append(assignment)
        submit(assignment)
    raise AssertionError("the queue never ended")


def test_an_unfinished_item_comes_back_before_anything_new(member):
    first = assignment_next(member=member)
    again = assignment_next(member=member)
    assert again.pk == first.pk and again.position == 1
    submit(first)
    assert assignment_next(member=member).position == 2


def test_calibration_items_come_first_and_gold_is_mixed_in(tiny_benchmark, author, annotator):
    study = make_study(tiny_benchmark, author, calibration_count=2, gold_count=2,
                       gold_rate=0.5)
    member = study_member_add(study=study, user=annotator)
    kinds = [a.item.kind for a in drain(member)]
    assert kinds[:2] == ["calibration", "calibration"]
    rest = kinds[2:]
    assert rest.count("gold") == 2 and rest.count("normal") == 2
    assert rest[:2].count("gold") == 1  # interleaved, not all at the end


def test_an_item_with_k_labels_is_not_handed_to_anyone_else(tiny_benchmark, author, annotator,
                                                            other_annotator, outsider):
    study = make_study(tiny_benchmark, author, overlap_k=2, tie_break_extra=False)
    members = [study_member_add(study=study, user=u)
               for u in (annotator, other_annotator, outsider)]
    done = [len(drain(m)) for m in members]
    assert done == [2, 2, 0]
    for item in study.items.all():
        assert item.annotations.count() == 2


def test_live_hand_outs_hold_a_slot_and_abandoned_items_are_released(tiny_benchmark, author,
                                                                      annotator,
                                                                      other_annotator):
    study = make_study(tiny_benchmark, author, overlap_k=1, sample_size=1,
                       tie_break_extra=False)
    first = study_member_add(study=study, user=annotator)
    second = study_member_add(study=study, user=other_annotator)
    held = assignment_next(member=first)
    assert assignment_next(member=second) is None  # the only slot is held
    later = timezone.now() + timedelta(minutes=study.assignment_timeout_minutes + 1)
    taken = assignment_next(member=second, now=later)
    assert taken is not None and taken.item_id == held.item_id
    held.refresh_from_db()
    assert held.status == Assignment.Status.RELEASED


def test_a_released_item_with_a_draft_goes_back_to_its_annotator(member, study):
    assignment = assignment_next(member=member)
    draft_save(assignment=assignment, data={"citation-0": "supported"})
    later = timezone.now() + timedelta(minutes=study.assignment_timeout_minutes + 5)
    assert assignments_release_stale(study=study, now=later) == 1
    back = assignment_next(member=member, now=later)
    assert back.pk == assignment.pk and back.status == Assignment.Status.ACTIVE


def test_a_tie_on_a_categorical_field_asks_for_one_more_label(tiny_benchmark, author,
                                                              annotator, other_annotator,
                                                              outsider):
    study = make_study(tiny_benchmark, author, forms=["citation"], overlap_k=2, sample_size=1)
    a, b, c = (study_member_add(study=study, user=u)
               for u in (annotator, other_annotator, outsider))
    submit(assignment_next(member=a), **{"citation-0": "supported"})
    submit(assignment_next(member=b), **{"citation-0": "not_supported"})
    item = StudyItem.objects.get(study=study)
    assert item.target_labels == 3
    extra = assignment_next(member=c)
    assert extra is not None and extra.item_id == item.pk


def test_agreement_needs_no_extra_label(tiny_benchmark, author, annotator, other_annotator,
                                        outsider):
    study = make_study(tiny_benchmark, author, forms=["citation"], overlap_k=2, sample_size=1)
    a, b, c = (study_member_add(study=study, user=u)
               for u in (annotator, other_annotator, outsider))
    submit(assignment_next(member=a))
    submit(assignment_next(member=b))
    assert StudyItem.objects.get(study=study).target_labels == 2
    assert assignment_next(member=c) is None


def test_an_excluded_annotator_gets_no_new_items(member):
    study_member_set_excluded(member=member, excluded=True, reason="fails gold")
    assert assignment_next(member=member) is None


def test_the_order_is_randomized_per_annotator_and_stored(tiny_benchmark, author, annotator,
                                                          other_annotator, submissions):
    study = make_study(tiny_benchmark, author, submissions=submissions, overlap_k=2,
                       tie_break_extra=False)
    orders = []
    for user in (annotator, other_annotator):
        member = study_member_add(study=study, user=user)
        drain(member)
        orders.append(list(member.assignments.order_by("position")
                           .values_list("item_id", flat=True)))
    assert sorted(orders[0]) == sorted(orders[1]) and orders[0] != orders[1]
    positions = Assignment.objects.filter(member__study=study).values_list("position", flat=True)
    assert sorted(set(positions)) == list(range(1, 7))


def test_progress_says_item_i_of_n_with_time_left(member, study):
    first = assignment_next(member=member)
    assert (first.position, first.queue_total) == (1, 2)
    assert first.seconds_left == 2 * study.seconds_per_item


def test_next_view_opens_the_item_and_says_when_nothing_is_left(client, member, annotator):
    client.force_login(annotator)
    url = reverse("annotation:study_next", args=[member.study.slug])
    response = client.get(url)  # a read: it offers the button, hands out nothing
    assert response.status_code == 200 and b'id="next-button"' in response.content
    assert not Assignment.objects.filter(member=member).exists()
    response = client.post(url)
    assert response.status_code == 303 and response["Location"].endswith("/items/1/")
    response = client.get(url)  # the item held is opened again
    assert response.status_code == 302 and response["Location"].endswith("/items/1/")
    for assignment in Assignment.objects.filter(member=member):
        submit(assignment)
    submit(assignment_next(member=member))
    response = client.post(url)
    assert response.status_code == 303 and response["Location"].endswith("?done=1")
    response = client.get(response["Location"])
    assert response.status_code == 200 and b"Nothing more for you right now" in response.content
