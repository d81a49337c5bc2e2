"""A real Celery worker process runs a job end to end: against Redis when it is reachable
(it is in CI), and always on the embedded filesystem broker that `make run` uses."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

from config.celery import app
from evaluation.jobs import job_create
from evaluation.models import Benchmark, Job
from evaluation.tasks import import_benchmark_job

ROOT = Path(__file__).resolve().parents[2]
FILESYSTEM = "filesystem://"


def _database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"postgres://{db['USER'] or 'postgres'}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return f"sqlite:///{db['NAME']}"


def _brokers():
    yield FILESYSTEM
    if settings.CELERY_BROKER_URL.startswith("redis://"):
        yield settings.CELERY_BROKER_URL


def _transport_options(url: str, var_dir: Path) -> dict:
    if url != FILESYSTEM:
        return {}
    folders = {name: var_dir / "broker" / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return {"data_folder_in": str(folders["queue"]), "data_folder_out": str(folders["queue"]),
            "processed_folder": str(folders["processed"]),
            "control_folder": str(folders["control"])}


@pytest.fixture(params=list(_brokers()))
def worker_broker(request, transactional_db, tmp_path):
    url = request.param
    env = {**os.environ, "DJANGO_ENV": "development", "DATABASE_URL": _database_url(),
           "CELERY_BROKER_URL": url, "CONCORD_VAR_DIR": str(tmp_path)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency=1",
         "--without-mingle", "--without-gossip", "--loglevel=INFO"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    app.conf.task_always_eager = False  # the tests' default; here the worker must do the work
    try:
        yield Connection(url, transport_options=_transport_options(url, tmp_path)), worker
    finally:
        app.conf.task_always_eager = True
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


def test_worker_process_imports_a_benchmark_and_reports_progress(worker_broker, tiny_bundle_dir):
    broker, worker = worker_broker

    def enqueue(job_id):
        import_benchmark_job.apply_async((job_id,), connection=broker)

    job = job_create(kind=Job.Kind.IMPORT_BENCHMARK, params={"path": str(tiny_bundle_dir)},
                     enqueue=enqueue)  # autocommit here, so on_commit enqueues at once
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not job.is_finished:
        time.sleep(0.3)
        job.refresh_from_db()
    if not job.is_finished:
        worker.terminate()
        pytest.fail("the worker never finished the job:\n" + worker.communicate()[0][-3000:])
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.result == {"benchmark": "tiny"}
    assert (job.stage, job.done, job.total, job.attempts) == ("dialogues", 3, 3, 1)
    assert Benchmark.objects.get(slug="tiny").dialogues.count() == 3
    worker.terminate()
    log = worker.communicate(timeout=30)[0]
    assert "import_benchmark_job" in log and "succeeded" in log, log[-3000:]
