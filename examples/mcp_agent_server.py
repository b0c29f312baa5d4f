"""A helikon agent (or plain helikon tools) served over MCP, on a scripted model: no API key needed.

    uv run python examples/mcp_agent_server.py                 # the agent, over stdio
    uv run python examples/mcp_agent_server.py --http 8765     # over streamable HTTP at /mcp
    uv run python examples/mcp_agent_server.py --tools         # the tools themselves, not the agent

Any MCP client can drive it, e.g. the MCP Inspector's CLI:

    npx @modelcontextprotocol/inspector --cli uv run python examples/mcp_agent_server.py \\
        --method tools/call --tool-name calculator --tool-arg input="add 2 and 40"

The agent `calculator` answers "add A and B" by calling its `add` tool, and echoes
anything else. "wait" makes it call `wait_for_cancel`, which blocks until the call is
cancelled (the client's `notifications/cancelled`, its disconnect, or `--timeout`) and
then writes the file given by `--cancel-marker`: how the tests see a cancel arrive.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

from helikon import LlmAgent, ModelRequest, RunConfig, ToolContext, ToolEffect, ToolResult, tool
from helikon.mcp import McpAgentServer, McpToolServer
from helikon.testing import FunctionModel, Script, text_turn, tool_call_turn

CANCEL_MARKER: Path | None = None


@tool(effect=ToolEffect.READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(effect=ToolEffect.READ_ONLY)
def echo_tool(text: str) -> str:
    """Echo the input text"""  # worded as the official Python echo example
    return text


@tool
async def wait_for_cancel(ctx: ToolContext[None]) -> str:
    """Block until the run is cancelled, then leave a marker file saying why."""
    try:
        await ctx.cancel.wait()
    finally:
        # The run's cancel interrupts this await: the task is being cancelled, so no await here.
        if CANCEL_MARKER is not None and ctx.cancel.is_cancelled():
            CANCEL_MARKER.write_text(ctx.cancel.reason or "cancelled")  # noqa: ASYNC240
    return "cancelled"


def answer(request: ModelRequest) -> Script:
    """The scripted model: a tool call for "add A and B" and "wait", the tool's result after it."""
    last = request.messages[-1]
    if isinstance(last, ToolResult):
        return text_turn(f"The answer is {last.text}.", chunk_size=8)
    asked = last.text
    numbers = re.fullmatch(r"\s*add (-?\d+) and (-?\d+)\s*", asked)
    if numbers:
        return tool_call_turn("add", {"a": int(numbers[1]), "b": int(numbers[2])})
    if asked.strip() == "wait":
        return tool_call_turn("wait_for_cancel", {})
    return text_turn(f"You said: {asked}", chunk_size=8)


def build(*, tools_only: bool, timeout: float | None) -> McpAgentServer[None] | McpToolServer[None]:
    """The server the flags ask for."""
    if tools_only:
        return McpToolServer([add, echo_tool]).name("helikon-example-tools").version("1.0.0")
    agent = LlmAgent(
        name="calculator",
        description="Adds two numbers ('add 2 and 40'); echoes anything else.",
        model=FunctionModel(answer),
        tools=[add, wait_for_cancel],
    )
    server = McpAgentServer.with_default_ctx(agent).name("helikon-example").version("1.0.0")
    server = server.instructions("Ask the calculator to add two numbers.")
    return server.with_run_config(RunConfig(timeout=timeout)) if timeout is not None else server


def main() -> None:
    global CANCEL_MARKER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--tools", action="store_true", help="serve the tools add and echo_tool")
    parser.add_argument("--timeout", type=float, help="RunConfig.timeout of each agent call, in seconds")
    parser.add_argument("--cancel-marker", type=Path, help="file wait_for_cancel writes once cancelled")
    args = parser.parse_args()
    CANCEL_MARKER = args.cancel_marker
    server = build(tools_only=args.tools, timeout=args.timeout)
    if args.http is not None:
        asyncio.run(server.serve_streamable_http("127.0.0.1", args.http))
    else:
        asyncio.run(server.serve_stdio())


if __name__ == "__main__":
    main()
