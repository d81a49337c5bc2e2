"""The daily simulation allowance (issue 34.5, docs/simulation.md "Allowance"): per researcher
account and UTC day, apart from the upload quota, enforced atomically (twelve concurrent starts
through the API with an allowance of three start exactly three); refused starts store nothing;
a simulation's log submission is no upload."""

import threading
from datetime import timedelta
from io import BytesIO

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.models import Job, Simulation, Submission
from evaluation.services.live import live_system_create
from evaluation.services.simulations import (
    SimulationQuotaExceeded,
    simulation_allowance,
    simulation_create,
)
from evaluation.services.submissions import QuotaExceeded, submission_submit, system_create
from tests.evaluation.simulation_fixtures import run_all, sim_benchmark  # noqa: F401
from tests.support.live_server import live_server
from tests.support.submissions import write_lines

pytestmark = pytest.mark.django_db(transaction=True)
LIST = "/api/simulations/"


def _answer(body):
    return {"response": "Harbor Grill.", "ranked_item_ids": ["r1"]}


def _start(benchmark, system, user):
    return simulation_create(benchmark=benchmark, system=system, simulator="template",
                             users=1, turns=1, user=user, enqueue=False)


def test_twelve_concurrent_api_starts_with_an_allowance_of_three_start_exactly_three(
        settings, sim_benchmark, researcher):  # noqa: F811
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers, so there is no race to test")
    settings.DAILY_SIMULATION_QUOTA = 3
    token = Token.objects.create(user=researcher).key
    with live_server(_answer) as crs:
        systems = [live_system_create(name=f"Race {n}", owner=researcher, endpoint=crs.url)
                   for n in range(3)]  # the allowance is the account's, over all its systems
        start = threading.Barrier(12)
        outcomes, lock = [], threading.Lock()

        def post(system):
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
            try:
                start.wait()
                response = client.post(LIST, {"system": system.slug,
                                              "benchmark": sim_benchmark.slug,
                                              "simulator": "template", "users": 1,
                                              "turns": 1}, format="json")
                outcome = (response.status_code, response.json()["detail"]
                           if response.status_code == 429 else "")
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                outcome = (0, repr(exc))
            finally:
                connection.close()
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=post, args=(systems[n % 3],)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    assert sorted(status for status, _ in outcomes) == [201] * 3 + [429] * 9, outcomes
    refusal = next(detail for status, detail in outcomes if status == 429)
    assert refusal.startswith("Your account has started its 3 simulations for today")
    assert "uploads have a quota of their own" in refusal and "resets at" in refusal
    assert Simulation.objects.filter(created_by=researcher).count() == 3
    assert Job.objects.filter(kind=Job.Kind.SIMULATION).count() == 3  # refused: nothing stored


def test_the_allowance_is_daily_and_apart_from_the_upload_quota(
        settings, sim_benchmark, researcher, tmp_path):  # noqa: F811
    settings.DAILY_SIMULATION_QUOTA = 2
    settings.DAILY_SUBMISSION_QUOTA = 1
    with live_server(_answer) as crs:
        live = live_system_create(name="Sim", owner=researcher, endpoint=crs.url)
        first = run_all(_start(sim_benchmark, live, researcher))
        assert first.submission_id, first.job.error  # a finished simulation: a log submission
        assert simulation_allowance(researcher) == (2, 1)
        # The simulation's log submission did not use the account's one upload.
        uploader = system_create(name="Uploader", owner=researcher)
        content = write_lines(tmp_path / "s.jsonl").read_bytes()
        submission_submit(system=uploader, benchmark=sim_benchmark, file=BytesIO(content),
                          user=researcher)
        with pytest.raises(QuotaExceeded):
            submission_submit(system=uploader, benchmark=sim_benchmark, file=BytesIO(content),
                              user=researcher)
        # Nor does the used-up upload quota stop a simulation; the allowance does.
        _start(sim_benchmark, live, researcher)
        with pytest.raises(SimulationQuotaExceeded, match="its 2 simulations for today"):
            _start(sim_benchmark, live, researcher)
        assert Simulation.objects.count() == 2
        # Yesterday's simulations do not count today; other accounts have their own.
        Simulation.objects.update(created_at=timezone.now() - timedelta(days=1))
        assert simulation_allowance(researcher) == (2, 0)
        _start(sim_benchmark, live, researcher)
        # The command line (no account) is the operator's and is not counted.
        simulation_create(benchmark=sim_benchmark, system=live, simulator="template", users=1,
                          turns=1, enqueue=False)
    assert simulation_allowance(researcher) == (2, 1)
    assert Submission.objects.filter(system=uploader).count() == 1


def test_the_form_shows_the_allowance_and_refuses_past_it(settings, sim_benchmark,  # noqa: F811
                                                          researcher, client):
    settings.DAILY_SIMULATION_QUOTA = 1
    with live_server(_answer) as crs:
        live = live_system_create(name="Form", owner=researcher, endpoint=crs.url)
        url = reverse("leaderboard:system_simulate", args=[live.slug])
        client.force_login(researcher)
        page = client.get(url).content.decode()
        assert "Your account has started <strong>0</strong> of its <strong>1</strong> " \
               "simulation today" in page
        _start(sim_benchmark, live, researcher)
        response = client.post(url, {"benchmark": sim_benchmark.slug, "simulator": "template",
                                     "users": 1, "turns": 1, "seed": 0, "timeout_seconds": 30,
                                     "endpoint": crs.url})
    assert response.status_code == 429
    page = response.content.decode()
    assert "Your account has started its 1 simulation for today" in page
    assert "started <strong>1</strong> of its <strong>1</strong>" in page
    assert Simulation.objects.count() == 1
