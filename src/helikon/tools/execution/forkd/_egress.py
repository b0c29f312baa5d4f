"""The egress side of `ForkdBackend.enforce_egress`: the proxy endpoint, its probe, the policy's wire form."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from helikon.core.exceptions import UserError

from ._client import ForkdError

if TYPE_CHECKING:
    from helikon.core._internal.json_value import JsonObject
    from helikon.tools.egress.policy import EgressPolicy

_PROBE_TIMEOUT = 3.0
"""Seconds the build-time TCP connect to the proxy may take."""


def parse_endpoint(endpoint: object) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`) split, or a UserError saying what to give."""
    hint = f"enforce_egress({endpoint!r}): give the proxy as 'host:port', e.g. 'proxy-host:8443'"
    if not isinstance(endpoint, str) or "://" in endpoint or "/" in endpoint:
        raise UserError(hint)
    host, sep, port = endpoint.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if (
        not sep
        or not host
        or not (port.isascii() and port.isdigit())
        or not 1 <= int(port) <= 65535
        or any(c.isspace() for c in host)
    ):
        raise UserError(hint)
    return host, int(port)


def join_endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def probe(host: str, port: int) -> None:
    """Fail closed unless the egress proxy accepts a TCP connection."""
    try:
        with socket.create_connection((host, port), timeout=_PROBE_TIMEOUT):
            pass
    except OSError as exc:
        raise ForkdError(
            f"ForkdBackend: the egress proxy at {join_endpoint(host, port)} is unreachable ({exc}); "
            "enforce_egress() fails closed: start the proxy or fix the endpoint",
            code="egress_unreachable",
        ) from None


def policy_json(policy: EgressPolicy) -> JsonObject:
    return {
        "allow": list(policy.allowed.describe()),
        "deny": list(policy.denied.describe()),
        "ports": [*sorted(policy.ports)],
    }
