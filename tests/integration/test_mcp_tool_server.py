"""`McpToolServer` (plain helikon tools over MCP), bad input to both servers, and binding a used port.

Driven by the official Python `mcp` client over streamable HTTP, the server on uvicorn in
this process.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_server_helpers import free_port, http_client
from pydantic import BaseModel

from helikon import (
    ImagePart,
    LlmAgent,
    ModelRetry,
    RunContext,
    TextPart,
    ToolContext,
    ToolEffect,
    ToolError,
    ToolOutput,
    UserError,
    tool,
)
from helikon.core.items import Base64Source
from helikon.mcp import McpAgentServer, McpError, McpToolServer
from helikon.testing import MockModel, text_turn

pytestmark = pytest.mark.integration


class Forecast(BaseModel):
    city: str
    celsius: float


@tool(effect=ToolEffect.READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(effect=ToolEffect.READ_ONLY)
def forecast(city: str) -> Forecast:
    """The weather in a city."""
    return Forecast(city=city, celsius=21.5)


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@tool(effect=ToolEffect.WRITE)
def refuse(path: str) -> str:
    """Always refuses."""
    raise ToolError.Denied(f"{path} is outside the sandbox")


@tool
def picky(order_id: str) -> str:
    """Asks for a better id."""
    raise ModelRetry("order ids look like 'A-1234'")


@tool
def crash() -> str:
    """Raises."""
    raise RuntimeError("disk on fire")


@tool
def picture() -> ToolOutput:
    """A caption and an image."""
    return ToolOutput(
        parts=(TextPart(text="a dot"), ImagePart(source=Base64Source(media_type="image/png", data="iVBO")))
    )


@tool
def whose(ctx: ToolContext[str]) -> str:
    """The caller's user."""
    return ctx.user_ctx


TOOLS = [add, forecast, shout, refuse, picky, crash, picture]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_tools_are_listed_with_their_schemas_and_hints() -> None:
    async with http_client(McpToolServer(TOOLS).streamable_http_app()) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert list(listed) == [t.name for t in TOOLS]
    assert listed["add"].description == "Add two integers."
    assert listed["add"].input_schema == add.schema
    assert listed["add"].annotations == types.ToolAnnotations(read_only_hint=True)
    assert listed["shout"].annotations == types.ToolAnnotations(read_only_hint=False)
    assert listed["shout"].output_schema is None  # text
    assert listed["add"].output_schema == {
        "type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]
    }  # fmt: skip
    assert listed["forecast"].output_schema == forecast.output_schema


async def test_results_are_text_and_structured_content() -> None:
    async with http_client(McpToolServer(TOOLS).streamable_http_app()) as session:
        added = await session.call_tool("add", {"a": 2, "b": 40})
        weather = await session.call_tool("forecast", {"city": "Oslo"})
        shouted = await session.call_tool("shout", {"text": "hi"})
        pictured = await session.call_tool("picture", {})
    assert (added.is_error, _text(added), added.structured_content) == (False, "42", {"result": 42})
    assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
    assert (_text(shouted), shouted.structured_content) == ("HI", None)
    assert pictured.content == [
        types.TextContent(text="a dot"),
        types.ImageContent(data="iVBO", mime_type="image/png"),
    ]


async def test_a_failing_tool_is_an_error_result_that_says_why() -> None:
    async with http_client(McpToolServer(TOOLS).streamable_http_app()) as session:
        refused = await session.call_tool("refuse", {"path": "/etc"})
        retried = await session.call_tool("picky", {"order_id": "7"})
        crashed = await session.call_tool("crash", {})
        wrong = await session.call_tool("add", {"a": "two"})
    assert all(r.is_error for r in (refused, retried, crashed, wrong))
    assert _text(refused) == "'refuse' failed: denied: /etc is outside the sandbox"
    assert _text(retried) == "'picky' failed: order ids look like 'A-1234'"
    assert _text(crashed) == "'crash' failed: RuntimeError: disk on fire"
    assert _text(wrong).startswith("invalid arguments for 'add': a: Input should be a valid integer")
    assert "b: Field required" in _text(wrong)


@tool
def sloppy(kind: str) -> ToolOutput:
    """Returns a malformed ToolOutput."""
    if kind == "parts":
        return ToolOutput(parts=("plain text",))  # pyright: ignore[reportArgumentType]
    return ToolOutput(value={"ids": {1, 2}})  # pyright: ignore[reportArgumentType]


class Bare:
    """A hand-written Tool whose `invoke` returns a string instead of a ToolOutput."""

    name = "bare"
    description = "Returns a bare string."
    schema: dict[str, Any] = {"type": "object"}  # noqa: RUF012
    output_schema = None
    effect = ToolEffect.READ_ONLY

    async def invoke(self, ctx: ToolContext[Any], args: Any) -> Any:
        return "just a string"


