"""Dead workers are noticed in seconds (issue 18, point 5), and a failed run is retried by its
owner without a new upload and without quota. Real processes, real SIGKILL; the intervals are
shortened through the same settings a deployment sets (1 s heartbeat, 3 s until stale)."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Job, Submission
from evaluation.services.jobs import jobs_sweep
from tests.support.submissions import write_lines
from tests.support.worker import ROOT, celery_worker, database_url, wait_for_job

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM_AND_HANG = """
import django, sys
django.setup()
from evaluation.services.jobs import job_begin
job_begin(int(sys.argv[1]))
print("claimed", flush=True)
sys.stdin.read()  # a long evaluation, until the process is killed
"""


def _env(**extra):
    return {**os.environ, "DJANGO_ENV": "development", "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database_url(), "CONCORD_JOB_HEARTBEAT_SECONDS": "1",
            "CONCORD_JOB_STALE_SECONDS": "3", **extra}


@pytest.fixture
def queued_run(settings, tiny_benchmark, researcher, media_root, tmp_path):
    """A stored upload whose run is queued, as `submission_submit` leaves it."""
    from evaluation.services.runs import run_create
    from evaluation.services.submissions import submission_create, system_create

    settings.JOB_HEARTBEAT_SECONDS, settings.JOB_STALE_SECONDS = 1, 3
    system = system_create(name="Mortal", owner=researcher)
    submission = submission_create(system=system, benchmark=tiny_benchmark,
                                   path_or_file=write_lines(tmp_path / "s.jsonl"),
                                   user=researcher)
    run = run_create(submission=submission, user=researcher, enqueue=False)
    Job.objects.filter(pk=run.job_id).update(task="evaluation.tasks.evaluate_run_job")
    return run


def test_a_killed_worker_s_run_reads_failed_in_seconds_and_its_owner_retries_it(
        client, queued_run, researcher):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: on SQLite (one writer) a job beats through its progress "
                    "writes only, with no heartbeat thread (evaluation/services/jobs.py)")
    process = subprocess.Popen([sys.executable, "-c", CLAIM_AND_HANG, str(queued_run.job_id)],
                               cwd=ROOT, env=_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "claimed"
        first = Job.objects.get(pk=queued_run.job_id).heartbeat_at
        time.sleep(2.5)
        job = Job.objects.get(pk=queued_run.job_id)
        assert job.status == Job.Status.RUNNING and job.heartbeat_at > first  # it beats
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    killed = time.monotonic()
    while Job.objects.get(pk=queued_run.job_id).status == Job.Status.RUNNING:
        assert time.monotonic() - killed < 60, "a dead worker's run still reads as running"
        time.sleep(0.2)
    noticed = time.monotonic() - killed
    assert noticed < 6  # heartbeat 1 s + stale after 3 s, and no sweep or page view needed
    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[queued_run.pk])).content.decode()
    assert "stopped reporting progress" in page and 'id="retry-button"' in page
    # the sweep writes down what every read already shows
    assert Job.objects.filter(pk=queued_run.job_id).values_list("status", flat=True).get() == \
        Job.Status.RUNNING
    assert jobs_sweep() == {"failed": 1, "resent": 0}
    # the owner retries: same submission, no quota, the run is evaluated (eagerly here)
    used = Submission.objects.count()
    response = client.post(reverse("run_retry", args=[queued_run.pk]))
    assert response.status_code == 302
    job = Job.objects.get(pk=queued_run.job_id)
    assert job.status == Job.Status.SUCCEEDED and job.attempts == 1, job.error
    assert Submission.objects.count() == used


@pytest.mark.django_db  # no second connection here: rolled back, not flushed
def test_only_the_owner_retries_and_only_a_failed_run(client, queued_run, outsider, staff):
    url = reverse("run_retry", args=[queued_run.pk])
    client.force_login(outsider)
    assert client.post(url).status_code == 404  # a private run is not there for strangers
    client.force_login(staff)
    client.post(url)
    assert Job.objects.get(pk=queued_run.job_id).status == Job.Status.QUEUED  # not failed yet


def test_a_starting_worker_fails_dead_jobs_and_sends_lost_ones(tiny_bundle_dir, tmp_path,
                                                                settings, staff):
    """The broker died after a job was committed and before its task was sent: the job waits,
    queued and unsent, until a worker's sweep sends it; a job left running by a worker that
    died is written down as failed by the same sweep."""
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs Redis")
    lost = Job.objects.create(kind=Job.Kind.IMPORT_BENCHMARK, params={"path": str(tiny_bundle_dir)},
                              task="evaluation.tasks.import_benchmark_job")
    Job.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    # its page says why it waits: the broker, not a worker that stopped reporting
    waiting = Job.objects.get(pk=lost.pk)
    assert waiting.waiting_note == Job.UNSENT_NOTE and waiting.error != Job.STALE_ERROR
    browser = Client()
    browser.force_login(staff)
    assert Job.UNSENT_NOTE in browser.get(reverse("job_detail", args=[lost.pk])).content.decode()
    dead = Job.objects.create(kind=Job.Kind.IMPORT_BENCHMARK, status=Job.Status.RUNNING,
                              heartbeat_at=timezone.now() - timedelta(minutes=5))
    with celery_worker(settings.CELERY_BROKER_URL, tmp_path, CONCORD_JOB_SWEEP_SECONDS="1") \
            as (_, worker):
        wait_for_job(lost, worker, seconds=90)
    assert lost.status == Job.Status.SUCCEEDED, lost.error
    assert lost.enqueued_at is not None and lost.waiting_note == ""
    assert Job.objects.filter(pk=dead.pk).values_list("status", flat=True).get() == \
        Job.Status.FAILED
