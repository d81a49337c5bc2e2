"""Security issue 28.1: no user input ever names an environment variable (docs/operations.md,
"Credentials and model profiles").

Real loopback HTTP servers stand for a researcher's live system (tests/support/live_server.py)
and for an LLM (tests/support/llm_server.py); both record every header and body they receive.
With canary variables in the environment (and the process's own, e.g. DATABASE_URL), no value
of `os.environ` reaches them through the API, the web forms or the command line, except the one
operator credential a system's owner chose. Naming a variable is refused with a specific error
and stores nothing; a stored variable name from before (a legacy row) fails clearly and sends
nothing, on the system page, when a simulation starts, while it runs, and in the arena.
"""

import io
import json
import random
import secrets
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from evaluation.lib.credentials import parse_credentials
from evaluation.models import BattleTurn, Job, Run, Simulation, Submission, System
from evaluation.services.arena import arena_open, battle_reply_run, battle_say, battle_start
from evaluation.services.live import live_system_create
from evaluation.services.runs import run_process
from evaluation.services.simulations import simulation_create
from evaluation.services.submissions import system_create
from tests.conftest import PASSWORD
from tests.evaluation import llm_fixtures, simulation_fixtures
from tests.evaluation.llm_fixtures import LOGS, offer_profile
from tests.evaluation.simulation_fixtures import run_all
from tests.evaluation.test_llm_simulators import pepper_llm
from tests.support.live_server import first_items, live_server

pytestmark = pytest.mark.django_db(transaction=True)
llm_server = llm_fixtures.llm_server
llm_settings = llm_fixtures.llm_settings
log_submission = llm_fixtures.log_submission
sim_benchmark = simulation_fixtures.sim_benchmark
SIMULATIONS = "/api/simulations/"
PEPPER_ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
                 "<coherence>3</coherence>\n<personalization>5</personalization>")
TEMPLATE_ANSWER = {"response": "Harbor Grill.", "ranked_item_ids": ["r1"]}


@pytest.fixture
def canaries(monkeypatch, settings):
    """Secrets in the environment: canaries, the provider variables litellm would read by
    itself, a variable called SECRET_KEY, and the two the operator offers as credentials
    (`crs-demo` to anyone, `theirs` only to another user's systems)."""
    values = {name: f"canary-{name.lower()}-{secrets.token_hex(12)}" for name in (
        "CONCORD_CANARY_ONE", "CONCORD_CANARY_TWO", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
        "SECRET_KEY", "CRS_DEMO_KEY", "THEIR_KEY")}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    settings.CREDENTIALS = parse_credentials("crs-demo=CRS_DEMO_KEY,theirs=THEIR_KEY@someone")
    return values


def received(server) -> str:
    """Everything SERVER was sent, headers and bodies, as the strings it parsed."""
    texts: list[str] = []

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                texts.append(str(key))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        else:
            texts.append(str(value))

    if hasattr(server, "headers") and isinstance(server.headers, list):  # a live system
        walk(server.headers)
        walk(server.requests)
    else:  # the LLM server's RecordedRequests
        for request in server.requests:
            texts.append(request.path)
            walk(request.headers)
            walk(request.body)
    return "\n".join(texts)