async def test_a_malformed_tool_output_is_an_error_result_that_says_what_is_wrong() -> None:
    async with http_client(McpToolServer([sloppy, Bare(), add]).streamable_http_app()) as session:
        parts = await session.call_tool("sloppy", {"kind": "parts"})
        value = await session.call_tool("sloppy", {"kind": "value"})
        bare = await session.call_tool("bare", {})
        still = await session.call_tool("add", {"a": 1, "b": 2})
    assert parts.is_error and value.is_error and bare.is_error
    assert _text(parts) == (
        "'sloppy' returned a malformed result: its ToolOutput.parts[0] is a str 'plain text', not a "
        "content part (TextPart, ImagePart, AudioPart, ...): e.g. ToolOutput(parts=(TextPart(text='...'),))"
    )
    assert _text(value) == (
        "'sloppy' returned a malformed result: its ToolOutput value is not JSON "
        "(Object of type set is not JSON serializable): dict {'ids': {1, 2}}"
    )
    assert (
        _text(bare) == "'bare' returned a malformed result: it returned str 'just a string', not a ToolOutput"
    )
    assert still.structured_content == {"result": 3}  # the server goes on


async def test_an_unknown_tool_is_a_protocol_error_naming_the_tools() -> None:
    async with http_client(McpToolServer([add, shout]).streamable_http_app()) as session:
        with pytest.raises(MCPError) as caught:
            await session.call_tool("subtract", {"a": 1, "b": 2})
    assert caught.value.code == types.INVALID_PARAMS
    assert caught.value.message == "Unknown tool 'subtract': this server's tools are 'add', 'shout'"


async def test_the_ctx_factory_gives_each_call_its_user_state() -> None:
    users = iter(["ada", "grace"])
    server = McpToolServer([whose], ctx_factory=lambda: RunContext.ephemeral(next(users)))
    async with http_client(server.streamable_http_app()) as session:
        first = await session.call_tool("whose", {})
        second = await session.call_tool("whose", {})
    assert (_text(first), _text(second)) == ("ada", "grace")


async def test_a_cancelled_call_cancels_the_tool_token() -> None:
    started, reasons = asyncio.Event(), list[str | None]()

    @tool
    async def wait(ctx: ToolContext[None]) -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await ctx.cancel.wait()
        finally:
            reasons.append(ctx.cancel.reason)
        return "done"

    async with http_client(McpToolServer([wait]).streamable_http_app()) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "wait", {})
            await asyncio.wait_for(started.wait(), 30)
            group.cancel_scope.cancel()
        for _ in range(600):
            if reasons:
                break
            await asyncio.sleep(0.05)
    assert reasons == ["the MCP client cancelled the call (or disconnected)"]


async def test_bad_arguments_to_the_agent_tool_are_error_results() -> None:
    agent = LlmAgent(name="echo", model=MockModel.with_scripts([text_turn("never")]))
    async with http_client(McpAgentServer.with_default_ctx(agent).streamable_http_app()) as session:
        missing = await session.call_tool("echo", {})
        extra = await session.call_tool("echo", {"input": "hi", "mode": "fast"})
        wrong = await session.call_tool("echo", {"input": 3})
        with pytest.raises(MCPError) as caught:
            await session.call_tool("other", {"input": "hi"})
    assert (
        _text(missing)
        == "invalid arguments for 'echo': 'input' must be a string; call it with {\"input\": \"<text>\"}"
    )
    assert _text(extra).startswith("invalid arguments for 'echo': unexpected argument(s) ['mode']")
    assert wrong.is_error and missing.is_error and extra.is_error
    assert caught.value.message == "Unknown tool 'other': this server's tools are 'echo'"


async def test_a_ctx_factory_returning_something_else_is_an_error_result() -> None:
    agent = LlmAgent(name="echo", model=MockModel.with_scripts([text_turn("never")]))
    server = McpAgentServer(agent, ctx_factory=lambda: {"user": 1})  # pyright: ignore[reportArgumentType]
    async with http_client(server.streamable_http_app()) as session:
        result = await session.call_tool("echo", {"input": "hi"})
    assert result.is_error
    assert "the ctx_factory returned dict; it must return a RunContext" in _text(result)


def test_misuse_of_the_constructors_says_what_to_fix() -> None:
    with pytest.raises(UserError, match="two tools are named 'add'"):
        McpToolServer([add, add])
    with pytest.raises(UserError, match="give a list of tools, not one tool"):
        McpToolServer(add)  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="is not a Tool"):
        McpToolServer([len])  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="give an agent"):
        McpAgentServer("agent", ctx_factory=lambda: RunContext.ephemeral(None))  # pyright: ignore[reportArgumentType]
    agent = LlmAgent(name="a", model=MockModel.with_scripts([]))
    with pytest.raises(UserError, match="give a function returning a fresh RunContext"):
        McpAgentServer(agent, ctx_factory=RunContext.ephemeral(None))  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match=r"\.name\(''\): give a non-empty string"):
        McpAgentServer.with_default_ctx(agent).name("")


async def test_serving_on_a_port_in_use_is_a_bind_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port: Any = taken.getsockname()[1]
        with pytest.raises(McpError.Bind, match=f"cannot listen on 127.0.0.1:{port}: the port is in use"):
            await McpToolServer([add]).serve_streamable_http("127.0.0.1", port)


async def test_serve_streamable_http_answers_at_mcp_until_cancelled() -> None:
    port = free_port()
    serving = asyncio.create_task(McpToolServer([add]).name("adder").serve_streamable_http("127.0.0.1", port))
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(600):  # until it listens
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.05)
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            info = await session.initialize()
            result = await session.call_tool("add", {"a": 1, "b": 2})
        assert (info.server_info.name, result.structured_content) == ("adder", {"result": 3})
    finally:
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
    with socket.socket() as again:  # the port is free again
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
