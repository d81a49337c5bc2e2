"""Which addresses a live system may have (docs/formats.md §4, `CONCORD_LIVE_ALLOWED_HOSTS`).

Concord calls a live system's URL from its own servers, so a registered URL is a request the
server makes on the researcher's behalf: without a check, `http://169.254.169.254/` (a cloud's
metadata service) or an address on the operator's private network would be reachable through
Concord (server-side request forgery). A URL is allowed only when
every address its host name resolves to is allowed by one entry of the list:

- an IP address or a CIDR network (`127.0.0.0/8`, `::1`, `10.1.0.0/16`): addresses inside it
  (an IPv4-mapped IPv6 address, `::ffff:10.1.2.3`, counts as the IPv4 address it connects to);
- `public`: any globally routable address. An IPv6 address that carries an IPv4 address
  (IPv4-mapped or -translated, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4
  address it carries, so `64:ff9b::a9fe:a9fe` is the metadata service and `2002:7f00:1::` is
  loopback; the forms that are never globally routable (IPv4-compatible `::a.b.c.d`, Teredo
  `2001::/32`, NAT64's local-use `64:ff9b:1::/48`) are refused whatever they carry; multicast,
  reserved, site-local and every special-purpose range `ipaddress` knows (`is_global`) are
  refused too;
- a host name (`crs.lab.example`): that name, whatever it resolves to, except link-local,
  multicast and unspecified addresses (or IPv6 forms carrying one), which no name entry ever
  allows (the metadata service lives at a link-local address; only an explicit network entry
  can open it).

Two rules hold whatever the list says: an unspecified address (`0.0.0.0`, `::`, which reach
this machine) is never called, and a loopback address (this machine: Concord's own database and
queue listen there) only on the ports `loopback_ports` lists (`CONCORD_LIVE_LOOPBACK_PORTS`).

Numeric spellings of IPv4 (`2130706433`, `0x7f.1`, `017700000001`) are resolved like names, by
the system's resolver, and the resulting address is checked: they gain nothing. The check runs
when a system is registered and again before every call, against the address the call then
connects to (`resolve_allowed` returns it), so a name that later resolves elsewhere (DNS
rebinding) is refused at call time too. The client follows no redirect: a 3xx answer is an
`http_status` failure, so a redirect cannot lead a call past this check.
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
PortRanges = Sequence[tuple[int, int]]  # inclusive (low, high) pairs: ((8000, 8999),)

NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: local use, never global
TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)
COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible ::a.b.c.d
SHARED = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
# Forms whose IPv4 address is where the packets go: judged by that address alone.
ROUTED_FORMS = frozenset({"IPv4-mapped", "IPv4-translated", "NAT64", "6to4"})


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


def carried_ipv4(address: IPAddress) -> list[tuple[str, ipaddress.IPv4Address]]:
    """(form, IPv4 address) for each IPv4 address the IPv6 ADDRESS carries, else []."""
    if address.version == 4:
        return []
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return [("IPv4-mapped", address.ipv4_mapped)]
    if address in TRANSLATED:
        return [("IPv4-translated", low)]
    if address in NAT64:
        return [("NAT64", low)]
    if address in NAT64_LOCAL:
        return [("NAT64 local-use", low)]
    if address.sixtofour is not None:
        return [("6to4", address.sixtofour)]
    if address.teredo is not None:
        server, client = address.teredo
        return [("Teredo server", server), ("Teredo client", client)]
    if address in COMPATIBLE and int(address) > 1:  # not :: or ::1
        return [("IPv4-compatible", low)]
    return []


def _plain_global(address: IPAddress) -> bool:
    """`is_global`, without the ranges it lets through (multicast, reserved, site-local)."""
    return (address.is_global and not address.is_multicast and not address.is_reserved
            and not address.is_unspecified and not address.is_loopback
            and not address.is_link_local and address not in SHARED
            and not getattr(address, "is_site_local", False))


def is_public(address: IPAddress) -> bool:
    """Globally routable, judged after unwrapping any IPv4 address ADDRESS carries."""
    forms = carried_ipv4(address)
    if forms:
        return (forms[0][0] in ROUTED_FORMS
                and all(_plain_global(ipv4) for _, ipv4 in forms))
    return _plain_global(address)


def _touches(address: IPAddress, test: Callable[[IPAddress], bool]) -> bool:
    """TEST holds for ADDRESS or for an IPv4 address it carries."""
    return test(address) or any(test(ipv4) for _, ipv4 in carried_ipv4(address))


def _never_by_name(address: IPAddress) -> bool:
    return address.is_link_local or address.is_multicast or address.is_unspecified


def _kind(address: IPAddress) -> str:
    forms = carried_ipv4(address)
    for _, ipv4 in forms:
        if not _plain_global(ipv4):
            return _kind(ipv4)
    if forms and forms[0][0] not in ROUTED_FORMS:
        return f"{forms[0][0]} (never globally routable)"
    checks = [
        (address.is_unspecified, "unspecified"), (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local (cloud metadata services live here)"),
        (address.is_multicast, "multicast"),
        (getattr(address, "is_site_local", False), "site-local"),
        (address in SHARED, "shared (carrier-grade NAT)"),
        (address.is_reserved, "reserved"), (address.is_private, "private"),
        (is_public(address), "public")]
    return next((kind for hit, kind in checks if hit), "special-purpose")


def _spelled(address: IPAddress) -> str:
    forms = carried_ipv4(address)
    return str(address) + (f" ({', '.join(f'{form} of {ipv4}' for form, ipv4 in forms)})"
                           if forms else "")


def format_ports(ranges: PortRanges) -> str:
    return ", ".join(str(low) if low == high else f"{low}-{high}"
                     for low, high in ranges) or "none"


@dataclass(frozen=True)
class _Entries:
    networks: tuple
    names: frozenset
    public: bool

    @classmethod
    def parse(cls, allowed: Sequence[str]) -> _Entries:
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
        return cls(tuple(networks), frozenset(names), public)

    def __bool__(self) -> bool:
        return bool(self.networks or self.names or self.public)

    def allow(self, address: IPAddress, host: str) -> bool:
        mapped = address.ipv4_mapped if address.version == 6 else None
        if any(address in net or (mapped is not None and mapped in net)
               for net in self.networks):
            return True
        if self.public and is_public(address):
            return True
        return host.rstrip(".") in self.names and not _touches(address, _never_by_name)


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
                    resolver: Resolver = system_resolver,
                    loopback_ports: PortRanges = ()) -> Endpoint:
    """The endpoint of URL when every address of its host is allowed, else EndpointRefused.

    LOOPBACK_PORTS: the ports a loopback address may be called on (none by default)."""
    scheme, host, port, path = parse_url(url)
    entries = _Entries.parse(allowed)
    if not entries:
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
        _check(ipaddress.ip_address(text), url=url, host=host, port=port, entries=entries,
               allowed=allowed, loopback_ports=loopback_ports)
    return Endpoint(url=url, scheme=scheme, host=host, port=port, path=path,
                    address=addresses[0])


def _check(address: IPAddress, *, url: str, host: str, port: int, entries: _Entries,
           allowed: Sequence[str], loopback_ports: PortRanges) -> None:
    where = f"{url} is refused: {host} is {_spelled(address)}"
    if _touches(address, lambda a: a.is_unspecified):
        raise EndpointRefused(f"{where}, an unspecified address (it reaches this server "
                              "itself), which Concord never calls")
    if not entries.allow(address, host):
        raise EndpointRefused(
            f"{where}, a {_kind(address)} address that CONCORD_LIVE_ALLOWED_HOSTS does not "
            f"allow (allowed: {', '.join(allowed) or 'nothing'})")
    if _touches(address, lambda a: a.is_loopback) and not any(
            low <= port <= high for low, high in loopback_ports):
        raise EndpointRefused(
            f"{where}, a loopback address (this server), and port {port} is not one "
            f"CONCORD_LIVE_LOOPBACK_PORTS allows ({format_ports(loopback_ports)}): Concord's "
            "own database and queue listen on this server's other ports")
