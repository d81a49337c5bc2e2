"""The non-LLM Trace suite on a simulation's dialogues (docs/simulation.md, "Trace metrics"),
numbers by hand, shown on the run page; and the simulation's log submission judged by the PEPPER
and CoRE judges through `manage.py evaluate` against a local OpenAI-compatible server."""

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation.models import MetricSummary, Run
from evaluation.services.live import live_system_create
from evaluation.services.simulations import simulation_create
from tests.evaluation.llm_fixtures import core_answer
from tests.evaluation.simulation_fixtures import by_dialogue, run_all
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db(transaction=True)
# Targets: d1 {r1, r2}, d2 {h1}, d3 {r1}; the system's lists at turns 1, 2, 3:
RANKINGS = {"d1": [["r2", "h1"], ["r1"], ["a1"]], "d2": [["a1"], ["a1"], ["h1"]],
            "d3": [["r3"], ["r2"], ["r2"]]}


@pytest.fixture
def simulation(sim_benchmark, researcher):
    def answer(user, body):
        turn = (body["turn_index"] - 1) // 2
        return {"response": f"Try these ({turn}).", "ranked_item_ids": RANKINGS[user][turn]}

    system_answer = by_dialogue(answer)
    with live_server(system_answer) as server:
        system = live_system_create(name="My CRS", owner=researcher, endpoint=server.url)
        simulation = run_all(system_answer.follow(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="template", users=3, turns=3,
            seed=1, user=researcher, enqueue=False)))
    assert simulation.run_id, simulation.job.error
    return simulation


def test_trace_suite_scores_the_simulated_dialogues_by_hand(simulation, client, researcher):
    run = Run.objects.get(pk=simulation.report["trace_run"])
    assert run.evaluator == "trace" and run.submission_id == simulation.submission_id
    assert run.job.status == "succeeded" and run.config["splits"] == ["simulated"]
    summary = {s.metric: s for s in MetricSummary.objects.filter(run=run)}
    # Recall@1 per system turn: d1 1/2, 1/2, 0; d2 0, 0, 1; d3 0, 0, 0 → 2/9 over 9 turns.
    assert summary["recall@1"].value == pytest.approx(2 / 9) and summary["recall@1"].n == 9
    # MRR: d1 1, 1, 0; d2 0, 0, 1; d3 0, 0, 0 (r2 is not d3's target) → 3/9.
    assert summary["mrr"].value == pytest.approx(1 / 3)
    # TSR (a hit in the top 1 at any turn): d1 yes, d2 yes, d3 no; T2R: 1, 3, 3 + 1 (no hit).
    assert summary["tsr"].value == pytest.approx(2 / 3)
    assert summary["t2r"].value == pytest.approx((1 + 3 + 4) / 3)
    # No reference response: no text metric was computed.
    assert not MetricSummary.objects.filter(run=run, metric__in=["bleu4", "rouge_l"],
                                            value__isnull=False).exists()
    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[simulation.run_id])).content.decode()
    table = page.split('class="data trace-of-simulation"')[1].split("</table>")[0]
    assert '<tr data-metric="recall@1"><th>recall@1</th>' in table and "0.222" in table
    assert f'href="/runs/{run.pk}/"' in page


def test_the_simulations_log_is_judged_by_pepper_and_core(simulation, llm_server,
                                                          llm_settings):
    def answer(request):
        if "conversation between a User and a conversational recommender" in (
                request.prompt_text):
            return ("Asks little.\n<proactiveness>2</proactiveness><coherence>4</coherence>"
                    "<personalization>3</personalization>")
        return core_answer(request)

    server = llm_server(answer)
    out, calls = {}, {}
    for evaluator in ("pepper_judge", "core"):
        buffer = io.StringIO()
        call_command("evaluate", benchmark=simulation.benchmark.slug,
                     submission_id=simulation.submission_id, evaluator=evaluator,
                     model="openai/scripted-judge", profile=server.profile, no_debate=True,
                     json=True, no_progress=True, stdout=buffer)
        out[evaluator] = json.loads(buffer.getvalue())
        calls[evaluator] = server.requests[sum(len(c) for c in calls.values()):]
    # One PEPPER prompt per simulated dialogue; its scores as the server gave them.
    pepper = out["pepper_judge"]["metrics"]
    assert pepper["pepper.proactiveness"]["value"] == 2
    assert pepper["pepper.coherence"]["value"] == 4 and pepper["pepper.coherence"]["n"] == 3
    assert len(calls["pepper_judge"]) == 3
    assert all("Try these (0)." in r.prompt_text for r in calls["pepper_judge"])
    # CoRE's factor ratings (the fixture rates Coherence 4) over the three dialogues.
    core = out["core"]["metrics"]
    assert core["core.coherence"]["value"] == 4 and core["core.coherence"]["n"] == 3
    assert Run.objects.filter(submission_id=simulation.submission_id,
                              evaluator__in=["pepper_judge", "core"]).count() == 2
