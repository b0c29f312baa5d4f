"""The SSRF guard's rules: which resolved addresses WebFetch may connect to.

One decision, `blocked_reason(ip)`, made on the address a host name resolved to, at connect
time (see `_guarded_net`), so that neither a name pointing inward nor one that changes its
answer between a check and the connect (DNS rebinding) gets through. An IPv6 address that
carries an IPv4 address (mapped, compatible, NAT64, 6to4) is judged by the IPv4 address too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from helikon.core.exceptions import UserError

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
        ("100::/64", "a discard-only address"),
        ("2001:db8::/32", "a documentation address"),
        ("fc00::/7", "a unique-local (ULA) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)

# IPv6 prefixes whose addresses carry an IPv4 address in their low (or, for 6to4, next) 32 bits.
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_6TO4 = ipaddress.ip_network("2002::/16")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any."""
    value = int(ip)
    if ip in _MAPPED or ip in _COMPATIBLE or any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _6TO4:
        return ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)
    return None


def blocked_reason(ip: IPAddress) -> str | None:
    """Why a fetch may not connect to `ip`, or None when it may."""
    for net, why in BLOCKED_NETWORKS:
        if ip.version == net.version and ip in net:
            return f"{ip} is {why}"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            why = blocked_reason(inner)
            if why is not None:
                return f"{ip} carries {inner}, and {why}"
    return None


@dataclass(frozen=True, slots=True)
class SsrfGuard:
    """The guard one WebFetchTool uses: the rules, less the networks explicitly allowed."""

    enabled: bool = True
    allowed: tuple[IPNetwork, ...] = ()

    @classmethod
    def build(cls, *, enabled: bool, allow_private_ips: Iterable[str]) -> SsrfGuard:
        """Parse the allowances (IPs or CIDR networks); a bad one is a `UserError`."""
        if isinstance(allow_private_ips, str):
            allow_private_ips = [allow_private_ips]
        allowed: list[IPNetwork] = []
        for entry in allow_private_ips:
            try:
                allowed.append(ipaddress.ip_network(entry, strict=False))
            except (TypeError, ValueError):
                raise UserError(
                    f"allow_private_ips: {entry!r} is not an IP address or network; "
                    "give addresses like '127.0.0.1' or '10.1.0.0/16'"
                ) from None
        return cls(enabled=enabled, allowed=tuple(allowed))

    def check(self, ip: IPAddress) -> str | None:
        """Why `ip` is refused, or None when it may be connected to."""
        if not self.enabled:
            return None
        why = blocked_reason(ip)
        if why is None or any(ip.version == net.version and ip in net for net in self.allowed):
            return None
        return why


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


__all__ = ["BLOCKED_NETWORKS", "SsrfGuard", "blocked_reason", "canonical_ipv4", "embedded_ipv4"]
