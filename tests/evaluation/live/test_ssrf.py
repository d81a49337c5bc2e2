"""Server-side request forgery (security issue 28.8): every spelling of a loopback, metadata,
private or otherwise non-global address is refused by the `public` allow list; loopback is
called only on the listed ports; a redirect cannot lead a call elsewhere."""

from ipaddress import ip_address

import pytest

from evaluation.lib.live.client import HttpLiveSystem, LiveCallError
from evaluation.lib.live.contract import LiveRequest
from evaluation.lib.live.hosts import (
    EndpointRefused,
    carried_ipv4,
    is_public,
    resolve_allowed,
    system_resolver,
)
from tests.support.live_server import Raw, live_server

PUBLIC = ["public"]
DEV = ["localhost", "127.0.0.0/8", "::1"]
DEV_PORTS = ((8000, 8999),)  # the development default of CONCORD_LIVE_LOOPBACK_PORTS


def fixed(*addresses):
    return lambda host, port: list(addresses)


# (URL, what the refusal says): each refused by the `public` list alone.
REFUSED_BY_PUBLIC = [
    # the six spellings the review found accepted
    ("http://[64:ff9b::a9fe:a9fe]/", "NAT64 of 169.254.169.254), a link-local"),
    ("http://[64:ff9b::7f00:1]/", "NAT64 of 127.0.0.1), a loopback"),
    ("http://[2002:a9fe:a9fe::]/", "6to4 of 169.254.169.254), a link-local"),
    ("http://[2002:7f00:1::]/", "6to4 of 127.0.0.1), a loopback"),
    ("http://[::127.0.0.1]/", "IPv4-compatible of 127.0.0.1), a loopback"),
    ("http://224.0.0.1/", "224.0.0.1, a multicast"),
    # more wrappers
    ("http://[::ffff:127.0.0.1]:8000/", "IPv4-mapped of 127.0.0.1), a loopback"),
    ("http://[::ffff:169.254.169.254]/", "IPv4-mapped of 169.254.169.254), a link-local"),
    ("http://[::ffff:0:7f00:1]/", "IPv4-translated of 127.0.0.1), a loopback"),
    ("http://[64:ff9b::a00:1]/", "NAT64 of 10.0.0.1), a private"),
    ("http://[64:ff9b:1::808:808]/", "NAT64 local-use (never globally routable)"),
    ("http://[2002:c0a8:101::1]/", "6to4 of 192.168.1.1), a private"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo server of 65.54.227.120, "
                                                       "Teredo client of 192.0.2.45), a private"),
    ("http://[2001:0:a9fe:a9fe::]/", "a link-local"),  # Teredo whose server is the metadata
    ("http://[::8.8.8.8]/", "IPv4-compatible (never globally routable)"),
    # multicast, reserved and special-purpose ranges
    ("http://[ff0e::1]/", "a multicast"),
    ("http://239.255.255.250/", "a multicast"),
    ("http://240.0.0.1/", "a reserved"),
    ("http://255.255.255.255/", "a reserved"),
    ("http://[fec0::1]/", "a site-local"),
    ("http://100.64.0.1/", "a shared (carrier-grade NAT)"),
    ("http://198.18.0.1/", "a private"),  # benchmarking
    ("http://192.0.2.1/", "a private"),  # documentation
    ("http://[2001:db8::1]/", "a private"),  # documentation
    ("http://[100::1]/", "a reserved"),  # discard-only
    ("http://10.1.2.3/", "a private"),
    ("http://[fd00::1]/", "a private"),  # unique local
    ("http://[fe80::1]/", "a link-local"),
    ("http://169.254.169.254/", "a link-local"),
    ("http://127.0.0.1:8000/", "a loopback"),
    ("http://[::1]:8000/", "a loopback"),
    # the unspecified address reaches this machine, whatever the list says
    ("http://0.0.0.0:8000/", "an unspecified address"),
    ("http://[::]:8000/", "an unspecified address"),
    ("http://[::ffff:0.0.0.0]:8000/", "an unspecified address"),
]


@pytest.mark.parametrize("url, reason", REFUSED_BY_PUBLIC)
def test_the_public_list_refuses_every_non_global_spelling(url, reason):
    with pytest.raises(EndpointRefused) as caught:
        resolve_allowed(url, PUBLIC, resolver=fixed(), loopback_ports=DEV_PORTS)
    assert reason in str(caught.value)


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "017700000001", "0177.0.0.1",
                                  "127.1", "0x7f000001"])
def test_numeric_ipv4_spellings_are_resolved_then_checked(host):
    """The URL parser takes them as host names; the system resolver turns each into 127.0.0.1,
    and that is what is checked (and what a call would connect to)."""
    url = f"http://{host}:6379/"
    assert system_resolver(host, 6379) == ["127.0.0.1"]
    with pytest.raises(EndpointRefused, match="127.0.0.1, a loopback address that"):
        resolve_allowed(url, PUBLIC)
    with pytest.raises(EndpointRefused, match="port 6379 is not one CONCORD_LIVE_LOOPBACK"):
        resolve_allowed(url, DEV, loopback_ports=DEV_PORTS)


@pytest.mark.parametrize("addresses", [("127.0.0.1",), ("::1",), ("8.8.8.8", "127.0.0.2"),
                                       ("::ffff:127.0.0.1",), ("64:ff9b::a9fe:a9fe",)])
def test_a_name_that_resolves_to_this_machine_or_the_metadata_service_is_refused(addresses):
    with pytest.raises(EndpointRefused, match="is refused"):
        resolve_allowed("http://crs.example/", PUBLIC, resolver=fixed(*addresses))


