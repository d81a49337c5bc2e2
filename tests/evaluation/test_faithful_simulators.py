"""PEPPER and iEvaLM as their released code runs them (issue 30 items 1 and 2), end to end:
a real scripted LLM server (tests/support/llm_server.py), a real loopback live system, the
simulation's run, its page, its board, its export, the command, the API and the web form."""

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.lib.metrics.ievalm import IEVALM_AXIS, PEPPER_STYLE_AXIS
from evaluation.lib.metrics.preference import PCIR_VARIANTS
from evaluation.lib.simulators.simulators import simulation_design
from evaluation.models import Job, MetricSummary, SimulatedUserProfile, Simulation
from evaluation.services.benchmarks import benchmark_import
from evaluation.services.live import live_system_create
from evaluation.services.llm_models import model_options
from evaluation.services.results import summaries_recompute
from evaluation.services.simulations import simulation_create
from tests.evaluation.simulation_fixtures import (
    by_dialogue,
    release_hidden,
    run_all,
    simulation_bundle,
    stored_dialogue,
)
from tests.support.bundles import write_tiny
from tests.support.live_server import live_server

pytestmark = pytest.mark.django_db(transaction=True)
FILLERS = [f"f{i}" for i in range(60)]


@pytest.fixture
def big_benchmark(tmp_path, settings):
    """The simulation bundle (users d1 {r1, r2}, d2 {h1}, d3 {r1}) with 60 more restaurants,
    so that a target can sit at rank 20 of a 50-item list."""
    settings.MEDIA_ROOT = tmp_path / "media"
    data = simulation_bundle()
    data["items"] += [{"id": f, "name": f"Filler Place {f}", "type": "restaurant",
                       "city": "Philadelphia", "categories": ["cafe"], "stars": 3.0}
                      for f in FILLERS]
    d1 = next(d for d in data["dialogues"] if d["id"] == "d1")  # a longer dataset context
    greeting = [dict(d1["turns"][0], text="Hello there.", action="greet_and_seek"),
                dict(d1["turns"][1], text="Hi! What are you after?", gold_item_ids=[],
                     referenced_item_ids=[], citations=[], alternative_item_ids=[],
                     action="ask_preference")]
    d1["turns"] = [dict(t, index=i) for i, t in enumerate(greeting + d1["turns"])]
    return release_hidden(benchmark_import(path=write_tiny(tmp_path / "big", data)))


def model(llm):
    return model_options(profile=llm.profile, model="openai/scripted-user")


def ievalm_user(request):
    prompt, persona = request.prompt_text, request.messages[0]["content"]
    if "<rating>" in prompt:  # persuasiveness: d1 2, d2 0, d3 1 (told apart by their targets)
        score = 2 if "Noodle Nook" in persona else 0 if "Old City Inn" in persona else 1
        return f"Judged by the explanation. <rating>{score}</rating>"
    return json.dumps({"utterance": "Not that, something quieter."})


