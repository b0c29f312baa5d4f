"""The streamable-HTTP transport: the SDK's `streamable_http_client`, with what helikon adds.

- A server that refuses the credentials (401, 403) reaches the SDK's session as "Server
  returned an error response", with the status dropped. The HTTP client notes the refusal, and
  a handshake that fails after one says which status, which URL, and what to check.
- Ending the session on close (DELETE) is sent here rather than by the SDK, which logs a
  warning for any answer but 2xx: a server that restarted answers 404 (or 400) for the session
  it forgot, which is normal. Only an answer worth a look is a warning.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from .errors import Connect

if TYPE_CHECKING:
    import httpx2

__all__ = ["http_transport"]

_log = logging.getLogger("helikon.mcp")

# The headers that name a session; the DELETE that ends it carries them as the requests did.
_SESSION_HEADERS = ("mcp-session-id", "mcp-protocol-version")
# What a server answers a DELETE for a session it does not know (any more): nothing to report.
_SESSION_GONE = frozenset({400, 404})
_NOT_ALLOWED = 405  # the server does not let clients end sessions (the spec allows that)


class _Seen:
    """What the HTTP client saw: the session's headers as last sent, and a refusal."""

    __slots__ = ("refusal", "session")

    def __init__(self) -> None:
        self.session: dict[str, str] = {}
        self.refusal: tuple[int, str, str | None] | None = None  # status, reason, WWW-Authenticate

    async def request(self, request: httpx2.Request) -> None:
        if "mcp-session-id" in request.headers:
            self.session = {
                name: request.headers[name] for name in _SESSION_HEADERS if name in request.headers
            }

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
    hooks: dict[str, list[Any]] = {"request": [seen.request], "response": [seen.response]}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as client:
        try:
            async with streamable_http_client(url, http_client=client, terminate_on_close=False) as streams:
                yield streams
        except Exception as exc:
            if seen.refusal is not None:
                raise Connect(_refused(url, *seen.refusal, headers)) from exc
            raise
        if terminate_on_close and seen.session:
            await _end_session(client, url, seen.session)


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


async def _end_session(client: httpx2.AsyncClient, url: str, session: dict[str, str]) -> None:
    """DELETE the session; a server that forgot it, or is gone, is fine."""
    import httpx2

    try:
        response = await client.delete(url, headers=session)
    except httpx2.HTTPError as exc:
        _log.debug("%s: could not end the MCP session (%s): the server is gone", url, exc)
        return
    status = response.status_code
    if status in _SESSION_GONE:
        _log.debug("%s: the server no longer knows the session (DELETE: HTTP %d)", url, status)
    elif status == _NOT_ALLOWED:
        _log.debug("%s: the server does not let clients end sessions (DELETE: HTTP 405)", url)
    elif status >= 300:
        _log.warning("%s: ending the MCP session failed: HTTP %d %s", url, status, response.reason_phrase)