def test_global_addresses_and_routed_wrappers_of_them_are_allowed():
    for address in ["8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808",
                    "2002:808:808::1"]:
        endpoint = resolve_allowed("https://crs.example/", PUBLIC, resolver=fixed(address))
        assert endpoint.address == address and is_public(ip_address(address))
    assert carried_ipv4(ip_address("2002:808:808::1")) == [("6to4", ip_address("8.8.8.8"))]


@pytest.mark.parametrize("url", ["http://127.0.0.1:5432/", "http://127.0.0.1:6379/",
                                 "http://localhost:6379/", "http://[::1]:5432/",
                                 "http://127.0.0.1/", "http://127.0.0.1:9000/",
                                 "http://[::ffff:127.0.0.1]:6379/"])
def test_the_development_default_refuses_loopback_ports_not_listed(url):
    with pytest.raises(EndpointRefused, match="is not one CONCORD_LIVE_LOOPBACK_PORTS allows "
                                              r"\(8000-8999\)"):
        resolve_allowed(url, DEV, loopback_ports=DEV_PORTS)


def test_listed_loopback_ports_are_allowed_whichever_entry_allows_loopback():
    assert resolve_allowed("http://127.0.0.1:8080/crs", DEV, loopback_ports=DEV_PORTS).port \
        == 8080
    assert resolve_allowed("http://[::ffff:127.0.0.1]:8999/", DEV,
                           loopback_ports=DEV_PORTS).address == "::ffff:7f00:1"
    # A name entry pointing at loopback is held to the same ports; no ports: no loopback.
    with pytest.raises(EndpointRefused, match="port 6379"):
        resolve_allowed("http://crs.lab:6379/", ["crs.lab"], resolver=fixed("127.0.0.1"),
                        loopback_ports=DEV_PORTS)
    with pytest.raises(EndpointRefused, match=r"allows \(none\)"):
        resolve_allowed("http://127.0.0.1:8080/", DEV)
    assert resolve_allowed("http://127.0.0.1:6379/", DEV,
                           loopback_ports=((6379, 6379),)).port == 6379


def test_a_name_entry_never_allows_a_link_local_address_in_an_ipv6_wrapper():
    for address in ["::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::"]:
        with pytest.raises(EndpointRefused, match="link-local"):
            resolve_allowed("http://crs.lab/", ["crs.lab"], resolver=fixed(address))


def test_a_redirect_is_not_followed():
    """A live system answering 302 to the metadata service is a failed call (`http_status`),
    and no second request leaves: the client follows no redirect."""
    redirect = Raw(302, b"", headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    with live_server(lambda body: redirect) as server:
        system = HttpLiveSystem(server.url, allowed_hosts=DEV, item_ids={"r1"},
                                review_ids=set(), loopback_ports=((1024, 65535),))
        with pytest.raises(LiveCallError, match="HTTP 302") as caught:
            system.turn(LiveRequest("tiny", "d", 1, (), "hi"))
    assert caught.value.kind == "http_status" and len(server.requests) == 1


def test_the_client_refuses_a_loopback_port_that_is_not_listed():
    with live_server(lambda body: {"response": "ok", "ranked_item_ids": []}) as server:
        system = HttpLiveSystem(server.url, allowed_hosts=DEV, item_ids={"r1"},
                                review_ids=set(), loopback_ports=DEV_PORTS)
        with pytest.raises(LiveCallError, match="CONCORD_LIVE_LOOPBACK_PORTS") as caught:
            system.turn(LiveRequest("tiny", "d", 1, (), "hi"))
    assert caught.value.kind == "refused" and server.requests == []


@pytest.mark.django_db
def test_registering_a_loopback_port_not_listed_stores_nothing(researcher, settings):
    from django.core.exceptions import ValidationError

    from evaluation.models import System
    from evaluation.services.live import live_system_create

    settings.LIVE_ALLOWED_HOSTS, settings.LIVE_LOOPBACK_PORTS = DEV, list(DEV_PORTS)
    for url in ["http://127.0.0.1:6379/", "http://localhost:5432/", "http://[::1]:6379/"]:
        with pytest.raises(ValidationError) as caught:
            live_system_create(name="Redis", owner=researcher, endpoint=url)
        assert "CONCORD_LIVE_LOOPBACK_PORTS allows (8000-8999)" in \
            caught.value.message_dict["live_endpoint"][0]
    settings.LIVE_ALLOWED_HOSTS = PUBLIC
    with pytest.raises(ValidationError, match="NAT64 of 169.254.169.254"):
        live_system_create(name="Meta", owner=researcher,
                           endpoint="http://[64:ff9b::a9fe:a9fe]/latest/meta-data/")
    assert not System.objects.exists()


@pytest.mark.parametrize("value, expected", [
    ("", "[(8000, 8999)]"), ("8080, 9000-9010", "[(8080, 8080), (9000, 9010)]")])
def test_the_loopback_ports_setting(tmp_path, value, expected):
    from tests.test_settings import manage

    show = "from django.conf import settings; print(settings.LIVE_LOOPBACK_PORTS)"
    result = manage("shell", "-c", show, tmp_path=tmp_path, DJANGO_ENV="development",
                    CONCORD_LIVE_LOOPBACK_PORTS=value)
    assert result.stdout.strip().splitlines()[-1] == expected, result.stderr


@pytest.mark.parametrize("value", ["6379-80", "http", "0", "70000", "80-"])
def test_a_malformed_loopback_ports_setting_is_refused_loudly(tmp_path, value):
    from tests.test_settings import manage

    result = manage("check", tmp_path=tmp_path, CONCORD_LIVE_LOOPBACK_PORTS=value)
    assert result.returncode != 0
    assert "is not a port (1-65535) or a range of ports" in result.stderr
