"""The streamable-HTTP transport: the SDK's `streamable_http_client`, with what helikon adds.

A server that refuses the credentials (401, 403) reaches the SDK's session as "Server
returned an error response", with the status dropped. The HTTP client notes the refusal, and
a handshake that fails after one says which status, which URL, and what to check.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from .errors import Connect

if TYPE_CHECKING:
    import httpx2

__all__ = ["http_transport"]


class _Seen:
    """What the HTTP client saw: a refusal."""

    __slots__ = ("refusal",)

    def __init__(self) -> None:
        self.refusal: tuple[int, str, str | None] | None = None  # status, reason, WWW-Authenticate

    async def response(self, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            challenge = response.headers.get("www-authenticate")
            self.refusal = (response.status_code, response.reason_phrase, challenge)


@contextlib.asynccontextmanager
async def http_transport(
    url: str, headers: Mapping[str, str] | None, terminate_on_close: bool
) -> AsyncGenerator[Any]:
    """Yield the SDK's (read_stream, write_stream) pair for the endpoint `url`."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    seen = _Seen()
    # The SDK's own defaults: a response stream may stay open for minutes.
    timeout = httpx2.Timeout(30.0, read=300.0)
    hooks: dict[str, list[Any]] = {"response": [seen.response]}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as client:
        try:
            async with streamable_http_client(
                url, http_client=client, terminate_on_close=terminate_on_close
            ) as streams:
                yield streams
        except Exception as exc:
            if seen.refusal is not None:
                raise Connect(_refused(url, *seen.refusal, headers)) from exc
            raise


def _refused(
    url: str, status: int, reason: str, challenge: str | None, headers: Mapping[str, str] | None
) -> str:
    sent = any(name.lower() == "authorization" for name in headers or {})
    if not sent:
        check = (
            "no `Authorization` header was sent: pass the credentials, e.g. "
            "McpServerHandle.streamable_http(url, headers={'Authorization': 'Bearer <token>'})"
        )
    elif status == 403:
        check = (
            "the credentials in the `Authorization` header were accepted but lack access: check the "
            "token's scopes or the account's permissions on this server"
        )
    else:
        check = (
            "check the credentials in the `Authorization` header: is the token valid, unexpired and "
            "meant for this server?"
        )
    said = f" ({challenge})" if challenge else ""
    return f"{url}: the server refused `initialize` with HTTP {status} {reason}{said}; {check}"
