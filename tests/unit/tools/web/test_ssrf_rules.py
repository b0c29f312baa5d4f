"""The SSRF guard's rules, address by address (the corpus against servers is in integration/)."""

from __future__ import annotations

import ipaddress

import pytest

from helikon.core.exceptions import UserError
from helikon.tools.web._ssrf import SsrfGuard, blocked_reason, canonical_ipv4, host_ports

BLOCKED = {
    "10.1.2.3": "private",
    "172.31.255.255": "private",
    "192.168.0.1": "private",
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "169.254.169.254": "cloud metadata",
    "100.64.0.1": "CGNAT",
    "100.127.255.255": "CGNAT",
    "0.0.0.0": "unspecified",
    "224.0.0.1": "multicast",
    "240.0.0.1": "reserved",
    "255.255.255.255": "broadcast",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fc00::1": "unique-local",
    "fd12:3456::1": "unique-local",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "carries 127.0.0.1",
    "::ffff:169.254.169.254": "cloud metadata",
    "::ffff:10.0.0.1": "carries 10.0.0.1 (IPv4-mapped)",
    "::127.0.0.1": "carries 127.0.0.1",
    "64:ff9b::127.0.0.1": "carries 127.0.0.1",
    "64:ff9b::a9fe:a9fe": "cloud metadata",
    "64:ff9b:1::a00:1": "local-use NAT64",
    "2002:a9fe:a9fe::1": "cloud metadata",
    # IPv4-translated (SIIT, ::ffff:0:a.b.c.d), unlike IPv4-mapped (::ffff:a.b.c.d)
    "::ffff:0:127.0.0.1": "carries 127.0.0.1 (IPv4-translated)",
    "::ffff:0:a9fe:a9fe": "cloud metadata",
    "::ffff:0:10.1.2.3": "private",
    # Teredo (2001::/32): the client's address, inverted, in the last 32 bits; the server's in 32-63
    "2001:0:4136:e378:8000:63bf:80ff:fffe": "carries 127.0.0.1 (Teredo client)",
    "2001:0:a9fe:a9fe::f7f7:f7f7": "carries 169.254.169.254 (Teredo server)",
    # ISATAP: any /64 prefix, an interface identifier of [02]00:5efe:a.b.c.d
    "2001:db9::5efe:7f00:1": "carries 127.0.0.1 (ISATAP)",
    "2606:4700::200:5efe:a9fe:a9fe": "cloud metadata",
    "2606:4700::100:5efe:c0a8:101": "carries 192.168.1.1 (ISATAP)",
    # 6to4 and NAT64, the forms named again with their form
    "2002:7f00:1::1": "carries 127.0.0.1 (6to4)",
    "64:ff9b::10.0.0.1": "carries 10.0.0.1 (NAT64)",
    "::10.0.0.1": "carries 10.0.0.1 (IPv4-compatible)",
    # the local-use NAT64 prefix is never global, whatever its IPv4 address sits (here at /48)
    "64:ff9b:1:a9fe:a9:fe00:808:808": "local-use NAT64",
    "64:ff9b:1::808:808": "local-use NAT64",
    "2001:2::1": "benchmarking",
    "3fff::1": "documentation",
}

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "100.63.255.255",
    "100.128.0.0",
    "172.32.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "::ffff:0:808:808",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo: server 65.54.227.120, client 8.8.8.8
    "2001:db9::200:5efe:808:808",  # ISATAP carrying 8.8.8.8
    "2002:808:808::1",
    "2001:4860:4860::8888",
]


@pytest.mark.parametrize(("address", "why"), sorted(BLOCKED.items()))
def test_blocked(address: str, why: str) -> None:
    reason = blocked_reason(ipaddress.ip_address(address))
    assert reason is not None and why in reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


def check(guard: SsrfGuard, address: str, host: str = "any.example", port: int = 80) -> str | None:
    return guard.check(ipaddress.ip_address(address), host=host, port=port)


