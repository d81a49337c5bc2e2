"""Total deadlines and hostile answers of the live HTTP client (issue 28.3 and 28.4;
docs/operations.md, "Deadlines and hostile answers"), against real servers on 127.0.0.1."""

import socket
import threading
import time

import pytest

from evaluation.lib.deadlines import BoundedPool
from evaluation.lib.live.client import MAX_ANSWER_BYTES, HttpLiveSystem, LiveCallError, LiveSettings
from evaluation.lib.live.contract import LiveAnswer, LiveRequest
from evaluation.lib.live.inprocess import Deadlined
from evaluation.services.live import INPROCESS_POOL, live_baselines_ensure, live_client
from tests.support.live_server import Raw, live_server, trickled

DEV = ["localhost", "127.0.0.0/8", "::1"]
PORTS = ((1024, 65535),)  # the test servers' ports (loopback is refused on any other)
ITEMS = {"r1", "r2", "h1"}
REVIEWS = {"v1", "v2"}
MARGIN = 1.0  # seconds a call may run past timeout × attempts on a loaded machine


def client(url, **settings):
    return HttpLiveSystem(url, allowed_hosts=DEV, item_ids=ITEMS, review_ids=REVIEWS,
                          settings=LiveSettings(**settings), loopback_ports=PORTS)


def test_a_server_trickling_one_header_byte_a_second_times_out_within_the_budget():
    with live_server(lambda body: trickled(1.0)) as server:
        system = client(server.url, timeout_seconds=2.0, max_retries=1, backoff_seconds=0.01)
        started = time.monotonic()
        with pytest.raises(LiveCallError) as caught:
            system.turn(LiveRequest("tiny", "d", 1, (), "hello"))
        took = time.monotonic() - started
    # one byte a second never trips a 2 s per-read timeout: only the total deadline ends it
    assert caught.value.kind == "timeout" and caught.value.attempts == 2
    assert caught.value.message == "timed out after 4 s (2 attempts of at most 2 s each)"
    assert 3.9 <= took <= 4.0 + MARGIN
    assert len(server.requests) == 2


