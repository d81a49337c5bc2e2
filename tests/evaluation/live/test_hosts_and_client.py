"""The live-system contract's pure parts: the allowed-hosts check, answer validation and the
HTTP client against a real local server (timeouts, retries, concurrency, faults)."""

import socket
import threading
import time

import pytest

from evaluation.lib.live.client import HttpLiveSystem, LiveCallError, LiveSettings
from evaluation.lib.live.contract import (
    HistoryTurn,
    LiveAnswerError,
    LiveRequest,
    validate_answer,
)
from evaluation.lib.live.hosts import EndpointRefused, resolve_allowed
from tests.support.live_server import DROP, Raw, first_items, live_server

DEV = ["localhost", "127.0.0.0/8", "::1"]
PORTS = ((1024, 65535),)  # loopback ports these tests call (tests/evaluation/live/test_ssrf.py)
ITEMS = {"r1", "r2", "h1"}
REVIEWS = {"v1", "v2"}


def fixed(*addresses):
    return lambda host, port: list(addresses)


# --- allowed hosts ----------------------------------------------------------------------------

def test_metadata_address_is_refused_even_when_its_name_is_listed():
    with pytest.raises(EndpointRefused, match=r"169\.254\.169\.254.*link-local"):
        resolve_allowed("http://169.254.169.254/latest/meta-data/", DEV)
    with pytest.raises(EndpointRefused, match="link-local"):
        resolve_allowed("http://metadata.internal/", ["metadata.internal", "public"],
                        resolver=fixed("169.254.169.254"))
    # Only an explicit network entry opens a link-local address.
    assert resolve_allowed("http://169.254.1.1/", ["169.254.0.0/16"]).address == "169.254.1.1"


def test_private_addresses_need_an_entry_and_loopback_is_the_development_default():
    with pytest.raises(EndpointRefused, match="10.0.0.5, a private address"):
        resolve_allowed("http://10.0.0.5:8080/crs", DEV)
    with pytest.raises(EndpointRefused, match="private"):
        resolve_allowed("http://crs.example/", DEV + ["public"], resolver=fixed("192.168.1.9"))
    assert resolve_allowed("http://10.0.0.5:8080/crs", ["10.0.0.0/8"]).port == 8080
    endpoint = resolve_allowed("http://127.0.0.1:9000/a?b=1", DEV, loopback_ports=PORTS)
    assert (endpoint.host, endpoint.port, endpoint.path) == ("127.0.0.1", 9000, "/a?b=1")
    assert resolve_allowed("http://[::1]:9000/", DEV, loopback_ports=PORTS).address == "::1"
    assert resolve_allowed("http://localhost:9000/", DEV, loopback_ports=PORTS).address \
        in {"127.0.0.1", "::1"}


def test_every_resolved_address_must_be_allowed():
    with pytest.raises(EndpointRefused, match="10.1.1.1"):
        resolve_allowed("http://crs.example/", ["public"], resolver=fixed("8.8.8.8", "10.1.1.1"))
    assert resolve_allowed("http://crs.example/", ["public"], resolver=fixed("8.8.8.8")).address \
        == "8.8.8.8"
    # A host name entry allows its name wherever it points, except the never-by-name addresses.
    assert resolve_allowed("https://crs.lab/", ["crs.lab"], resolver=fixed("10.2.3.4")).port == 443


def test_production_default_refuses_everything_and_bad_urls_are_refused():
    with pytest.raises(EndpointRefused, match="CONCORD_LIVE_ALLOWED_HOSTS is empty"):
        resolve_allowed("http://127.0.0.1/", [])
    for url, message in [("ftp://127.0.0.1/", "http:// or https://"),
                         ("http://user:pw@127.0.0.1/", "user name or password"),
                         ("http:///nohost", "no host"), ("http://127.0.0.1:99999/", "valid URL")]:
        with pytest.raises(EndpointRefused, match=message):
            resolve_allowed(url, DEV)


# --- answers ----------------------------------------------------------------------------------

def test_validate_answer_accepts_a_turn_line_and_names_the_first_problem():
    answer = validate_answer(
        {"response": 'Great: "crab cakes" [R1].', "ranked_item_ids": ["r2", "r1"],
         "citations": [{"label": "R1", "review_id": "v1", "quote": "crab cakes"}]},
        item_ids=ITEMS, review_ids=REVIEWS)
    assert answer.ranked_item_ids == ("r2", "r1") and answer.citations[0]["review_id"] == "v1"
    cases = [
        ([], "$: expected a JSON object"),
        ({"ranked_item_ids": []}, "$.response: required string"),
        ({"response": " ", "ranked_item_ids": []}, "$.response: the response is empty"),
        ({"response": "x"}, "$.ranked_item_ids: required list"),
        ({"response": "x", "ranked_item_ids": ["r1", "zz"]},
         "$.ranked_item_ids[1]: unknown item id 'zz'"),
        ({"response": "x", "ranked_item_ids": ["r1", "r1"]}, "ranked twice"),
        ({"response": "x", "ranked_item_ids": [3]}, "expected an item id string"),
        ({"response": "x [R2]", "ranked_item_ids": []}, "label [R2] has no entry"),
        ({"response": "x", "ranked_item_ids": [],
          "citations": [{"label": "R1", "review_id": "v9"}]}, "unknown review id 'v9'"),
    ]
    for data, message in cases:
        with pytest.raises(LiveAnswerError) as caught:
            validate_answer(data, item_ids=ITEMS, review_ids=REVIEWS)
        assert message in str(caught.value)
    with pytest.raises(LiveAnswerError, match="not in the request's candidate_item_ids"):
        validate_answer({"response": "x", "ranked_item_ids": ["h1"]}, item_ids=ITEMS,
                        review_ids=REVIEWS, candidate_item_ids=["r1", "r2"])


