"""helikon's MCP client against helikon's MCP servers: an agent using another agent, and tools, over MCP.

The outer agent runs on a scripted model and reaches the served agent (or tools) only
through `McpServerHandle`: over stdio (the example server in a child process) and over
streamable HTTP (the server's ASGI app on uvicorn in this process, so the test can watch
the served run's cancel token).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp_server_helpers import EXAMPLE_COMMAND, example_http, served_in_process

from helikon import CancellationToken, LlmAgent, RunContext, ToolContext, ToolEffect, tool
from helikon.core.exceptions import RunCancelled
from helikon.core.items import ToolResult
from helikon.mcp import McpAgentServer, McpServerHandle, McpToolServer
from helikon.testing import MockModel, text_turn, tool_call_turn

pytestmark = pytest.mark.integration


def _tool_results(model: MockModel) -> list[ToolResult]:
    return [m for request in model.requests for m in request.messages if isinstance(m, ToolResult)]


async def test_an_agent_calls_a_served_agent_over_stdio() -> None:
    command, *args = EXAMPLE_COMMAND
    async with McpServerHandle.stdio(command, args).tool_prefix("remote_") as handle:
        [calculator] = handle.tools()
        assert calculator.name == "remote_calculator"
        assert calculator.schema["required"] == ["input"]
        assert calculator.effect is ToolEffect.SIDE_EFFECT  # an agent is never read-only
        model = MockModel.with_scripts(
            [tool_call_turn("remote_calculator", {"input": "add 2 and 40"}), text_turn("It is 42.")]
        )
        outer = LlmAgent(name="outer", model=model, tool_sources=[handle])
        result = await outer.run("What is 2 + 40?")
    assert result.final_output == "It is 42."
    [answer] = _tool_results(model)
    assert not answer.is_error and answer.text == "The answer is 42."


async def test_served_tools_keep_their_effect_and_structured_results_over_http() -> None:
    with example_http("--tools") as url:
        async with McpServerHandle.streamable_http(url) as handle:
            tools = {t.name: t for t in handle.tools()}
            assert set(tools) == {"add", "echo_tool"}
            assert tools["add"].effect is ToolEffect.READ_ONLY  # READ_ONLY -> readOnlyHint -> READ_ONLY
            ctx = ToolContext(RunContext.ephemeral(None), call_id="c", tool_name="add", max_agent_depth=1)
            out = await tools["add"].invoke(ctx, {"a": 2, "b": 40})
            assert out.value == {"result": 42}
            echoed = await tools["echo_tool"].invoke(ctx, {"text": "hi"})
            assert echoed.value == "hi"


async def test_cancelling_the_outer_run_cancels_the_served_run() -> None:
    entered = asyncio.Event()
    served_cancel: list[str | None] = []

    @tool
    async def block(ctx: ToolContext[None]) -> str:
        """Wait until cancelled."""
        entered.set()
        try:
            await ctx.cancel.wait()
        finally:
            served_cancel.append(ctx.cancel.reason if ctx.cancel.is_cancelled() else None)
        return "cancelled"

    inner = LlmAgent(
        name="worker",
        description="Blocks until cancelled.",
        model=MockModel.with_scripts([tool_call_turn("block", {}), text_turn("never")]),
        tools=[block],
    )
    app = McpAgentServer.with_default_ctx(inner).streamable_http_app()
    async with (
        served_in_process(app) as base,
        McpServerHandle.streamable_http(base + "/mcp") as handle,
    ):
        cancel = CancellationToken()
        outer = LlmAgent(
            name="outer",
            model=MockModel.with_scripts([tool_call_turn("worker", {"input": "go"}), text_turn("done")]),
            tool_sources=[handle],
        )

        async def go() -> object:
            return await outer.run("start", context=RunContext.ephemeral(None).with_cancel(cancel))

        run = asyncio.create_task(go())
        await asyncio.wait_for(entered.wait(), 30)
        cancel.cancel("the user stopped")
        with pytest.raises(RunCancelled):
            await asyncio.wait_for(run, 30)
        for _ in range(300):  # the served run hears of it through notifications/cancelled
            if served_cancel:
                break
            await asyncio.sleep(0.05)
        # Checked before the handle closes: closing ends the HTTP session, which cancels too.
        assert served_cancel and served_cancel[0] is not None


async def test_a_served_tool_server_in_process_answers_an_agent(tmp_path: Path) -> None:
    @tool(effect=ToolEffect.READ_ONLY)
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    app = McpToolServer([shout]).streamable_http_app()
    async with served_in_process(app) as base, McpServerHandle.streamable_http(base + "/mcp") as handle:
        model = MockModel.with_scripts([tool_call_turn("shout", {"text": "hey"}), text_turn("ok")])
        result = await LlmAgent(name="a", model=model, tool_sources=[handle]).run("shout hey")
    assert result.final_output == "ok"
    [answer] = _tool_results(model)
    assert answer.text == "HEY"
