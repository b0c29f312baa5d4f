"""`McpToolServer`: plain helikon tools served over MCP, each as itself.

Every tool keeps its name, description and argument schema; its effect becomes MCP's
hints (`READ_ONLY` -> `readOnlyHint: true`). A string result is a text block; any other
value is JSON text plus `structuredContent`. A tool that raises (`ToolError`,
`ModelRetry`, invalid arguments, anything), or returns what MCP cannot carry, answers
with an `isError` result that says why; a call of a tool the server does not have is a
protocol error (-32602).

The calls run the tools directly: the permission pipeline belongs to the agent that calls
them (an MCP client marks a `destructiveHint` tool as needing approval), not to this server.

Example:
    ```python
    import asyncio

    from mcp.client.client import Client

    from helikon import ToolEffect, tool
    from helikon.mcp import McpToolServer

    @tool(effect=ToolEffect.READ_ONLY)
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    async def main() -> None:
        async with Client(McpToolServer([add]).lowlevel_server()) as client:
            (listed,) = (await client.list_tools()).tools
            assert listed.annotations is not None and listed.annotations.read_only_hint
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert result.structured_content == {"result": 42}

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from helikon.core._internal.extras import missing_extra

try:
    import anyio
    import mcp_types as types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("McpToolServer needs the official MCP SDK", "mcp") from exc

from helikon.core.context import RunConfig, ToolContext
from helikon.core.exceptions import InvalidArgs, ModelRetry, ToolError, UserError
from helikon.core.tools import Tool

from ._server_calls import (
    CLIENT_CANCELLED,
    CtxFactory,
    abandon,
    default_ctx,
    error_result,
    make_context,
    with_call_headers,
)
from ._serving import McpServing, unknown_tool
from ._tool_results import call_result, definition

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

Ctx = TypeVar("Ctx")


@dataclass(frozen=True, slots=True)
class _Tools(Generic[Ctx]):
    by_name: dict[str, Tool[Ctx]]
    definitions: tuple[types.Tool, ...]
    ctx_factory: CtxFactory[Ctx]

    def tools(self) -> Sequence[types.Tool]:
        return self.definitions

    async def call(
        self, request: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> types.CallToolResult:
        tool = self.by_name.get(name)
        if tool is None:
            raise unknown_tool(name, list(self.by_name))
        with_call_headers(request)  # this call's task: its factory and tool see them
        try:
            run = await make_context(self.ctx_factory)
        except Exception as exc:
            return error_result(f"the server could not make the call's context: {type(exc).__name__}: {exc}")
        token = run.cancel.child_token()  # this call's own: cancelling it reaches no other call
        ctx = ToolContext(
            run.with_cancel(token),
            call_id=f"mcp-{request.request_id}",
            tool_name=name,
            max_agent_depth=RunConfig().max_agent_depth,
        )
        # In a task of its own, so that a cancelled request cancels the tool's token before
        # the tool's await is interrupted (as a run interrupts the tools it cancels).
        task = asyncio.ensure_future(tool.invoke(ctx, args))
        try:
            await asyncio.wait((task,))
        except BaseException:
            token.cancel(CLIENT_CANCELLED)
            with anyio.CancelScope(shield=True):
                await abandon(task)
            raise
        error = task.exception()
        if error is not None:
            if not isinstance(error, Exception):
                raise error
            return error_result(_failure(name, error))
        try:
            return call_result(tool, task.result())
        except ValueError as exc:  # the tool broke its contract: the caller reads how, not a protocol error
            return error_result(f"{name!r} returned a malformed result: {exc}")


def _failure(name: str, exc: Exception) -> str:
    if isinstance(exc, InvalidArgs):
        return f"invalid arguments for {name!r}: " + "; ".join(exc.schema_errors)
    if isinstance(exc, ToolError | ModelRetry):
        return f"{name!r} failed: {exc}"
    return f"{name!r} failed: {type(exc).__name__}: {exc}"


class McpToolServer(McpServing, Generic[Ctx]):
    """helikon tools served over MCP; `serve_stdio()`, `serve_streamable_http()` or mount its app.

    Args:
        tools: The tools (unique names).
        ctx_factory: Makes the `RunContext` each call's `ToolContext` reads (its user state);
            sync or async. None: `RunContext.ephemeral(None)`.
        name: The server name reported at `initialize` (also `.name(...)`).
    """

    def __init__(
        self,
        tools: Iterable[Tool[Ctx]],
        *,
        ctx_factory: CtxFactory[Ctx] | None = None,
        name: str = "helikon-tools",
    ) -> None:
        if isinstance(tools, Tool):
            raise UserError(
                "McpToolServer(tools): give a list of tools, not one tool: McpToolServer([my_tool])"
            )
        by_name: dict[str, Tool[Ctx]] = {}
        for tool in tools:
            if not isinstance(tool, Tool):
                raise UserError(f"McpToolServer: {tool!r} is not a Tool (decorate a function with @tool)")
            if tool.name in by_name:
                raise UserError(
                    f"McpToolServer: two tools are named {tool.name!r}; MCP tool names must be unique"
                )
            by_name[tool.name] = tool
        if ctx_factory is not None and not callable(ctx_factory):
            raise UserError(
                f"McpToolServer(ctx_factory={ctx_factory!r}): give a function returning a RunContext"
            )
        factory: CtxFactory[Any] = ctx_factory if ctx_factory is not None else default_ctx
        handler = _Tools(by_name, tuple(definition(t) for t in by_name.values()), factory)
        self._init_serving(handler, name)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools served, in order."""
        return tuple(t.name for t in self._handler.tools())


__all__ = ["McpToolServer"]
