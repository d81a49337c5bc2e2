"""`manage.py bench_simulation` (docs/performance.md, "Today's figures") at a small size, in
this process: a PEPPER simulation against the fixed-latency local server, with its figures."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.models import Simulation

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_the_simulation_runs_against_the_bench_server_and_prints_its_figures(
        sim_benchmark, capsys):
    call_command("bench_simulation", benchmark=sim_benchmark.slug, users=2, turns=2,
                 latency=0.02, concurrency=4, as_json=True)
    figures = json.loads(capsys.readouterr().out)
    assert figures["users"] == 2 and figures["turns"] == 2 and figures["failed"] == 0
    assert figures["llm_calls"] > 0
    assert figures["ideal_s"] == pytest.approx(0.02 * figures["llm_calls"] / 4, abs=0.01)
    assert figures["wall_s"] >= figures["ideal_s"]
    assert figures["overhead_ms_per_turn"] > 0
    simulation = Simulation.objects.get(run_id=figures["run_id"])
    assert simulation.simulator == "pepper" and simulation.users == 2


def test_workers_must_share_the_slots_evenly(tiny_benchmark):
    with pytest.raises(CommandError, match="--workers must divide --concurrency"):
        call_command("bench_simulation", benchmark=tiny_benchmark.slug, workers=3,
                     concurrency=8)
