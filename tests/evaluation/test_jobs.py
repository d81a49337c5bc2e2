from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Job
from evaluation.services.jobs import job_begin, job_finish, job_progress, jobs_fail_stale

pytestmark = pytest.mark.django_db


def make_job(user, **fields):
    return Job.objects.create(kind=Job.Kind.IMPORT_BENCHMARK, created_by=user, **fields)


def test_progress_page_polls_until_finished(client, researcher):
    job = make_job(researcher)
    job_begin(job.pk)
    job_progress(job.pk, "dialogues", 30, 120)
    client.force_login(researcher)
    fragment = client.get(reverse("job_detail", args=[job.pk]), HTTP_HX_REQUEST="true").content
    assert b'hx-trigger="every 1s"' in fragment and b"30 / 120" in fragment
    assert b'style="width: 25%"' in fragment
    job_finish(job.pk, result={"benchmark": "tiny"})
    fragment = client.get(reverse("job_detail", args=[job.pk]), HTTP_HX_REQUEST="true").content
    assert b"hx-trigger" not in fragment and b"Succeeded" in fragment


def test_a_job_is_private_to_its_creator(client, researcher, outsider, staff):
    job = make_job(researcher)
    client.force_login(outsider)
    assert client.get(reverse("job_detail", args=[job.pk])).status_code == 404
    client.force_login(staff)
    assert client.get(reverse("job_detail", args=[job.pk])).status_code == 200


def test_duplicate_delivery_of_a_finished_job_does_nothing(researcher):
    job = make_job(researcher)
    job_begin(job.pk)
    job_finish(job.pk, result={"x": 1})
    assert job_begin(job.pk) is None
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.attempts == 1


def test_a_job_whose_worker_died_is_marked_failed_not_left_running(researcher):
    job = make_job(researcher)
    job_begin(job.pk)
    assert jobs_fail_stale() == 0
    assert jobs_fail_stale(now=timezone.now() + timedelta(minutes=11)) == 1
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "stopped reporting" in job.error


def test_a_job_redelivered_too_often_gives_up(researcher):
    job = make_job(researcher, attempts=3)
    assert job_begin(job.pk) is None
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "Gave up after 3 attempts" in job.error


def test_a_starting_job_sweeps_jobs_whose_worker_died(researcher):
    dead = make_job(researcher)
    job_begin(dead.pk)
    Job.objects.filter(pk=dead.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=11))
    alive = make_job(researcher)
    assert job_begin(alive.pk) is not None
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert dead.status == Job.Status.FAILED and "stopped reporting" in dead.error
    assert alive.status == Job.Status.RUNNING
