"""A simulation on real Celery workers: batches fan out; a worker process killed with SIGKILL in
the middle of a batch has its batch redelivered and redone without duplicating a dialogue."""

import itertools
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from evaluation.models import Job, SimulatedDialogue
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from tests.support.live_server import Raw, live_server
from tests.support.worker import celery_worker, wait_for_job, worker_log

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis (redelivery of a killed worker's task)")]


def children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    found = []
    for task in tasks.iterdir():
        text = (task / "children").read_text().split()
        found += [int(c) for c in text]
    return found


def test_a_killed_workers_batch_is_redone_without_duplicates(sim_benchmark, researcher,
                                                             tmp_path):
    answer = b'{"response": "Try Harbor Grill.", "ranked_item_ids": ["r1", "r3"]}'
    # One dialogue at a time, two calls each: call 3 is the second user's first. The system
    # holds it until the worker is killed, so the kill always lands inside that dialogue (a
    # timed kill once landed between two users on a loaded machine, and nothing was redone).
    killed, arrived = threading.Event(), itertools.count(1)

    def system_answer(body):
        if next(arrived) == 3:
            killed.wait(30)
        return Raw(200, answer)

    with live_server(system_answer) as server:
        system = live_system_create(name="Slow CRS", owner=researcher, endpoint=server.url,
                                    max_concurrency=1)
        with celery_worker(settings.CELERY_BROKER_URL, tmp_path) as (_, worker):
            simulation = simulation_create(benchmark=sim_benchmark, system=system,
                                           simulator="template", users=3, turns=2,
                                           batch_size=3, enqueue=True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (
                    len(server.requests) == 3 and simulation.dialogues.exists()):
                time.sleep(0.05)
            stored_before = set(simulation.dialogues.values_list("user_id", flat=True))
            assert len(server.requests) == 3 and len(stored_before) == 1, (
                "the first user should be stored and the second one's first call held")
            pool = children(worker.pid)
            assert pool, "the worker has no pool process"
            for pid in pool:
                os.kill(pid, signal.SIGKILL)
            killed.set()
            job = Job.objects.get(pk=simulation.job_id)
            wait_for_job(job, worker, seconds=90)
            log = worker_log(worker)
    assert job.status == Job.Status.SUCCEEDED, job.error + log[-3000:]
    assert "WorkerLostError" in log or "SIGKILL" in log or "signal 9" in log, log[-3000:]
    rows = SimulatedDialogue.objects.filter(simulation=simulation)
    assert rows.count() == 3 and set(rows.values_list("status", flat=True)) == {"ok"}
    # Users stored before the kill were not simulated again: two calls each (two turns).
    calls = Counter(r["dialogue_id"] for r in server.requests)
    for user_id in stored_before:  # the system knows the users by their opaque ids
        assert user_id.startswith("u-") and calls[user_id] == 2
    # the interrupted user was redone: its held call, then its two calls again
    assert sorted(calls.values()) == [2, 2, 3] and sum(calls.values()) == 7
    simulation.refresh_from_db()
    assert simulation.run is not None and simulation.report["users"] == 3
