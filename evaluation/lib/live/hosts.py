"""Which addresses a live system may have (docs/formats.md §4, `CONCORD_LIVE_ALLOWED_HOSTS`).

Concord calls a live system's URL from its own servers, so a registered URL is a request the
server makes on the researcher's behalf: without a check, `http://169.254.169.254/` (a cloud's
metadata service) or an address on the operator's private network would be reachable through
Concord (server-side request forgery). A URL is allowed only when every address its host name
resolves to is allowed by one entry of the list:

- an IP address or a CIDR network (`127.0.0.0/8`, `::1`, `10.1.0.0/16`): addresses inside it;
- `public`: any globally routable address (`ipaddress.ip_address(...).is_global`);
- a host name (`crs.lab.example`): that name, whatever it resolves to, except link-local,
  multicast and unspecified addresses, which no name entry ever allows (the metadata service
  lives at a link-local address; only an explicit network entry can open it).

The check runs when a system is registered and again before every call, against the address
the call then connects to (`resolve_allowed` returns it), so a name that later resolves
elsewhere (DNS rebinding) is refused at call time too.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

PUBLIC = "public"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


class EndpointRefused(ValueError):
    """The URL is not one Concord may call; the message says why and what would allow it."""


@dataclass(frozen=True)
class Endpoint:
    """A checked URL: where to connect (`address`) and what to say in the Host header."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    address: str


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise EndpointRefused(f"host {host!r} does not resolve ({error.strerror})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _parse_entries(allowed: Sequence[str]):
    networks, names, public = [], set(), False
    for raw in allowed:
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == PUBLIC:
            public = True
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.rstrip("."))
    return networks, names, public


def _never_by_name(address: IPAddress) -> bool:
    return address.is_link_local or address.is_multicast or address.is_unspecified


def parse_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path-with-query) of an http(s) URL, or EndpointRefused."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise EndpointRefused(f"not a valid URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise EndpointRefused(f"the URL must start with http:// or https:// (got {url!r})")
    if not parts.hostname:
        raise EndpointRefused(f"the URL has no host name (got {url!r})")
    if parts.username or parts.password:
        raise EndpointRefused("the URL may not contain a user name or password; reference the "
                              "key by the name of an environment variable instead")
    if parts.fragment:
        raise EndpointRefused("the URL may not contain a #fragment")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default_port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname.lower(), port or default_port, path


def resolve_allowed(url: str, allowed: Sequence[str], *,
                    resolver: Resolver = system_resolver) -> Endpoint:
    """The endpoint of URL when every address of its host is allowed, else EndpointRefused."""
    scheme, host, port, path = parse_url(url)
    networks, names, public = _parse_entries(allowed)
    if not networks and not names and not public:
        raise EndpointRefused(
            "live systems are disabled on this server: CONCORD_LIVE_ALLOWED_HOSTS is empty "
            "(the operator lists the hosts or networks Concord may call)")
    literal = host.strip("[]")
    try:
        addresses = [str(ipaddress.ip_address(literal))]
    except ValueError:
        addresses = resolver(host, port)
    if not addresses:
        raise EndpointRefused(f"host {host!r} does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text)
        if any(address in network for network in networks):
            continue
        if public and address.is_global:
            continue
        if host.rstrip(".") in names and not _never_by_name(address):
            continue
        kind = ("link-local (cloud metadata services live here)" if address.is_link_local
                else "private" if address.is_private else "loopback" if address.is_loopback
                else "public" if address.is_global else "reserved")
        raise EndpointRefused(
            f"{url} is refused: {host} is {address}, a {kind} address that "
            f"CONCORD_LIVE_ALLOWED_HOSTS does not allow (allowed: "
            f"{', '.join(allowed) or 'nothing'})")
    return Endpoint(url=url, scheme=scheme, host=host, port=port, path=path,
                    address=addresses[0])
