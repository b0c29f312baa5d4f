"""The SSRF guard's rules, address by address (the corpus against servers is in integration/)."""

from __future__ import annotations

import ipaddress

import pytest

from helikon.core.exceptions import UserError
from helikon.tools._ssrf import SsrfGuard, blocked_reason, canonical_ipv4

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
    "::ffff:10.0.0.1": "carries 10.0.0.1",
    "::127.0.0.1": "carries 127.0.0.1",
    "64:ff9b::127.0.0.1": "carries 127.0.0.1",
    "64:ff9b::a9fe:a9fe": "cloud metadata",
    "64:ff9b:1::a00:1": "carries 10.0.0.1",
    "2002:a9fe:a9fe::1": "cloud metadata",
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
]


@pytest.mark.parametrize(("address", "why"), sorted(BLOCKED.items()))
def test_blocked(address: str, why: str) -> None:
    reason = blocked_reason(ipaddress.ip_address(address))
    assert reason is not None and why in reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


def test_allowances_are_exact_and_the_guard_can_be_off() -> None:
    guard = SsrfGuard.build(enabled=True, allow_private_ips=["127.0.0.1", "10.1.0.0/16"])
    assert guard.check(ipaddress.ip_address("127.0.0.1")) is None
    assert guard.check(ipaddress.ip_address("10.1.200.3")) is None
    assert guard.check(ipaddress.ip_address("127.0.0.2")) is not None
    assert guard.check(ipaddress.ip_address("10.2.0.1")) is not None
    assert guard.check(ipaddress.ip_address("169.254.169.254")) is not None
    off = SsrfGuard.build(enabled=False, allow_private_ips=())
    assert off.check(ipaddress.ip_address("169.254.169.254")) is None
    with pytest.raises(UserError, match=r"'localhost' is not an IP address or network"):
        SsrfGuard.build(enabled=True, allow_private_ips=["localhost"])


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
