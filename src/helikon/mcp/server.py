"""`McpAgentServer`: any helikon agent served as one MCP tool, over stdio or streamable HTTP.

The tool is named after the agent (sanitized to `[a-zA-Z0-9_-]+`), described by the
agent's description, takes `{"input": string}` and returns the run's final text. Each call
runs the agent on a fresh `RunContext` from the server's context factory.

Example:
    ```python
    import asyncio

    from mcp.client.client import Client

    from helikon import LlmAgent
    from helikon.mcp import McpAgentServer
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(
        name="greeter", description="Greets people.", model=MockModel.with_scripts([text_turn("Hello, Ada!")])
    )
    server = McpAgentServer.with_default_ctx(agent).name("greeter-server").version("1.0.0")

    async def main() -> None:
        async with Client(server.lowlevel_server()) as client:  # in memory; serve_stdio() for real
            (tool,) = (await client.list_tools()).tools
            result = await client.call_tool(tool.name, {"input": "Hi, I am Ada."})
            assert (tool.name, result.content[0].text) == ("greeter", "Hello, Ada!")

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from helikon.core._internal.extras import missing_extra

try:
    import mcp_types as types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("McpAgentServer needs the official MCP SDK", "mcp") from exc

from helikon.core.agent import Agent
from helikon.core.context import RunConfig
from helikon.core.exceptions import UserError
from helikon.core.output import OutputSpec

from ._agent_call import Report, run_agent_call
from ._server_calls import CtxFactory, default_ctx, error_result, make_context, with_call_headers
from ._serving import McpServing, unknown_tool

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

Ctx = TypeVar("Ctx")

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "What to ask the agent."}},
    "required": ["input"],
    "additionalProperties": False,
}
"""The agent tool's arguments: one string."""

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")
_MAX_NAME = 128  # the MCP spec's advice for tool names


def tool_name_for(agent_name: str) -> str:
    """The MCP tool name of an agent: runs of characters outside `[a-zA-Z0-9_-]` become `_`.

    Example:
        ```python
        from helikon.mcp import tool_name_for

        assert tool_name_for("Travel planner (EU)") == "Travel_planner_EU_"
        ```
    """
    name = _UNSAFE.sub("_", agent_name)[:_MAX_NAME]
    return name if name.strip("_") else "agent"


@dataclass(frozen=True, slots=True)
class _AgentTool(Generic[Ctx]):
    """The one tool of an `McpAgentServer`: its definition, and a call as an agent run."""

    agent: Agent[Ctx, Any]
    ctx_factory: CtxFactory[Ctx]
    config: RunConfig | None
    definition: types.Tool

    def tools(self) -> Sequence[types.Tool]:
        return (self.definition,)

    async def call(
        self, request: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> types.CallToolResult:
        if name != self.definition.name:
            raise unknown_tool(name, [self.definition.name])
        text = args.get("input")
        extra = sorted(set(args) - {"input"})
        if not isinstance(text, str) or extra:
            why = f"unexpected argument(s) {extra}" if extra else "'input' must be a string"
            return error_result(f'invalid arguments for {name!r}: {why}; call it with {{"input": "<text>"}}')
        with_call_headers(request)  # this call's task: its factory and run see them
        try:
            ctx = await make_context(self.ctx_factory)
        except Exception as exc:
            return error_result(f"the server could not make the run's context: {type(exc).__name__}: {exc}")
        # Without a config of the server's, the agent's own (an LlmAgent's run_config): its
        # timeout is enforced here all the same.
        config = self.config if self.config is not None else getattr(self.agent, "run_config", None)
        if not isinstance(config, RunConfig):
            config = None
        structured = self.definition.output_schema is not None
        return await run_agent_call(self.agent, ctx, text, config, _reporter(request), structured=structured)


class McpAgentServer(McpServing, Generic[Ctx]):
    """An agent served as one MCP tool; `serve_stdio()`, `serve_streamable_http()` or mount its app.

    Args:
        agent: The agent each call runs.
        ctx_factory: Makes each call's `RunContext` (a fresh one per call: its user state,
            session and governance); sync or async. `with_default_ctx` uses
            `RunContext.ephemeral(None)`.

    The builder steps (`name`, `version`, `instructions`, `with_run_config`) return a
    changed copy. A call's run stops when the client cancels the request or disconnects
    (its context's cancel token fires), and at `RunConfig.timeout`, which this server
    enforces itself: the call then answers with an `isError` result. With a
    `progressToken` the client is sent the run's progress (`progress_message`).
    """

    _tool: _AgentTool[Ctx]

    def __init__(self, agent: Agent[Ctx, Any], *, ctx_factory: CtxFactory[Ctx]) -> None:
        if not isinstance(agent, Agent):
            raise UserError(f"McpAgentServer({agent!r}): give an agent (an LlmAgent or a workflow agent)")
        if not callable(ctx_factory):
            raise UserError(
                f"McpAgentServer(ctx_factory={ctx_factory!r}): give a function returning a fresh RunContext, "
                "e.g. lambda: RunContext.ephemeral(my_state)"
            )
        name = tool_name_for(agent.name)
        description = agent.description or f"Ask the agent {agent.name!r}; it answers with text."
        definition = types.Tool(
            name=name, description=description, input_schema=INPUT_SCHEMA, output_schema=_output_schema(agent)
        )
        self._tool = _AgentTool(agent, ctx_factory, None, definition)
        self._init_serving(self._tool, agent.name)

    @staticmethod
    def with_default_ctx(agent: Agent[None, Any]) -> McpAgentServer[None]:
        """Serve `agent` with each call on `RunContext.ephemeral(None)`."""
        return McpAgentServer[None](agent, ctx_factory=default_ctx)

    def with_run_config(self, config: RunConfig) -> Self:
        """Run each call with `config` (instead of the agent's own `run_config`).

        Its `timeout` (or, without one set here, that of the agent's `run_config`) ends a call
        with an `isError` result.
        """
        if not isinstance(config, RunConfig):
            raise UserError(f"with_run_config({config!r}): give a RunConfig")
        changed = replace(self._tool, config=config)
        return self._with(_tool=changed, _handler=changed)

    @property
    def tool_name(self) -> str:
        """The name of the MCP tool the agent is served as."""
        return self._tool.definition.name


def _output_schema(agent: Agent[Any, Any]) -> dict[str, Any] | None:
    """The MCP `outputSchema` of an agent with an `output_type` (always an object schema).

    None for a text agent, and for one with handoffs: its run may end in a target whose
    output is another type.
    """
    spec = getattr(agent, "output_spec", None)
    if not isinstance(spec, OutputSpec) or spec.output is None or getattr(agent, "handoffs", ()):
        return None
    return dict(spec.output.schema)


def _reporter(request: ServerRequestContext[Any]) -> Report:
    """How to tell the client of the run's progress (the SDK sends nothing unless it asked for it)."""
    session = request.session

    async def report(progress: float, message: str) -> None:
        await session.report_progress(progress, None, message)

    return report


__all__ = ["INPUT_SCHEMA", "McpAgentServer", "tool_name_for"]
