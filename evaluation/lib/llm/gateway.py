"""The one LLM gateway (architecture spec, "LLM and model access").

Every LLM call Concord makes goes through ``LLMGateway.complete`` / ``complete_many``, built on
``litellm.completion`` so any provider or OpenAI-compatible local server (vLLM, Ollama,
``evaluation.lib.llm.local_server``) works with a model string and an ``api_base``.
The gateway adds:

- a persistent response cache keyed by sha256 of (model, messages, generation parameters), so a
  re-run of an evaluation makes no HTTP call and returns identical answers (determinism);
- bounded concurrency: a slot of the ``limiter`` per HTTP attempt (``evaluation.lib.llm.limiter``:
  site-wide through Redis, or per process), and one request at a time to a server that serves
  one at a time (backend ``concord-local``);
- retries with exponential backoff and jitter on 429, 5xx and connection errors, honouring
  ``Retry-After``; never on other 4xx, which would fail the same way again;
- one total deadline per call: ``timeout`` per attempt, ``timeout`` × attempts with retries
  and their waits (docs/operations.md, "Deadlines and hostile answers");
- token and cost accounting per run (``UsageMeter``), where an unknown price stays unknown;
- per-token logprobs when the provider returns them.

Pure Python: no Django import. A Django-model-backed cache can implement ``ResponseCache``.
"""

from __future__ import annotations

import os

# litellm fetches its price map from GitHub at import time unless told to use the bundled copy;
# Concord must run offline, so this must happen before it is imported (`_litellm`).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Mapping, Sequence  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any, Protocol  # noqa: E402

from evaluation.lib.deadlines import BoundedPool, Deadline, DeadlineExceeded  # noqa: E402
from evaluation.lib.llm.answer_format import AnswerFormat, request_parameters  # noqa: E402
from evaluation.lib.llm.limiter import (  # noqa: E402
    ALL,
    PROCESS_LIMITER,
    Limiter,
    SlotTimeout,
    server_pool,
)


def _litellm():
    """litellm, imported on first use. Importing it costs seconds and about 250 MB, which
    every process that loads the task registry (a worker, the web, `import_benchmark`,
    `migrate`) would otherwise pay whether or not it ever calls a model (issue 18)."""
    import litellm

    if not getattr(litellm, "_concord_configured", False):
        litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout on every error
        litellm.telemetry = False
        litellm._concord_configured = True
    return litellm


def _provider_errors() -> tuple[type[BaseException], ...]:
    """What a failed call raises: litellm maps every provider failure onto the openai
    exception hierarchy (imported with litellm, on first use)."""
    import openai

    return (openai.OpenAIError, LLMConfigurationError)

logger = logging.getLogger(__name__)

# The threads every gateway of this process makes its HTTP calls on. A call whose caller gave
# up at its deadline may still run on one until litellm returns; the cap bounds how many such
# threads can pile up, whatever the number of gateways (the services make one per job).
CALL_POOL = BoundedPool(64, "llm-call")

CACHE_FORMAT_VERSION = 1
Messages = Sequence[Mapping[str, Any]]


# --------------------------------------------------------------------------------------------
# Configuration and results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelConfig:
    """Which model to call and how. ``stable_hash`` identifies what shapes the answer.

    ``api_base``, the key and ``timeout`` say where and how to reach the model, not what it
    answers, so they are left out of the hash and of the cache key: the same model behind a
    different host shares its cache. Give distinct model names to distinct weights.
    ``api_key_env`` is the variable the key is read from at call time; Concord fills it only
    from the operator's model profile (evaluation.lib.llm.profiles), never from user input.
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False, compare=False)
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    timeout: float = 120.0
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # How answer formats are sent (evaluation.lib.llm.answer_format.BACKENDS; the profile's).
    backend: str = "openai"

    def generation_parameters(self) -> dict[str, Any]:
        """The parameters sent to the model that can change its answer (part of the cache key)."""
        params: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.logprobs:
            params["logprobs"] = True
            if self.top_logprobs is not None:
                params["top_logprobs"] = self.top_logprobs
        for key, value in sorted(self.extra.items()):
            params[key] = value
        return params

    def stable_hash(self) -> str:
        payload = {"model": self.model, "parameters": self.generation_parameters()}
        return hashlib.sha256(_canonical_json(payload).encode("utf-8")).hexdigest()

    def resolved_api_key(self) -> str | None:
        if self.api_key is not None:
            return self.api_key
        if self.api_key_env:
            value = os.environ.get(self.api_key_env)
            if not value:
                raise LLMConfigurationError(f"environment variable {self.api_key_env} is not set")
            return value
        return None


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its logprob and the provider's top alternatives (incl. itself)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class LLMResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None = unknown (no price for this model); never 0 when unknown
    logprobs: tuple[TokenLogprob, ...] | None
    cached: bool
    model: str
    cache_key: str = ""


class LLMConfigurationError(ValueError):
    pass


class LLMCallError(RuntimeError):
    """A call that failed for good: a non-retryable error, or retries exhausted."""

    def __init__(self, message: str, *, status_code: int | None, attempts: int, retryable: bool):
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts
        self.retryable = retryable


# --------------------------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------------------------


class ResponseCache(Protocol):
    """Storage for successful answers. Values are JSON-serialisable dicts."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any]) -> None: ...


