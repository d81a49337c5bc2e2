"""Hostile live systems fail one dialogue's turn, never the simulation's batch (issue 28.4;
docs/operations.md, "Deadlines and hostile answers"): a 100,000-deep JSON answer used to raise
RecursionError out of the batch, leaving the job to read as a dead worker."""

import pytest

from evaluation.models import Job, SimulatedDialogue
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from tests.evaluation.simulation_fixtures import by_dialogue, run_all, stored_dialogue
from tests.support.live_server import Raw, live_server, trickled

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = {"d1": Raw(200, b"[" * 100_000 + b"]" * 100_000),
           "d2": Raw(200, b'{"response": "x", "ranked_item_ids": [], "n": ' + b"7" * 10_000
                     + b"}")}


def test_hostile_answers_fail_their_dialogues_and_the_batch_goes_on(sim_benchmark, researcher):
    def answer(user, body):
        if user in HOSTILE and body["turn_index"] == 3:
            return HOSTILE[user]
        return {"response": "ok", "ranked_item_ids": ["r1"]}

    system_answer = by_dialogue(answer)
    with live_server(system_answer) as server:
        system = live_system_create(name="Hostile", owner=researcher, endpoint=server.url,
                                    max_retries=0)
        simulation = run_all(system_answer.follow(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="template", users=3, turns=2,
            failure_threshold=0.9, batch_size=3, enqueue=False)))
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    failed = {d.source_dialogue_id: d for d in simulation.dialogues.filter(status="failed")}
    assert {u: d.error_kind for u, d in failed.items()} == {"d1": "too_deep",
                                                            "d2": "bad_number"}
    assert failed["d1"].error == "turn 3: the answer's JSON is nested too deeply"
    assert "an integer of 10,000 digits" in failed["d2"].error
    assert stored_dialogue(simulation, "d3").status == SimulatedDialogue.Status.OK
    assert simulation.report["failures_by_kind"] == {"too_deep": 1, "bad_number": 1}


def test_a_stalling_system_fails_the_run_with_its_own_message_not_a_dead_worker(
        sim_benchmark, researcher):
    with live_server(lambda body: trickled(0.5)) as server:
        system = live_system_create(name="Stalling", owner=researcher, endpoint=server.url,
                                    timeout_seconds=1.0, max_retries=0)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="template", users=3, turns=2,
            failure_threshold=0.5, batch_size=3, enqueue=False))
    job = simulation.job
    assert job.status == Job.Status.FAILED and job.error != Job.STALE_ERROR
    assert job.error.startswith("Stopped: 2 of 3 dialogues failed, over the threshold of 50%: "
                                "the live system failed a turn in 2 of them with timeout, "
                                "e.g. turn 1: timed out after 1 s")
    assert "stopped reporting" not in job.error
