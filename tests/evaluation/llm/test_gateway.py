"""The LLM gateway over the real litellm code path, against a scripted local server."""

from __future__ import annotations

import itertools
import random
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation.lib.llm.gateway import (
    InMemoryResponseCache,
    LLMCallError,
    LLMConfigurationError,
    LLMGateway,
    ModelConfig,
    UsageMeter,
    cache_key,
)
from tests.evaluation.llm.helpers import SleepRecorder, config_for
from tests.support.llm_server import ScriptedReply, http_error, with_logprobs

HELLO = [{"role": "user", "content": "Say hello to the three tests"}]


def test_complete_returns_the_answer_and_the_servers_token_counts(llm_server, gateway):
    server = llm_server(["hello there friend"])

    result = gateway.complete(config_for(server), HELLO)

    assert result.text == "hello there friend"
    assert (result.prompt_tokens, result.completion_tokens) == (6, 3)
    assert result.cached is False
    assert result.model == "openai/scripted-judge"


def test_request_carries_model_parameters_and_the_api_key(llm_server, gateway):
    server = llm_server(["ok"])
    config = config_for(server, temperature=0.0, max_tokens=50, extra={"seed": 3})

    gateway.complete(config, HELLO)

    request = server.requests[0]
    assert request.model == "scripted-judge"
    assert request.params["temperature"] == 0.0
    assert request.params["max_tokens"] == 50
    assert request.params["seed"] == 3
    assert request.messages == HELLO
    assert request.headers["Authorization"] == "Bearer sk-test-not-a-real-key"


def test_a_repeated_call_is_served_from_the_cache_without_any_http_request(llm_server, gateway):
    server = llm_server(["first answer"])
    config = config_for(server)

    first = gateway.complete(config, HELLO)
    second = gateway.complete(config, HELLO)

    assert server.request_count == 1
    assert second.cached is True
    assert second.text == first.text
    assert (second.prompt_tokens, second.completion_tokens) == (6, 2)  # original counts


def test_cache_key_depends_on_model_messages_and_parameters_only():
    base = ModelConfig("openai/a", api_base="http://h1/v1", api_key="k1")
    same_elsewhere = ModelConfig("openai/a", api_base="http://h2/v1", api_key="k2", timeout=5)
    key = cache_key(base, HELLO)

    assert key == cache_key(base, [dict(HELLO[0])])
    assert key == cache_key(same_elsewhere, HELLO)
    assert key != cache_key(ModelConfig("openai/b"), HELLO)
    assert key != cache_key(ModelConfig("openai/a", temperature=0.7), HELLO)
    assert key != cache_key(ModelConfig("openai/a", extra={"seed": 1}), HELLO)
    assert key != cache_key(base, [{"role": "user", "content": "Say hello"}])
    assert len(key) == 64
    assert base.stable_hash() == same_elsewhere.stable_hash()
    assert base.stable_hash() != ModelConfig("openai/a", logprobs=True).stable_hash()


def test_rate_limit_and_server_errors_are_retried_with_backoff(llm_server, sleeps):
    server = llm_server([http_error(429, retry_after=7), http_error(500), "finally"])
    gateway = LLMGateway(sleep=sleeps, rng=random.Random(1), backoff_base=0.5, jitter=0.0)

    result = gateway.complete(config_for(server), HELLO)

    assert result.text == "finally"
    assert server.request_count == 3
    # 1st retry: Retry-After (7 s) beats the 0.5 s backoff; 2nd retry: 0.5 × 2.
    assert sleeps.delays == [7.0, 1.0]


def test_backoff_grows_exponentially_with_injected_jitter(llm_server, sleeps):
    server = llm_server([http_error(503)] * 4 + ["ok"])
    gateway = LLMGateway(
        sleep=sleeps, rng=random.Random(42), backoff_base=1.0, jitter=0.5, max_retries=4
    )

    gateway.complete(config_for(server), HELLO)

    draws = random.Random(42)  # the same stream of jitter draws
    expected = [2**i * (1 + 0.5 * draws.random()) for i in range(4)]
    assert sleeps.delays == pytest.approx(expected)
    assert all(later > earlier for earlier, later in itertools.pairwise(sleeps.delays))


def test_retries_stop_after_max_retries_with_a_recorded_error(llm_server, sleeps):
    server = llm_server([http_error(500)] * 10)
    gateway = LLMGateway(sleep=sleeps, max_retries=4)

    with pytest.raises(LLMCallError) as error:
        gateway.complete(config_for(server), HELLO)

    assert server.request_count == 5
    assert error.value.status_code == 500 and error.value.attempts == 5
    assert len(sleeps.delays) == 4
    assert gateway.usage.failed_calls == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_other_than_429_are_not_retried(llm_server, gateway, sleeps, status):
    server = llm_server([http_error(status), "never reached"])

    with pytest.raises(LLMCallError) as error:
        gateway.complete(config_for(server), HELLO)

    assert server.request_count == 1
    assert error.value.status_code == status and error.value.retryable is False
    assert sleeps.delays == []


