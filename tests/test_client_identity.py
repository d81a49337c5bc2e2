"""Who the client is (issue 28, point 7): REMOTE_ADDR when Concord is reached directly, the Nth
X-Forwarded-For entry from the right behind N trusted proxies; login throttling and the arena's
limits key on that address, and the arena's also on the account when logged in."""

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse

from core.throttle import address_hash, client_address
from evaluation.models import Battle, System
from evaluation.services.arena import arena_open
from tests.conftest import PASSWORD

PROXY = "10.0.0.1"  # the reverse proxy: every request reaches Concord from it


def _address(header: str | None, *, remote: str = PROXY) -> str:
    extra = {} if header is None else {"HTTP_X_FORWARDED_FOR": header}
    return client_address(RequestFactory().get("/", REMOTE_ADDR=remote, **extra))


def test_without_trusted_proxies_the_header_is_ignored(settings):
    settings.TRUSTED_PROXIES = 0
    assert _address("6.6.6.6", remote="203.0.113.5") == "203.0.113.5"
    assert _address(None, remote="203.0.113.5") == "203.0.113.5"


@pytest.mark.parametrize(("proxies", "header", "client"), [
    (1, "198.51.100.7", "198.51.100.7"),
    # the client wrote its own header: the proxy appended the address it really came from
    (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),
    (1, "6.6.6.6,198.51.100.7", "198.51.100.7"),
    (2, "6.6.6.6, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
    (1, " 2001:DB8:0:0::1 ", "2001:db8::1"),  # one spelling per address
    (1, None, PROXY),  # not through the proxy
    (2, "198.51.100.7", PROXY),  # fewer hops than proxies: the header cannot be trusted
    (1, "", PROXY),
    (1, "6.6.6.6, not-an-address", PROXY),
    (1, "198.51.100.7:4431", PROXY),
    (1, "6.6.6.6, ", PROXY),
])
def test_behind_trusted_proxies_the_nth_hop_from_the_right_is_the_client(settings, proxies,
                                                                        header, client):
    settings.TRUSTED_PROXIES = proxies
    assert _address(header) == client


def test_the_arena_address_hash_follows_the_client_address(settings):
    settings.TRUSTED_PROXIES = 1
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY,
                                   HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.7")
    direct = RequestFactory().get("/", REMOTE_ADDR="198.51.100.7")
    assert address_hash(request) == address_hash(direct)
    assert address_hash(request) != address_hash(RequestFactory().get("/", REMOTE_ADDR=PROXY))


def test_a_negative_number_of_proxies_is_refused(tmp_path):
    from tests.test_settings import manage

    result = manage("check", tmp_path=tmp_path, CONCORD_TRUSTED_PROXIES="-1")
    assert result.returncode != 0
    assert "CONCORD_TRUSTED_PROXIES=-1 must be 0 or more" in result.stderr


# --- login throttling behind the proxy ------------------------------------------------------


def _login(client, password, header=None):
    extra = {} if header is None else {"HTTP_X_FORWARDED_FOR": header}
    return client.post(reverse("login"), {"username": "researcher", "password": password},
                       REMOTE_ADDR=PROXY, **extra)


@pytest.mark.django_db
def test_behind_one_proxy_wrong_passwords_lock_out_their_client_only(settings, researcher):
    settings.TRUSTED_PROXIES, settings.LOGIN_FAILURE_LIMIT = 1, 3
    attacker = "198.51.100.66"
    for _ in range(3):
        assert _login(Client(), "wrong", attacker).status_code == 200
    assert _login(Client(), PASSWORD, attacker).status_code == 429
    # a forged header does not help: the proxy appended the attacker's real address
    assert _login(Client(), PASSWORD, f"203.0.113.9, {attacker}").status_code == 429
    # everyone else behind the same proxy still logs in
    assert _login(Client(), PASSWORD, "203.0.113.9").status_code == 302


@pytest.mark.django_db
def test_reached_directly_a_forged_header_changes_nothing(settings, researcher):
    settings.TRUSTED_PROXIES, settings.LOGIN_FAILURE_LIMIT = 0, 3
    for n in range(3):
        assert _login(Client(), "wrong", f"203.0.113.{n}").status_code == 200
    assert _login(Client(), PASSWORD, "203.0.113.200").status_code == 429


@pytest.mark.django_db
def test_the_token_endpoint_keys_on_the_client_behind_the_proxy(settings, researcher):
    settings.TRUSTED_PROXIES, settings.LOGIN_FAILURE_LIMIT = 1, 2
    url = reverse("leaderboard:api_token_obtain")

    def token(password, header):
        return Client().post(url, {"username": "researcher", "password": password},
                             REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=header)

    for _ in range(2):
        assert token("no", "198.51.100.66").status_code == 400
    assert token(PASSWORD, "6.6.6.6, 198.51.100.66").status_code == 429
    assert token(PASSWORD, "203.0.113.9").json()["token"]


# --- the arena's limits ----------------------------------------------------------------------


@pytest.fixture
def arena(tiny_benchmark):
    systems = [System.objects.create(slug=f"s{n}", name=f"S{n}", live_kind="http",
                                     live_endpoint=f"http://127.0.0.1:9/{n}") for n in range(2)]
    return arena_open(benchmark=tiny_benchmark, systems=systems)


def _start(client, header=None) -> int:
    extra = {} if header is None else {"HTTP_X_FORWARDED_FOR": header}
    return client.post("/arena/tiny/battles/", REMOTE_ADDR=PROXY, **extra).status_code


@pytest.mark.django_db
def test_behind_one_proxy_the_arena_limits_each_client_not_the_proxy(settings, arena):
    settings.TRUSTED_PROXIES = 1
    settings.ARENA_BATTLES_PER_HOUR_SESSION, settings.ARENA_BATTLES_PER_HOUR_ADDRESS = 10, 2
    stuffer = "198.51.100.66"
    # fresh sessions and forged headers: the same client address each time
    assert [_start(Client(), f"{n}.{n}.{n}.{n}, {stuffer}") for n in range(1, 4)] == [
        302, 302, 429]
    assert _start(Client(), "203.0.113.9") == 302  # another client behind the same proxy
    assert set(Battle.objects.values_list("address_hash", flat=True)) == {
        address_hash(RequestFactory().get("/", REMOTE_ADDR=ip))
        for ip in (stuffer, "203.0.113.9")}


@pytest.mark.django_db
def test_reached_directly_the_arena_ignores_forged_headers(settings, arena):
    settings.TRUSTED_PROXIES = 0
    settings.ARENA_BATTLES_PER_HOUR_SESSION, settings.ARENA_BATTLES_PER_HOUR_ADDRESS = 10, 2
    assert [_start(Client(), f"198.51.100.{n}") for n in range(3)] == [302, 302, 429]


@pytest.mark.django_db
def test_a_logged_in_account_is_limited_however_many_browsers_it_uses(settings, arena,
                                                                     researcher):
    settings.ARENA_BATTLES_PER_HOUR_SESSION, settings.ARENA_BATTLES_PER_HOUR_ADDRESS = 2, 100
    settings.ARENA_MESSAGES_PER_HOUR_SESSION = 1
    browsers = []
    for _ in range(3):
        browser = Client()
        browser.force_login(researcher)
        browsers.append(browser)
    assert [_start(b, f"198.51.100.{n}") for n, b in enumerate(browsers)] == [302, 302, 429]
    assert Battle.objects.filter(user=researcher).count() == 2
    # messages too: the account's one message this hour was spent in the first browser
    first, second = Battle.objects.order_by("pk")
    assert browsers[0].post(f"/arena/battles/{first.uuid}/say/",
                            {"message": "hi"}).status_code == 302
    refused = browsers[1].post(f"/arena/battles/{second.uuid}/say/", {"message": "hi"})
    assert refused.status_code == 429 and b"browser, account or address" in refused.content
    # an anonymous browser from the same address is not the account
    assert _start(Client(), "198.51.100.0") == 302
