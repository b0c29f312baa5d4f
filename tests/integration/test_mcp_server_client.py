"""`McpAgentServer` driven by the official Python `mcp` client (`ClientSession`), over real transports.

stdio runs the example server as a child process; streamable HTTP runs helikon's ASGI app on
uvicorn in this process (mounted under a prefix next to another route), so a test can watch
the run's cancel token from the inside.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_server_helpers import EXAMPLE, EXAMPLE_COMMAND, http_client, served_in_process
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from helikon import AgentEvent, LlmAgent, RunConfig, RunContext, RunStarted, RunStream, ToolContext, tool
from helikon.mcp import McpAgentServer
from helikon.testing import FunctionModel, MockModel, Script, text_turn, tool_call_turn

pytestmark = pytest.mark.integration


@asynccontextmanager
async def stdio_session(*flags: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=EXAMPLE_COMMAND[0], args=[*EXAMPLE_COMMAND[1:], *flags])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(server: McpAgentServer[Any]) -> AsyncIterator[ClientSession]:
    """`server`'s app mounted at /agents of a larger Starlette app, and a client session on it."""
    mcp_app = server.streamable_http_app()

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(
        routes=[Route("/health", health), Mount("/agents", app=mcp_app)],
        lifespan=mcp_app.router.lifespan_context,
    )
    async with http_client(app, "/agents/mcp") as session:
        yield session