def test_ievalm_on_the_issues_hand_dialogue(big_benchmark, researcher, llm_server,
                                            llm_settings, client):
    llm = llm_server(ievalm_user)
    rank20 = FILLERS[:19] + ["r1"] + FILLERS[19:49]
    rank8 = FILLERS[:7] + ["r1"] + FILLERS[7:49]
    lists = {0: rank20, 1: FILLERS[:50], 2: rank8}  # target at rank 20, then absent, then 8

    def script(source, body):
        turn = sum(1 for t in body["history"] if t["role"] == "system" and
                   t.get("ranked_item_ids"))
        ranked = lists[turn] if source in ("d1", "d3") else FILLERS[:50]
        return {"response": "How about these?", "ranked_item_ids": ranked}

    answers = by_dialogue(script)
    with live_server(answers) as crs:
        system = live_system_create(name="CRS", owner=researcher, endpoint=crs.url)
        simulation = run_all(answers.follow(simulation_create(
            benchmark=big_benchmark, system=system, simulator="ievalm", users=3, turns=3,
            model=model(llm), user=researcher, enqueue=False)))
        requests = list(crs.requests)
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    d1 = stored_dialogue(simulation, "d1")
    # Accepted at the first list (r1 is in its top 50) and stopped there.
    assert [t["action"] for t in d1.turns] == ["context", "context", "context", "recommend",
                                               "accept"]
    # The dataset context opens the dialogue (d1's turns before its recommendation, as iEvaLM
    # continues them): its earlier turns as history, its last user turn as the message.
    first = next(r for r in requests if r["dialogue_id"] == d1.user_id)
    assert first["utterance"] == "I want quiet seafood."
    assert [(t["role"], t["text"]) for t in first["history"]] == [
        ("user", "Hello there."), ("system", "Hi! What are you after?")]
    assert sum(1 for r in requests if r["dialogue_id"] == d1.user_id) == 1
    assert sum(1 for t in stored_dialogue(simulation, "d2").turns
               if t["role"] == "system") == 3
    s = simulation.report["summaries"]
    # pairs (d1, r1) (d1, r2) (d2, h1) (d3, r1): r1 at rank 20 of d1's and d3's final list
    assert [s[f"ievalm_recall@{k}"]["value"] for k in (1, 10, 25, 50)] == \
        pytest.approx([0, 0, 0.5, 0.5])
    assert s["persuasiveness"]["value"] == pytest.approx(1.0)  # (2 + 0 + 1) / 3
    # The PEPPER-style curves stay as an extra, on the dialogues as they stopped.
    assert s["pc@10"]["value"] == 0 and simulation.report["pc@50"][-1] == pytest.approx(0.5)
    axes = dict(MetricSummary.objects.filter(run=simulation.run).values_list("metric", "axis"))
    assert axes["ievalm_recall@10"] == IEVALM_AXIS and axes["pc@10"] == PEPPER_STYLE_AXIS
    # Recomputing the intervals from the stored units (recompute_intervals) gives them again:
    # pairs clustered by user, persuasiveness on its 0–2 range.
    fields = ("metric", "value", "ci_low", "ci_high", "n", "ci_method")
    before = list(MetricSummary.objects.filter(run=simulation.run).order_by("metric")
                  .values_list(*fields))
    summaries_recompute(run=simulation.run)
    after = list(MetricSummary.objects.filter(run=simulation.run).order_by("metric")
                 .values_list(*fields))
    assert after == before
    # The run page names both; the board leads with iEvaLM's recall.
    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[simulation.run_id])).content.decode()
    assert "iEvaLM&#x27;s metrics" in page or "iEvaLM's metrics" in page
    assert "PEPPER-style coverage over turns (an extra" in page
    assert "averaged over (dialogue, gold item) pairs" in page
    board = client.get(reverse("leaderboard:board", args=[big_benchmark.slug,
                                                          "simulated-ievalm"]))
    assert board.status_code == 200
    text = board.content.decode()
    assert "ievalm_recall@25" in text and "persuasiveness" in text
    assert board.context["lb"].sort == "simulation.ievalm:ievalm_recall@10"


def pepper_llm(request):
    prompt = request.prompt_text
    if "summarise a person's tastes" in prompt:
        return json.dumps({"likes": ["seafood"], "dislikes": ["noise"],
                           "narrative": "I love seafood by the water."})
    if "Nothing has been recommended yet" in prompt:
        return json.dumps({"utterance": "Any seafood place?"})
    ids = [line.split("]")[0][3:] for line in prompt.splitlines() if line.startswith("- [")]
    return json.dumps({"reflected_preferences": [{"item_id": i, "opinion": "like",
                                                  "reason": "seafood"} for i in ids],
                       "utterance": "Something quieter this time."})


