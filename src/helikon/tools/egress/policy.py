"""`EgressPolicy`: which hosts and ports outbound traffic may reach, decided by name.

The rules, in the order they are applied to a target `host:port`:

1. The host is normalized: lower case, one trailing dot dropped. A host that is not a valid
   DNS name (letters, digits, `-`, `_`; labels of 1-63 characters; 253 in all) and not an IP
   literal is refused. Targets must be ASCII (A-labels, `xn--...`), as clients send them.
2. A host whose last label is numeric is an IP literal (`127.0.0.1`, `2130706433`, `0x7f.1`,
   `0177.0.0.1`: every notation a resolver accepts), as is a bracketed IPv6 `[::1]`. It is
   refused unless that exact address was allowed by an IP entry.
3. The port must be one of the allowed ports: 80 and 443 unless `allow_ports` adds others.
4. A host matching a deny rule is refused: deny beats allow.
5. A host matching an allow rule is allowed; anything else is refused (`deny_all`).

A rule is either an exact host (`example.com` matches `example.com` only, not
`www.example.com`) or a wildcard `*.example.com`, which matches every name strictly below
`example.com` (`a.example.com`, `a.b.example.com`) but not `example.com` itself: allow both
to have both. Rules may be written in Unicode (`bücher.de`); they are stored as A-labels.

Example:
    ```python
    from helikon.tools import EgressPolicy

    policy = (
        EgressPolicy.deny_all()
        .allow_domains(["example.com", "*.github.com"])
        .deny_domains(["gist.github.com"])
    )
    assert policy.allows("EXAMPLE.com.", 443)
    assert policy.allows("api.github.com", 443)
    assert not policy.allows("gist.github.com", 443)
    assert not policy.allows("www.example.com", 443)
    assert not policy.allows("example.com", 22)
    assert not policy.allows("93.184.215.14", 443)
    ```
"""

from __future__ import annotations

import ipaddress
import string
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Self

from helikon.core.exceptions import UserError

__all__ = ["EgressDecision", "EgressPolicy"]

DEFAULT_PORTS = frozenset({80, 443})
_LABEL_CHARS = frozenset(string.ascii_lowercase + string.digits + "-_")
_HEX = frozenset(string.hexdigits)


@dataclass(frozen=True, slots=True, kw_only=True)
class EgressDecision:
    """One verdict: whether `host:port` may be reached, and why (`reason` is for people and models)."""

    allowed: bool
    host: str
    port: int
    reason: str
    method: str = ""
    """The request's method (`CONNECT`, `GET`, ...) when the proxy decided, else empty."""


@dataclass(frozen=True, slots=True)
class _Rules:
    exact: frozenset[str] = frozenset()
    wildcard: frozenset[str] = frozenset()
    """Suffixes of `*.suffix` rules: a host matches when one of its proper parents is here."""

    def matches(self, host: str) -> bool:
        if host in self.exact:
            return True
        parent = host
        while "." in parent:
            parent = parent.split(".", 1)[1]
            if parent in self.wildcard:
                return True
        return False

    def add(self, entries: list[str]) -> _Rules:
        exact, wildcard = set(self.exact), set(self.wildcard)
        for entry in entries:
            if entry.startswith("*."):
                name = _rule_name(entry[2:], entry)
                if _ip_literal(name) is not None:
                    raise UserError(f"egress rule {entry!r}: a wildcard applies to names, not IP addresses")
                wildcard.add(name)
            else:
                exact.add(_rule_name(entry, entry))
        return _Rules(frozenset(exact), frozenset(wildcard))

    def describe(self) -> list[str]:
        return sorted(self.exact) + sorted(f"*.{s}" for s in self.wildcard)


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """A domain allow/deny policy for outbound connections; start from `EgressPolicy.deny_all()`."""

    allowed: _Rules = field(default_factory=_Rules)
    denied: _Rules = field(default_factory=_Rules)
    ports: frozenset[int] = DEFAULT_PORTS

    @classmethod
    def deny_all(cls) -> Self:
        """A policy that refuses everything until `allow_domains` names what may be reached."""
        return cls()

    def allow_domains(self, domains: Iterable[str]) -> Self:
        """A copy that also allows these hosts: `example.com` (exact), `*.example.com` (below it), IPs."""
        return replace(self, allowed=self.allowed.add(_entries(domains, "allow_domains")))

    def deny_domains(self, domains: Iterable[str]) -> Self:
        """A copy that refuses these hosts even when an allow rule matches them (deny beats allow)."""
        return replace(self, denied=self.denied.add(_entries(domains, "deny_domains")))

    def allow_ports(self, ports: Iterable[int]) -> Self:
        """A copy that also allows these TCP ports (80 and 443 are allowed from the start)."""
        if isinstance(ports, int):
            raise UserError("allow_ports: pass a list of ports, e.g. allow_ports([8080])")
        checked = set(self.ports)
        for port in ports:
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                raise UserError(f"allow_ports: {port!r} is not a TCP port; give integers from 1 to 65535")
            checked.add(port)
        return replace(self, ports=frozenset(checked))

    def allows(self, host: str, port: int) -> bool:
        """Whether `host:port` may be reached (see `decide` for the reason)."""
        return self.decide(host, port).allowed

    def decide(self, host: str, port: int, *, method: str = "") -> EgressDecision:
        """The verdict on one target, with a reason that says what is allowed when it refuses."""
        name = normalize_host(host)
        if name is None:
            return EgressDecision(
                allowed=False,
                host=host,
                port=port,
                method=method,
                reason=f"{host!r} is not a valid host name",
            )

        def verdict(allowed: bool, reason: str) -> EgressDecision:
            return EgressDecision(allowed=allowed, host=name, port=port, method=method, reason=reason)

        target = f"{name}:{port}"
        if port not in self.ports:
            return verdict(False, f"port {port} is not allowed (allowed ports: {_ports(self.ports)})")
        if self.denied.matches(name):
            return verdict(False, f"{name} is on the egress deny list")
        if self.allowed.matches(name):
            return verdict(True, f"{target} is allowed")
        if _ip_literal(name) is not None:
            return verdict(False, f"{name} is an IP address; egress is allowed by host name only")
        return verdict(False, f"{name} is not on the egress allow list ({self.describe_allowed()})")

    def describe_allowed(self) -> str:
        """The allow list as one line, e.g. `allowed: example.com, *.github.com`."""
        rules = self.allowed.describe()
        return f"allowed: {', '.join(rules)}" if rules else "nothing is allowed"