class Blocker:
    """A tool that blocks until its run is cancelled, and records that it was (and why)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.reason: str | None = None

        @tool
        async def wait_for_cancel(ctx: ToolContext[None]) -> str:
            """Wait until cancelled."""
            self.started.set()
            try:
                await ctx.cancel.wait()
            finally:  # the run's cancel interrupts the await
                if ctx.cancel.is_cancelled():
                    self.reason = ctx.cancel.reason
                    self.cancelled.set()
            return "cancelled"

        self.tool = wait_for_cancel

    def agent(self, run_config: RunConfig | None = None) -> LlmAgent[None]:
        def answer(request: Any) -> Script:
            return tool_call_turn("wait_for_cancel", {})

        return LlmAgent(name="blocker", model=FunctionModel(answer), tools=[self.tool], run_config=run_config)


def _text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


# --- stdio -----------------------------------------------------------------------------------


async def test_the_python_client_lists_and_calls_the_agent_over_stdio() -> None:
    async with stdio_session() as session:
        assert session.server_info is not None
        assert (session.server_info.name, session.server_info.version) == ("helikon-example", "1.0.0")
        (tool_def,) = (await session.list_tools()).tools
        assert tool_def.name == "calculator"
        assert tool_def.input_schema["properties"] == {
            "input": {"type": "string", "description": "What to ask the agent."}
        }
        result = await session.call_tool("calculator", {"input": "add 2 and 40"})
    assert (result.is_error, _text(result)) == (False, "The answer is 42.")


async def test_progress_notifications_stream_the_run_over_stdio() -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with stdio_session() as session:
        result = await session.call_tool(
            "calculator", {"input": "add 2 and 40"}, progress_callback=on_progress
        )
    assert _text(result) == "The answer is 42."
    messages = [m or "" for _, m in seen]
    assert messages[:4] == ["turn 1", "tool call: add", "tool result: add", "turn 2"]
    assert "".join(m.removeprefix("text: ") for m in messages[4:]) == "The answer is 42."
    assert [p for p, _ in seen] == list(range(1, len(seen) + 1))  # increasing, as the spec requires


async def test_notifications_cancelled_over_stdio_cancels_the_run(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    running = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message == "tool call: wait_for_cancel":
            running.set()

    async with stdio_session("--cancel-marker", str(marker)) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: session.call_tool("calculator", {"input": "wait"}, progress_callback=on_progress)
            )
            await asyncio.wait_for(running.wait(), 30)
            group.cancel_scope.cancel()  # the client sends notifications/cancelled
        # The server is still there for the next call, and the cancelled run left its marker.
        result = await session.call_tool("calculator", {"input": "add 1 and 1"})
        for _ in range(600):
            if marker.exists():
                break
            await asyncio.sleep(0.05)
    assert _text(result) == "The answer is 2."
    assert marker.read_text() == "the MCP client cancelled the call (or disconnected)"


async def test_a_client_disconnect_over_stdio_cancels_the_run(tmp_path: Path) -> None:
    """The client goes away mid-call without a notifications/cancelled: stdin closes, the run is cancelled."""
    marker = tmp_path / "cancelled"
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--cancel-marker", str(marker),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    call = {"name": "calculator", "arguments": {"input": "wait"}, "_meta": {"progressToken": "p"}}
    for message in (
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
    ):
        process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()
    # The progress of the tool call says the blocking tool is running: now hang up.
    while b"tool call: wait_for_cancel" not in await asyncio.wait_for(process.stdout.readline(), 30):
        pass
    process.stdin.close()
    assert await asyncio.wait_for(process.wait(), 30) == 0
    assert marker.read_text() == "the MCP client cancelled the call (or disconnected)"


# --- streamable HTTP, in process ---------------------------------------------------------------


async def test_the_python_client_calls_the_agent_mounted_in_a_larger_app() -> None:
    agent = LlmAgent(
        name="Greeter bot!", description="Greets.", model=MockModel.with_scripts([text_turn("Hi!")])
    )
    server = McpAgentServer.with_default_ctx(agent).name("greeters").instructions("Say hello.")
    async with http_session(server) as session:
        assert session.server_info is not None and session.server_info.name == "greeters"
        assert session.instructions == "Say hello."
        (tool_def,) = (await session.list_tools()).tools
        result = await session.call_tool(tool_def.name, {"input": "hello"})
    assert (tool_def.name, tool_def.description, _text(result)) == ("Greeter_bot_", "Greets.", "Hi!")


async def test_concurrent_calls_over_http_each_get_their_own_run_and_progress() -> None:
    def answer(request: Any) -> Script:
        return text_turn(f"echo {request.messages[-1].text}", chunk_size=2)

    agent = LlmAgent(name="echo", model=FunctionModel(answer))
    told: dict[int, list[str]] = {i: [] for i in range(5)}

    def recorder(i: int) -> Any:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            told[i].append(message or "")

        return on_progress

    async with http_session(McpAgentServer.with_default_ctx(agent)) as session:
        results = await asyncio.gather(
            *(session.call_tool("echo", {"input": f"n{i}"}, progress_callback=recorder(i)) for i in range(5))
        )
    assert [_text(r) for r in results] == [f"echo n{i}" for i in range(5)]
    for i, messages in told.items():
        assert messages[0] == "turn 1"
        assert "".join(m.removeprefix("text: ") for m in messages[1:]) == f"echo n{i}"


async def test_a_handoff_and_a_tool_error_are_told_as_progress() -> None:
    @tool
    def lookup(order: str) -> str:
        """Find an order."""
        raise RuntimeError("database down")

    billing = LlmAgent(
        name="billing",
        model=MockModel.with_scripts([tool_call_turn("lookup", {"order": "A-1"}), text_turn("Sorry.")]),
        tools=[lookup],
    )
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_billing", {})]),
        handoffs=[billing],
    )
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with http_session(McpAgentServer.with_default_ctx(triage)) as session:
        result = await session.call_tool("triage", {"input": "refund"}, progress_callback=on_progress)
    assert _text(result) == "Sorry."
    assert "handoff: triage -> billing" in seen
    assert seen.index("tool call: lookup") < seen.index("tool error: lookup")


class Weather(BaseModel):
    city: str
    celsius: float


async def test_an_agent_with_an_output_type_answers_with_structured_content_too() -> None:
    answer = '{"city": "Oslo", "celsius": 21.5}'
    agent = LlmAgent(name="weather", model=MockModel.with_scripts([text_turn(answer)]), output_type=Weather)
    async with http_session(McpAgentServer.with_default_ctx(agent)) as session:
        (listed,) = (await session.list_tools()).tools
        result = await session.call_tool("weather", {"input": "Oslo?"})
    assert listed.output_schema is not None and set(listed.output_schema["properties"]) == {"city", "celsius"}
    assert (_text(result), result.structured_content) == (answer, {"city": "Oslo", "celsius": 21.5})


async def test_notifications_cancelled_cancels_the_run_over_http() -> None:
    blocker = Blocker()
    server = McpAgentServer.with_default_ctx(blocker.agent())
    async with http_session(server) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "blocker", {"input": "go"})
            await asyncio.wait_for(blocker.started.wait(), 30)
            group.cancel_scope.cancel()  # the client sends notifications/cancelled for the call
        await asyncio.wait_for(blocker.cancelled.wait(), 30)
        # The session is still good for the next call.
        assert (await session.list_tools()).tools[0].name == "blocker"
    assert blocker.reason == "the MCP client cancelled the call (or disconnected)"


async def test_ending_the_http_session_cancels_a_run_in_flight() -> None:
    """The client ends its session (DELETE /mcp) mid-call, with no notifications/cancelled for the call."""
    blocker = Blocker()
    async with served_in_process(
        McpAgentServer.with_default_ctx(blocker.agent()).streamable_http_app()
    ) as base:
        url = f"{base}/mcp"
        headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(
                url, headers=headers, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
            )
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            await http.post(
                url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
            )
            call = {"name": "blocker", "arguments": {"input": "go"}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            async with http.stream("POST", url, headers=headers, json=body) as answer:
                await asyncio.wait_for(blocker.started.wait(), 30)
                ended = await http.delete(url, headers=headers)
                assert ended.status_code == 200
                await asyncio.wait_for(blocker.cancelled.wait(), 30)
                await answer.aread()
    assert blocker.reason == "the MCP client cancelled the call (or disconnected)"


async def test_the_run_config_timeout_ends_the_call_with_an_error_result() -> None:
    blocker = Blocker()
    server = McpAgentServer.with_default_ctx(blocker.agent()).with_run_config(RunConfig(timeout=0.5))
    async with http_session(server) as session:
        result = await session.call_tool("blocker", {"input": "go"})
    assert result.is_error
    assert (
        _text(result) == "the agent 'blocker' did not finish within its timeout of 0.5s (RunConfig.timeout)"
    )
    assert blocker.reason == "helikon:timeout"


async def test_the_agents_own_run_config_timeout_is_enforced_too() -> None:
    blocker = Blocker()
    server = McpAgentServer.with_default_ctx(blocker.agent(RunConfig(timeout=0.3)))
    async with http_session(server) as session:
        result = await session.call_tool("blocker", {"input": "go"})
    assert result.is_error and "did not finish within its timeout of 0.3s" in _text(result)
    assert blocker.reason == "helikon:timeout"


class Stubborn:
    """An agent whose run ignores its cancel token: it never ends by itself."""

    name = "stubborn"
    description = "Never answers."

    def run(self, input: Any, *, context: Any = None, config: Any = None) -> RunStream[str]:
        async def events() -> AsyncIterator[AgentEvent]:
            yield RunStarted(agent=self.name)
            await asyncio.sleep(3600)

        return RunStream(events())


async def test_a_run_that_ignores_its_token_is_abandoned_at_the_timeout() -> None:
    server = McpAgentServer.with_default_ctx(Stubborn()).with_run_config(RunConfig(timeout=0.2))
    async with http_session(server) as session:
        result = await session.call_tool("stubborn", {"input": "go"})
    assert result.is_error
    assert "did not finish within its timeout of 0.2s" in _text(result)


async def test_a_failing_run_is_an_error_result_that_says_why() -> None:
    agent = LlmAgent(name="broken", model=MockModel.with_scripts([]))  # no script: the model call fails
    async with http_session(McpAgentServer.with_default_ctx(agent)) as session:
        result = await session.call_tool("broken", {"input": "hi"})
    assert result.is_error
    assert _text(result).startswith("the agent 'broken' failed (model_error): MockModel ran out of scripts")


async def test_each_call_gets_a_fresh_context_from_the_factory() -> None:
    made: list[RunContext[dict[str, int]]] = []

    def factory() -> RunContext[dict[str, int]]:
        made.append(RunContext.ephemeral({"call": len(made) + 1}))
        return made[-1]

    @tool
    def whoami(ctx: ToolContext[dict[str, int]]) -> str:
        """The call number."""
        return str(ctx.user_ctx["call"])

    def answer(request: Any) -> Script:
        last = request.messages[-1]
        return text_turn(f"call {last.text}") if last.type == "tool_result" else tool_call_turn("whoami", {})

    agent = LlmAgent[dict[str, int]](name="who", model=FunctionModel(answer), tools=[whoami])
    async with http_session(McpAgentServer(agent, ctx_factory=factory)) as session:
        first = await session.call_tool("who", {"input": "?"})
        second = await session.call_tool("who", {"input": "?"})
    assert (_text(first), _text(second)) == ("call 1", "call 2")
    assert len({id(c.cancel) for c in made}) == 2