def test_connection_errors_are_retried(llm_server, sleeps):
    server = llm_server(["unused"])
    config = config_for(server)
    server.stop()  # nothing listens on that port any more
    gateway = LLMGateway(sleep=sleeps, max_retries=2)

    with pytest.raises(LLMCallError) as error:
        gateway.complete(config, HELLO)

    assert error.value.retryable is True and error.value.attempts == 3
    assert len(sleeps.delays) == 2


def test_failures_are_not_cached(llm_server, sleeps):
    server = llm_server([http_error(500), "recovered"])
    gateway = LLMGateway(sleep=sleeps, max_retries=0)

    with pytest.raises(LLMCallError):
        gateway.complete(config_for(server), HELLO)
    result = gateway.complete(config_for(server), HELLO)

    assert result.text == "recovered" and result.cached is False
    assert server.request_count == 2


def test_complete_many_keeps_input_order_and_bounds_concurrency(llm_server):
    lock = threading.Lock()
    in_flight = {"now": 0, "max": 0}

    def script(request):
        with lock:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
        time.sleep(0.05)
        with lock:
            in_flight["now"] -= 1
        return "answer to " + request.last_user_text

    server = llm_server(script)
    gateway = LLMGateway(max_concurrency=2)
    batch = [[{"role": "user", "content": f"question {i}"}] for i in range(6)]

    results = gateway.complete_many(config_for(server), batch)

    assert [r.text for r in results] == [f"answer to question {i}" for i in range(6)]
    assert in_flight["max"] == 2
    assert server.request_count == 6


def test_identical_concurrent_requests_cost_one_call(llm_server):
    server = llm_server(lambda request: ScriptedReply(text="same", delay_seconds=0.05))
    gateway = LLMGateway(max_concurrency=4)

    results = gateway.complete_many(config_for(server), [HELLO] * 4)

    assert server.request_count == 1
    assert sorted(r.cached for r in results) == [False, True, True, True]


def test_complete_many_can_return_errors_in_place(llm_server, sleeps):
    def script(request):
        return http_error(400) if "bad" in request.last_user_text else "fine"

    server = llm_server(script)
    gateway = LLMGateway(sleep=sleeps)
    batch = [[{"role": "user", "content": text}] for text in ("good one", "bad one", "good two")]

    outcomes = gateway.complete_many(config_for(server), batch, return_exceptions=True)

    assert [type(o).__name__ for o in outcomes] == ["LLMResult", "LLMCallError", "LLMResult"]
    with pytest.raises(LLMCallError):
        gateway.complete_many(config_for(server), batch)


def test_usage_meter_sums_server_usage_and_counts_cache_hits_apart(llm_server, gateway):
    server = llm_server(["one two", "three four five"])
    meter = UsageMeter()
    first = [{"role": "user", "content": "alpha beta gamma"}]
    second = [{"role": "user", "content": "delta epsilon"}]

    for messages in (first, second, first):  # the third call is a cache hit
        gateway.complete(config_for(server), messages, meter=meter)

    served = server.usage_totals()
    assert meter.prompt_tokens == served["prompt_tokens"] == 5
    assert meter.completion_tokens == served["completion_tokens"] == 5
    assert (meter.calls, meter.cached_calls) == (2, 1)
    assert (meter.cached_prompt_tokens, meter.cached_completion_tokens) == (3, 2)
    assert gateway.usage.total_tokens == 10


def test_cost_of_an_unpriced_model_is_unknown_not_zero(llm_server, gateway):
    server = llm_server(["a b c"])
    meter = UsageMeter()

    result = gateway.complete(config_for(server), HELLO, meter=meter)

    assert result.cost_usd is None
    assert meter.cost_usd is None
    assert meter.summary()["calls_with_unknown_cost"] == 1
    assert meter.summary()["cost_known_part_usd"] == 0.0


def test_cost_of_a_priced_model_comes_from_the_bundled_price_map(llm_server, gateway):
    server = llm_server(["a b c", "d e"])
    meter = UsageMeter()
    priced = config_for(server, model="openai/gpt-4o-mini")  # answered by the local server

    result = gateway.complete(priced, HELLO, meter=meter)

    import litellm  # here: it takes seconds to import, and every test process collects this file

    price = litellm.model_cost["gpt-4o-mini"]
    expected = 6 * price["input_cost_per_token"] + 3 * price["output_cost_per_token"]
    assert result.cost_usd == pytest.approx(expected)
    assert meter.cost_usd == pytest.approx(expected)

    gateway.complete(config_for(server), HELLO, meter=meter)  # an unpriced model joins the run
    assert meter.cost_usd is None
    assert meter.summary()["cost_known_part_usd"] == pytest.approx(expected)


