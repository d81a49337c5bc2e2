"""Total deadlines on outbound calls (docs/operations.md, "Deadlines and hostile answers").

A socket's timeout bounds each read, not a call: a server that sends one byte a second never
trips a 2 s timeout. Concord bounds every outbound call by one monotonic `Deadline` instead:
the live HTTP client re-sets its socket's timeout to what is left before every read, and a call
that cannot be cut that way (an in-process baseline, a litellm request) runs on a `BoundedPool`
thread while its caller waits at most until the deadline. The pool's thread may go on after the
caller gave up, but the caller (a simulation's worker slot, an arena call thread) is free, and
the pool never grows past its cap: when every thread is stuck, new calls wait in its queue and
time out there.

Pure Python: no Django.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """A call ran past its deadline; `seconds` is the budget it had."""

    def __init__(self, seconds: float, detail: str = ""):
        self.seconds, self.detail = seconds, detail
        super().__init__(f"timed out after {seconds:g} s" + (f" ({detail})" if detail else ""))


class Deadline:
    """SECONDS from now, on the monotonic clock."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic):
        if seconds <= 0:
            raise ValueError("a deadline must be positive")
        self.seconds, self.clock = seconds, clock
        self.at = clock() + seconds

    def remaining(self) -> float:
        return self.at - self.clock()

    def left(self) -> float:
        """The seconds left; DeadlineExceeded once none are."""
        remaining = self.remaining()
        if remaining <= 0:
            raise DeadlineExceeded(self.seconds)
        return remaining


class BoundedPool:
    """At most THREADS threads (created on first use, so after any fork) running calls whose
    callers wait at most their deadline (`call`)."""

    def __init__(self, threads: int, name: str):
        if threads < 1:
            raise ValueError("a pool needs at least one thread")
        self.threads, self.name = threads, name
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._busy = 0

    def _submit(self, fn: Callable[[], T]) -> Future:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.threads,
                                                    thread_name_prefix=self.name)
            return self._executor.submit(self._counted, fn)

    def _counted(self, fn: Callable[[], T]) -> T:
        with self._lock:
            self._busy += 1
        try:
            return fn()
        finally:
            with self._lock:
                self._busy -= 1

    @property
    def busy(self) -> int:
        """Threads running a call now (stuck ones included)."""
        return self._busy

    def call(self, fn: Callable[[], T], seconds: float) -> T:
        """FN's result, or its exception, if it finishes within SECONDS; else
        DeadlineExceeded (FN keeps its thread until it returns; a call still queued is
        dropped)."""
        future = self._submit(fn)
        finished, _ = wait([future], timeout=max(seconds, 0.0))
        if finished:
            return future.result()  # FN's own exception (a TimeoutError too) is FN's
        started = not future.cancel()
        detail = "" if started else f"all {self.threads} {self.name} threads were busy"
        raise DeadlineExceeded(seconds, detail)
