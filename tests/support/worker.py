"""A real Celery worker process for tests, sharing the test database (not a mock of one)."""

import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from kombu import Connection

from config.celery import app

ROOT = Path(__file__).resolve().parents[2]
FILESYSTEM = "filesystem://localhost//"  # settings' embedded default


def database_url() -> str:
    """The test database as a URL, so the worker process writes where the test reads."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"postgres://{db['USER'] or 'postgres'}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return f"sqlite:///{db['NAME']}"


def transport_options(url: str, var_dir: Path) -> dict:
    if url != FILESYSTEM:
        return {}
    folders = {name: var_dir / "broker" / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return {"data_folder_in": str(folders["queue"]), "data_folder_out": str(folders["queue"]),
            "processed_folder": str(folders["processed"]),
            "control_folder": str(folders["control"])}


@contextmanager
def celery_worker(broker_url: str, var_dir: Path, **extra_env):
    """Start `celery -A config worker` on BROKER_URL; yield (kombu connection, process).

    The test process stops running tasks eagerly meanwhile, so the worker must do the work.
    """
    with worker_process(broker_url, var_dir, **extra_env) as process, tasks_to_workers():
        yield Connection(broker_url, transport_options=transport_options(broker_url, var_dir)), \
            process


@contextmanager
def worker_process(broker_url: str, var_dir: Path, **extra_env):
    """The worker process alone: a module-scoped fixture keeps one for its tests, each of which
    sends it tasks inside `tasks_to_workers()`."""
    # a worker runs in development mode, but calls the test's live systems on the test's
    # loopback ports (config/settings.py: CONCORD_LIVE_LOOPBACK_PORTS)
    ports = ",".join(f"{low}-{high}" for low, high in settings.LIVE_LOOPBACK_PORTS)
    env = {**os.environ, "DJANGO_ENV": "development", "DATABASE_URL": database_url(),
           "CELERY_BROKER_URL": broker_url, "CONCORD_VAR_DIR": str(var_dir),
           "CONCORD_LIVE_LOOPBACK_PORTS": ports, **extra_env}
    var_dir.mkdir(parents=True, exist_ok=True)
    # The log goes to a file, not a pipe: nobody reads a pipe while the worker runs, and a
    # worker whose pipe is full blocks on its next log line.
    log = tempfile.NamedTemporaryFile("w", dir=var_dir, prefix="worker-", suffix=".log",
                                      delete=False)
    with log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency=1",
             "--without-mingle", "--without-gossip", "--loglevel=INFO"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
        )
    process.log_path = Path(log.name)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def tasks_to_workers():
    """This process sends its tasks to the broker instead of running them eagerly."""
    app.conf.task_always_eager = False
    try:
        yield
    finally:
        app.conf.task_always_eager = True


def wait_until_idle(broker_url: str, process, *, seconds: float = 90) -> None:
    """Wait until the Redis broker holds no task, waiting or unacknowledged (a task is
    acknowledged when it ends: CELERY_TASK_ACKS_LATE), twice in a row a moment apart; fail
    with the worker's log if it never does. A worker kept for several tests finishes what one
    test queued (follow-up tasks included) before the next test begins."""
    deadline = time.monotonic() + seconds
    quiet = 0
    with Connection(broker_url) as connection:
        client = connection.default_channel.client
        while quiet < 2:
            if time.monotonic() > deadline:
                pytest.fail("the worker never finished its tasks:\n" + worker_log(process)[-3000:])
            busy = client.llen(app.conf.task_default_queue) or client.hlen("unacked")
            quiet = 0 if busy else quiet + 1
            time.sleep(0.3)


def wait_for_job(job, process, *, seconds: float = 90) -> None:
    """Poll the job until it finishes; fail with the worker's log if it never does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not job.is_finished:
        time.sleep(0.3)
        job.refresh_from_db()
    if not job.is_finished:
        pytest.fail("the worker never finished the job:\n" + worker_log(process)[-3000:])


def worker_log(process) -> str:
    """Stop the worker; its whole log."""
    process.terminate()
    process.wait(timeout=30)
    return process.log_path.read_text(errors="replace")
