"""The server's gate: every HTTP request and WebSocket passes the `Host` allow-list, then the auth layer.

Rules, in order:

1. The `Host` header (its name, without the port) must be one of `allowed_hosts`, unless
   the list is `["*"]`. The default list is the loopback names, so a server started for
   development cannot be reached through a DNS-rebinding name. Refused: 400.
2. An `Origin` header, when there is one, must name an allowed host too, or be one of the
   CORS origins: a page elsewhere cannot drive the server through a visitor's browser.
   Refused: 403.
3. The console's static files (`/ui/static/...`), its entry (`/ui`, which exchanges the
   URL's token for a cookie) and `/favicon.ico` pass without the auth layer: they hold
   nothing secret.
4. The auth layer, when there is one, must admit the request. Refused: its status and
   message. Admitted: what it returned is the request's identity (`scope["state"]`).

A refused WebSocket is closed before it is accepted (the client sees a 403).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .auth import AuthLayer, AuthRejection

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def host_name(host: str) -> str:
    """The name part of a `Host` header: `[::1]:8000` → `::1`, `example.com:80` → `example.com`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Gate:
    """ASGI middleware applying the rules above before `app` sees a request."""

    def __init__(
        self, app: App, allowed_hosts: tuple[str, ...], auth: AuthLayer | None, origins: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.allowed = tuple(host.lower() for host in allowed_hosts)
        self.auth = auth
        self.origins = tuple(origin.lower().rstrip("/") for origin in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request against the rules, then pass it on (or answer the refusal)."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        if "*" not in self.allowed and host_name(headers.get("host", "")) not in self.allowed:
            await _refuse(
                scope, receive, send, 400, "invalid_host", "this server does not answer to that Host"
            )
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            await _refuse(
                scope, receive, send, 403, "cross_origin", "this server does not answer to that Origin"
            )
            return
        identity: Any = None
        if self.auth is not None and not _public(scope):
            try:
                identity = await self.auth.authenticate(headers)
            except AuthRejection as rejection:
                await _refuse(scope, receive, send, rejection.status, "unauthorized", rejection.message)
                return
        scope.setdefault("state", {})["identity"] = identity
        await self.app(scope, receive, send)

    def _origin_allowed(self, origin: str) -> bool:
        if "*" in self.allowed or origin.lower().rstrip("/") in self.origins:
            return True
        _, _, rest = origin.partition("://")
        return bool(rest) and host_name(rest) in self.allowed


def _public(scope: Scope) -> bool:
    """Whether the request is for the console's entry or its static files (rule 3)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    console = path in ("/ui", "/ui/", "/favicon.ico") or path.startswith("/ui/static/")
    return scope["type"] == "http" and console


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str) -> None:
    if scope["type"] == "websocket":
        await receive()  # the websocket.connect message
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = ["LOOPBACK_HOSTS", "Gate", "host_name"]
