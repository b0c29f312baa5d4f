"""What one MCP tool call needs, whichever server serves it: its context, its cancel, its error result.

A call runs in a task of its own; when its request goes away (the client's
`notifications/cancelled`, its disconnect) the call's cancel token is cancelled first, and
the task is given `WIND_DOWN` seconds before it is abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, TypeAlias, TypeVar

import mcp_types as types

from helikon.core.context import RunContext
from helikon.core.exceptions import UserError

Ctx = TypeVar("Ctx")

CLIENT_CANCELLED = "the MCP client cancelled the call (or disconnected)"
"""The reason a call's cancel token is cancelled with when its MCP request goes away."""

CtxFactory: TypeAlias = "Callable[[], RunContext[Ctx] | Awaitable[RunContext[Ctx]]]"
"""Makes the `RunContext` of one call (sync or async): the user state, session and governance."""


WIND_DOWN = 2.0
"""Seconds a cancelled (or timed-out) call is given to end by itself before it is abandoned."""


async def settle(task: asyncio.Future[Any]) -> None:
    """Give a call whose token was cancelled `WIND_DOWN` seconds to end by itself, then abandon it."""
    await asyncio.wait((task,), timeout=WIND_DOWN)
    await abandon(task)


async def abandon(task: asyncio.Future[Any]) -> None:
    """Stop a call that has not ended: cancel its task, and await it briefly."""
    if not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait((task,), timeout=WIND_DOWN)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved, so an abandoned call's error is not logged as never read


_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
_call_headers: ContextVar[Mapping[str, str]] = ContextVar("helikon_mcp_call_headers", default=_NO_HEADERS)


def call_headers() -> Mapping[str, str]:
    """The HTTP headers of the request carrying the tool call being made (names in lower case).

    For a context factory that keys a session, or a tenant, on a header. Empty over stdio,
    and outside a call.

    Example:
        ```python
        from helikon import RunContext
        from helikon.mcp import call_headers

        def ctx_factory() -> RunContext[str]:
            return RunContext.ephemeral(call_headers().get("x-tenant", "public"))

        assert ctx_factory().user_ctx == "public"  # no call is being made here
        ```
    """
    return _call_headers.get()


def with_call_headers(request: Any) -> None:
    """Make the HTTP headers of the SDK's `request` (if it came over HTTP) what `call_headers` gives.

    Called in the task that serves the call, so its context factory and run see them.
    """
    headers = getattr(getattr(request, "request", None), "headers", None)
    if headers is not None:
        _call_headers.set(MappingProxyType({str(k).lower(): str(v) for k, v in headers.items()}))


def default_ctx() -> RunContext[None]:
    """The context factory of a server given none: `RunContext.ephemeral(None)`."""
    return RunContext.ephemeral(None)


async def make_context(factory: CtxFactory[Ctx]) -> RunContext[Ctx]:
    """A call's context from `factory`; `UserError` when the factory gives something else."""
    made = factory()
    if inspect.isawaitable(made):
        made = await made
    if not isinstance(made, RunContext):
        raise UserError(
            f"the ctx_factory returned {type(made).__name__}; it must return a RunContext, "
            "e.g. lambda: RunContext.ephemeral(my_state)"
        )
    return made  # pyright: ignore[reportUnknownVariableType]


def error_result(message: str) -> types.CallToolResult:
    """A tool call that failed, as the client's model should read it (`isError: true`)."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


__all__ = [
    "CLIENT_CANCELLED",
    "WIND_DOWN",
    "CtxFactory",
    "abandon",
    "call_headers",
    "default_ctx",
    "error_result",
    "make_context",
    "settle",
    "with_call_headers",
]