def test_pepper_shows_four_items_discloses_gradually_and_prepares_preferences_once(
        big_benchmark, researcher, llm_server, llm_settings, client, tmp_path):
    llm = llm_server(pepper_llm)
    six = ["r3", "r1", "r2", "h1", "a1", "f0"]
    with live_server(lambda body: {"response": "Try these.", "ranked_item_ids": six}) as crs:
        system = live_system_create(name="CRS", owner=researcher, endpoint=crs.url)
        first = run_all(simulation_create(
            benchmark=big_benchmark, system=system, simulator="pepper", users=3, turns=2,
            model=model(llm), enqueue=False))
    assert first.job.status == Job.Status.SUCCEEDED, first.job.error
    assert first.config["shown_k"] == 4 and first.config["version"] == "2.1"
    assert "top 4 shown" in simulation_design(first.config).label
    prompts = [r.prompt_text for r in llm.requests]
    # Preparation: once per user, before the dialogue, stored (d1 and d3 have the same history:
    # one prompt, which the gateway's cache answers the second time).
    assert sum("summarise a person's tastes" in p for p in prompts) == 2
    assert SimulatedUserProfile.objects.filter(benchmark=big_benchmark).count() == 3
    # The item interface: 4 of the 6 items listed, never the 5th and 6th.
    reflections = [p for p in prompts if "The items shown to you now" in p]
    assert reflections and all(
        sum(line.startswith("- [") for line in p.splitlines()) == 4 for p in reflections)
    assert not any("[a1]" in p or "[f0]" in p for p in reflections)
    # Gradual disclosure in every utterance prompt.
    utterances = [r for r in llm.requests if "summarise" not in r.prompt_text]
    assert all("ONE point you have not made before" in r.messages[0]["content"]
               for r in utterances)
    d1 = stored_dialogue(first, "d1")
    assert d1.hidden["preferences"]["narrative"] == "I love seafood by the water."

    # Another system, same design: the stored profiles are reused, not derived again.
    profile = SimulatedUserProfile.objects.get(source_dialogue_id="d1")
    profile.profile = {**profile.profile, "narrative": "MARKER: prepared once."}
    profile.save()
    asked = llm.request_count
    with live_server(lambda body: {"response": "Others.", "ranked_item_ids": ["a1"]}) as other:
        second_system = live_system_create(name="Other", owner=researcher, endpoint=other.url)
        second = run_all(simulation_create(
            benchmark=big_benchmark, system=second_system, simulator="pepper", users=3,
            turns=2, model=model(llm), enqueue=False))
    assert second.job.status == Job.Status.SUCCEEDED, second.job.error
    new = [r.prompt_text for r in llm.requests[asked:]]
    assert not any("summarise a person's tastes" in p for p in new)
    assert any("MARKER: prepared once." in p for p in new)
    assert stored_dialogue(second, "d1").hidden["preferences"]["narrative"] == \
        "MARKER: prepared once."
    # Inspectable on the run page (the owner) and exported.
    client.force_login(researcher)
    page = client.get(reverse("run_detail", args=[second.run_id])).content.decode()
    assert "prepared once for this user before any dialogue" in page
    assert "MARKER: prepared once." in page
    assert PCIR_VARIANTS["eq3"] in page
    call_command("export_simulation", second.run_id, str(tmp_path / "out"),
                 stdout=io.StringIO())
    lines = [json.loads(line) for line in
             (tmp_path / "out" / "dialogues.jsonl").read_text().splitlines()]
    assert {line["preferences"]["narrative"] for line in lines} >= {"MARKER: prepared once."}


