"""One `tools/call` of an agent served over MCP: the run, its deadline, its cancellation, its progress.

The run goes in a task of its own, so that the MCP request being cancelled (the client's
`notifications/cancelled`, or its disconnect) reaches the run as a cancel of its
`RunContext.cancel` token — what tools and models watch — rather than as an exception
thrown into whatever the run happened to await. The same token carries the deadline of
`RunConfig.timeout`; a run that ignores its token is abandoned a little later, so a call
never outlives its deadline by more than `WIND_DOWN` seconds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from helikon.core._internal.extras import missing_extra

try:
    import anyio
    import mcp_types as types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("McpAgentServer needs the official MCP SDK", "mcp") from exc

from helikon.core.agent import Agent
from helikon.core.context import RunConfig, RunContext
from helikon.core.events import (
    AgentEvent,
    HandoffItem,
    MessageOutput,
    RunCompleted,
    RunFailed,
    ToolCallItem,
    ToolOutputItem,
    TurnStarted,
)
from helikon.core.loop import TIMEOUT_REASON
from helikon.core.model import TokenDelta

from ._server_calls import CLIENT_CANCELLED, WIND_DOWN, abandon, error_result, settle

Report = Callable[[float, str], Awaitable[None]]
"""Sends one `notifications/progress` to the client: the count so far, and the message."""


def progress_message(event: AgentEvent | object) -> str | None:
    """What the client is told of `event` as progress, or None for events it is not told of.

    Turns, tool calls and their results, handoffs, and the answer's text as it streams
    (each delta as `text: <delta>`, so a client can show the answer as it is written).
    """
    if isinstance(event, TokenDelta):
        return f"text: {event.text}" if event.text else None
    if isinstance(event, TurnStarted):
        return f"turn {event.turn + 1}"  # TurnStarted counts from 0
    if isinstance(event, ToolCallItem):
        return f"tool call: {event.item.name}"
    if isinstance(event, ToolOutputItem):
        name = event.item.name or event.item.call_id
        return f"tool {'error' if event.item.is_error else 'result'}: {name}"
    if isinstance(event, HandoffItem):
        return f"handoff: {event.from_agent} -> {event.to_agent}"
    return None


class _Progress:
    """The progress notifications of one call: numbered 1, 2, ... and stopped once the call is gone."""

    __slots__ = ("count", "open", "report")

    def __init__(self, report: Report | None) -> None:
        self.report = report
        self.count = 0
        self.open = report is not None

    async def tell(self, event: AgentEvent) -> None:
        if not self.open:
            return
        message = progress_message(event)
        if message is None or self.report is None:
            return
        self.count += 1
        try:
            await self.report(self.count, message)
        except Exception:
            # The client went away mid-run: progress is a courtesy, the run goes on without it.
            self.open = False


async def _drive(
    agent: Agent[Any, Any],
    text: str,
    ctx: RunContext[Any],
    config: RunConfig | None,
    progress: _Progress,
    structured: bool,
) -> types.CallToolResult:
    final = ""
    failed: RunFailed | None = None
    # Read to the end (as `RunStream.collect` does), so that whatever wraps the run — a
    # runner writing the session — is done before the call answers.
    async for event in agent.run(text, context=ctx, config=config):
        if isinstance(event, MessageOutput):
            final = event.item.text
        elif isinstance(event, RunCompleted):
            if event.output is not None:  # an output validator changed the output
                final = event.output
        elif isinstance(event, RunFailed):
            failed = event
        else:
            await progress.tell(event)
    if failed is not None:
        return error_result(_failure(agent.name, failed, config))
    return final_result(final, structured)


def final_result(text: str, structured: bool) -> types.CallToolResult:
    """The answer of a run that ended well: its final text, and for a structured agent the object too."""
    content: list[types.ContentBlock] = [types.TextContent(text=text)]
    if structured:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return types.CallToolResult(content=content, structured_content=value)
    return types.CallToolResult(content=content)


def _failure(agent: str, event: RunFailed, config: RunConfig | None) -> str:
    error = event.error
    if error.kind == "timeout" and config is not None and config.timeout is not None:
        return _timed_out(agent, config.timeout)
    return f"the agent {agent!r} failed ({error.kind}): {error.message}"


def _timed_out(agent: str, seconds: float) -> str:
    return f"the agent {agent!r} did not finish within its timeout of {seconds:g}s (RunConfig.timeout)"


async def run_agent_call(
    agent: Agent[Any, Any],
    ctx: RunContext[Any],
    text: str,
    config: RunConfig | None,
    report: Report | None,
    *,
    structured: bool = False,
) -> types.CallToolResult:
    """Run `agent` on `text` for one MCP call: the final text, or an `isError` result saying why not.

    `structured`: the tool declares the agent's output schema, so the answer carries the
    final output as `structuredContent` too.

    `ctx` gets a token of its own (a child of its token), so one call's cancel never
    reaches another call made with the same context.
    """
    token = ctx.cancel.child_token()
    progress = _Progress(report)
    task = asyncio.ensure_future(_drive(agent, text, ctx.with_cancel(token), config, progress, structured))
    timeout = config.timeout if config is not None else None
    timer = (
        None
        if timeout is None
        else asyncio.get_running_loop().call_later(timeout, token.cancel, TIMEOUT_REASON)
    )
    try:
        if timeout is None:
            await asyncio.wait((task,))
        else:
            await asyncio.wait((task,), timeout=timeout + WIND_DOWN)
    except BaseException:
        # The request was cancelled: by the client, or by its disconnect ending the session.
        progress.open = False
        token.cancel(CLIENT_CANCELLED)
        with anyio.CancelScope(shield=True):
            await settle(task)
        raise
    finally:
        if timer is not None:
            timer.cancel()
    if not task.done():  # the run ignored its token past the deadline: abandon it
        progress.open = False
        token.cancel(TIMEOUT_REASON)
        await abandon(task)
        return error_result(_timed_out(agent.name, timeout or 0.0))
    try:
        return task.result()
    except Exception as exc:  # an agent whose stream raises instead of ending in RunFailed
        return error_result(f"the agent {agent.name!r} failed: {type(exc).__name__}: {exc}")


__all__ = ["progress_message", "run_agent_call"]
