"""Error bodies: every refusal is a 4xx with `{"error": {"code", "message"}}` that says what to fix.

Nothing from inside the server leaves in an error body: no stack trace, no exception text
of an unexpected failure, no configuration. An unexpected failure is a 500 with a fixed
message (and the details in the server's log).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse


class ApiError(Exception):
    """A request refused with `status` (4xx), a stable `code` and a `message` for the caller."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        """The error as its JSON response."""
        return error_response(self.status, self.code, self.message, headers=headers, **self.extra)


def error_response(
    status: int, code: str, message: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    """`{"error": {"code": ..., "message": ..., **extra}}` with `status`."""
    return JSONResponse(
        {"error": {"code": code, "message": message, **extra}}, status_code=status, headers=headers
    )


INTERNAL = "the server failed to handle this request; its log has the details"


__all__ = ["INTERNAL", "error_response"]  # ApiError is the handlers' own signal, never raised to users
