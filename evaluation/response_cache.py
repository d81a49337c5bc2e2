"""The LLM gateway's persistent response cache in the database (architecture spec, "LLM and
model access": a re-run costs nothing and is deterministic).

`DatabaseResponseCache` implements `evaluation.lib.llm.gateway.ResponseCache` on `LLMCacheEntry`,
so every web process and Celery worker that shares the database shares the answers.
"""

import threading
from contextlib import contextmanager

from django.db import connections

from .models import LLMCacheEntry

_thread = threading.local()


@contextmanager
def _short_connection():
    """The gateway calls the cache from its worker threads; Django opens one connection per
    thread and nothing would close those of a finished thread pool, so a thread other than the
    main one closes its connection after each use (unless it keeps it, see below)."""
    try:
        yield
    finally:
        if threading.current_thread() is not threading.main_thread() and \
                not getattr(_thread, "keep", False):
            connections.close_all()


@contextmanager
def connection_kept():
    """For a worker thread about to make many calls (a simulated dialogue: one per turn): keep
    its database connection for the whole block and close it at the end. Connecting twice per
    call cost more than the call itself under load (docs/performance.md, simulations)."""
    _thread.keep = True
    try:
        yield
    finally:
        _thread.keep = False
        connections.close_all()


class DatabaseResponseCache:
    """Answers keyed by the gateway's sha256 cache key; the first stored answer wins."""

    def get(self, key: str) -> dict | None:
        with _short_connection():
            return (LLMCacheEntry.objects.filter(key=key)
                    .values_list("response", flat=True).first())

    def set(self, key: str, value: dict) -> None:
        # Two workers may answer the same prompt at once; keeping the first answer (instead of
        # replacing it) means a run that already read it never sees it change.
        with _short_connection():
            LLMCacheEntry.objects.bulk_create(
                [LLMCacheEntry(key=key, model=str(value.get("model", ""))[:200], response=value)],
                ignore_conflicts=True,
            )

    def __len__(self) -> int:
        with _short_connection():
            return LLMCacheEntry.objects.count()
