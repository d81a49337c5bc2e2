"""The PEPPER and iEvaLM-style simulators through the LLM gateway against a real local LLM
server (tests/support/llm_server.py), talking to a real local HTTP live system."""

import json

import pytest

from evaluation.models import Job
from evaluation.services.live import live_system_create
from evaluation.services.llm_models import model_options
from evaluation.services.simulations import simulation_create
from tests.evaluation.simulation_fixtures import run_all
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db(transaction=True)


def pepper_llm(request):
    prompt = request.prompt_text
    if "summarise a person's tastes" in prompt:
        return json.dumps({"likes": ["seafood", "cozy rooms"], "dislikes": ["noise"],
                           "narrative": "I love seafood."})
    if "Start the conversation" in prompt:
        return json.dumps({"utterance": "Any seafood place you would suggest?"})
    ids = [line.split("]")[0][3:] for line in prompt.splitlines() if line.startswith("- [")]
    return json.dumps({"reflected_preferences": [{"item_id": i, "opinion": "like",
                                                  "reason": "seafood"} for i in ids],
                       "utterance": f"I liked {', '.join(ids) or 'nothing'}; more like that?"})


def test_pepper_is_target_free_and_feeds_reflections_into_the_next_utterance(
        sim_benchmark, researcher, llm_server, llm_settings):
    llm = llm_server(pepper_llm)
    with live_server(lambda body: {
            "response": "Try these.", "ranked_item_ids": ["r3", "r1"]}) as system_server:
        system = live_system_create(name="CRS", owner=researcher, endpoint=system_server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="pepper", users=3, turns=3,
            model=model_options(profile=llm.profile, model="openai/scripted-user"),
            enqueue=False))
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    assert simulation.config["simulator"] == "pepper" and simulation.config["model"] == \
        "openai/scripted-user"
    # General preferences come from the seen items' reviews only; no prompt names a target.
    prompts = [r.prompt_text for r in llm.requests]
    assert any("Cozy seafood diner." in p for p in prompts)  # r3 is seen by d1 and d3
    d2 = simulation.dialogues.get(source_dialogue_id="d2")
    for prompt in prompts:
        assert "Old City Inn" not in prompt  # d2's target h1 is never shown to the simulator
    # Seen items are marked as seen, with the user's reviews; the others as unseen.
    assert any("[r3] SEEN" in p and "[r1] UNSEEN" in p for p in prompts)
    d1 = simulation.dialogues.get(source_dialogue_id="d1")
    assert d1.hidden["preferences"]["likes"] == ["seafood", "cozy rooms"]
    assert d1.hidden["reflections"][0][0] == {"item_id": "r3", "opinion": "like",
                                              "reason": "seafood"}
    user_turns = [t["text"] for t in d1.turns if t["role"] == "user"]
    assert user_turns == ["Any seafood place you would suggest?",
                          "I liked r3, r1; more like that?", "I liked r3, r1; more like that?"]
    assert d2.status == "ok"
    # r1 is shown at turn 1: d1 (targets r1, r2) 1/2, d3 (r1) 1, d2 (h1) 0.
    assert simulation.report["pc@5"][0] == pytest.approx((0.5 + 1 + 0) / 3, abs=1e-6)
    # A re-run replays the cached answers: no new LLM call.
    calls = llm.request_count
    run_again = simulation_create(
        benchmark=sim_benchmark, system=system, simulator="pepper", users=3, turns=3,
        model=model_options(profile=llm.profile, model="openai/scripted-user"), enqueue=False)
    with live_server(lambda body: {
            "response": "Try these.", "ranked_item_ids": ["r3", "r1"]}) as again:
        system.live_endpoint = again.url
        system.save(update_fields=["live_endpoint"])
        run_all(run_again)
    assert llm.request_count == calls and run_again.report["pc@5"] == simulation.report["pc@5"]


def test_an_unusable_simulator_answer_fails_the_dialogue(sim_benchmark, researcher, llm_server,
                                                         llm_settings):
    llm = llm_server(lambda request: "I cannot answer in JSON, sorry.")
    with live_server(lambda body: {
            "response": "x", "ranked_item_ids": []}) as system_server:
        system = live_system_create(name="CRS", owner=researcher, endpoint=system_server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="pepper", users=1, turns=2,
            model=model_options(profile=llm.profile, model="openai/scripted-user"),
            failure_threshold=1.0, enqueue=False))
    failed = simulation.dialogues.get()
    assert failed.status == "failed" and failed.error_kind == "simulator" and failed.turns == []
    assert simulation.job.status == Job.Status.FAILED and "every dialogue failed" in \
        simulation.job.error
    assert not system_server.requests  # it failed before the first utterance


def test_ievalm_knows_its_targets_continues_the_dataset_and_ends_when_one_is_recommended(
        sim_benchmark, researcher, llm_server, llm_settings):
    def user(request):
        prompt, persona = request.prompt_text, request.messages[0]["content"]
        # iEvaLM tells its seeker every target (chat.py L240-242), never to be said.
        assert "Never say the name" in persona
        if "<rating>" in prompt:
            return "It suggested what I wanted. <rating>2</rating>"
        return json.dumps({"utterance": "No, something else."})

    llm = llm_server(user)

    def system(body):
        turn = (body["turn_index"] - 1) // 2
        # r3 is no one's target; r1 (a target of d1 and d3) comes at the 2nd system turn.
        return {"response": "Here.", "ranked_item_ids": ["r3"] if turn == 0 else ["r3", "r1"]}

    with live_server(system) as system_server:
        crs = live_system_create(name="CRS", owner=researcher, endpoint=system_server.url)
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=crs, simulator="ievalm", users=3, turns=5,
            model=model_options(profile=llm.profile, model="openai/scripted-user"),
            enqueue=False))
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    assert simulation.config["accept_at"] == 50 and simulation.config["version"] == "2.1"
    d1 = simulation.dialogues.get(source_dialogue_id="d1")
    # d1's dataset context is its first user turn: it opens the simulated dialogue as is
    assert [t["action"] for t in d1.turns] == ["context", "recommend", "reject_and_refine",
                                               "recommend", "accept"]
    assert d1.turns[0]["text"] == "I want quiet seafood."
    assert d1.hidden["preferences"]["target_item_ids"] == ["r1", "r2"]
    assert d1.hidden["persuasiveness"] == 2
    assert any("Harbor Grill" in r.prompt_text and "Noodle Nook" in r.prompt_text
               for r in llm.requests)  # both of d1's targets are known
    d2 = simulation.dialogues.get(source_dialogue_id="d2")
    assert sum(1 for t in d2.turns if t["role"] == "system") == 5  # never found h1
    assert simulation.report["summaries"]["ievalm_recall@1"]["value"] == pytest.approx(0)
    # pairs (d1, r1) (d1, r2) (d2, h1) (d3, r1): r1 is 2nd in d1's and d3's final list
    assert simulation.report["summaries"]["ievalm_recall@10"]["value"] == pytest.approx(0.5)
    assert simulation.report["summaries"]["persuasiveness"]["value"] == pytest.approx(2)
