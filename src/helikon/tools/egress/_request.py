"""Parsing a forward proxy's request head, strictly: anything ambiguous is refused, never guessed.

Two forms are accepted (RFC 9112 section 3.2): `CONNECT host:port HTTP/1.1` (authority form)
and `METHOD http://host[:port]/path HTTP/1.1` (absolute form). The target's host is what the
policy judges, so every way a request could name a second host is refused: a `Host` header
that disagrees with the target, two `Host` headers, user info (`http://a@b/`), obsolete line
folding, bare CR or LF, whitespace before a header's colon, non-ASCII bytes.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

_TOKEN = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")
# Headers that describe the client-proxy hop; they are not forwarded upstream (RFC 9110 7.6.1).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    }
)


class BadRequest(Exception):
    """A request the proxy refuses to interpret; `status` is the HTTP status to answer with."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """A parsed head: the target the policy judges and, for plain HTTP, the head to send upstream."""

    method: str
    host: str
    """The target's host as written (brackets kept for IPv6); the policy normalizes it."""
    port: int
    upstream_head: bytes
    """For absolute-form requests, the origin-form head to send upstream; empty for CONNECT."""


def parse_request(head: bytes) -> ProxyRequest:
    """Parse one request head (up to and including the blank line), or raise `BadRequest`."""
    if not head.isascii():
        raise BadRequest("the request head has non-ASCII bytes")
    text = head.decode("ascii")
    if not text.endswith("\r\n\r\n"):
        raise BadRequest("the request head is incomplete")
    lines = text[:-4].split("\r\n")
    if any("\r" in line or "\n" in line for line in lines):
        raise BadRequest("the request head has a bare CR or LF")
    method, target, version = _request_line(lines[0])
    headers = [_header(line) for line in lines[1:]]
    hosts = [value for name, value in headers if name.lower() == "host"]
    if len(hosts) > 1:
        raise BadRequest("the request has more than one Host header")

    if method == "CONNECT":
        host, port = _authority(target, default_port=None)
        _check_host_header(hosts, host, port)
        return ProxyRequest(method, host, port, b"")

    if target[:7].lower() != "http://":
        if target[:8].lower() == "https://":
            raise BadRequest(
                "https:// URLs go through CONNECT; set the proxy for https and the client will tunnel"
            )
        raise BadRequest("a forward proxy needs an absolute http:// URL (or CONNECT host:port)")
    rest = target[7:]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:]
    if "#" in path:
        raise BadRequest("the request target has a fragment")
    host, port = _authority(authority, default_port=80)
    _check_host_header(hosts, host, port)
    if not path.startswith("/"):
        path = "/" + path
    return ProxyRequest(method, host, port, _upstream_head(method, path, version, authority, headers))


def _request_line(line: str) -> tuple[str, str, str]:
    parts = line.split(" ")
    if len(parts) != 3 or not all(parts):
        raise BadRequest("the request line is not 'METHOD target HTTP/1.1'")
    method, target, version = parts
    if not set(method) <= _TOKEN:
        raise BadRequest("the request method is not a token")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest(f"unsupported HTTP version {version!r}; use HTTP/1.1")
    if any(c <= " " or c == "\x7f" for c in target):
        raise BadRequest("the request target has control characters or spaces")
    return method, target, version


def _header(line: str) -> tuple[str, str]:
    if not line or line[0] in " \t":
        raise BadRequest("obsolete header line folding is not accepted")
    name, colon, value = line.partition(":")
    if not colon or not name or not set(name) <= _TOKEN:
        raise BadRequest(f"malformed header line {line[:40]!r}")
    if any((c < " " and c != "\t") or c == "\x7f" for c in value):
        raise BadRequest(f"header {name!r} has control characters")
    return name, value.strip(" \t")


def _authority(authority: str, *, default_port: int | None) -> tuple[str, int]:
    """`host[:port]` split, refusing user info and bad ports; IPv6 stays bracketed."""
    if "@" in authority:
        raise BadRequest("user info in the request target is not accepted")
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise BadRequest("unterminated IPv6 literal in the request target")
        host, after = authority[: end + 1], authority[end + 1 :]
        if after and not after.startswith(":"):
            raise BadRequest("malformed authority in the request target")
        port_text = after[1:] if after else None
    else:
        host, colon, port_text = authority.partition(":")
        if not colon:
            port_text = None
    if not host:
        raise BadRequest("the request target has no host")
    if port_text is None or port_text == "":
        if default_port is None:
            raise BadRequest("CONNECT needs host:port")
        return host, default_port
    if not port_text.isdigit() or len(port_text) > 5 or not 1 <= int(port_text) <= 65535:
        raise BadRequest(f"bad port {port_text!r} in the request target")
    return host, int(port_text)


def _check_host_header(hosts: list[str], host: str, port: int) -> None:
    """A Host header, when sent, must name the target itself: a second name is a smuggling attempt."""
    if not hosts:
        return
    try:
        header_host, header_port = _authority(hosts[0], default_port=0)
    except BadRequest:
        raise BadRequest("the Host header is malformed", status=403) from None
    # A Host header without a port names the host only (clients omit default ports).
    if header_host.lower().rstrip(".") != host.lower().rstrip(".") or header_port not in (0, port):
        raise BadRequest(f"the Host header {hosts[0]!r} does not match the request target", status=403)


def _upstream_head(
    method: str, path: str, version: str, authority: str, headers: list[tuple[str, str]]
) -> bytes:
    listed = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    kept = [
        f"{name}: {value}"
        for name, value in headers
        if name.lower() not in _HOP_BY_HOP and name.lower() not in listed and name.lower() != "host"
    ]
    # One request per connection: the proxy relays the bytes both ways and closes, so it never
    # frames bodies itself; anything the client sends after this head reaches only the host:port
    # that was judged, as through a CONNECT tunnel.
    lines = [f"{method} {path} {version}", f"Host: {authority}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("ascii")
