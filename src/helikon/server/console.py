"""The web console's routes: `/ui` (the page, and the token exchange) and `/ui/static/<file>`.

The console is static files shipped in the package (`ui/` beside this module): no CDN, no
build step, nothing fetched at run time. Every answer carries a strict Content Security
Policy (scripts and styles from this server only, no inline script, no framing), so a
model's output that slipped through as markup still could not run.

With `LocalTokenAuth`, `GET /ui?token=<token>` exchanges the printed token (once) for an
HttpOnly, SameSite=Strict cookie and redirects to `/ui`: the token leaves the address bar
and the browser's history.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from .auth import CONSOLE_COOKIE, LocalTokenAuth
from .errors import error_response

UI = Path(__file__).with_name("ui")

# The files the console is made of, and their types: nothing else is served from `ui/`.
ASSETS = MappingProxyType(
    {
        "app.js": "text/javascript",
        "markdown.js": "text/javascript",
        "api.js": "text/javascript",
        "dom.js": "text/javascript",
        "sessions.js": "text/javascript",
        "style.css": "text/css",
    }
)

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = MappingProxyType(
    {
        "Content-Security-Policy": POLICY,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }
)


class Console:
    """The console's handlers; `local` is the server's `LocalTokenAuth`, if it uses one."""

    def __init__(self, local: LocalTokenAuth | None) -> None:
        self.local = local

    async def index(self, request: Request) -> Response:
        """`GET /ui`: the page; with `?token=`, the token's exchange for the console's cookie."""
        offered = request.query_params.get("token")
        if offered is not None and self.local is not None:
            secret = self.local.exchange(offered)
            if secret is None:
                return error_response(
                    401,
                    "bad_token",
                    "that token is wrong or was used already: restart the server for a new one",
                )
            to = str(request.url_for("console")).split("?")[0]
            response = RedirectResponse(to, status_code=303, headers=dict(HEADERS))
            path = request.scope.get("root_path", "") or "/"
            response.set_cookie(CONSOLE_COOKIE, secret, httponly=True, samesite="strict", path=path)
            return response
        return FileResponse(UI / "index.html", media_type="text/html", headers=dict(HEADERS))

    async def favicon(self, request: Request) -> Response:
        """`GET /favicon.ico`: no icon (a browser asks on every page, the console's error pages too)."""
        return Response(status_code=204, headers=dict(HEADERS))

    async def asset(self, request: Request) -> Response:
        """`GET /ui/static/<name>`: one of the console's files."""
        name = request.path_params["name"]
        if name not in ASSETS:
            return error_response(404, "not_found", f"the console has no file {name!r}")
        return FileResponse(UI / name, media_type=ASSETS[name], headers=dict(HEADERS))


__all__ = ["ASSETS", "POLICY", "UI", "Console"]
