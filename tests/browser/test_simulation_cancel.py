"""The Cancel button of a running simulation, in Chromium, with a real Celery worker on Redis:
the job is marked cancelled at once, the worker's running batch stops within about a turn (the
live system hears nothing more), its queued batch does nothing, and no run is made."""

import re
import time

import pytest
from django.conf import settings

from evaluation.models import Job, Simulation
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from tests.browser.conftest import screenshot
from tests.browser.test_leaderboard import log_in
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
from tests.support.live_server import Raw, live_server
from tests.support.worker import celery_worker, worker_log

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("redis://"),
                                 reason="needs Redis and a real worker")]
TURN_SECONDS = 0.3


def test_cancel_button_stops_a_running_simulation_on_a_worker(page, sim_benchmark,  # noqa: F811
                                                               researcher, tmp_path):
    answer = b'{"response": "Try Harbor Grill.", "ranked_item_ids": ["r1", "r3"]}'
    with live_server(lambda body: Raw(200, answer, delay=TURN_SECONDS)) as crs:
        system = live_system_create(name="Slow CRS", owner=researcher, endpoint=crs.url,
                                    max_concurrency=2)
        with celery_worker(settings.CELERY_BROKER_URL, tmp_path) as (_, worker):
            # 3 users × 20 turns of 0.3 s: about 12 s per batch if nobody cancels.
            simulation = simulation_create(benchmark=sim_benchmark, system=system,
                                           simulator="template", users=3, turns=20,
                                           batch_size=2, user=researcher, enqueue=True)
            log_in(page)
            page.goto(f"/jobs/{simulation.job_id}/")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(crs.requests) < 3:
                time.sleep(0.05)
            assert len(crs.requests) >= 3, "the worker never started the batch"
            assert Job.objects.get(pk=simulation.job_id).status == Job.Status.RUNNING
            page.click("#cancel-simulation")
            cancelled_at = time.monotonic()
            page.wait_for_url(f"**/jobs/{simulation.job_id}/")
            assert "Cancelled" in page.locator(".job-progress .progress-text").inner_text()
            assert "Cancelled by researcher." in page.locator(".job-error").inner_text()
            assert page.locator("#cancel-simulation").count() == 0
            screenshot(page, "simulation-cancelled")
            heard = len(crs.requests)
            # Within a turn or two the worker stops calling the system.
            time.sleep(1.0 + 4 * TURN_SECONDS)
            settled = len(crs.requests)
            time.sleep(3.0)
            assert len(crs.requests) == settled, "the batch kept talking after the cancel"
            assert settled - heard <= 2 * 2, "more than one turn per dialogue in flight"
            stopped_within = time.monotonic() - cancelled_at
            log = worker_log(worker)
    simulation = Simulation.objects.get(pk=simulation.pk)
    job = Job.objects.get(pk=simulation.job_id)
    assert job.status == Job.Status.CANCELLED and job.error == "Cancelled by researcher."
    assert simulation.run_id is None and simulation.submission_id is None
    # The cancelled batch stored no dialogue it was in the middle of; the second batch (the
    # third user) never talked to the system.
    assert simulation.dialogues.count() == 0
    assert len({r["dialogue_id"] for r in crs.requests}) == 2
    # both batch tasks returned cleanly (the worker may also have run tasks other tests of this
    # process left on its broker: only this simulation's batches count)
    batches = re.findall(r"simulate_batch_job\[[^\]]+\] (succeeded in|raised)", log)
    assert batches == ["succeeded in", "succeeded in"], log[-3000:]
    assert stopped_within < 10
