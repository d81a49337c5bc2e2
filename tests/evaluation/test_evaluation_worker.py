"""An evaluation run created the way the web creates it (enqueued when its transaction commits)
is executed by a real Celery worker process, which records progress and results."""

import os
import subprocess
import sys
import time

import pytest
from kombu import Connection

from config.celery import app
from evaluation import services
from evaluation.models import Job, Run
from evaluation.services import run_create
from evaluation.tasks import evaluate_run_job
from leaderboard.services import submission_create, system_create
from tests.evaluation.test_worker import ROOT, _database_url, _transport_options
from tests.support.submissions import EXPECTED, write_lines

BROKER = "filesystem://"  # the embedded mode's broker, in this test's own folders


@pytest.fixture
def worker(transactional_db, tmp_path, settings, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    env = {**os.environ, "DJANGO_ENV": "development", "DATABASE_URL": _database_url(),
           "CELERY_BROKER_URL": BROKER, "CONCORD_VAR_DIR": str(tmp_path),
           "MEDIA_ROOT": str(settings.MEDIA_ROOT), "NLI_MODEL_PATH": ""}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency=1",
         "--without-mingle", "--without-gossip", "--loglevel=INFO"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    broker = Connection(BROKER, transport_options=_transport_options(BROKER, tmp_path))
    monkeypatch.setattr(services, "_enqueue_evaluation",
                        lambda job_id: evaluate_run_job.apply_async((job_id,), connection=broker))
    app.conf.task_always_eager = False  # the tests' default; here the worker must do the work
    try:
        yield process
    finally:
        app.conf.task_always_eager = True
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_a_worker_process_executes_an_enqueued_run(worker, tiny_benchmark, tmp_path):
    submission = submission_create(system=system_create(name="Remote"), benchmark=tiny_benchmark,
                                   path_or_file=write_lines(tmp_path / "s.jsonl"), user=None)
    run = run_create(submission=submission)  # autocommit here: enqueued as it commits
    job = run.job
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not job.is_finished:
        time.sleep(0.3)
        job.refresh_from_db()
    if not job.is_finished:
        worker.terminate()
        pytest.fail("the worker never finished the run:\n" + worker.communicate()[0][-3000:])
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.stage == "bootstrap" and job.done == job.total > 0 and job.attempts == 1
    assert job.started_at and job.finished_at
    run = Run.objects.get(pk=run.pk)
    assert run.summaries.get(metric="recall@1").value == pytest.approx(EXPECTED["recall@1"])
    assert "entailment" in run.unavailable
    worker.terminate()
    log = worker.communicate(timeout=30)[0]
    assert "evaluate_run_job" in log and "succeeded" in log, log[-3000:]
