"""Live systems in the database: registration refused for addresses Concord may not call, the
nine reference baselines as in-process live systems, and `live_client` calling each kind."""

import json

import pytest
from django.core.exceptions import ValidationError

from evaluation.lib.credentials import parse_credentials
from evaluation.lib.live.client import HttpLiveSystem, LiveCallError
from evaluation.lib.live.contract import HistoryTurn, LiveRequest
from evaluation.models import System
from evaluation.services.live import (
    live_baselines_ensure,
    live_client,
    live_system_create,
    system_set_live,
)
from evaluation.services.llm_models import model_options
from evaluation.services.submissions import system_create
from tests.support.live_server import first_items, live_server

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url, reason", [
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://10.0.0.8:8000/crs", "private address"),
    ("http://192.168.0.2/", "private address"),
    ("ftp://127.0.0.1/", "http:// or https://"),
])
def test_registering_a_disallowed_address_is_refused_and_stores_nothing(researcher, url, reason):
    with pytest.raises(ValidationError) as caught:
        live_system_create(name="Sneaky", owner=researcher, endpoint=url)
    assert reason in str(caught.value.message_dict["live_endpoint"])
    assert not System.objects.exists()


def test_production_default_allows_nothing(researcher, settings):
    settings.LIVE_ALLOWED_HOSTS = []
    with pytest.raises(ValidationError, match="CONCORD_LIVE_ALLOWED_HOSTS is empty"):
        live_system_create(name="Mine", owner=researcher, endpoint="http://127.0.0.1:9/")


def test_an_http_system_is_called_with_the_key_of_its_chosen_credential(
        researcher, tiny_benchmark, monkeypatch, settings):
    settings.CREDENTIALS = parse_credentials("my-crs=MY_CRS_KEY")
    with live_server(first_items(["r2", "r1"])) as server:
        system = live_system_create(name="My CRS", owner=researcher, endpoint=server.url,
                                    credential="my-crs", timeout_seconds=5,
                                    max_concurrency=2)
        assert system.live_kind == "http" and system.live_credential == "my-crs"
        with pytest.raises(ValidationError, match="credential 'my-crs' is offered but its "
                                                  "value is not set on this machine"):
            live_client(system=system, benchmark=tiny_benchmark)
        monkeypatch.setenv("MY_CRS_KEY", "k-123")
        client = live_client(system=system, benchmark=tiny_benchmark)
        assert isinstance(client, HttpLiveSystem) and client.settings.max_concurrency == 2
        answer = client.turn(LiveRequest("tiny", "sim-1", 1, (), "quiet seafood"))
    assert answer.ranked_item_ids == ("r2", "r1")
    assert server.headers[0]["Authorization"] == "Bearer k-123"
    # The key itself is stored nowhere.
    assert "k-123" not in json.dumps(list(System.objects.values()), default=str)


def test_an_http_answer_with_ids_outside_the_benchmark_is_an_invalid_call(researcher,
                                                                       tiny_benchmark):
    with live_server(first_items(["r1", "not-in-tiny"])) as server:
        system = live_system_create(name="Buggy", owner=researcher, endpoint=server.url)
        with pytest.raises(LiveCallError, match="unknown item id 'not-in-tiny'") as caught:
            live_client(system=system, benchmark=tiny_benchmark).turn(
                LiveRequest("tiny", "sim-1", 1, (), "hi"))
    assert caught.value.kind == "invalid"


def test_bad_settings_and_credentials_the_operator_does_not_offer_are_refused(researcher,
                                                                            settings):
    settings.CREDENTIALS = parse_credentials("crs-demo=CRS_DEMO_KEY,theirs=THEIR_KEY@someone")
    system = system_create(name="X", owner=researcher)
    with pytest.raises(ValidationError, match=r"credential 'SECRET_KEY' is not one the operator "
                                              r"offers \(CONCORD_CREDENTIALS\): choose one of "
                                              r"crs-demo, or none"):
        system_set_live(system=system, endpoint="http://127.0.0.1:40009/", credential="SECRET_KEY")
    with pytest.raises(ValidationError, match="'theirs' is offered only to other users"):
        system_set_live(system=system, endpoint="http://127.0.0.1:40009/", credential="theirs")
    with pytest.raises(ValidationError, match="an in-process baseline takes no credential"):
        system_set_live(system=system, adapter="tfidf", credential="crs-demo")
    with pytest.raises(ValidationError, match="either an endpoint URL or an in-process"):
        system_set_live(system=system)
    with pytest.raises(ValidationError, match="unknown in-process system 'nope'"):
        system_set_live(system=system, adapter="nope")
    system.refresh_from_db()
    assert not system.is_live