def test_logprobs_are_requested_parsed_and_survive_the_cache(llm_server, gateway):
    tokens = [[("4", -0.1), ("3", -2.4), ("2", -4.0)], [("</rating>", -0.01)], [(".", -0.5)]]
    server = llm_server([with_logprobs(tokens)])
    config = config_for(server, logprobs=True, top_logprobs=3)

    live = gateway.complete(config, HELLO)
    cached = gateway.complete(config, HELLO)

    assert server.requests[0].params["logprobs"] is True
    assert server.requests[0].params["top_logprobs"] == 3
    assert live.text == "4</rating>."
    assert [t.token for t in live.logprobs] == ["4", "</rating>", "."]
    assert live.logprobs[0].logprob == -0.1
    assert live.logprobs[0].top == (("4", -0.1), ("3", -2.4), ("2", -4.0))
    assert cached.cached and cached.logprobs == live.logprobs


def test_logprobs_are_none_when_the_provider_gives_none(llm_server, gateway):
    server = llm_server(["plain"])
    assert gateway.complete(config_for(server, logprobs=True), HELLO).logprobs is None


def test_a_missing_api_key_variable_fails_without_calling(llm_server, gateway, monkeypatch):
    server = llm_server(["unused"])
    monkeypatch.delenv("CONCORD_TEST_KEY", raising=False)
    config = ModelConfig("openai/x", api_base=server.api_base, api_key_env="CONCORD_TEST_KEY")

    with pytest.raises(LLMCallError, match="CONCORD_TEST_KEY"):
        gateway.complete(config, HELLO)
    assert server.request_count == 0


def test_api_key_is_read_from_the_environment(llm_server, gateway, monkeypatch):
    server = llm_server(["ok"])
    monkeypatch.setenv("CONCORD_TEST_KEY", "sk-from-env")
    config = ModelConfig("openai/x", api_base=server.api_base, api_key_env="CONCORD_TEST_KEY")

    gateway.complete(config, HELLO)

    assert server.requests[0].headers["Authorization"] == "Bearer sk-from-env"


def test_in_memory_cache_returns_copies():
    cache = InMemoryResponseCache()
    cache.set("k", {"text": "a"})
    cache.get("k")["text"] = "changed"
    assert cache.get("k") == {"text": "a"}


def test_gateway_rejects_empty_messages(gateway):
    with pytest.raises(LLMConfigurationError):
        gateway.complete(ModelConfig("openai/x"), [])


def test_sleep_recorder_is_the_only_waiting(llm_server):
    # Guard for the test suite's speed: with an injected sleep, retries never wait for real.
    server = llm_server([http_error(429, retry_after=30), "ok"])
    sleeps = SleepRecorder()
    started = time.monotonic()
    LLMGateway(sleep=sleeps).complete(config_for(server), HELLO)
    assert time.monotonic() - started < 5 and sleeps.delays == [30.0]


@given(st.dictionaries(st.sampled_from(["seed", "top_p", "stop", "n"]), st.integers(), max_size=4))
def test_cache_key_ignores_the_order_of_parameters_and_message_fields(extra):
    reordered = dict(reversed(list(extra.items())))
    message = {"role": "user", "content": "hi"}
    flipped = {"content": "hi", "role": "user"}
    assert cache_key(ModelConfig("openai/a", extra=extra), [message]) == cache_key(
        ModelConfig("openai/a", extra=reordered), [flipped]
    )


def test_a_bug_is_not_disguised_as_an_llm_failure():
    def broken_completion(**kwargs):
        raise TypeError("unexpected keyword")

    gateway = LLMGateway(completion_fn=broken_completion)
    with pytest.raises(TypeError):
        gateway.complete(ModelConfig("openai/x"), HELLO)


def test_a_server_trickling_its_answer_fails_the_call_within_timeout_times_attempts(
        llm_server, sleeps):
    """litellm's timeout bounds each read; one byte a second never trips it. The gateway's
    deadline ends each attempt at the timeout and the call at timeout × attempts."""
    server = llm_server([ScriptedReply(text="late", trickle_seconds=0.5)] * 2)
    config = config_for(server, timeout=1.5)
    gateway = LLMGateway(sleep=sleeps, max_retries=1, backoff_base=0.01)
    started = time.monotonic()
    with pytest.raises(LLMCallError, match=r"timed out after 1.5 s \(2 attempts, 3 s in all\)") \
            as error:
        gateway.complete(config, HELLO)
    assert time.monotonic() - started <= 3.0 + 1.0
    assert error.value.attempts == 2 and error.value.retryable is True
    assert server.request_count == 2 and gateway.usage.failed_calls == 1
