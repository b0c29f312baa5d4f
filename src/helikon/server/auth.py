"""Who may call the server: `AuthLayer`, its `AuthRejection`, and `BearerTokenAuth` ready to use.

An auth layer sees every request before anything else does. It returns who is calling
(any JSON value: a user id, the claims of a token; `None` for "admitted, anonymous") or
raises `AuthRejection(status, message)`, which becomes that status with the message as
the JSON error body. What it returns is the request's identity: the `ContextProvider`
receives it (the auth → context bridge) and an approval over HTTP is recorded as decided
by it. Without `.auth(...)` on the builder every request is admitted, anonymous.

Example:
    ```python
    import asyncio

    from helikon.server import AuthRejection, BearerTokenAuth

    auth = BearerTokenAuth({"s3cret-token-0123": "ada"})
    assert asyncio.run(auth.authenticate({"authorization": "Bearer s3cret-token-0123"})) == "ada"
    try:
        asyncio.run(auth.authenticate({"authorization": "Bearer guess"}))
    except AuthRejection as rejection:
        assert rejection.status == 401
    ```
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from ..core._internal.json_value import JsonValue
from ..core.exceptions import HelikonError, UserError


class AuthRejection(HelikonError):
    """A request refused: answered with `status` and `message` (no other detail leaves the server)."""

    def __init__(self, status: int, message: str) -> None:
        if not 400 <= status <= 499:
            raise UserError(f"AuthRejection: status must be a 4xx, not {status}")
        super().__init__(message)
        self.status = status
        self.message = message


@runtime_checkable
class AuthLayer(Protocol):
    """Authenticates each request from its headers (names in lower case): an identity, or a rejection."""

    async def authenticate(self, headers: Mapping[str, str]) -> JsonValue:
        """Who is calling (None: admitted without an identity); raise `AuthRejection` to refuse."""
        ...


class BearerTokenAuth:
    """Admits requests whose `Authorization: Bearer <token>` is one of `tokens`; their identity is its value.

    Tokens are compared in constant time, each against every known one, so the time a
    refusal takes tells nothing about how close a guess was.
    """

    __slots__ = ("_tokens",)

    def __init__(self, tokens: Mapping[str, JsonValue]) -> None:
        if not tokens:
            raise UserError("BearerTokenAuth needs at least one token")
        for token in tokens:
            if not isinstance(token, str) or len(token) < 16:
                raise UserError("BearerTokenAuth: each token must be a string of 16 characters or more")
        self._tokens = [(token.encode(), identity) for token, identity in tokens.items()]

    async def authenticate(self, headers: Mapping[str, str]) -> JsonValue:
        """The identity of the request's bearer token; `AuthRejection(401)` without a known one."""
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise AuthRejection(401, "this server needs an `Authorization: Bearer <token>` header")
        offered = given.strip().encode()
        found: JsonValue = None
        matched = False
        for token, identity in self._tokens:  # every token compared: no early exit
            if hmac.compare_digest(offered, token):
                found, matched = identity, True
        if not matched:
            raise AuthRejection(401, "the bearer token is not one this server knows")
        return found


CONSOLE_COOKIE = "helikon_console"


class LocalTokenAuth:
    """The local dev server's auth, Jupyter-style: one token, printed in the console's URL.

    Rules:

    1. `Authorization: Bearer <token>` is admitted (scripts and curl).
    2. The token in the URL (`/ui?token=...`) is exchanged once, by `exchange`, for a fresh
       secret set as an HttpOnly, SameSite=Strict cookie; a request carrying a secret so
       issued is admitted. A URL token already exchanged is refused: print a new one.
    3. Anything else is refused (401).

    All comparisons are constant-time. The identity of an admitted request is `"local"`.
    """

    __slots__ = ("_exchanged", "_secrets", "_token")

    def __init__(self, token: str | None = None) -> None:
        import secrets

        self._token = (token or secrets.token_urlsafe(24)).encode()
        if len(self._token) < 16:
            raise UserError("LocalTokenAuth: the token must be 16 characters or more")
        self._secrets: list[bytes] = []
        self._exchanged = False

    @property
    def token(self) -> str:
        """The token to print in the console's URL."""
        return self._token.decode()

    def exchange(self, offered: str) -> str | None:
        """A fresh cookie secret for the URL's `offered` token, once; None when it is wrong or used."""
        import secrets

        if self._exchanged or not hmac.compare_digest(offered.encode(), self._token):
            return None
        self._exchanged = True
        secret = secrets.token_urlsafe(32)
        self._secrets.append(secret.encode())
        return secret

    async def authenticate(self, headers: Mapping[str, str]) -> JsonValue:
        """`"local"` for the bearer token or an issued cookie; `AuthRejection(401)` otherwise."""
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token):
            return "local"
        cookie = _cookie(headers.get("cookie", ""), CONSOLE_COOKIE).encode()
        matched = False
        for secret in self._secrets:  # every secret compared: no early exit
            matched = hmac.compare_digest(cookie, secret) or matched
        if cookie and matched:
            return "local"
        raise AuthRejection(401, "open the console with the URL the server printed (it carries the token)")


def _cookie(header: str, name: str) -> str:
    """The value of cookie `name` in a `Cookie` header ("" when absent)."""
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


__all__ = ["CONSOLE_COOKIE", "AuthLayer", "AuthRejection", "BearerTokenAuth", "LocalTokenAuth"]
