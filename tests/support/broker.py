"""An unreachable Celery broker for tests: a local port nothing listens on (not a mock; the
real client connects and is refused, as it is when Redis is down)."""

import socket
from contextlib import contextmanager

from config.celery import app


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends


@contextmanager
def broker_at(url: str):
    """Send this process's tasks to URL (not eagerly) until the block ends.

    The write URL, not `broker_url`: Celery reads that one from CELERY_BROKER_URL in the
    environment first, which the tests set.
    """
    saved = app.conf.get("broker_write_url"), app.conf.task_always_eager
    app.conf.broker_write_url, app.conf.task_always_eager = url, False
    app._after_fork()  # drop pooled connections to the old broker
    try:
        yield
    finally:
        app.conf.broker_write_url, app.conf.task_always_eager = saved
        app._after_fork()


@contextmanager
def unreachable_broker():
    with broker_at(f"redis://127.0.0.1:{closed_port()}/0"):
        yield
