"""One `tools/call` on a live connection: raced against the cancel token, failures as `ToolError`s.

A call the connection dropped under fails (the protocol cannot resume it here) and marks the
connection dropped, so the handle's next call connects anew. A streamable-HTTP server that
no longer knows the session (restarted, or expired it) rejects the request before running
it: that one is retried once on a fresh session, as the MCP spec asks a client to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from helikon.core.exceptions import ToolError

from ._connection import Connection, describe

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

__all__ = ["SessionExpired", "call_once", "session_expired"]

# How long a cancelled call waits for the SDK to send `notifications/cancelled`.
_CANCEL_GRACE = 5.0


class SessionExpired(Exception):
    """The server refused the request because it no longer knows the session (HTTP 404)."""


def session_expired(exc: BaseException) -> bool:
    """Whether `exc` is the SDK's spelling of a 404 on a request of a known session."""
    import mcp_types
    from mcp.shared.exceptions import MCPError

    return (
        isinstance(exc, MCPError)
        and exc.code == mcp_types.INVALID_REQUEST
        and exc.message in ("Session not found", "Session terminated")
    )


async def call_once(
    connection: Connection,
    name: str,
    arguments: Mapping[str, Any],
    *,
    cancel: CancellationToken | None,
    label: str,
    limit: float | None,
    server: str,
) -> Any:
    """The `mcp_types.CallToolResult` of one call.

    Raises:
        ToolError: Cancelled, timed out, a protocol error, or the connection dropped.
        SessionExpired: The server no longer knows the session; the call did not run.
    """
    call = asyncio.ensure_future(
        connection.session.call_tool(name, dict(arguments), read_timeout_seconds=limit)
    )
    # The token cancels the call (a callback, not a second task waiting on the token: this
    # runs for every call). The shield keeps a cancellation of this task from reaching the
    # call directly, so `_abandon` bounds how long the SDK may take to wind it down.
    remove = cancel.add_callback(call.cancel) if cancel is not None else None
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        await _abandon(call)
        task = asyncio.current_task()
        if cancel is None or not cancel.is_cancelled() or (task is not None and task.cancelling()):
            raise
        reason = f": {cancel.reason}" if cancel.reason else ""
        raise ToolError(f"the call to the MCP tool {label!r} was cancelled{reason}") from None
    except Exception as exc:
        if session_expired(exc):
            connection.mark_dropped()
            raise SessionExpired(str(exc)) from exc
        raise _failure(connection, label, exc, limit, server) from exc
    finally:
        if remove is not None:
            remove()


def _failure(
    connection: Connection, label: str, exc: Exception, timeout: float | None, server: str
) -> ToolError:
    import mcp_types
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        if exc.code == mcp_types.CONNECTION_CLOSED:
            connection.mark_dropped()
            return ToolError(
                f"the connection to {server} dropped during the call to {label!r}, which could "
                "not be resumed; the next call connects anew"
            )
        if exc.code == mcp_types.REQUEST_TIMEOUT:
            return ToolError(f"the MCP tool {label!r} timed out after {timeout or 0:g}s")
        return ToolError(f"the MCP tool {label!r} failed: MCP error {exc.code}: {exc.message}")
    if isinstance(exc, RuntimeError):  # the SDK's check of structured content against the output schema
        return ToolError(f"the MCP tool {label!r} returned an invalid result: {exc}")
    connection.mark_dropped()
    return ToolError(
        f"the call to {label!r} on {server} failed ({describe(exc)}); the next call connects anew"
    )


async def _abandon(call: asyncio.Future[Any]) -> None:
    """Cancel an in-flight call and let the SDK send `notifications/cancelled` (bounded)."""
    call.cancel()
    await asyncio.wait((call,), timeout=_CANCEL_GRACE)
    if call.done() and not call.cancelled():
        call.exception()  # retrieved, so asyncio does not log it
