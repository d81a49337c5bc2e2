"""How many LLM calls may be in flight at once, site-wide (docs/llm.md, "Concurrency").

The gateway takes a slot before each HTTP attempt and gives it back after. A slot belongs to a
*pool* with a limit: ``all`` (``CONCORD_LLM_MAX_CONCURRENCY``, every call) and, for a server
that answers one request at a time (the built-in server, backend ``concord-local``), one pool
per server address with limit 1, taken first, so calls to that server queue in Concord
instead of timing out behind each other at the server.

- ``ProcessLimiter``: semaphores shared by every gateway of this process (the embedded mode's
  single worker process, or a process without Redis).
- ``RedisLimiter``: one sorted set per pool on the Redis server every process shares (the
  broker's, or ``CONCORD_CACHE_URL``). A slot is a member whose score is its lease's end, in
  the Redis server's clock; a Lua script drops expired leases and takes a slot only while the
  set holds fewer than the limit, atomically. Once a call has its slots, each lease ends at the
  call's own deadline plus a margin (while it still waits for a later pool's slot, the wait is
  added), and the gateway never holds a slot past the call's deadline, so a process that dies
  holding slots frees them within that lease, with no renewal. When Redis does not
  answer, the process's own semaphores take over (with a warning): the limit then holds per
  process until Redis is back.

Waiting for a slot is bounded by the caller's deadline (``SlotTimeout``). Pure Python; the
``redis`` client is imported by ``RedisLimiter``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, Protocol

logger = logging.getLogger(__name__)

ALL = "all"
LEASE_MARGIN_SECONDS = 5.0
_POLL_FIRST, _POLL_MAX = 0.02, 0.25


class SlotTimeout(Exception):
    """No slot of a pool came free before the caller's deadline. (Not a TimeoutError, which
    is an OSError: those mean Redis did not answer.)"""


class Limiter(Protocol):
    def slots(self, pools: Sequence[tuple[str, int]], timeout: float,
              hold: float | None = None) -> Any:
        """A context manager holding one slot of each (POOL, LIMIT), taken in order within
        TIMEOUT seconds, then held for at most HOLD seconds (default TIMEOUT)."""


def server_pool(api_base: str | None) -> str:
    """The pool of a one-request-at-a-time server at API_BASE."""
    return f"server:{api_base or ''}"


class ProcessLimiter:
    """Slots shared by every gateway of this process: one semaphore per (pool, limit)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}

    def semaphore(self, pool: str, limit: int) -> threading.BoundedSemaphore:
        with self._guard:
            key = (pool, limit)
            if key not in self._semaphores:
                self._semaphores[key] = threading.BoundedSemaphore(limit)
            return self._semaphores[key]

    @contextmanager
    def slots(self, pools: Sequence[tuple[str, int]], timeout: float,
              hold: float | None = None) -> Iterator[None]:
        deadline = time.monotonic() + timeout
        with ExitStack() as held:
            for pool, limit in pools:
                semaphore = self.semaphore(pool, limit)
                if not semaphore.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    raise SlotTimeout(f"no free LLM slot ({pool}, {limit} at once) within "
                                      f"{timeout:g} s")
                held.callback(semaphore.release)
            yield


PROCESS_LIMITER = ProcessLimiter()

# KEYS[1]: the pool's sorted set; ARGV: limit, member, lease in milliseconds.
_ACQUIRE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], ms + tonumber(ARGV[3]), ARGV[2])
  return 1
end
return 0
"""


class RedisLimiter:
    """Slots shared by every process using the Redis server at URL (keys under PREFIX)."""

    def __init__(self, url: str, *, prefix: str = "concord:llm-slots:",
                 fallback: ProcessLimiter = PROCESS_LIMITER,
                 lease_margin: float = LEASE_MARGIN_SECONDS) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.prefix = prefix
        self.fallback = fallback
        self.lease_margin = lease_margin

    def held(self, pool: str) -> int:
        """Live leases of POOL (for tests and the operator)."""
        self._redis.zremrangebyscore(self.prefix + pool, "-inf", self._now_ms())
        return int(self._redis.zcard(self.prefix + pool))

    def _now_ms(self) -> int:
        seconds, micros = self._redis.time()
        return int(seconds) * 1000 + int(micros) // 1000

    @contextmanager
    def slots(self, pools: Sequence[tuple[str, int]], timeout: float,
              hold: float | None = None) -> Iterator[None]:
        try:
            held = self._take_all(pools, timeout, timeout if hold is None else hold)
        except self._errors as error:
            logger.warning("Redis did not answer (%s): LLM slots are per process until it does",
                           error)
            with self.fallback.slots(pools, timeout):
                yield
            return
        try:
            yield
        finally:
            self._release(held)

    def _take_all(self, pools: Sequence[tuple[str, int]], timeout: float,
                  hold: float) -> list[tuple[str, str]]:
        deadline = time.monotonic() + timeout
        # A slot taken first may wait for the next ones, then be held; once all are taken,
        # each lease is cut to the hold.
        waiting_ms = int((timeout + hold + self.lease_margin) * 1000)
        held: list[tuple[str, str]] = []
        try:
            for pool, limit in pools:
                member = uuid.uuid4().hex
                self._wait_for(pool, limit, member, waiting_ms, deadline, timeout)
                held.append((pool, member))
            if len(held) > 1 or timeout > hold:
                ends = self._now_ms() + int((hold + self.lease_margin) * 1000)
                for pool, member in held:
                    self._redis.zadd(self.prefix + pool, {member: ends}, xx=True)
        except BaseException:
            self._release(held)
            raise
        return held

    def _wait_for(self, pool: str, limit: int, member: str, lease_ms: int, deadline: float,
                  timeout: float) -> None:
        pause = _POLL_FIRST
        while not self._acquire(keys=[self.prefix + pool], args=[limit, member, lease_ms]):
            left = deadline - time.monotonic()
            if left <= 0:
                raise SlotTimeout(f"no free LLM slot ({pool}, {limit} at once, site-wide) "
                                  f"within {timeout:g} s")
            time.sleep(min(pause, left))
            pause = min(pause * 2, _POLL_MAX)

    def _release(self, held: list[tuple[str, str]]) -> None:
        for pool, member in held:
            try:
                self._redis.zrem(self.prefix + pool, member)
            except self._errors as error:  # the lease expires on its own
                logger.warning("could not free an LLM slot in Redis (%s)", error)
