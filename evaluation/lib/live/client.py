"""The HTTP client of the live-system contract (docs/formats.md §4): one POST per turn, with
the system's own timeout, retries with exponential backoff and a cap on calls in flight.

A call ends in a `LiveAnswer` or a `LiveCallError` whose `kind` says what went wrong
(docs/operations.md, "Deadlines and hostile answers"): `refused`, `unreachable`, `timeout`,
`http_status`, `too_large`, `not_json`, `too_deep`, `bad_number`, `wrong_type`, `invalid`; the
simulation records it as the dialogue's failure, the arena as that side's failed answer.
Connection errors, timeouts, 429 and 5xx answers are retried (the wait doubles from
`backoff_seconds`, with jitter, honouring `Retry-After`, capped at 30 s); other 4xx answers and
answers that break the contract are not: the same request would get the same answer.

Every attempt has one total deadline, the system's timeout, for connecting, sending, the
headers and the body together: the socket's timeout is re-set to what is left of it before
every read (`_BudgetReader`), so a server that trickles one byte a second cannot stretch a call.
The whole call, retries and their waits included, ends within timeout × attempts.

Every call re-checks the URL against the allowed hosts and connects to the address that check
approved (the Host header and TLS name stay the URL's), so DNS cannot redirect a call after
registration.
"""

from __future__ import annotations

import functools
import http.client
import io
import json
import math
import random
import socket
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from evaluation.lib.deadlines import Deadline, DeadlineExceeded
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
MAX_INTEGER_DIGITS = 100  # an item id is a string; no number in an answer needs more
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
        timeout = self.settings.timeout_seconds
        call = Deadline(timeout * (self.settings.max_retries + 1))
        attempts = 0
        while True:
            attempts += 1
            try:
                status, payload = self._post(body, Deadline(min(timeout, call.left())))
                return self._answer(status, payload, request)
            except _Retryable as retry:
                wait = self._delay(attempts, retry.retry_after)
                if attempts > self.settings.max_retries or wait >= call.remaining():
                    raise _final(retry.error, attempts, timeout) from None
                self.sleep(wait)
            except DeadlineExceeded:  # the call's budget was spent waiting between attempts
                raise _final(LiveCallError("timeout", ""), attempts, timeout) from None
            except LiveCallError as error:
                error.attempts = attempts
                raise

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = self.settings.backoff_seconds * (2 ** (attempt - 1))
        delay *= 0.5 + random.random() / 2  # noqa: S311 - jitter, not security
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, MAX_BACKOFF_SECONDS)

    def _post(self, body: bytes, deadline: Deadline) -> tuple[int, bytes]:
        """One attempt, all of it (a free slot, connecting, sending, the headers, the body)
        within DEADLINE: the status and at most MAX_ANSWER_BYTES + 1 bytes of the body."""
        timed_out = _Retryable(LiveCallError("timeout",
                                             f"timed out after {deadline.seconds:g} s"))
        if not self._slots.acquire(timeout=max(deadline.remaining(), 0.0)):
            raise timed_out
        try:
            return self._exchange(body, deadline)
        except (TimeoutError, DeadlineExceeded):
            raise timed_out from None
        finally:
            self._slots.release()

    def _exchange(self, body: bytes, deadline: Deadline) -> tuple[int, bytes]:
        try:
            endpoint = resolve_allowed(self.url, self.allowed_hosts, resolver=self.resolver,
                                       loopback_ports=self.loopback_ports)
        except EndpointRefused as error:
            raise LiveCallError("refused", str(error)) from None
        connection_class = (http.client.HTTPSConnection if endpoint.scheme == "https"
                            else http.client.HTTPConnection)
        connection = connection_class(endpoint.host, endpoint.port, timeout=deadline.left())
        address = endpoint.address

        def connect_checked(_, timeout, source_address=None):
            return socket.create_connection((address, endpoint.port), deadline.left(),
                                            source_address)

        connection._create_connection = connect_checked  # the approved address, not a re-lookup
        connection.response_class = functools.partial(_BudgetResponse, deadline=deadline)
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": USER_AGENT}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            connection.request("POST", endpoint.path, body=body, headers=headers)
            reply = connection.getresponse()
            status, retry_after = reply.status, reply.getheader("Retry-After")
            payload = _read_bounded(reply, status)
        except (TimeoutError, DeadlineExceeded, LiveCallError):
            raise
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
            if wait is not None and not math.isfinite(wait):
                wait = None
            raise _Retryable(LiveCallError("http_status", f"HTTP {status}"), wait)
        return status, payload

    def _answer(self, status: int, payload: bytes, request: LiveRequest) -> LiveAnswer:
        if status != 200:
            raise LiveCallError("http_status", f"HTTP {status}: {payload[:200]!r}")
        data = parse_answer(payload)
        try:
            return validate_answer(data, item_ids=self.item_ids, review_ids=self.review_ids,
                                   candidate_item_ids=request.candidate_item_ids)
        except LiveAnswerError as error:
            raise LiveCallError(error.kind, str(error)) from None


