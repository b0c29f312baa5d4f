"""The AgentCore Runtime's request headers, and the rules for reading them.

The platform names the caller's session in `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`
(on `/ws` also as a query parameter, for browsers), the end user in
`X-Amzn-Bedrock-AgentCore-Runtime-User-Id`, and passes the caller's own headers through
when they start with `X-Amzn-Bedrock-AgentCore-Runtime-Custom-`. W3C `traceparent` and
`baggage` carry the caller's trace.

Example:
    ```python
    from helikon.agentcore import custom_headers

    headers = {"x-amzn-bedrock-agentcore-runtime-custom-tenant": "acme", "accept": "text/event-stream"}
    assert custom_headers(headers) == {"tenant": "acme"}
    ```
"""

from __future__ import annotations

from collections.abc import Mapping

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
"""The session the platform pins the invocation to."""
USER_ID_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
"""The end user the caller named (`runtimeUserId`); the context provider's `identity`."""
REQUEST_ID_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Request-Id"
"""The platform's id of this one request."""
CUSTOM_PREFIX = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-"
"""Headers the caller passes through to the agent start with this."""

MAX_SESSION_ID = 256
"""The longest session id AgentCore issues."""

_CUSTOM = CUSTOM_PREFIX.lower()


class BadSessionId(ValueError):
    """A session header that names no session helikon can key on (HTTP 400)."""


def session_id_of(value: str | None) -> str | None:
    """The session id a header carries (None: no header, a fresh session that is never stored).

    Raises:
        BadSessionId: Empty, longer than 256, or with a character outside visible ASCII
            (spaces, control characters and non-ASCII are refused rather than stored).
    """
    if value is None:
        return None
    if not value:
        raise BadSessionId(f"{SESSION_HEADER} is empty: send a session id, or leave the header out")
    if len(value) > MAX_SESSION_ID:
        raise BadSessionId(
            f"{SESSION_HEADER} is {len(value)} characters long; at most {MAX_SESSION_ID} are allowed"
        )
    bad = next((char for char in value if not "!" <= char <= "~"), None)
    if bad is not None:
        raise BadSessionId(
            f"{SESSION_HEADER} contains {bad!r}: "
            "a session id is visible ASCII only (no spaces or control characters)"
        )
    return value


def custom_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The caller's pass-through headers, by the name after the prefix (lower case)."""
    return {
        name.lower()[len(_CUSTOM) :]: value
        for name, value in headers.items()
        if name.lower().startswith(_CUSTOM)
    }


__all__ = [
    "CUSTOM_PREFIX",
    "MAX_SESSION_ID",
    "REQUEST_ID_HEADER",
    "SESSION_HEADER",
    "USER_ID_HEADER",
    "custom_headers",
    "session_id_of",
]
