"""An evaluation run created the way the web creates it (enqueued when its transaction commits)
is executed by a real Celery worker process, which records progress and results."""

import pytest
from django.db import transaction
from django.utils import timezone

from config.celery import app
from evaluation.models import Job, Run
from evaluation.services import jobs
from evaluation.services.runs import run_create
from evaluation.services.submissions import submission_create, system_create
from tests.support.submissions import EXPECTED, write_lines
from tests.support.worker import FILESYSTEM, celery_worker, wait_for_job, worker_log


@pytest.fixture
def worker(transactional_db, tmp_path, settings, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    with celery_worker(FILESYSTEM, tmp_path, MEDIA_ROOT=str(settings.MEDIA_ROOT),
                       NLI_MODEL_PATH="") as (broker, process):
        monkeypatch.setattr(jobs, "task_enqueue", enqueue_on(broker))
        yield process


def enqueue_on(broker):
    """`task_enqueue` sending to this test's broker, not the settings' one, and recording the
    send on the job as `task_enqueue` does: a job left looking unsent is sent a second time by
    the worker's sweep once it is RESEND_AFTER old (on a loaded machine the worker's start
    sweep came that late), and then reads two attempts."""

    def enqueue(task, *args, job_id=None, countdown=0):
        def send():
            app.tasks[task].apply_async(args, connection=broker, countdown=countdown or None)
            if job_id is not None:
                Job.objects.filter(pk=job_id, enqueued_at=None).update(enqueued_at=timezone.now())

        transaction.on_commit(send)

    return enqueue


def test_a_worker_process_executes_an_enqueued_run(worker, tiny_benchmark, tmp_path):
    submission = submission_create(system=system_create(name="Remote"), benchmark=tiny_benchmark,
                                   path_or_file=write_lines(tmp_path / "s.jsonl"), user=None)
    run = run_create(submission=submission)  # autocommit here: enqueued as it commits
    job = run.job
    wait_for_job(job, worker)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.stage == "bootstrap" and job.done == job.total > 0 and job.attempts == 1
    assert job.started_at and job.finished_at
    run = Run.objects.get(pk=run.pk)
    assert run.summaries.get(metric="recall@1").value == pytest.approx(EXPECTED["recall@1"])
    assert "entailment" in run.unavailable
    log = worker_log(worker)
    assert "evaluate_run_job" in log and "succeeded" in log, log[-3000:]