def test_the_nine_baselines_become_in_process_live_systems(tiny_benchmark):
    systems = live_baselines_ensure()
    assert [s.live_adapter for s in systems] == [
        "popularity", "tfidf", "aspect", "dense", "spatial", "hybrid-rrf", "itinerary",
        "llm_zero_shot", "rag_citation"]
    assert all(s.is_baseline and s.live_kind == "inprocess" for s in systems)
    assert live_baselines_ensure() == systems  # idempotent: the same rows
    by_key = {s.live_adapter: s for s in systems}
    request = LiveRequest("tiny", "sim-1", 3,
                          (HistoryTurn("user", "I want quiet seafood."),
                           HistoryTurn("system", "Try Noodle Nook.", ("r2",)),
                           HistoryTurn("user", "No, not noodles.", (), "reject_and_refine")),
                          "Seafood by the water, please", ("r1", "r2"))
    answer = live_client(system=by_key["tfidf"], benchmark=tiny_benchmark).turn(request)
    assert answer.ranked_item_ids == ("r1", "r2") and "Harbor Grill" in answer.response
    assert answer.citations and answer.citations[0]["review_id"] in {"v1", "v2"}
    # Without candidate ids a ranker ranks the whole catalogue.
    whole = live_client(system=by_key["popularity"], benchmark=tiny_benchmark).turn(
        LiveRequest("tiny", "sim-2", 1, (), "anything"))
    assert set(whole.ranked_item_ids) == {"r1", "r2", "h1", "a1"}


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_the_llm_baselines_answer_live_through_the_gateway(tiny_benchmark, llm_server,
                                                          llm_settings):
    def answer(request):
        ids = [line.split(";")[0][len("- id: "):] for line in request.prompt_text.splitlines()
               if line.startswith("- id: ")]
        return json.dumps({"ranked_item_ids": ids[::-1], "response": "Try the last one."})

    server = llm_server(answer)
    system = {s.live_adapter: s for s in live_baselines_ensure()}["llm_zero_shot"]
    model = model_options(profile=server.profile, model="openai/scripted-llm")
    client = live_client(system=system, benchmark=tiny_benchmark, model=model)
    reply = client.turn(LiveRequest("tiny", "sim-1", 1, (), "quiet seafood", ("r1", "r2")))
    assert reply.ranked_item_ids == ("r2", "r1") and reply.response == "Try the last one."
    # Without a pool the LLM sees TF-IDF's shortlist of the catalogue (here all four items).
    reply = client.turn(LiveRequest("tiny", "sim-2", 1, (), "seafood"))
    assert set(reply.ranked_item_ids) == {"r1", "r2", "h1", "a1"}
    assert server.request_count == 2


def test_the_registration_form_takes_an_endpoint_and_refuses_a_bad_one_storing_nothing(
        researcher, client, settings):
    """Issue 34: the endpoint is set where the system is registered, not only on the
    Simulate users form; a refused endpoint or key stores no system."""
    settings.CREDENTIALS = parse_credentials("my-crs=MY_CRS_KEY")
    client.force_login(researcher)
    page = client.get("/systems/new/").content.decode()
    assert 'name="endpoint"' in page and '<option value="my-crs">' in page
    refused = client.post("/systems/new/", {"name": "Sneaky", "team": "Lab",
                                            "endpoint": "http://169.254.169.254/x"})
    assert refused.status_code == 400 and "link-local" in refused.content.decode()
    keyless = client.post("/systems/new/", {"name": "Keyed", "credential": "my-crs"})
    assert keyless.status_code == 400 and "give the endpoint too" in keyless.content.decode()
    assert not System.objects.exists()
    created = client.post("/systems/new/", {"name": "Live CRS", "team": "Lab A",
                                            "endpoint": "127.0.0.1:40000/concord-live",
                                            "credential": "my-crs"})
    assert created.status_code == 302, created.content.decode()[-3000:]
    system = System.objects.get()
    assert (system.name, system.team, system.owner) == ("Live CRS", "Lab A", researcher)
    assert (system.live_kind, system.live_endpoint, system.live_credential) == (
        "http", "http://127.0.0.1:40000/concord-live", "my-crs")
    plain = client.post("/systems/new/", {"name": "Offline CRS"})
    assert plain.status_code == 302 and System.objects.get(name="Offline CRS").live_kind == ""
