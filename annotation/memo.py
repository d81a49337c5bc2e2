"""A small per-process memo for what never changes once written.

Study items are snapshots and the blinding map is drawn once, so what an item page derives from
them (letters, cited reviews, candidates, the rendered form of a fresh item) can be kept by
each web process instead of being read and rendered again on every request. Entries expire
after a while and the memo is bounded, so memory stays flat however many studies run.
Values are kept as they are (not pickled): callers must not mutate them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")


class Memo:
    def __init__(self, *, size: int, seconds: float):
        self.size, self.seconds = size, seconds
        self._data: OrderedDict[Hashable, tuple[float, object]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value under KEY, built (outside the lock) and kept when missing or expired."""
        now = time.monotonic()
        with self._lock:
            hit = self._data.get(key)
            if hit is not None and hit[0] > now:
                self._data.move_to_end(key)
                return hit[1]  # type: ignore[return-value]
        value = build()
        with self._lock:
            self._data[key] = (now + self.seconds, value)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
