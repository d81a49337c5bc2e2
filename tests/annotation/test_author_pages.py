"""The author's side: dashboard (progress, gold accuracy, flags, exclusion) and the export."""

import csv
import io

import pytest
from django.urls import reverse

from annotation.lib import taskforms
from annotation.models import Annotation, StudyMember
from annotation.selectors import item_layout
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from annotation.services.study_exports import study_export_write
from evaluation.models import Job

from .conftest import full_answers, make_study

pytestmark = pytest.mark.django_db


def work_through(study, member, **over):
    while (assignment := assignment_next(member=member)) is not None:
        data = {**full_answers(item_layout(assignment.item, study)), **over}
        if assignment.item.kind == "gold":
            data.update({f"citation-{i}": "partial" for i in range(5)})
        result = annotation_submit(assignment=assignment, data=data, focused_ms=3000)
        assert not result.errors


@pytest.fixture
def busy_study(tiny_benchmark, author, annotator, other_annotator):
    study = make_study(tiny_benchmark, author, overlap_k=2, gold_count=2, gold_rate=0.5,
                       gold_pass_threshold=0.6, tie_break_extra=False)
    work_through(study, study_member_add(study=study, user=annotator),
                 flag="1", flag_reason="<b>odd</b> response")
    work_through(study, study_member_add(study=study, user=other_annotator))
    return study


def test_dashboard_shows_progress_gold_accuracy_flags_and_the_system_table(
        client, author, busy_study):
    client.force_login(author)
    response = client.get(reverse("annotation:study_dashboard", args=[busy_study.slug]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "annotator2" in html and "below threshold" in html
    assert "Reference responses" in html
    assert "&lt;b&gt;odd&lt;/b&gt; response" in html  # flagged, and escaped
    assert busy_study.invite_token in html


def test_gold_accuracy_is_computed_per_annotator(busy_study, annotator):
    from annotation.selectors import gold_accuracy

    matched, checked = gold_accuracy(study=busy_study)[annotator.pk]
    assert checked > 0 and matched == 0  # they answered Partial where gold says otherwise


def test_excluding_an_annotator_needs_a_reason_and_is_recorded(client, author, busy_study,
                                                                annotator):
    member = StudyMember.objects.get(study=busy_study, user=annotator)
    url = reverse("annotation:study_member_exclude", args=[busy_study.slug, member.pk])
    client.force_login(author)
    response = client.post(url, {"excluded": "1", "reason": ""}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    response = client.post(url, {"excluded": "1", "reason": "failed gold"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"Include again" in response.content
    member.refresh_from_db()
    assert member.excluded and member.exclusion_reason == "failed gold"


def test_an_author_adds_an_annotator_by_username(client, author, study, outsider):
    client.force_login(author)
    client.post(reverse("annotation:study_member_add", args=[study.slug]),
                {"username": "outsider"})
    assert study.members.filter(user=outsider).exists()


def test_export_job_writes_one_row_per_item_annotator_field(
        client, author, busy_study, annotator, django_capture_on_commit_callbacks):
    StudyMember.objects.filter(study=busy_study, user=annotator).update(
        excluded=True, exclusion_reason="failed gold")
    client.force_login(author)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("annotation:study_export", args=[busy_study.slug]),
                               HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    job = Job.objects.get(kind=Job.Kind.STUDY_EXPORT)
    assert job.status == Job.Status.SUCCEEDED
    status = client.get(reverse("annotation:study_export", args=[busy_study.slug]),
                        {"job": job.pk}, HTTP_HX_REQUEST="true")
    assert b"Download CSV" in status.content
    download = client.get(reverse("annotation:study_export_download",
                                  args=[busy_study.slug, job.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    expected = sum(len(taskforms.flatten(a.values))
                   for a in Annotation.objects.filter(item__study=busy_study))
    assert len(rows) == expected == job.result["rows"]
    first = rows[0]
    assert {"item", "annotator", "field", "value", "submitted_at", "time_spent_ms",
            "system", "system_letter", "annotator_excluded", "exclusion_reason"} <= set(first)
    assert {r["system"] for r in rows} == {"reference"}
    excluded = {r["annotator_excluded"] for r in rows if r["annotator"] == "annotator"}
    assert excluded == {"1"} and any(r["exclusion_reason"] == "failed gold" for r in rows)
    assert any(r["field"] == "citation.0" and r["detail"] for r in rows)


def test_export_cells_cannot_smuggle_spreadsheet_formulas(busy_study, annotator, tmp_path):
    annotation = Annotation.objects.filter(annotator=annotator).first()
    annotation.values["comment"] = "=HYPERLINK(\"http://x\")"
    annotation.save()
    path = tmp_path / "x.csv"
    study_export_write(study=busy_study, path=path)
    assert "'=HYPERLINK" in path.read_text()


def test_instructions_markdown_is_rendered_and_sanitized(client, annotator, member, study):
    study.instructions = ("# Read me\n\n<script>window.__pwned=1</script>"
                          "<img src=x onerror=\"alert(1)\"> [x](javascript:alert(1)) **bold**")
    study.save()
    client.force_login(annotator)
    html = client.get(reverse("annotation:study_detail", args=[study.slug])).content.decode()
    assert "<h1>Read me</h1>" in html and "<strong>bold</strong>" in html
    assert "__pwned" not in html and "onerror" not in html and "javascript:" not in html


def test_annotator_study_list_shows_only_their_studies(client, annotator, member, tiny_benchmark,
                                                       author):
    other = make_study(tiny_benchmark, author)
    other.title = "Somebody else's study"
    other.save()
    client.force_login(annotator)
    html = client.get(reverse("annotation:study_list")).content.decode()
    assert member.study.title in html and "Somebody else" not in html
