"""The HTTP client of the live-system contract (docs/formats.md §4): one POST per turn, with
the system's own timeout, retries with exponential backoff and a cap on calls in flight.

A call ends in a `LiveAnswer` or a `LiveCallError` whose `kind` says what went wrong
(`refused`, `unreachable`, `timeout`, `http_status`, `malformed`, `invalid`); the simulation
records it as the dialogue's failure. Connection errors, timeouts, 429 and 5xx answers are
retried (the wait doubles from `backoff_seconds`, with jitter, honouring `Retry-After`, capped
at 30 s); other 4xx answers, malformed JSON and answers that break the contract are not: the
same request would get the same answer.

Every call re-checks the URL against the allowed hosts and connects to the address that check
approved (the Host header and TLS name stay the URL's), so DNS cannot redirect a call after
registration.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from evaluation.lib.live.contract import LiveAnswer, LiveAnswerError, LiveRequest, validate_answer
from evaluation.lib.live.hosts import (
    EndpointRefused,
    PortRanges,
    Resolver,
    resolve_allowed,
    system_resolver,
)

MAX_BACKOFF_SECONDS = 30.0
MAX_ANSWER_BYTES = 2 * 1024 * 1024
USER_AGENT = "Concord-live/1"


class LiveCallError(RuntimeError):
    def __init__(self, kind: str, message: str, *, attempts: int = 1):
        self.kind, self.message, self.attempts = kind, message, attempts
        super().__init__(f"{kind}: {message}")


@dataclass(frozen=True)
class LiveSettings:
    """A live system's call settings (the System row's `live_*` fields)."""

    timeout_seconds: float = 30.0
    max_retries: int = 2
    backoff_seconds: float = 0.5
    max_concurrency: int = 4

    def __post_init__(self):
        if self.timeout_seconds <= 0 or self.max_retries < 0 or self.backoff_seconds < 0 \
                or self.max_concurrency < 1:
            raise ValueError("timeout must be positive, retries and backoff at least 0, "
                             "concurrency at least 1")


class _Retryable(Exception):
    def __init__(self, error: LiveCallError, retry_after: float | None = None):
        self.error, self.retry_after = error, retry_after


_SEMAPHORES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_SEMAPHORES_LOCK = threading.Lock()


def _semaphore(url: str, limit: int) -> threading.BoundedSemaphore:
    """One semaphore per (URL, limit) in this process: every dialogue calling a system shares
    its concurrency limit, whichever thread it runs in."""
    with _SEMAPHORES_LOCK:
        return _SEMAPHORES.setdefault((url, limit), threading.BoundedSemaphore(limit))


class HttpLiveSystem:
    """A live system behind an HTTP endpoint."""

    def __init__(self, url: str, *, allowed_hosts: Sequence[str], item_ids: Collection[str],
                 review_ids: Collection[str], settings: LiveSettings = LiveSettings(),
                 api_key: str | None = None, resolver: Resolver = system_resolver,
                 sleep: Callable[[float], None] = time.sleep, loopback_ports: PortRanges = ()):
        self.url, self.allowed_hosts, self.settings = url, list(allowed_hosts), settings
        self.loopback_ports = tuple(loopback_ports)
        self.item_ids, self.review_ids = item_ids, review_ids
        self.api_key, self.resolver, self.sleep = api_key, resolver, sleep
        self._slots = _semaphore(url, settings.max_concurrency)

    def turn(self, request: LiveRequest) -> LiveAnswer:
        body = json.dumps(request.as_json(), ensure_ascii=False).encode()
        attempts = 0
        while True:
            attempts += 1
            try:
                with self._slots:
                    status, payload = self._post(body)
                return self._answer(status, payload, request)
            except _Retryable as retry:
                if attempts > self.settings.max_retries:
                    retry.error.attempts = attempts
                    raise retry.error from None
                self.sleep(self._delay(attempts, retry.retry_after))
            except LiveCallError as error:
                error.attempts = attempts
                raise

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = self.settings.backoff_seconds * (2 ** (attempt - 1))
        delay *= 0.5 + random.random() / 2  # noqa: S311 - jitter, not security
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, MAX_BACKOFF_SECONDS)

    def _post(self, body: bytes) -> tuple[int, bytes]:
        try:
            endpoint = resolve_allowed(self.url, self.allowed_hosts, resolver=self.resolver,
                                       loopback_ports=self.loopback_ports)
        except EndpointRefused as error:
            raise LiveCallError("refused", str(error)) from None
        connection_class = (http.client.HTTPSConnection if endpoint.scheme == "https"
                            else http.client.HTTPConnection)
        connection = connection_class(endpoint.host, endpoint.port,
                                      timeout=self.settings.timeout_seconds)
        address = endpoint.address

        def connect_checked(_, timeout, source_address=None):
            return socket.create_connection((address, endpoint.port), timeout, source_address)

        connection._create_connection = connect_checked  # the approved address, not a re-lookup
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": USER_AGENT}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            connection.request("POST", endpoint.path, body=body, headers=headers)
            reply = connection.getresponse()
            payload = reply.read(MAX_ANSWER_BYTES + 1)
            status, retry_after = reply.status, reply.getheader("Retry-After")
        except TimeoutError:
            raise _Retryable(LiveCallError(
                "timeout", f"no answer within {self.settings.timeout_seconds:g} s")) from None
        except (ConnectionError, OSError, http.client.HTTPException) as error:
            raise _Retryable(LiveCallError(
                "unreachable", f"{type(error).__name__}: {error}".rstrip(": "))) from None
        finally:
            connection.close()
        if status == 429 or status >= 500:
            try:
                wait = float(retry_after) if retry_after else None
            except ValueError:
                wait = None
            raise _Retryable(LiveCallError("http_status", f"HTTP {status}"), wait)
        return status, payload

    def _answer(self, status: int, payload: bytes, request: LiveRequest) -> LiveAnswer:
        if status != 200:
            raise LiveCallError("http_status", f"HTTP {status}: {payload[:200]!r}")
        if len(payload) > MAX_ANSWER_BYTES:
            raise LiveCallError("malformed", f"answer over {MAX_ANSWER_BYTES} bytes")
        try:
            data = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise LiveCallError("malformed", f"not JSON: {error}") from None
        try:
            return validate_answer(data, item_ids=self.item_ids, review_ids=self.review_ids,
                                   candidate_item_ids=request.candidate_item_ids)
        except LiveAnswerError as error:
            raise LiveCallError("invalid", str(error)) from None