def test_a_preparation_that_fails_fails_its_dialogue_before_any_turn(
        big_benchmark, researcher, llm_server, llm_settings):
    llm = llm_server(lambda request: "no JSON here")
    with live_server(lambda body: {"response": "x", "ranked_item_ids": ["r1"]}) as crs:
        system = live_system_create(name="CRS", owner=researcher, endpoint=crs.url)
        simulation = run_all(simulation_create(
            benchmark=big_benchmark, system=system, simulator="pepper", users=2, turns=2,
            model=model(llm), failure_threshold=1.0, enqueue=False))
        assert not crs.requests
    failed = list(simulation.dialogues.all())
    assert len(failed) == 2 and all(d.status == "failed" and d.turns == [] for d in failed)
    assert all("preparing the user's general preferences" in d.error for d in failed)
    assert not SimulatedUserProfile.objects.exists()


def test_options_from_the_api_the_command_and_the_form(big_benchmark, researcher, client):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    with live_server(lambda body: {"response": "r", "ranked_item_ids": ["r3", "r1"]}) as crs:
        system = live_system_create(name="Mine", owner=researcher, endpoint=crs.url)
        bad = api.post("/api/simulations/", {
            "system": system.slug, "benchmark": big_benchmark.slug, "simulator": "template",
            "users": 2, "turns": 2, "shown_k": 0}, format="json")
        assert bad.status_code == 400 and "shown_k" in bad.json()
        bad = api.post("/api/simulations/", {
            "system": system.slug, "benchmark": big_benchmark.slug, "simulator": "template",
            "users": 2, "turns": 2, "pcir": "mean"}, format="json")
        assert bad.status_code == 400 and "pcir" in bad.json()
        assert not Simulation.objects.exists()
        answer = api.post("/api/simulations/", {
            "system": system.slug, "benchmark": big_benchmark.slug, "simulator": "template",
            "users": 3, "turns": 3, "shown_k": 2, "pcir": "tables"}, format="json")
        assert answer.status_code == 201, answer.content
        detail = answer.json()
        assert detail["config"]["shown_k"] == 2 and detail["config"]["pcir"] == "tables"
        simulation = Simulation.objects.get(pk=detail["id"])
        label = simulation_design(simulation.config).label
        assert "top 2 shown" in label and "PCIR_avg tables" in label
        report = Simulation.objects.get(pk=detail["id"]).report
        pc = report["pc@1"]  # the mean curve; PCIR_avg (tables) is linear in it
        assert report["summaries"]["pcir_avg@1"]["value"] == pytest.approx(
            (pc[-1] - pc[0]) / 2)
        assert report["pcir_label"] == PCIR_VARIANTS["tables"]

        out = io.StringIO()
        call_command("simulate", "--benchmark", big_benchmark.slug, "--system", system.slug,
                     "--simulator", "template", "--users", "3", "--turns", "3",
                     "--shown-k", "3", "--json", stdout=out)
        result = json.loads(out.getvalue())
        assert result["simulator"]["shown_k"] == 3 and result["pcir_variant"] == "eq3"
        with pytest.raises(Exception, match="item interface shows 1–50"):
            call_command("simulate", "--benchmark", big_benchmark.slug, "--system",
                         system.slug, "--simulator", "template", "--users", "1", "--turns",
                         "1", "--shown-k", "51", stdout=io.StringIO())

        client.force_login(researcher)
        url = reverse("leaderboard:system_simulate", args=[system.slug])
        form = client.get(url)
        assert form.context["form"]["shown_k"].initial == 4
        posted = client.post(url, {"endpoint": crs.url, "credential": "",
                                   "timeout_seconds": 30, "benchmark": big_benchmark.slug,
                                   "simulator": "template", "users": 2, "turns": 2, "seed": 0,
                                   "shown_k": 5, "pcir": "eq3"})
        assert posted.status_code == 302, posted.content.decode()[:2000]
    newest = Simulation.objects.order_by("-pk").first()
    assert newest.config["shown_k"] == 5 and newest.config["pcir"] == "eq3"
    with pytest.raises(ValidationError, match="accept_at must be 1–50"):
        simulation_create(benchmark=big_benchmark, system=system, simulator="template",
                          users=1, turns=1, accept_at=0, enqueue=False)