class InMemoryResponseCache:
    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(key)
        # Stored as JSON so callers can never mutate a cached answer in place.
        return None if raw is None else json.loads(raw)

    def set(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = json.dumps(value)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


def cache_key(config: ModelConfig, messages: Messages,
              answer_format: AnswerFormat | None = None) -> str:
    """sha256 over (model, messages, generation parameters, answer format) in canonical JSON."""
    payload = {
        "v": CACHE_FORMAT_VERSION,
        "model": config.model,
        "messages": normalize_messages(messages),
        "parameters": config.generation_parameters(),
    }
    if answer_format is not None:  # absent when None, so earlier cache entries stay valid
        payload["answer_format"] = answer_format.canonical()
    return hashlib.sha256(_canonical_json(payload).encode("utf-8")).hexdigest()


def normalize_messages(messages: Messages) -> list[dict[str, Any]]:
    if not messages:
        raise LLMConfigurationError("messages must not be empty")
    normalized = []
    for message in messages:
        if "role" not in message or "content" not in message:
            raise LLMConfigurationError(f"a message needs role and content: {message!r}")
        normalized.append({key: message[key] for key in sorted(message)})
    return normalized


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------------------------
# Usage accounting
# --------------------------------------------------------------------------------------------


class UsageMeter:
    """Tokens and cost of one run. Cached answers are counted apart: they cost nothing now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cached_calls = 0
        self.failed_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_prompt_tokens = 0
        self.cached_completion_tokens = 0
        self.known_cost_usd = 0.0
        self.calls_with_unknown_cost = 0

    def record(self, result: LLMResult) -> None:
        with self._lock:
            if result.cached:
                self.cached_calls += 1
                self.cached_prompt_tokens += result.prompt_tokens
                self.cached_completion_tokens += result.completion_tokens
                return
            self.calls += 1
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens
            if result.cost_usd is None:
                self.calls_with_unknown_cost += 1
            else:
                self.known_cost_usd += result.cost_usd

    def record_failure(self) -> None:
        with self._lock:
            self.failed_calls += 1

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        """The run's cost, or None if any paid call had no known price (see ``known_cost_usd``)."""
        return None if self.calls_with_unknown_cost else self.known_cost_usd

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": self.calls,
                "cached_calls": self.cached_calls,
                "failed_calls": self.failed_calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "cached_prompt_tokens": self.cached_prompt_tokens,
                "cached_completion_tokens": self.cached_completion_tokens,
                "cost_usd": None if self.calls_with_unknown_cost else self.known_cost_usd,
                "cost_known_part_usd": self.known_cost_usd,
                "calls_with_unknown_cost": self.calls_with_unknown_cost,
            }


# --------------------------------------------------------------------------------------------
# The gateway
# --------------------------------------------------------------------------------------------


