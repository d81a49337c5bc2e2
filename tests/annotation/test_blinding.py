"""Blinding: nothing an annotator's browser receives names or identifies a system."""

import json

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from annotation.lib import taskforms
from annotation.models import Assignment
from annotation.selectors import item_layout
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from annotation.services.study_exports import study_export_write
from evaluation.models import Submission, System

from .conftest import _answers, full_answers, make_study

pytestmark = pytest.mark.django_db

SECRETS = [("quokka-ranker-x9", "Quokka Ranker X9", 987654321, 876543210,
            "1f2e3d4c-5b6a-4978-8899-aabbccddeeff"),
           ("wombat-llm-q7", "Wombat LLM Q7", 987654329, 876543219,
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")]


@pytest.fixture
def secret_submissions(tiny_benchmark, researcher, media_root):
    made = []
    for n, (slug, name, system_pk, submission_pk, uuid) in enumerate(SECRETS):
        system = System.objects.create(pk=system_pk, slug=slug, name=name, owner=researcher)
        lines = "\n".join(json.dumps(r) for r in _answers(f"Reply {n}")) + "\n"
        submission = Submission(pk=submission_pk, uuid=uuid, system=system,
                                benchmark=tiny_benchmark, protocol="turn", line_count=3)
        submission.file.save("s.jsonl", ContentFile(lines.encode()), save=False)
        submission.save()
        made.append(submission)
    return made


def leaks(text: str) -> list[str]:
    found = []
    lowered = text.lower()
    for slug, name, system_pk, submission_pk, uuid in SECRETS:
        for secret in (slug, name.lower(), str(system_pk), str(submission_pk), uuid,
                       f"submission:{submission_pk}", "submission:"):
            if secret in lowered:
                found.append(secret)
    return found


def test_no_annotator_facing_response_names_or_identifies_a_system(
        client, tiny_benchmark, author, annotator, secret_submissions):
    study = make_study(tiny_benchmark, author, forms=taskforms.ALL_FORMS,
                       submissions=secret_submissions, calibration_count=1, gold_count=2,
                       overlap_k=1, gold_rate=0.3)
    client.force_login(annotator)
    seen: list[tuple[str, str]] = []

    def fetch(method, url, data=None):
        response = getattr(client, method)(url, data or {})
        body = response.content.decode()
        seen.append((f"{method.upper()} {url}", body + response.get("Location", "")))
        return response

    join = reverse("annotation:study_join", args=[study.invite_token])
    fetch("get", join)
    fetch("post", join)
    fetch("get", reverse("annotation:study_list"))
    fetch("get", reverse("annotation:study_detail", args=[study.slug]))
    modes = set()
    for _ in range(60):
        response = fetch("post", reverse("annotation:study_next", args=[study.slug]))
        page = response["Location"]
        if page.endswith("?done=1"):
            fetch("get", page)
            break
        fetch("get", page)
        assignment = Assignment.objects.get(member__user=annotator,
                                            position=int(page.rstrip("/").rsplit("/", 1)[1]))
        modes.add(assignment.item.mode)
        data = full_answers(item_layout(assignment.item, study))
        fetch("post", page + "draft/", data)
        fetch("post", page + "submit/", {"comment": "incomplete"})
        fetch("post", page + "submit/", data)
        fetch("get", page)  # the submitted state (and the practice feedback)
    assert modes == {"response", "conversation", "recommend", "pairwise"}
    assert len(seen) > 60
    for where, body in seen:
        assert not leaks(body), f"{where} reveals {leaks(body)}"
    client.force_login(author)  # the detector works: the author's dashboard names systems
    dashboard = client.get(reverse("annotation:study_dashboard", args=[study.slug]))
    assert "quokka ranker x9" in leaks(dashboard.content.decode())


def test_the_authors_export_names_the_systems_behind_the_letters(
        tiny_benchmark, author, annotator, secret_submissions, tmp_path):
    study = make_study(tiny_benchmark, author, forms=["citation"],
                       submissions=secret_submissions, overlap_k=1)
    member = study_member_add(study=study, user=annotator)
    for _ in range(10):
        assignment = assignment_next(member=member)
        if assignment is None:
            break
        annotation_submit(assignment=assignment, data=full_answers(
            item_layout(assignment.item, study)))
    path = tmp_path / "export.csv"
    study_export_write(study=study, path=path)
    text = path.read_text()
    assert "quokka-ranker-x9" in text and "wombat-llm-q7" in text and "reference" in text