def normalize_host(host: str) -> str | None:
    """`host` as the rules compare it (lower case, no trailing dot, canonical IP), or None if invalid.

    Only ASCII is accepted: a target on the wire is already in A-labels.
    """
    if not host.isascii():
        return None
    name = host.lower()
    if name.startswith("[") and name.endswith("]"):
        return _ipv6(name[1:-1])
    if ":" in name:
        return _ipv6(name)
    if name.endswith("."):
        name = name[:-1]
    if not name or len(name) > 253:
        return None
    labels = name.split(".")
    if any(not label or len(label) > 63 or not set(label) <= _LABEL_CHARS for label in labels):
        return None
    if _numeric(labels[-1]):
        # A numeric last label makes the whole host an IPv4 literal (WHATWG URL): parse it in
        # every notation resolvers accept, or refuse it; it is never a name.
        return _ip_literal(name)
    return name


def _ip_literal(name: str) -> str | None:
    """The canonical address if `name` is an IP literal in any notation, else None."""
    if name.startswith("[") and name.endswith("]"):
        return _ipv6(name[1:-1])
    if ":" in name:
        return _ipv6(name)
    parts = name.split(".")
    if not _numeric(parts[-1]) or len(parts) > 4:
        return None
    numbers: list[int] = []
    for part in parts:
        number = _ipv4_number(part)
        if number is None:
            return None
        numbers.append(number)
    # `a.b.c.d`, `a.b.c` (c fills 16 bits), `a.b` (b fills 24), `a` (32 bits): inet_aton's forms.
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, n in enumerate(head):
        value += n << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _numeric(label: str) -> bool:
    return label.isdigit() or (label.startswith("0x") and set(label[2:]) <= _HEX)


def _ipv4_number(part: str) -> int | None:
    if part.startswith("0x"):
        return int(part[2:], 16) if part[2:] and set(part[2:]) <= _HEX else (0 if part == "0x" else None)
    if not part.isdigit():
        return None
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8) if set(part) <= set("01234567") else None
    return int(part)


def _ipv6(text: str) -> str | None:
    if "%" in text:  # a zone id names an interface, not a destination the rules could judge
        return None
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    return f"[{address.compressed}]"


def _rule_name(text: str, entry: str) -> str:
    """A rule's host in the normalized form targets are compared in; Unicode becomes A-labels."""
    stripped = text.strip()
    if stripped != text or not stripped:
        raise UserError(f"egress rule {entry!r}: give a bare host name like 'example.com' or '*.example.com'")
    if "*" in stripped:
        raise UserError(
            f"egress rule {entry!r}: '*' is allowed only as a whole leftmost label, as in '*.example.com'"
        )
    if "://" in stripped or "/" in stripped:
        raise UserError(f"egress rule {entry!r}: give a host name, not a URL (e.g. 'example.com')")
    ascii_name = stripped
    if not stripped.isascii():
        try:
            ascii_name = stripped.rstrip(".").encode("idna").decode("ascii")
        except UnicodeError:
            raise UserError(f"egress rule {entry!r}: not a valid internationalized domain name") from None
    name = normalize_host(ascii_name)
    if name is None:
        raise UserError(
            f"egress rule {entry!r}: not a valid host name; use letters, digits and '-', "
            "labels separated by '.', or an IP address"
        )
    return name


def _entries(domains: Iterable[str], method: str) -> list[str]:
    if isinstance(domains, str):
        raise UserError(f"{method}: pass a list of hosts, e.g. {method}([{domains!r}])")
    entries = list(domains)
    for entry in entries:
        if not isinstance(entry, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"{method}: {entry!r} is not a host name; pass strings such as 'example.com'")
    return entries


def _ports(ports: frozenset[int]) -> str:
    return ", ".join(str(p) for p in sorted(ports))
