"""EgressPolicy: the rules as written, and a corpus of targets that try to slip past them."""

from __future__ import annotations

import socket

import pytest

from helikon.core.exceptions import UserError
from helikon.tools import EgressPolicy
from helikon.tools.egress.policy import normalize_host

POLICY = (
    EgressPolicy.deny_all()
    .allow_domains(["example.com", "*.github.com", "bücher.de", "10.0.0.5", "::1"])
    .deny_domains(["gist.github.com"])
)


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("example.com", 443),
        ("example.com", 80),
        ("EXAMPLE.COM", 443),
        ("Example.Com.", 443),
        ("api.github.com", 443),
        ("a.b.c.github.com", 443),
        ("xn--bcher-kva.de", 443),
        ("XN--BCHER-KVA.DE", 443),
        ("10.0.0.5", 443),
        ("012.0.0.5", 443),  # octal 012 is 10: the same address, so the same rule
        ("167772165", 443),  # 10.0.0.5 as one decimal number
        ("[::1]", 443),
        ("[0:0:0:0:0:0:0:1]", 443),
    ],
)
def test_allowed_targets(host: str, port: int) -> None:
    decision = POLICY.decide(host, port)
    assert decision.allowed, decision.reason


@pytest.mark.parametrize(
    ("host", "port", "why"),
    [
        # names close to an allowed one
        ("www.example.com", 443, "allow list"),  # exact rules do not cover subdomains
        ("example.com.evil.test", 443, "allow list"),
        ("evil-example.com", 443, "allow list"),
        ("notexample.com", 443, "allow list"),
        ("example.co", 443, "allow list"),
        ("github.com", 443, "allow list"),  # *.github.com is strictly below github.com
        ("evilgithub.com", 443, "allow list"),
        ("github.com.evil.test", 443, "allow list"),
        ("gist.github.com", 443, "deny list"),  # deny beats allow
        ("GIST.GITHUB.COM.", 443, "deny list"),
        # ports
        ("example.com", 22, "port 22"),
        ("example.com", 8443, "port 8443"),
        ("example.com", 0, "port 0"),
        # IP literals in every notation resolvers accept
        ("93.184.215.14", 443, "IP address"),
        ("127.0.0.1", 443, "IP address"),
        ("127.1", 443, "IP address"),
        ("2130706433", 443, "IP address"),
        ("0x7f000001", 443, "IP address"),
        ("0x7f.0.0.1", 443, "IP address"),
        ("0177.0.0.1", 443, "IP address"),
        ("169.254.169.254", 80, "IP address"),
        ("10.0.0.6", 443, "IP address"),
        ("[::ffff:10.0.0.5]", 443, "IP address"),  # a different address family: not the allowed one
        ("[::2]", 443, "IP address"),
        ("[fe80::1%25eth0]", 443, "not a valid host"),
        ("[fe80::1%eth0]", 443, "not a valid host"),
        # malformed names
        ("", 443, "not a valid host"),
        (".", 443, "not a valid host"),
        ("example..com", 443, "not a valid host"),
        ("example.com..", 443, "not a valid host"),
        ("exa mple.com", 443, "not a valid host"),
        ("example.com\x00.evil.test", 443, "not a valid host"),
        ("example.com%2eevil.test", 443, "not a valid host"),
        ("user@example.com", 443, "not a valid host"),
        ("example.com/", 443, "not a valid host"),
        ("bücher.de", 443, "not a valid host"),  # on the wire, a host is A-labels
        ("\uff45xample.com", 443, "not a valid host"),  # fullwidth e
        ("a" * 64 + ".com", 443, "not a valid host"),
        (("a" * 60 + ".") * 5 + "com", 443, "not a valid host"),
        ("1.2.3.4.5", 443, "not a valid host"),
        ("foo.123", 443, "not a valid host"),
        ("256.0.0.1", 443, "not a valid host"),
        ("0x1.0x100000000", 443, "not a valid host"),
        ("08.0.0.1", 443, "not a valid host"),  # 8 is not an octal digit
        ("[not-ipv6]", 443, "not a valid host"),
    ],
)
def test_refused_targets(host: str, port: int, why: str) -> None:
    decision = POLICY.decide(host, port)
    assert not decision.allowed
    assert why in decision.reason


