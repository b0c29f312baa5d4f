"""What one MCP tool call needs, whichever server serves it: its context, its cancel, its error result.

A call runs in a task of its own; when its request goes away (the client's
`notifications/cancelled`, its disconnect) the call's cancel token is cancelled first, and
the task is given `WIND_DOWN` seconds before it is abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
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
    "default_ctx",
    "error_result",
    "make_context",
    "settle",
]