def assert_no_environment_value(*servers, allowed=()) -> None:
    """No value of os.environ of 8 characters or more (but ALLOWED) reached SERVERS; and they
    were called at all, so that the check means something."""
    import os

    for server in servers:
        assert server.requests, "the server was never called: the check would mean nothing"
        text = received(server)
        leaked = sorted(name for name, value in os.environ.items()
                        if len(value) >= 8 and value not in allowed and value in text)
        assert not leaked, f"environment values sent to a loopback endpoint: {leaked}"


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def web_client(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def nothing_stored(system: System) -> bool:
    system.refresh_from_db()
    return not Simulation.objects.exists() and not Job.objects.exists() and not system.is_live


# --- live systems: the API, the web form, the command line -----------------------------------


def test_the_api_sends_no_environment_value_to_a_system_or_the_llm(
        canaries, sim_benchmark, researcher, llm_server, llm_settings):
    llm = llm_server(pepper_llm)
    llm_settings.LLM_API_BASE = llm.api_base  # the operator's `default` profile
    llm_settings.LLM_MODEL = f"openai/leak-check-{uuid.uuid4().hex}"  # no cached answer
    system = system_create(name="Mine", owner=researcher)
    with live_server(lambda body: TEMPLATE_ANSWER) as crs:
        answer = api_client(researcher).post(SIMULATIONS, {
            "system": system.slug, "benchmark": sim_benchmark.slug, "simulator": "pepper",
            "users": 2, "turns": 2, "endpoint": crs.url}, format="json")
    assert answer.status_code == 201, answer.content
    assert Simulation.objects.get().job.status == Job.Status.SUCCEEDED
    assert "Authorization" not in crs.headers[0]
    assert llm.requests[0].headers["Authorization"] == "Bearer no-key-needed"
    assert_no_environment_value(crs, llm)
    simulation = Simulation.objects.get()
    assert simulation.job.params["model"] == {"profile": "default",
                                              "model": llm_settings.LLM_MODEL,
                                              "temperature": 0.0, "max_tokens": None}


def test_the_api_refuses_a_variable_and_stores_nothing(canaries, sim_benchmark, researcher):
    api = api_client(researcher)
    system = system_create(name="Mine", owner=researcher)
    with live_server(lambda body: TEMPLATE_ANSWER) as crs:
        base = {"system": system.slug, "benchmark": sim_benchmark.slug,
                "simulator": "template", "users": 2, "turns": 2, "endpoint": crs.url}
        named = api.post(SIMULATIONS, {**base, "api_key_env": "SECRET_KEY"}, format="json")
        assert named.status_code == 400
        assert named.json()["api_key_env"] == [
            "Concord never reads an environment variable you name: give `credential`, one of "
            "the names the operator offers (CONCORD_CREDENTIALS), or none"]
        unknown = api.post(SIMULATIONS, {**base, "credential": "SECRET_KEY"}, format="json")
        assert unknown.status_code == 400
        assert unknown.json()["detail"] == (
            "credential 'SECRET_KEY' is not one the operator offers (CONCORD_CREDENTIALS): "
            "choose one of crs-demo, or none")
        theirs = api.post(SIMULATIONS, {**base, "credential": "theirs"}, format="json")
        assert theirs.status_code == 400
        assert "'theirs' is offered only to other users' systems" in theirs.json()["detail"]
        alone = api.post(SIMULATIONS, {**base, "endpoint": "", "credential": "crs-demo"},
                         format="json")
        assert alone.status_code == 400 and "give `endpoint` too" in alone.content.decode()
        assert crs.requests == []
    assert nothing_stored(system)


def test_the_api_sends_the_credential_the_owner_chose_and_nothing_else(
        canaries, sim_benchmark, researcher):
    system = system_create(name="Mine", owner=researcher)
    with live_server(lambda body: TEMPLATE_ANSWER) as crs:
        answer = api_client(researcher).post(SIMULATIONS, {
            "system": system.slug, "benchmark": sim_benchmark.slug, "simulator": "template",
            "users": 2, "turns": 2, "endpoint": crs.url, "credential": "crs-demo"},
            format="json")
    assert answer.status_code == 201, answer.content
    system.refresh_from_db()
    assert system.live_credential == "crs-demo"
    assert {h["Authorization"] for h in crs.headers} == {f"Bearer {canaries['CRS_DEMO_KEY']}"}
    assert_no_environment_value(crs, allowed={canaries["CRS_DEMO_KEY"]})
    # The key itself is stored nowhere.
    assert canaries["CRS_DEMO_KEY"] not in json.dumps(
        [list(System.objects.values()), list(Simulation.objects.values()),
         list(Job.objects.values())], default=str)


def test_the_web_form_offers_names_only_and_sends_only_the_chosen_credential(
        canaries, sim_benchmark, researcher):
    client = web_client(researcher)
    system = system_create(name="Mine", owner=researcher)
    url = reverse("leaderboard:system_simulate", args=[system.slug])
    form = client.get(url).content.decode()
    assert '<option value="crs-demo"' in form and '<option value=""' in form
    assert "theirs" not in form and "CRS_DEMO_KEY" not in form and "THEIR_KEY" not in form
    with live_server(lambda body: TEMPLATE_ANSWER) as crs:
        fields = {"endpoint": crs.url, "timeout_seconds": "5", "benchmark": sim_benchmark.slug,
                  "simulator": "template", "users": "2", "turns": "2", "seed": "0"}
        refused = client.post(url, {**fields, "credential": "SECRET_KEY",
                                    "api_key_env": "SECRET_KEY"})
        assert refused.status_code == 400
        assert ("SECRET_KEY is not a credential the operator offers you (CONCORD_CREDENTIALS): "
                "choose one of crs-demo, or none") in refused.content.decode()
        assert crs.requests == [] and nothing_stored(system)
        # A variable posted beside the form's fields is no field: nothing reads it.
        started = client.post(url, {**fields, "credential": "", "api_key_env": "SECRET_KEY"})
        assert started.status_code == 302
        assert "Authorization" not in crs.headers[0]
        assert_no_environment_value(crs)
        chosen = client.post(url, {**fields, "credential": "crs-demo", "seed": "1"})
        assert chosen.status_code == 302
    assert crs.headers[-1]["Authorization"] == f"Bearer {canaries['CRS_DEMO_KEY']}"
    assert_no_environment_value(crs, allowed={canaries["CRS_DEMO_KEY"]})


def test_the_command_line_sends_only_the_chosen_credential(canaries, sim_benchmark,
                                                          researcher):
    system = system_create(name="Mine", owner=researcher)
    options = {"benchmark": sim_benchmark.slug, "system": system.slug, "simulator": "template",
               "users": 2, "turns": 2, "no_progress": True, "stdout": io.StringIO(),
               "stderr": io.StringIO()}
    with live_server(lambda body: TEMPLATE_ANSWER) as crs:
        with pytest.raises(CommandError, match="unrecognized arguments: --api-key-env"):
            call_command("simulate", "--api-key-env=SECRET_KEY", endpoint=crs.url, **options)
        with pytest.raises(CommandError, match=r"credential 'SECRET_KEY' is not one the "
                                               r"operator offers \(CONCORD_CREDENTIALS\)"):
            call_command("simulate", endpoint=crs.url, credential="SECRET_KEY", **options)
        with pytest.raises(CommandError, match="give --endpoint too"):
            call_command("simulate", credential="crs-demo", **options)
        assert crs.requests == [] and nothing_stored(system)
        call_command("simulate", endpoint=crs.url, credential="crs-demo", **options)
    system.refresh_from_db()
    assert system.live_endpoint == crs.url and system.live_credential == "crs-demo"
    assert {h["Authorization"] for h in crs.headers} == {f"Bearer {canaries['CRS_DEMO_KEY']}"}
    assert_no_environment_value(crs, allowed={canaries["CRS_DEMO_KEY"]})


# --- a stored variable name from before (a legacy row) ---------------------------------------

LEGACY_PROBLEM = ("credential 'SECRET_KEY' is not one the operator offers "
                  "(CONCORD_CREDENTIALS): choose one of crs-demo, or none")


def _legacy(system: System, name: str = "SECRET_KEY") -> System:
    """What `live_api_key_env` held before it became `live_credential` (0021_credentials)."""
    System.objects.filter(pk=system.pk).update(live_credential=name)
    system.refresh_from_db()
    return system


def test_a_legacy_variable_name_fails_clearly_everywhere_and_sends_nothing(
        canaries, sim_benchmark, researcher, outsider):
    with live_server(lambda body: TEMPLATE_ANSWER) as crs:
        system = _legacy(live_system_create(name="Old", owner=researcher, endpoint=crs.url))
        # The owner's system page says what is wrong; other people see nothing of it.
        page = web_client(researcher).get(reverse("leaderboard:system_detail",
                                                  args=[system.slug])).content.decode()
        assert 'id="credential-problem"' in page and LEGACY_PROBLEM.replace("'", "&#x27;") in page
        other = web_client(outsider).get(reverse("leaderboard:system_detail",
                                                 args=[system.slug])).content.decode()
        assert "credential-problem" not in other
        # Starting a simulation: the API, the web form and the command line refuse it.
        api = api_client(researcher).post(SIMULATIONS, {
            "system": system.slug, "benchmark": sim_benchmark.slug, "simulator": "template",
            "users": 2, "turns": 2}, format="json")
        assert api.status_code == 400 and api.json()["detail"] == f"system 'old': {LEGACY_PROBLEM}"
        web = web_client(researcher).post(
            reverse("leaderboard:system_simulate", args=[system.slug]),
            {"endpoint": "", "timeout_seconds": "30", "benchmark": sim_benchmark.slug,
             "simulator": "template", "users": "2", "turns": "2", "seed": "0"})
        assert web.status_code == 400
        assert LEGACY_PROBLEM.replace("'", "&#x27;") in web.content.decode()
        with pytest.raises(CommandError, match=r"not one the operator offers "
                                               r"\(CONCORD_CREDENTIALS\)"):
            call_command("simulate", benchmark=sim_benchmark.slug, system=system.slug,
                         simulator="template", users=2, turns=2, no_progress=True,
                         stdout=io.StringIO(), stderr=io.StringIO())
        assert not Simulation.objects.exists() and not Job.objects.exists()
        # A simulation queued before the row went bad fails with the reason when it runs.
        _legacy(system, "")
        queued = simulation_create(benchmark=sim_benchmark, system=system,
                                   simulator="template", users=2, turns=2, enqueue=False)
        _legacy(system, "DATABASE_URL")
        failed = run_all(queued)
        assert failed.job.status == Job.Status.FAILED
        assert failed.job.error == ("system 'old': credential 'DATABASE_URL' is not one the "
                                    "operator offers (CONCORD_CREDENTIALS): choose one of "
                                    "crs-demo, or none")
        # The arena: the turn fails with the reason; the other system answers.
        _legacy(system, "SECRET_KEY")
        with live_server(first_items(["r2"], "Noodle Nook.")) as fine:
            other_system = live_system_create(name="Fine", owner=outsider, endpoint=fine.url)
            arena = arena_open(benchmark=sim_benchmark, systems=[system, other_system])
            battle = battle_start(arena=arena, session_key="s1", rng=random.Random(1))
            index = battle_say(battle=battle, text="Somewhere quiet?")
            for side in ("a", "b"):
                battle_reply_run(battle_id=battle.pk, index=index, side=side)
        turns = {t.side: t for t in BattleTurn.objects.filter(battle=battle, index=index)}
        old_side = "a" if battle.system_a_id == system.pk else "b"
        assert turns[old_side].state == BattleTurn.State.ERROR
        assert LEGACY_PROBLEM in turns[old_side].error
        assert fine.requests
        assert crs.requests == []  # nothing was ever sent to the legacy system


# --- LLM runs: profiles, never an address or a variable --------------------------------------


def test_a_command_line_llm_run_sends_no_environment_value(canaries, llm_server, llm_settings,
                                                          tiny_benchmark, tmp_path):
    llm = llm_server(lambda request: PEPPER_ANSWER)
    path = tmp_path / "chatty.jsonl"
    path.write_text(json.dumps(LOGS[0]) + "\n", encoding="utf-8")
    options = {"benchmark": tiny_benchmark.slug, "evaluator": "pepper_judge",
               "no_progress": True, "stdout": io.StringIO(), "stderr": io.StringIO()}
    with pytest.raises(CommandError, match="unrecognized arguments: --api-key-env"):
        call_command("evaluate", "--api-key-env=SECRET_KEY", submission=str(path), **options)
    with pytest.raises(CommandError, match="unrecognized arguments: --api-base"):
        call_command("evaluate", f"--api-base={llm.api_base}", submission=str(path), **options)
    with pytest.raises(CommandError, match=r"model profile 'SECRET_KEY' is not one the "
                                           r"operator offers \(CONCORD_LLM_PROFILES\)"):
        call_command("evaluate", submission=str(path), profile="SECRET_KEY", **options)
    assert not Submission.objects.exists() and llm.requests == []
    call_command("evaluate", submission=str(path), profile=llm.profile,
                 model=f"openai/leak-check-{uuid.uuid4().hex}", **options)
    run = Run.objects.get()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert run.config["model"]["profile"] == llm.profile
    assert not {"api_base", "api_key_env"} & set(run.config["model"])
    assert {r.headers["Authorization"] for r in llm.requests} == {"Bearer no-key-needed"}
    assert_no_environment_value(llm)


def test_a_web_llm_run_sends_only_its_profiles_credential(canaries, llm_server, llm_settings,
                                                         log_submission, staff):
    llm = llm_server(lambda request: PEPPER_ANSWER)
    model = f"openai/leak-check-{uuid.uuid4().hex}"
    offer_profile(llm_settings, "keyed", llm.api_base, credential="crs-demo", model=model)
    client = web_client(staff)
    start = reverse("leaderboard:submission_evaluate_start", args=[log_submission.uuid])
    form = client.get(reverse("leaderboard:submission_evaluate", args=[log_submission.uuid]))
    assert '<option value="keyed"' in form.content.decode()
    assert llm.api_base not in form.content.decode() and "CRS_DEMO_KEY" not in form.content.decode()
    refused = client.post(start, {"evaluator": "pepper_judge", "profile": "OPENAI_API_KEY"})
    assert refused.status_code == 400 and not Run.objects.exists()
    response = client.post(start, {"evaluator": "pepper_judge", "profile": "keyed",
                                   "api_base": "http://127.0.0.1:9/v1",
                                   "api_key_env": "SECRET_KEY"})
    assert response.status_code == 302
    run = Run.objects.get()
    run_process(job_id=run.job_id)  # a no-op when the eager task ran it already
    run.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert run.config["model"] == {"profile": "keyed", "model": model, "temperature": 0.0,
                                   "max_tokens": None}
    assert {r.headers["Authorization"] for r in llm.requests} == {
        f"Bearer {canaries['CRS_DEMO_KEY']}"}
    assert_no_environment_value(llm, allowed={canaries["CRS_DEMO_KEY"]})