@pytest.mark.parametrize(
    "text", ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.0.1", "10.1"]
)
def test_ip_notations_match_the_resolvers_reading(text: str) -> None:
    # Proof that these are IP literals and not names: the C library reads them as addresses.
    assert normalize_host(text) == socket.inet_ntoa(socket.inet_aton(text))


def test_a_refusal_says_what_is_allowed() -> None:
    reason = POLICY.decide("evil.test", 443).reason
    assert "evil.test" in reason
    assert "example.com" in reason
    assert "*.github.com" in reason
    assert "allowed ports: 443, 80" not in POLICY.decide("example.com", 22).reason
    assert "allowed ports: 80, 443" in POLICY.decide("example.com", 22).reason


def test_deny_all_allows_nothing() -> None:
    policy = EgressPolicy.deny_all()
    assert not policy.allows("example.com", 443)
    assert "nothing is allowed" in policy.decide("example.com", 443).reason


def test_builders_return_new_policies() -> None:
    base = EgressPolicy.deny_all()
    wider = base.allow_domains(["example.com"]).allow_ports([8080])
    assert not base.allows("example.com", 443)
    assert wider.allows("example.com", 8080)
    assert not base.allows("example.com", 8080)


def test_unicode_rules_become_a_labels() -> None:
    assert POLICY.allows("xn--bcher-kva.de", 443)
    assert EgressPolicy.deny_all().allow_domains(["*.bücher.de"]).allows("www.xn--bcher-kva.de", 443)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: EgressPolicy.deny_all().allow_domains("example.com"), "pass a list"),
        (lambda: EgressPolicy.deny_all().deny_domains("example.com"), "pass a list"),
        (lambda: EgressPolicy.deny_all().allow_domains([3]), "not a host name"),  # type: ignore[list-item]
        (lambda: EgressPolicy.deny_all().allow_domains(["*"]), "whole leftmost label"),
        (lambda: EgressPolicy.deny_all().allow_domains(["*example.com"]), "whole leftmost label"),
        (lambda: EgressPolicy.deny_all().allow_domains(["example.*"]), "whole leftmost label"),
        (lambda: EgressPolicy.deny_all().allow_domains(["a.*.example.com"]), "whole leftmost label"),
        (lambda: EgressPolicy.deny_all().allow_domains(["https://example.com"]), "not a URL"),
        (lambda: EgressPolicy.deny_all().allow_domains(["example.com/path"]), "not a URL"),
        (lambda: EgressPolicy.deny_all().allow_domains([" example.com"]), "bare host name"),
        (lambda: EgressPolicy.deny_all().allow_domains([""]), "bare host name"),
        (lambda: EgressPolicy.deny_all().allow_domains(["exa mple.com"]), "not a valid host name"),
        (lambda: EgressPolicy.deny_all().allow_domains(["*.10.0.0"]), "not IP addresses"),
        (lambda: EgressPolicy.deny_all().allow_domains(["a" * 64 + ".com"]), "not a valid"),
        (lambda: EgressPolicy.deny_all().allow_ports(8080), "pass a list"),  # type: ignore[arg-type]
        (lambda: EgressPolicy.deny_all().allow_ports([0]), "1 to 65535"),
        (lambda: EgressPolicy.deny_all().allow_ports([65536]), "1 to 65535"),
        (lambda: EgressPolicy.deny_all().allow_ports([True]), "1 to 65535"),
        (lambda: EgressPolicy.deny_all().allow_ports(["443"]), "1 to 65535"),  # type: ignore[list-item]
    ],
)
def test_bad_rules_are_user_errors(call: object, says: str) -> None:
    assert callable(call)
    with pytest.raises(UserError, match=says):
        call()