class _TricklingTls:
    """A loopback TCP server that starts a TLS handshake record and then sends one byte of it
    every 0.2 s: the handshake never ends, and no single read ever waits long."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"\x16\x03\x03\x40\x00")  # a 16 KiB handshake record follows…
                while not self.stop.wait(0.2):
                    try:
                        conn.sendall(b"\x00")
                    except OSError:
                        break

    def close(self):
        self.stop.set()
        self.sock.close()


def test_a_tls_handshake_that_never_ends_is_cut_at_the_deadline():
    """A handshake reads inside the ssl module, where the per-read re-set cannot reach; the ssl
    module bounds the whole handshake by the socket's timeout (CPython 3.5 and later), which is
    the budget left when the connection was made, so the call still ends at its deadline."""
    server = _TricklingTls()
    try:
        started = time.monotonic()
        with pytest.raises(LiveCallError) as caught:
            client(f"https://127.0.0.1:{server.port}/crs", timeout_seconds=1.5,
                   max_retries=0).turn(LiveRequest("tiny", "d", 1, (), "hello"))
        took = time.monotonic() - started
    finally:
        server.close()
    assert caught.value.kind == "timeout", caught.value
    assert caught.value.message == "timed out after 1.5 s"
    assert took <= 1.5 + MARGIN


def test_a_trickled_body_counts_against_the_same_budget():
    body = b'{"response": "slow", "ranked_item_ids": ["r1"]}' + b" " * 100
    with live_server(lambda _: Raw(200, body, trickle=0.05)) as server:
        started = time.monotonic()
        with pytest.raises(LiveCallError, match="timed out after 1.5 s") as caught:
            client(server.url, timeout_seconds=1.5, max_retries=0).turn(
                LiveRequest("tiny", "d", 1, (), "hello"))
    assert caught.value.kind == "timeout" and time.monotonic() - started <= 1.5 + MARGIN


def test_a_fast_trickle_that_fits_the_budget_is_answered():
    body = b'{"response": "made it", "ranked_item_ids": ["r1"]}'
    with live_server(lambda _: Raw(200, body, trickle=0.002)) as server:
        answer = client(server.url, timeout_seconds=5.0, max_retries=0).turn(
            LiveRequest("tiny", "d", 1, (), "hello"))
    assert answer.response == "made it"


def _nested(depth: int) -> bytes:
    return (b'{"response": "x", "ranked_item_ids": [], "extra": ' + b"[" * depth
            + b"]" * depth + b"}")


HOSTILE = {
    "deep list": (b"[" * 100_000 + b"]" * 100_000, "too_deep", "nested too deeply"),
    "deep field": (_nested(100_000), "too_deep", "nested too deeply"),
    "1e400": (b'{"response": "x", "ranked_item_ids": [], "score": 1e400}', "bad_number",
              "1e400 is out of range"),
    "huge integer": (b'{"response": "x", "ranked_item_ids": [], "n": ' + b"9" * 10_000 + b"}",
                     "bad_number", "an integer of 10,000 digits"),
    "NaN": (b'{"response": "x", "ranked_item_ids": [], "score": NaN}', "bad_number",
            "NaN is not a JSON number"),
    "Infinity": (b'{"response": "x", "ranked_item_ids": [], "score": -Infinity}', "bad_number",
                 "-Infinity is not a JSON number"),
    "response number": (b'{"response": 5, "ranked_item_ids": []}', "wrong_type",
                        "$.response: expected a string, got int"),
    "ranked string": (b'{"response": "x", "ranked_item_ids": "r1"}', "wrong_type",
                      "$.ranked_item_ids: expected a list of item ids, got str"),
    "ranked number": (b'{"response": "x", "ranked_item_ids": [1]}', "wrong_type",
                      "$.ranked_item_ids[0]: expected an item id string, got int"),
    "review id list": (b'{"response": "x [R1]", "ranked_item_ids": [], "citations": '
                       b'[{"label": "R1", "review_id": ["v1"]}]}', "wrong_type",
                       "$.citations[0].review_id: expected a review id string, got list"),
    "a list": (b'[1, 2]', "wrong_type", "$: expected a JSON object, got list"),
    "oversized": (b'{"response": "' + b"x" * (MAX_ANSWER_BYTES + 10) + b'"}', "too_large",
                  "declares"),
    "not JSON": (b"<html>oops</html>", "not_json", "not JSON"),
    "not UTF-8": (b'{"response": "\xff"}', "not_json", "not JSON"),
    "unknown id": (b'{"response": "x", "ranked_item_ids": ["ghost"]}', "invalid",
                   "unknown item id 'ghost'"),
}


def test_every_hostile_answer_fails_its_call_with_its_precise_kind():
    replies = {name: Raw(200, body) for name, (body, _, _) in HOSTILE.items()}
    replies["status"] = Raw(404, b"nothing here")
    with live_server(lambda body: replies[body["utterance"]]) as server:
        system = client(server.url, timeout_seconds=10.0, max_retries=2)
        for name, (_, kind, message) in [*HOSTILE.items(),
                                         ("status", ("", "http_status", "HTTP 404"))]:
            with pytest.raises(LiveCallError) as caught:
                system.turn(LiveRequest("tiny", "d", 1, (), name))
            assert (name, caught.value.kind) == (name, kind)
            assert message in caught.value.message, (name, caught.value.message)
            assert caught.value.attempts == 1  # the same request would get the same answer
    assert len(server.requests) == len(replies)


def test_an_oversized_body_of_undeclared_length_is_cut_at_the_limit():
    huge = b'{"response": "' + b"x" * (MAX_ANSWER_BYTES + 10) + b'", "ranked_item_ids": []}'
    with live_server(lambda body: Raw(200, huge, undeclared=True)) as server:
        with pytest.raises(LiveCallError, match="over 2,097,152 bytes") as caught:
            client(server.url).turn(LiveRequest("tiny", "d", 1, (), "x"))
    assert caught.value.kind == "too_large"


class _Loading:
    """An in-process system whose model is still loading: it answers once RELEASE is set."""

    def __init__(self, release: threading.Event):
        self.release, self.started = release, 0

    def turn(self, request):
        self.started += 1
        self.release.wait(30)
        return LiveAnswer("loaded", ("r1",))


def test_an_in_process_system_that_stalls_frees_its_caller_at_the_deadline():
    release = threading.Event()
    stalled = _Loading(release)
    pool = BoundedPool(2, "test-call")
    system = Deadlined(stalled, timeout_seconds=0.5, pool=pool)
    try:
        started = time.monotonic()
        with pytest.raises(LiveCallError, match=r"^timeout: timed out after 0.5 s$"):
            system.turn(LiveRequest("tiny", "d", 1, (), "hello"))
        assert time.monotonic() - started <= 0.5 + MARGIN
        threads = threading.active_count()
        with pytest.raises(LiveCallError, match="timed out after 0.5 s"):
            system.turn(LiveRequest("tiny", "d", 1, (), "again"))
        # both pool threads are stuck now: a third call waits in the queue, times out there
        # and is dropped, and no thread is added for it
        with pytest.raises(LiveCallError, match="all 2 test-call threads were busy"):
            system.turn(LiveRequest("tiny", "d", 1, (), "third"))
        assert pool.busy == 2 and stalled.started == 2
        assert threading.active_count() <= threads + 1
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while pool.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.busy == 0 and stalled.started == 2  # the dropped call never ran
    answer = Deadlined(stalled, timeout_seconds=5, pool=pool).turn(
        LiveRequest("tiny", "d", 1, (), "now"))
    assert answer.response == "loaded"


def test_an_in_process_system_raising_passes_its_error_through_the_pool():
    class Broken:
        def turn(self, request):
            raise TimeoutError("its own socket timed out")  # not the deadline's

    with pytest.raises(TimeoutError, match="its own socket"):
        Deadlined(Broken(), timeout_seconds=5, pool=BoundedPool(1, "t")).turn(
            LiveRequest("tiny", "d", 1, (), "x"))


@pytest.mark.django_db
def test_live_client_gives_in_process_baselines_their_deadline(tiny_benchmark):
    systems = {s.live_adapter: s for s in live_baselines_ensure()}
    client_ = live_client(system=systems["tfidf"], benchmark=tiny_benchmark)
    assert isinstance(client_, Deadlined) and client_.pool is INPROCESS_POOL
    assert client_.timeout_seconds == systems["tfidf"].live_timeout_seconds == 120.0
    answer = client_.turn(LiveRequest("tiny", "d", 1, (), "quiet seafood"))
    assert answer.ranked_item_ids and answer.response