class LLMGateway:
    def __init__(
        self,
        cache: ResponseCache | None = None,
        *,
        max_concurrency: int = 4,
        max_retries: int = 4,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        jitter: float = 0.25,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        completion_fn: Callable[..., Any] | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise LLMConfigurationError("max_concurrency must be at least 1")
        self.cache: ResponseCache = cache if cache is not None else InMemoryResponseCache()
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.jitter = jitter
        self.sleep = sleep
        self.rng = rng if rng is not None else random.Random()
        self.usage = UsageMeter()  # everything this gateway did, across runs
        self._completion_fn = completion_fn or _litellm().completion
        # MAX_CONCURRENCY slots of the pool `all`, shared with every gateway using the same
        # limiter (default: this process's; llm_models.llm_gateway passes the site's).
        self.limiter: Limiter = limiter if limiter is not None else PROCESS_LIMITER
        self._calls = CALL_POOL
        self._in_flight = _InFlightLocks()
        self._rng_lock = threading.Lock()

    # -- public API ------------------------------------------------------------------------
    def complete(
        self, config: ModelConfig, messages: Messages, *, meter: UsageMeter | None = None,
        answer_format: AnswerFormat | None = None,
    ) -> LLMResult:
        """One chat completion, from the cache when possible. Raises ``LLMCallError``.

        ANSWER_FORMAT constrains the answer where the config's backend can
        (``answer_format.request_parameters``); the caller still checks it."""
        key = cache_key(config, messages, answer_format)
        # Identical concurrent requests wait for the first one instead of paying twice.
        with self._in_flight.holding(key):
            stored = self.cache.get(key)
            if stored is not None:
                result = _result_from_cache(stored, key)
            else:
                try:
                    result = self._call_with_retries(config, messages, key, answer_format)
                except LLMCallError:
                    self._record_failure(meter)
                    raise
                self.cache.set(key, _result_to_cache(result))
        self._record(result, meter)
        return result

    def complete_many(
        self,
        config: ModelConfig,
        batch: Sequence[Messages],
        *,
        meter: UsageMeter | None = None,
        return_exceptions: bool = False,
        answer_format: AnswerFormat | None = None,
    ) -> list[LLMResult | LLMCallError]:
        """Complete each message list (in input order), at most ``max_concurrency`` at a time.

        With ``return_exceptions`` a failed item yields its ``LLMCallError`` in place; otherwise
        the first failure (in input order) is raised after every item has finished, so the
        successful answers are already cached.
        """
        outcomes = self.map(
            lambda messages: self._complete_or_error(config, messages, meter, answer_format),
            batch
        )
        if not return_exceptions:
            for outcome in outcomes:
                if isinstance(outcome, LLMCallError):
                    raise outcome
        return outcomes

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """Run ``fn`` over items on worker threads, keeping input order.

        Evaluators use it for multi-step work per item (ask, then re-ask); the HTTP concurrency
        stays bounded by the gateway's semaphore whatever the number of workers.
        """
        items = list(items)
        if len(items) <= 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    # -- internals -------------------------------------------------------------------------
    def _complete_or_error(
        self, config: ModelConfig, messages: Messages, meter: UsageMeter | None,
        answer_format: AnswerFormat | None = None,
    ) -> LLMResult | LLMCallError:
        try:
            return self.complete(config, messages, meter=meter, answer_format=answer_format)
        except LLMCallError as error:
            return error

    def _record(self, result: LLMResult, meter: UsageMeter | None) -> None:
        self.usage.record(result)
        if meter is not None and meter is not self.usage:
            meter.record(result)

    def _record_failure(self, meter: UsageMeter | None) -> None:
        self.usage.record_failure()
        if meter is not None and meter is not self.usage:
            meter.record_failure()

    def _call_with_retries(self, config: ModelConfig, messages: Messages, key: str,
                           answer_format: AnswerFormat | None = None) -> LLMResult:
        """The call, retries and waits included, within one deadline: config.timeout per
        attempt, timeout × attempts in all. litellm's own timeout bounds each socket read, not
        a request (a server trickling bytes never trips it), so each attempt runs on the
        gateway's call pool and its caller stops waiting at the attempt's deadline."""
        call = Deadline(config.timeout * (self.max_retries + 1))
        attempts = 0
        while True:
            attempts += 1
            try:
                kwargs = self._request_kwargs(config, messages, answer_format)  # key checked
                # A one-at-a-time server's calls queue here for as long as the whole call may
                # take (they would otherwise time out behind each other); other calls wait
                # within the attempt's timeout. Either way the attempt then has its timeout.
                wait = (call.left() if config.backend == "concord-local"
                        else min(config.timeout, call.left()))
                with self.limiter.slots(self._pools(config), wait,
                                        hold=min(config.timeout, call.left())):
                    response = self._calls.call(
                        lambda: self._completion_fn(**kwargs),  # noqa: B023 - called at once
                        min(config.timeout, call.left()))
                return _result_from_response(response, config, key)
            except (DeadlineExceeded, SlotTimeout) as error:
                status, retryable, retry_after = None, True, None
                failure: BaseException = error
                message = f"{config.model}: timed out after {config.timeout:g} s"
                detail = getattr(error, "detail", None) or (
                    str(error) if isinstance(error, SlotTimeout) else "")
                if detail:
                    message += f" ({detail})"
            except Exception as error:
                # litellm maps every provider failure onto the openai exception hierarchy; any
                # other exception is a bug and propagates unchanged.
                if not isinstance(error, _provider_errors()):
                    raise
                status, retryable, retry_after = classify_error(error)
                failure = error
                message = (f"{config.model}: connection refused at "
                           f"{config.api_base or 'the provider'} (is the server running?)"
                           if connection_refused(error)
                           else f"{config.model}: {type(error).__name__}: {error}")
            delay = self._backoff_delay(attempts, retry_after)
            if not retryable or attempts > self.max_retries or delay >= call.remaining():
                if isinstance(failure, DeadlineExceeded) and attempts > 1:
                    message += f" ({attempts} attempts, {call.seconds:g} s in all)"
                raise LLMCallError(message, status_code=status, attempts=attempts,
                                   retryable=retryable) from failure
            logger.warning(
                "LLM call to %s failed (%s, status %s); retry %d of %d in %.1f s",
                config.model, type(failure).__name__, status, attempts, self.max_retries, delay,
            )  # fmt: skip
            self.sleep(delay)

    def _pools(self, config: ModelConfig) -> list[tuple[str, int]]:
        """The slots an attempt takes, in order: its server's when the server answers one
        request at a time (the built-in server), then one of the site's."""
        pools = [(server_pool(config.api_base), 1)] if config.backend == "concord-local" else []
        return [*pools, (ALL, self.max_concurrency)]

    def _backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        with self._rng_lock:
            spread = self.rng.random()
        # Jitter spreads synchronised workers apart so they do not hit the limit together again.
        delay = self.backoff_base * (2 ** (attempt - 1)) * (1.0 + self.jitter * spread)
        if retry_after is not None:
            delay = max(delay, retry_after)
        # Capped so that a provider asking for an hour (a spent daily quota) fails the call in
        # bounded time instead of stalling the whole run.
        return min(delay, self.backoff_max)

    @staticmethod
    def _request_kwargs(config: ModelConfig, messages: Messages,
                        answer_format: AnswerFormat | None = None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": config.model,
            "messages": normalize_messages(messages),
            "timeout": config.timeout,
            # The gateway owns retries; the openai SDK would otherwise retry (and sleep) itself.
            "max_retries": 0,
            **config.generation_parameters(),
        }
        constraint = request_parameters(answer_format, config.backend)
        kwargs.update(constraint)
        cap = constrained_max_tokens(answer_format, constraint)
        if cap is not None:
            kwargs["max_tokens"] = cap
        if config.api_base:
            kwargs["api_base"] = config.api_base
        api_key = config.resolved_api_key()
        if api_key is not None:
            kwargs["api_key"] = api_key
        return kwargs


def constrained_max_tokens(answer_format: AnswerFormat | None,
                           constraint: Mapping[str, Any]) -> int | None:
    """The ``max_tokens`` of a call whose answer the backend constrains (CONSTRAINT: the
    request parameters that constrain it, empty when the backend cannot): the format's own
    cap (``AnswerFormat.max_tokens``: its longest answer in characters, plus the end), in
    place of the profile's, so that no cap cuts a constrained answer before it closes, and
    none lets it run longer than the format allows. None (the profile's cap stays) for an
    unconstrained call or an unbounded format. The format is part of the cache key, so the
    key still names everything that shapes the answer."""
    if answer_format is None or not constraint:
        return None
    return answer_format.max_tokens


class _InFlightLocks:
    """One lock per cache key while some thread works on it; dropped when nobody holds it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, list[Any]] = {}  # key -> [lock, number of interested threads]

    @contextmanager
    def holding(self, key: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._locks[key]


# --------------------------------------------------------------------------------------------
# Response parsing and error classification
# --------------------------------------------------------------------------------------------


def classify_error(error: BaseException) -> tuple[int | None, bool, float | None]:
    """(HTTP status, whether retrying can help, Retry-After seconds if the server sent one)."""
    if isinstance(error, LLMConfigurationError):
        return None, False, None
    litellm = _litellm()
    if isinstance(error, litellm.Timeout | litellm.APIConnectionError):
        return getattr(error, "status_code", None), True, None
    status = getattr(error, "status_code", None)
    if not isinstance(status, int):
        return None, False, None
    retryable = status == 429 or status >= 500
    return status, retryable, _retry_after_seconds(error) if retryable else None


def connection_refused(error: BaseException) -> bool:
    """Whether ERROR comes from a refused connection. litellm reports one as an
    "InternalServerError 500" wrapping the socket's ConnectionRefusedError; the cause chain
    tells the truth."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _retry_after_seconds(error: BaseException) -> float | None:
    for headers in (
        getattr(error, "litellm_response_headers", None),
        getattr(getattr(error, "response", None), "headers", None),
    ):
        if headers is None:
            continue
        value = headers.get("retry-after") if hasattr(headers, "get") else None
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None  # an HTTP date; the exponential backoff is good enough
    return None


def _result_from_response(response: Any, config: ModelConfig, key: str) -> LLMResult:
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    return LLMResult(
        text=choice.message.content or "",
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=_cost_or_unknown(response),
        logprobs=parse_logprobs(getattr(choice, "logprobs", None)),
        cached=False,
        model=config.model,
        cache_key=key,
    )


def _cost_or_unknown(response: Any) -> float | None:
    # Only litellm's price map knows prices; a model it cannot price has an *unknown* cost, which
    # must not be summed as 0 (that would under-report a run's spend).
    try:
        cost = _litellm().completion_cost(completion_response=response)
    except Exception:  # noqa: BLE001 - any failure to price means "unknown"
        return None
    return float(cost) if cost is not None else None


def token_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """What MODEL charges for these tokens by litellm's price map (the one `_cost_or_unknown`
    prices answers with); None when the map has no price for it (an estimate, not a bill)."""
    try:
        prompt, completion = _litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    except Exception:  # noqa: BLE001 - any failure to price means "unknown"
        return None
    return float(prompt) + float(completion)


def parse_logprobs(raw: Any) -> tuple[TokenLogprob, ...] | None:
    """Read OpenAI-format ``choices[0].logprobs`` (object or dict) into ``TokenLogprob``s."""
    if raw is None:
        return None
    content = _field(raw, "content")
    if content is None:
        return None
    tokens = []
    for item in content:
        top = tuple(
            (str(_field(alt, "token")), float(_field(alt, "logprob")))
            for alt in (_field(item, "top_logprobs") or [])
        )
        tokens.append(TokenLogprob(str(_field(item, "token")), float(_field(item, "logprob")), top))
    return tuple(tokens)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _result_to_cache(result: LLMResult) -> dict[str, Any]:
    logprobs = None
    if result.logprobs is not None:
        logprobs = [
            {"token": t.token, "logprob": t.logprob, "top": [list(pair) for pair in t.top]}
            for t in result.logprobs
        ]
    return {
        "text": result.text,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cost_usd": result.cost_usd,
        "logprobs": logprobs,
        "model": result.model,
    }


def _result_from_cache(stored: Mapping[str, Any], key: str) -> LLMResult:
    logprobs = None
    if stored.get("logprobs") is not None:
        logprobs = tuple(
            TokenLogprob(t["token"], float(t["logprob"]), tuple((a, float(b)) for a, b in t["top"]))
            for t in stored["logprobs"]
        )
    return LLMResult(
        text=stored["text"],
        prompt_tokens=int(stored["prompt_tokens"]),
        completion_tokens=int(stored["completion_tokens"]),
        cost_usd=stored.get("cost_usd"),
        logprobs=logprobs,
        cached=True,
        model=stored.get("model", ""),
        cache_key=key,
    )
