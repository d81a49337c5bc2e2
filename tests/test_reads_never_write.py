"""Reads never write: every GET of every page, as every persona, full page and HTMX fragment,
changes nothing in the database (docs/architecture.md). The queries of each request are captured
(the login's session writes happen before); any INSERT, UPDATE or DELETE fails the test.

The pages are those of tests/test_url_access.py (every URL pattern has an entry there), plus the
pages of objects that exist: a finished run and its job, a job whose worker died, a study's
export job, a leaderboard whose rank snapshot is missing or stale.
"""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.test_url_access import ACCESS, PERSONAS

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE)


def _writes(client, persona_user, url: str, **headers) -> tuple[int, list[str]]:
    client.logout()
    if persona_user is not None:
        client.force_login(persona_user)
    with CaptureQueriesContext(connection) as queries:
        status = client.get(url, **headers).status_code
    return status, [q["sql"] for q in queries.captured_queries if WRITE.match(q["sql"])]


def _walk(client, personas, urls) -> list[str]:
    failures = []
    for url in urls:
        for persona in PERSONAS:
            for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
                status, writes = _writes(client, personas[persona], url, **headers)
                if writes:
                    kind = " (htmx)" if headers else ""
                    failures.append(f"{persona} GET {url}{kind} -> {status} wrote: "
                                    + " | ".join(sql[:120] for sql in writes))
    return failures


def _object_pages(world, study) -> list[str]:
    """The pages of objects that exist (ACCESS mostly names missing ones for its 404s)."""
    from evaluation.models import Job

    _system, run = world["lb-public"]
    export = Job.objects.create(kind=Job.Kind.STUDY_EXPORT, params={"study": study.pk})
    dead = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.RUNNING,
                              heartbeat_at=timezone.now() - timedelta(days=1))
    return [
        reverse("run_detail", args=[run.pk]),
        reverse("job_detail", args=[run.job_id]),
        reverse("job_detail", args=[dead.pk]),
        reverse("leaderboard:api_run", args=[run.pk]),
        reverse("annotation:study_export", args=[study.slug]) + f"?job={export.pk}",
        reverse("leaderboard:system_detail", args=["lb-public"]) + "?benchmark=tiny",
        reverse("leaderboard:compare") + "?benchmark=tiny&a=lb-public&b=lb-private",
    ]


@pytest.mark.django_db
def test_no_get_request_writes(client, personas, tiny_benchmark, tiny_study, leaderboard_world):
    from leaderboard.models import RankSnapshot, RunClusterStats

    urls = [reverse(name, kwargs=kwargs) for name, cases in ACCESS.items()
            for kwargs, method, _expected in cases if method == "get"]
    urls += _object_pages(leaderboard_world, tiny_study)
    failures = _walk(client, personas, urls)
    assert not failures, "\n".join(failures)
    # The leaderboards above had no rank snapshot: they were ranked in memory, nothing stored.
    assert not RankSnapshot.objects.exists() and not RunClusterStats.objects.exists()


@pytest.mark.django_db
def test_a_dead_workers_job_is_not_failed_by_looking_at_it(client, staff):
    from evaluation.models import Job

    dead = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.RUNNING,
                              heartbeat_at=timezone.now() - timedelta(days=1))
    client.force_login(staff)
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        page = client.get(reverse("job_detail", args=[dead.pk]), **headers)
        # shown as failed (computed when read, Job.from_db), and nothing written
        assert page.status_code == 200 and "stopped reporting progress" in page.content.decode()
    stored = Job.objects.filter(pk=dead.pk).values_list("status", "finished_at").get()
    assert stored == (Job.Status.RUNNING, None)


@pytest.mark.django_db
def test_the_capture_sees_a_write(client, annotator, tiny_study):
    """The walk would notice: a POST that saves a draft is caught by the same capture."""
    client.force_login(annotator)
    url = reverse("annotation:item_draft", args=[tiny_study.slug, 1])
    with CaptureQueriesContext(connection) as queries:
        assert client.post(url, {"citation-0": "supported"}).status_code == 200
    assert any(WRITE.match(q["sql"]) for q in queries.captured_queries)
