"""What an annotator reads must agree with itself: practice feedback numbers quotes as the form
does and names items, the time-left estimate does not jump, "done" counts no practice item."""

import pytest
from django.urls import reverse

from annotation.lib import handout, taskforms
from annotation.models import Assignment, StudyItem
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from tests.annotation.conftest import full_answers, make_study, make_submissions


def test_the_estimate_is_the_median_of_recent_times_after_a_minimum_sample():
    assert handout.seconds_per_item([5_000, 4_000, 6_000], 60) == 60.0  # too few: the default
    # a coffee break and a quick practice item do not move it
    assert handout.seconds_per_item([20_000, 600_000, 21_000, 19_000, 3_000], 60) == 20.0
    steady = [30_000] * 9
    assert handout.seconds_per_item([3_000_000] + steady, 60) == 30.0
    # only the ESTIMATE_WINDOW newest count: old slow items stop mattering
    assert handout.seconds_per_item([10_000] * 10 + [90_000] * 10, 60) == 10.0
    assert handout.seconds_per_item([0, 0, 0, 0, 0, 10_000], 60) == 60.0  # unfocused: unknown


def test_feedback_uses_the_forms_words_numbers_and_item_names():
    from annotation.selectors import practice_feedback

    rows = practice_feedback(
        {"citation.0": "supported", "citation.1": "not_supported",
         "recommend.items": ["r1", "r2"], "error.no_errors": 1},
        {"citations": {"0": "supported", "1": "partially_supported"},
         "recommend": {"items": ["h1"]}, "errors": ["no_errors"]},
        item_names={"r1": "Harbor Grill", "r2": "Noodle Nook", "h1": "Old City Inn"})
    assert [r["field"] for r in rows] == ["Quote 1", "Quote 2", "Recommended items",
                                          "Error: no errors"]
    assert rows[1]["expected"] == "not supported" and rows[1]["given"] == "partially supported"
    assert rows[2]["expected"] == "Harbor Grill or Noodle Nook"
    assert rows[2]["given"] == "Old City Inn" and not rows[2]["ok"]
    assert rows[3]["expected"] == "yes" and rows[3]["ok"]
    texts = str([(r["field"], r["expected"], r["given"]) for r in rows])
    assert "True" not in texts and "citation" not in texts


@pytest.mark.django_db
def test_practice_feedback_page_and_done_count(client, tiny_benchmark, author, annotator,
                                               researcher, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    study = make_study(tiny_benchmark, author, forms=(taskforms.CITATION, taskforms.CHECKLIST,
                                                      taskforms.LIKERT),
                       submissions=make_submissions(tiny_benchmark, researcher),
                       calibration_count=1)
    member = study_member_add(study=study, user=annotator)
    first = assignment_next(member=member)
    assert first.item.kind == StudyItem.Kind.CALIBRATION
    annotation_submit(assignment=first, data=full_answers(first.item))
    client.force_login(annotator)
    page = client.get(reverse("annotation:item_detail", args=[study.slug, first.position]))
    body = page.content.decode()
    feedback = body.split('class="practice-feedback"')[1].split("</section>")[0]
    assert "Quote 1" in feedback and "quote 0" not in feedback
    assert "citation" not in feedback and "_" not in feedback.split("<tbody>")[1]
    detail = client.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "you have done 0 items (and 1 practice/gold)" in detail
    assert Assignment.objects.filter(member=member, status="submitted").count() == 1


@pytest.mark.django_db
def test_a_new_studys_report_says_what_will_appear_instead_of_dashes(client, tiny_benchmark,
                                                                      author):
    study = make_study(tiny_benchmark, author, overlap_k=2)
    client.force_login(author)
    page = client.get(reverse("annotation:study_report", args=[study.slug]))
    body = page.content.decode()
    assert page.status_code == 200 and 'id="report-empty"' in body
    items = study.items.filter(kind=StudyItem.Kind.NORMAL).count()
    assert f"With {items} items × 2 annotators per item the study collects {items * 2} labels" \
        in body
    for part in ("Inter-annotator agreement", "Citation precision", "Metric–human correlation",
                 "three annotators for leave-one-out"):
        assert part in body
    assert "<td>—</td>" not in body and "—</td>" not in body.split('id="report-empty"')[1]