def test_request_round_trips_through_json():
    request = LiveRequest("tiny", "sim-1", 2, (HistoryTurn("user", "quiet seafood"),
                                               HistoryTurn("system", "Harbor", ("r1",))),
                          "cheaper?", ("r1", "r2"), top_k=5)
    data = request.as_json()
    assert data["contract"] == "concord-live/1" and data["history"][1]["ranked_item_ids"] == ["r1"]
    assert "ranked_item_ids" not in data["history"][0]
    assert LiveRequest.from_json(data) == request
    assert request.user_text() == "quiet seafood cheaper?"


# --- the HTTP client against a real server ----------------------------------------------------

def request(n=0):
    return LiveRequest("tiny", f"sim-{n}", 1, (), "quiet seafood please")


def client(url, sleeps=None, **settings):
    return HttpLiveSystem(url, allowed_hosts=DEV, item_ids=ITEMS, review_ids=REVIEWS,
                          settings=LiveSettings(**settings), loopback_ports=PORTS,
                          sleep=(sleeps.append if sleeps is not None else time.sleep))


def test_a_good_answer_and_the_request_it_answers():
    with live_server(first_items(["r1", "r2"])) as server:
        answer = HttpLiveSystem(server.url, allowed_hosts=DEV, item_ids=ITEMS,
                                review_ids=REVIEWS, api_key="sekrit",
                                loopback_ports=PORTS).turn(request())
    assert answer.ranked_item_ids == ("r1", "r2")
    assert server.requests[0]["utterance"] == "quiet seafood please"
    assert server.requests[0]["contract"] == "concord-live/1"
    assert server.headers[0]["Authorization"] == "Bearer sekrit"


def test_faults_become_call_errors_of_their_kind():
    script = {"malformed": Raw(200, b"{not json"),
              "unknown": Raw(200, b'{"response": "hi", "ranked_item_ids": ["nope"]}'),
              "teapot": Raw(418, b"no"),
              "slow": Raw(200, b'{"response": "late", "ranked_item_ids": []}', delay=1.0)}
    with live_server(lambda body: script[body["utterance"]]) as server:
        for utterance, kind, message in [
                ("malformed", "not_json", "not JSON"),
                ("unknown", "invalid", "unknown item id 'nope'"),
                ("teapot", "http_status", "HTTP 418"),
                ("slow", "timeout", "timed out after 0.6 s")]:
            sleeps = []
            system = client(server.url, sleeps, timeout_seconds=0.3, max_retries=1,
                            backoff_seconds=0.01)
            with pytest.raises(LiveCallError, match=message) as caught:
                system.turn(LiveRequest("tiny", "d", 1, (), utterance))
            assert caught.value.kind == kind
            # Only timeouts (and 5xx, 429, connection errors) are retried.
            assert caught.value.attempts == (2 if kind == "timeout" else 1)


def test_a_server_that_is_down_is_retried_then_reported_unreachable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    sleeps = []
    with pytest.raises(LiveCallError) as caught:
        client(f"http://127.0.0.1:{port}/", sleeps, max_retries=2, backoff_seconds=1.0).turn(
            request())
    assert caught.value.kind == "unreachable" and caught.value.attempts == 3
    # Backoff doubles with jitter in [0.5, 1] of the nominal wait.
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0


def test_5xx_and_dropped_connections_are_retried_honouring_retry_after():
    replies = iter([Raw(503, b"busy", headers={"Retry-After": "0.05"}), DROP,
                    {"response": "ok", "ranked_item_ids": ["h1"]}])
    with live_server(lambda body: next(replies)) as server:
        sleeps = []
        answer = client(server.url, sleeps, max_retries=3, backoff_seconds=0.001).turn(request())
    assert answer.ranked_item_ids == ("h1",) and len(server.requests) == 3
    assert sleeps[0] >= 0.05


def test_the_concurrency_limit_holds_across_threads():
    with live_server(lambda body: Raw(200, b'{"response": "ok", "ranked_item_ids": []}',
                                      delay=0.1)) as server:
        system = client(server.url, max_concurrency=3)
        threads = [threading.Thread(target=system.turn, args=(request(n),)) for n in range(9)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(server.requests) == 9 and server.max_in_flight == 3


def test_the_call_rechecks_the_allowed_hosts():
    system = HttpLiveSystem("http://crs.example/", allowed_hosts=["crs.example"], item_ids=ITEMS,
                            review_ids=REVIEWS, resolver=fixed("169.254.169.254"))
    with pytest.raises(LiveCallError, match="link-local") as caught:
        system.turn(request())
    assert caught.value.kind == "refused"