def test_address_allowances_are_exact_and_the_guard_can_be_off() -> None:
    guard = SsrfGuard.build(enabled=True, allow_private_ips=["127.0.0.1", "10.1.0.0/16"])
    # An allowed address passes whatever host named it, on any port.
    assert check(guard, "127.0.0.1", "evil.example", 6379) is None
    assert check(guard, "10.1.200.3") is None
    assert check(guard, "127.0.0.2") is not None
    assert check(guard, "10.2.0.1") is not None
    assert check(guard, "169.254.169.254") is not None
    off = SsrfGuard.build(enabled=False, allow_private_ips=())
    assert check(off, "169.254.169.254") is None
    with pytest.raises(UserError, match=r"'localhost' is not an IP address or network"):
        SsrfGuard.build(enabled=True, allow_private_ips=["localhost"])


def test_a_host_allowance_lets_only_that_host_and_port_through() -> None:
    guard = SsrfGuard.build(
        enabled=True, allow_private_hosts=["127.0.0.1:8080", "Wiki.Internal.", "[::1]:9000"]
    )
    assert check(guard, "127.0.0.1", "127.0.0.1", 8080) is None
    assert check(guard, "127.0.0.1", "127.0.0.1", 8081) is not None  # another port: another service
    assert check(guard, "127.0.0.1", "localhost", 8080) is not None  # another name resolving there
    assert check(guard, "127.0.0.1", "evil.example", 8080) is not None
    # A host without a port: the web's ports, 80 and 443, as the egress policy's default.
    assert check(guard, "10.0.0.7", "wiki.internal", 443) is None
    assert check(guard, "10.0.0.7", "wiki.internal.", 80) is None
    assert check(guard, "10.0.0.7", "wiki.internal", 8080) is not None
    assert check(guard, "10.0.0.7", "a.wiki.internal", 443) is not None  # one host, not its subdomains
    assert check(guard, "::1", "::1", 9000) is None  # the host as the connection names it: no brackets
    # Every spelling of an IPv4 address is that address.
    assert (
        check(
            SsrfGuard.build(enabled=True, allow_private_hosts=["0x7f.1:8080"]), "127.0.0.1", "127.0.0.1", 8080
        )
        is None
    )


@pytest.mark.parametrize(
    ("entry", "pairs"),
    [
        ("127.0.0.1:8080", [("127.0.0.1", 8080)]),
        ("2130706433:8080", [("127.0.0.1", 8080)]),
        ("Wiki.Internal.", [("wiki.internal", 80), ("wiki.internal", 443)]),
        ("[::1]:8080", [("[::1]", 8080)]),
        ("[0::1]", [("[::1]", 80), ("[::1]", 443)]),
        ("::1", [("[::1]", 80), ("[::1]", 443)]),
        ("bücher.example:81", [("xn--bcher-kva.example", 81)]),
    ],
)
def test_host_allowance_entries(entry: str, pairs: list[tuple[str, int]]) -> None:
    assert host_ports(entry) == pairs


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "http://127.0.0.1:8080/",
        "127.0.0.1:0",
        "127.0.0.1:99999",
        "host:http",
        "*.internal",
        "a b",
        "[::1]x",
        "u@h",
        "[::1",
        "[::1]:",
        "host:",
        "h:\uff18",  # a digit, but not an ASCII one
    ],
)
def test_a_bad_host_allowance_says_what_to_give(entry: str) -> None:
    with pytest.raises(
        UserError, match=r"allow_private_hosts: .* is not a host or host:port; give entries like"
    ):
        SsrfGuard.build(enabled=True, allow_private_hosts=[entry])


@pytest.mark.parametrize(
    ("host", "dotted"),
    [
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("127.0.0.1.", "127.0.0.1"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("0x", None),
        ("4294967296", None),
        ("deadbeef", None),
    ],
)
def test_numeric_hosts_are_read_as_browsers_read_them(host: str, dotted: str | None) -> None:
    assert canonical_ipv4(host) == dotted