def _final(error: LiveCallError, attempts: int, timeout: float) -> LiveCallError:
    """The call's error after ATTEMPTS; a timeout says the budget it had."""
    if error.kind == "timeout":
        tries = f" ({attempts} attempts of at most {timeout:g} s each)" if attempts > 1 else ""
        error = LiveCallError("timeout", f"timed out after {timeout * attempts:g} s{tries}")
    error.attempts = attempts
    return error


def _read_bounded(reply: http.client.HTTPResponse, status: int) -> bytes:
    """The body, refused as `too_large` once it passes MAX_ANSWER_BYTES (a declared
    Content-Length over it is refused before anything is read)."""
    declared = reply.getheader("Content-Length")
    if status == 200 and declared and declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
        raise LiveCallError("too_large", f"the answer declares {int(declared):,} bytes; at most "
                                         f"{MAX_ANSWER_BYTES:,} are read")
    payload = reply.read(MAX_ANSWER_BYTES + 1)
    if status == 200 and len(payload) > MAX_ANSWER_BYTES:
        raise LiveCallError("too_large", f"the answer is over {MAX_ANSWER_BYTES:,} bytes")
    return payload


class _BadNumber(ValueError):
    pass


def _no_constant(name: str):
    raise _BadNumber(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadNumber(f"{text[:40]} is out of range")
    return value


def _small_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _BadNumber(f"an integer of {len(text.lstrip('-')):,} digits (at most "
                         f"{MAX_INTEGER_DIGITS})")
    return int(text)


def parse_answer(payload: bytes):
    """PAYLOAD as JSON, or a LiveCallError of the precise kind: `not_json` (not UTF-8, not JSON),
    `too_deep` (nested past the parser's recursion limit), `bad_number` (NaN, Infinity, a
    number out of float range, an integer of over MAX_INTEGER_DIGITS digits)."""
    try:
        return json.loads(payload.decode("utf-8"), parse_constant=_no_constant,
                          parse_float=_finite_float, parse_int=_small_int)
    except _BadNumber as error:
        raise LiveCallError("bad_number", f"not a usable number: {error}") from None
    except RecursionError:
        raise LiveCallError("too_deep", "the answer's JSON is nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LiveCallError("not_json", f"not JSON: {error}") from None


class _BudgetReader(io.RawIOBase):
    """A socket's reads, each allowed only what is left of DEADLINE: the socket's timeout is
    re-set before every read, so the whole response, however it trickles in, is bounded. RAW is
    the socket's own reader (`makefile`), whose hold keeps the socket open while the response
    is read after its connection let go of it (an answer that ends when the connection closes)."""

    def __init__(self, raw, sock: socket.socket, deadline: Deadline):
        super().__init__()
        self.raw, self.sock, self.deadline = raw, sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.sock.settimeout(self.deadline.left())
        return self.raw.readinto(buffer)

    def close(self) -> None:
        self.raw.close()
        super().close()


class _BudgetResponse(http.client.HTTPResponse):
    """An HTTP response read through a `_BudgetReader` (headers and body alike)."""

    def __init__(self, sock, *args, deadline: Deadline, **kwargs):
        super().__init__(sock, *args, **kwargs)
        raw = self.fp.detach()  # nothing was read through its buffer yet
        self.fp = io.BufferedReader(_BudgetReader(raw, sock, deadline))
