"""The site-wide LLM slots (evaluation/lib/llm/limiter.py): two real processes, each with six
threads, against one scripted server never have more calls in flight together than the limit
when they share Redis (and do without it); a dead process's slot comes free when its lease
ends; the gateway sends a one-at-a-time server one call at a time and waits for a slot no
longer than the call's deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from evaluation.lib.llm.gateway import LLMGateway
from evaluation.lib.llm.limiter import ProcessLimiter, RedisLimiter, SlotTimeout, server_pool
from tests.evaluation.llm.helpers import config_for
from tests.support.llm_server import ScriptedReply

ROOT = Path(__file__).resolve().parents[3]

# Each process: six threads, each taking a slot of the pool `all` (limit 2) around a real HTTP
# call, as the gateway does around each attempt (the gateway's use of the limiter is tested
# in-process below; litellm is left out here because importing it takes a minute on a loaded
# machine).
CLIENT = textwrap.dedent("""
    import json, sys, threading, urllib.request
    from evaluation.lib.llm.limiter import ProcessLimiter, RedisLimiter

    api_base, url, prefix, name = sys.argv[1:5]
    limiter = RedisLimiter(url, prefix=prefix) if url else ProcessLimiter()

    def call(i):
        body = json.dumps({"model": "scripted", "messages": [
            {"role": "user", "content": f"{name} {i}"}]}).encode()
        with limiter.slots([("all", 2)], timeout=60):
            request = urllib.request.Request(api_base + "/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start together
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done", len(threads), flush=True)
""")


def _redis_url() -> str:
    url = settings.LLM_SLOTS_REDIS_URL
    if not url:
        pytest.skip("no Redis server: the embedded mode's slots are per process")
    return url


def _run_two_clients(server, url: str) -> None:
    prefix = f"test-llm-slots-{uuid.uuid4().hex}:"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clients = [subprocess.Popen(
        [sys.executable, "-c", CLIENT, server.api_base, url, prefix, name],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        for name in ("first", "second")]
    try:
        for client in clients:
            assert client.stdout.readline().strip() == "ready"
        for client in clients:
            client.stdin.write("go\n")
            client.stdin.flush()
        for client in clients:
            out, _ = client.communicate(timeout=120)
            assert client.returncode == 0 and out.strip() == "done 6"
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()


def _counting_server(llm_server):
    lock = threading.Lock()
    in_flight = {"now": 0, "max": 0, "senders": set()}

    def script(request):
        with lock:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
            in_flight["senders"].add(request.last_user_text.split()[0])
        time.sleep(0.25)
        with lock:
            in_flight["now"] -= 1
        return ScriptedReply(text="ok")

    return llm_server(script), in_flight


def test_two_processes_sharing_redis_never_exceed_the_site_limit(llm_server):
    server, in_flight = _counting_server(llm_server)

    _run_two_clients(server, _redis_url())

    assert server.request_count == 12 and in_flight["senders"] == {"first", "second"}
    assert in_flight["max"] == 2  # reached, never exceeded


def test_without_the_shared_slots_two_processes_send_twice_the_limit(llm_server):
    # The control: the same two processes, each with its own slots, do exceed it.
    server, in_flight = _counting_server(llm_server)

    _run_two_clients(server, "")

    assert in_flight["max"] == 4


HOLDER = textwrap.dedent("""
    import sys, time
    from evaluation.lib.llm.limiter import RedisLimiter

    limiter = RedisLimiter(sys.argv[1], prefix=sys.argv[2], lease_margin=0.5)
    with limiter.slots([("all", 1)], timeout=0.5):
        print("holding", flush=True)
        time.sleep(60)
""")


def test_a_dead_process_frees_its_slot_when_its_lease_ends():
    url = _redis_url()
    prefix = f"test-llm-slots-{uuid.uuid4().hex}:"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url, prefix], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "holding"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        limiter = RedisLimiter(url, prefix=prefix)
        assert limiter.held("all") == 1  # the dead process's lease still runs (1.5 s)
        with pytest.raises(SlotTimeout, match="site-wide"):
            with limiter.slots([("all", 1)], timeout=0.2):
                pass
        started = time.monotonic()
        with limiter.slots([("all", 1)], timeout=5):
            waited = time.monotonic() - started
            assert limiter.held("all") == 1
        assert waited < 2.5
        assert limiter.held("all") == 0  # given back
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_one_at_a_time_server_gets_one_call_at_a_time(llm_server):
    server, in_flight = _counting_server(llm_server)
    gateway = LLMGateway(max_concurrency=4, limiter=ProcessLimiter())
    batch = [[{"role": "user", "content": f"q {i}"}] for i in range(4)]

    gateway.complete_many(config_for(server, backend="concord-local"), batch)
    assert in_flight["max"] == 1
    in_flight["max"] = 0
    gateway.complete_many(config_for(server), [[{"role": "user", "content": f"r {i}"}]
                                               for i in range(4)])
    assert in_flight["max"] == 4
    assert server_pool(server.api_base) == f"server:{server.api_base}"


def test_waiting_for_a_slot_is_bounded_by_the_call_deadline(llm_server, sleeps):
    limiter = ProcessLimiter()
    server = llm_server(["never sent"])
    gateway = LLMGateway(max_concurrency=1, limiter=limiter, max_retries=0, sleep=sleeps)
    with limiter.slots([("all", 1)], timeout=1):  # another caller holds the only slot
        started = time.monotonic()
        with pytest.raises(Exception, match="no free LLM slot"):
            gateway.complete(config_for(server, timeout=0.3), [{"role": "user", "content": "x"}])
    assert time.monotonic() - started < 2 and server.request_count == 0


def test_calls_to_a_one_at_a_time_server_queue_past_their_attempt_timeout(llm_server, sleeps):
    # Four calls of 0.25 s each with a 0.5 s timeout: the last waits 0.75 s or more for the
    # server in Concord, within its total deadline (0.5 s × 5 attempts), and is sent once.
    server, in_flight = _counting_server(llm_server)
    gateway = LLMGateway(max_concurrency=4, limiter=ProcessLimiter(), sleep=sleeps)
    batch = [[{"role": "user", "content": f"q {i}"}] for i in range(4)]

    results = gateway.complete_many(config_for(server, backend="concord-local", timeout=0.5),
                                    batch)

    assert [r.text for r in results] == ["ok"] * 4
    assert server.request_count == 4 and in_flight["max"] == 1 and sleeps.delays == []
