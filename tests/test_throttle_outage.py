"""Redis down never gives a 500 (issue 28, point 6): the throttle cache pointed at a loopback port
nothing listens on (the real redis-py client connects and is refused, as when Redis is down; the
machine's Redis server is left alone). Login, the token endpoint and the arena answer normally,
their limits still hold (counted in process memory), and the outage is logged."""

import logging
import time
import uuid

import pytest
from django.core.cache import caches
from django.test import Client
from django.urls import reverse

from evaluation.models import Battle, System
from evaluation.services.arena import arena_open
from tests.conftest import PASSWORD
from tests.support.broker import closed_port

pytestmark = pytest.mark.django_db

REDIS = "django.core.cache.backends.redis.RedisCache"


def _throttle_cache_at(settings, url: str) -> None:
    settings.CACHES = {**settings.CACHES, "throttle": {
        "BACKEND": REDIS, "LOCATION": url, "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}


@pytest.fixture
def redis_down(settings, caplog):
    _throttle_cache_at(settings, f"redis://127.0.0.1:{closed_port()}/0")
    caplog.set_level(logging.WARNING, logger="core.throttle")
    return caplog


def _outage_logged(caplog) -> bool:
    return any("throttle cache unavailable (ConnectionError" in record.getMessage()
               for record in caplog.records)


def test_login_works_and_stays_throttled_while_redis_is_down(redis_down, researcher, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    client, url = Client(), reverse("login")
    assert client.post(url, {"username": "researcher", "password": PASSWORD}).status_code == 302
    assert _outage_logged(redis_down)
    client.logout()
    for _ in range(2):
        assert client.post(url, {"username": "researcher", "password": "no"}).status_code == 200
    refused = client.post(url, {"username": "researcher", "password": PASSWORD})
    assert refused.status_code == 429 and b"Too many failed logins" in refused.content
    # one warning for the outage, not one per request: Redis is retried after RETRY_SECONDS
    assert sum("throttle cache unavailable" in r.getMessage() for r in redis_down.records) == 1


def test_the_token_endpoint_answers_while_redis_is_down(redis_down, researcher, settings):
    settings.LOGIN_FAILURE_LIMIT = 1
    url = reverse("leaderboard:api_token_obtain")
    client = Client()
    token = client.post(url, {"username": "researcher", "password": PASSWORD})
    assert token.status_code == 200 and token.json()["token"]
    assert _outage_logged(redis_down)
    assert client.post(url, {"username": "researcher", "password": "no"}).status_code == 400
    refused = client.post(url, {"username": "researcher", "password": PASSWORD})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


def test_an_arena_battle_starts_and_is_limited_while_redis_is_down(redis_down, tiny_benchmark,
                                                                   settings):
    systems = [System.objects.create(slug=f"s{n}", name=f"S{n}", live_kind="http",
                                     live_endpoint=f"http://127.0.0.1:9/{n}") for n in range(2)]
    arena_open(benchmark=tiny_benchmark, systems=systems)
    settings.ARENA_BATTLES_PER_HOUR_SESSION = 1
    client = Client()
    started = client.post("/arena/tiny/battles/")
    assert started.status_code == 302 and Battle.objects.count() == 1
    assert _outage_logged(redis_down)
    refused = client.post("/arena/tiny/battles/")
    assert refused.status_code == 429 and Battle.objects.count() == 1


def test_redis_is_tried_again_after_the_retry_period(settings, researcher, monkeypatch):
    """The fallback is a bridge: after RETRY_SECONDS the real server counts again."""
    broker = settings.CELERY_BROKER_URL
    if not broker.startswith("redis://"):
        pytest.skip("needs the tests' Redis server")
    monkeypatch.setattr("core.throttle.RETRY_SECONDS", 1)
    client, url = Client(), reverse("login")
    wrong = {"username": "researcher", "password": "no"}
    _throttle_cache_at(settings, f"redis://127.0.0.1:{closed_port()}/0")
    assert client.post(url, wrong).status_code == 200  # counted in memory
    _throttle_cache_at(settings, broker)  # Redis is back
    prefix = settings.CACHES["throttle"]["KEY_PREFIX"]
    server = caches["throttle"]._cache.get_client(write=True)
    try:
        assert client.post(url, wrong).status_code == 200
        assert not server.keys(f"{prefix}:*")  # within the period: still in memory
        time.sleep(1.1)
        assert client.post(url, wrong).status_code == 200
        assert server.keys(f"{prefix}:*")  # after it: on the server again
    finally:
        if keys := server.keys(f"{prefix}:*"):
            server.delete(*keys)
