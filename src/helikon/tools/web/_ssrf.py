"""The SSRF guard's rules: which resolved addresses WebFetch may connect to.

One decision, `blocked_reason(ip)`, made on the address a host name resolved to, at connect
time (see `_guarded_net`), so that neither a name pointing inward nor one that changes its
answer between a check and the connect (DNS rebinding) gets through. An IPv6 address that
carries an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo, ISATAP) is
judged by the IPv4 rows too, for each IPv4 address it carries.

`SsrfGuard.check` applies the rules less a tool's two allowances: networks whose addresses
pass on any connection (`allow_private_ips`), and hosts (with a port) whose connections pass
to whatever they resolve to (`allow_private_hosts`).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from helikon.core.exceptions import UserError
from helikon.tools.egress.policy import DEFAULT_PORTS, normalize_host

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Each row: a network no fetch may reach, and why, as the model reads it.
BLOCKED_NETWORKS: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(net), why)
    for net, why in (
        ("0.0.0.0/8", "an unspecified/'this network' address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a carrier-grade NAT (CGNAT) address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address (cloud metadata lives at 169.254.169.254)"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "an IETF protocol-assignment address"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "the broadcast address"),
        ("240.0.0.0/4", "a reserved address"),
        ("::/128", "the unspecified address"),
        ("::1/128", "a loopback address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address (never global; its IPv4 part may sit anywhere)"),
        ("100::/64", "a discard-only address"),
        ("2001:2::/48", "a benchmarking address"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("fc00::/7", "a unique-local (ULA) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)

# IPv6 forms that carry an IPv4 address; `carried_ipv4` says where each keeps it.
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")  # ::ffff:a.b.c.d
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # ::ffff:0:a.b.c.d (SIIT)
_COMPATIBLE = ipaddress.ip_network("::/96")  # ::a.b.c.d (deprecated)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix; the local-use one is a row
_6TO4 = ipaddress.ip_network("2002::/16")  # 2002:AABB:CCDD::/48
_TEREDO = ipaddress.ip_network("2001::/32")  # 2001:0:SERVER:flags:port:~CLIENT
_ISATAP = 0x0000_5EFE  # an interface identifier 0000:5efe:a.b.c.d, under any /64 prefix
_ISATAP_MASK = 0xFCFF_FFFF  # ... with the universal/group bits either way (0100, 0200, 0300)
_IPV4 = 0xFFFF_FFFF


def carried_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """Each IPv4 address `ip` carries, with the form that carries it (none for a plain IPv6 address)."""
    value = int(ip)
    last = ipaddress.IPv4Address(value & _IPV4)
    carried: list[tuple[str, ipaddress.IPv4Address]] = []
    if ip in _MAPPED:
        carried.append(("IPv4-mapped", last))
    if ip in _TRANSLATED:
        carried.append(("IPv4-translated", last))
    if ip in _COMPATIBLE:
        carried.append(("IPv4-compatible", last))
    if ip in _NAT64:
        carried.append(("NAT64", last))
    if ip in _6TO4:
        carried.append(("6to4", ipaddress.IPv4Address((value >> 80) & _IPV4)))
    if ip in _TEREDO:
        carried.append(("Teredo server", ipaddress.IPv4Address((value >> 64) & _IPV4)))
        carried.append(("Teredo client", ipaddress.IPv4Address(~value & _IPV4)))  # stored inverted
    if (value >> 32) & _ISATAP_MASK == _ISATAP:
        carried.append(("ISATAP", last))
    return carried


def blocked_reason(ip: IPAddress) -> str | None:
    """Why a fetch may not connect to `ip`, or None when it may."""
    for net, why in BLOCKED_NETWORKS:
        if ip.version == net.version and ip in net:
            return f"{ip} is {why}"
    if isinstance(ip, ipaddress.IPv6Address):
        for form, inner in carried_ipv4(ip):
            why = blocked_reason(inner)
            if why is not None:
                return f"{ip} carries {inner} ({form}), and {why}"
    return None


@dataclass(frozen=True, slots=True)
class SsrfGuard:
    """The guard one WebFetchTool uses: the rules, less what its allowances let through.

    `allowed` (`allow_private_ips`) lets an address in these networks through on every
    connection, whatever host a URL or a redirect named, on any port. `allowed_hosts`
    (`allow_private_hosts`) lets a connection to one `(host, port)`, as a URL names it (the
    caller's or a redirect hop's), through to whatever that host resolves to.
    """

    enabled: bool = True
    allowed: tuple[IPNetwork, ...] = ()
    allowed_hosts: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def build(
        cls, *, enabled: bool, allow_private_ips: Iterable[str] = (), allow_private_hosts: Iterable[str] = ()
    ) -> SsrfGuard:
        """Parse the allowances (IPs or CIDR networks; hosts, ports optional); a bad one is a `UserError`."""
        if isinstance(allow_private_ips, str):
            allow_private_ips = [allow_private_ips]
        if isinstance(allow_private_hosts, str):
            allow_private_hosts = [allow_private_hosts]
        allowed: list[IPNetwork] = []
        for entry in allow_private_ips:
            try:
                allowed.append(ipaddress.ip_network(entry, strict=False))
            except (TypeError, ValueError):
                raise UserError(
                    f"allow_private_ips: {entry!r} is not an IP address or network; "
                    "give addresses like '127.0.0.1' or '10.1.0.0/16'"
                ) from None
        hosts = frozenset(pair for entry in allow_private_hosts for pair in host_ports(entry))
        return cls(enabled=enabled, allowed=tuple(allowed), allowed_hosts=hosts)

    def check(self, ip: IPAddress, *, host: str, port: int) -> str | None:
        """Why a connection to `ip` is refused, or None; `host` (as its URL names it) resolved to `ip`."""
        if not self.enabled:
            return None
        why = blocked_reason(ip)
        if why is None or any(ip.version == net.version and ip in net for net in self.allowed):
            return None
        if (normalize_host(host), port) in self.allowed_hosts:
            return None
        return why


def host_ports(entry: str) -> list[tuple[str, int]]:
    """An `allow_private_hosts` entry as `(host, port)` pairs: `host:port`, or `host` on 80 and 443.

    The host is normalized as the egress policy normalizes it (lower case, no trailing dot, an
    IPv4 address in any notation dotted, IPv6 in brackets), so each spelling matches the others.
    """
    hint = (
        f"allow_private_hosts: {entry!r} is not a host or host:port; give entries like "
        "'127.0.0.1:8080', 'wiki.internal' (ports 80 and 443) or '[::1]:8080'"
    )
    if not isinstance(entry, str) or not entry or "/" in entry or "*" in entry or "@" in entry:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(hint)
    host, colon, port = entry, "", ""
    if entry.startswith("["):  # [v6] or [v6]:port
        host, bracket, rest = entry.partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise UserError(hint)
        host, colon, port = host + "]", rest[:1], rest[1:]
    elif entry.count(":") == 1:  # host:port; more colons are a bare IPv6 address
        host, colon, port = entry.partition(":")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise UserError(hint) from None
    name = normalize_host(host)
    if name is None or (colon and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535)):
        raise UserError(hint)
    return [(name, int(port))] if colon else [(name, p) for p in sorted(DEFAULT_PORTS)]


# A host made of numeric labels (decimal, 0-octal, 0x-hex) is an IPv4 address in the
# inet_aton notations (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`), as browsers read it.
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}\.?", re.IGNORECASE)


def canonical_ipv4(host: str) -> str | None:
    """The dotted-quad form of a numeric IPv4 host in any inet_aton notation, or None."""
    if not _NUMERIC_HOST.fullmatch(host):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host.rstrip(".")))
    except OSError:
        return None


__all__ = ["BLOCKED_NETWORKS", "SsrfGuard", "blocked_reason", "canonical_ipv4", "carried_ipv4", "host_ports"]
