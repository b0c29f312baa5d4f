"""The MCP handle's builder: bad options are `UserError`s that say what to fix; caching and sampling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp.server.lowlevel import Server
from mcp_memory import in_memory

from helikon import RunContext, UserError
from helikon.core.items import AssistantMessage, SystemMessage, UserMessage
from helikon.mcp import McpServerHandle
from helikon.mcp._sampling import sampling_request


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: McpServerHandle.stdio(""), "give the server's command"),
        (lambda: McpServerHandle.stdio("npx", "-y server"), "list of strings"),
        (lambda: McpServerHandle.stdio("npx", ["-y", 3]), "argument 3 is not a string"),  # type: ignore[list-item]
        (lambda: McpServerHandle.stdio("npx", env={"A": 1}), "dict of str to str"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.stdio("npx", cwd="/no/such/dir"), "not an existing directory"),
        (lambda: McpServerHandle.streamable_http("127.0.0.1:8000/mcp"), "http(s) URL"),
        (lambda: McpServerHandle.streamable_http("http://h/mcp", headers={"A": 1}), "dict of str to str"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.transport(42), "callable returning an async context manager"),
        (lambda: McpServerHandle.stdio("npx").tool_prefix(3), "give a string"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.stdio("npx").lazy("yes"), "True or False"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.stdio("npx").allow_tools("read_file"), "list of tool names"),
        (lambda: McpServerHandle.stdio("npx").deny_tools([""]), "is not a tool name"),
        (lambda: McpServerHandle.stdio("npx").tool_filter(3), "function (ctx, tool)"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.stdio("npx").call_timeout(-1), "positive seconds"),
        (lambda: McpServerHandle.stdio("npx").connect_timeout(True), "positive seconds"),
        (lambda: McpServerHandle.stdio("npx").sampling_model(object()), "helikon Model"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.stdio("npx").elicitation_handler(3), "function (params)"),  # type: ignore[arg-type]
        (lambda: McpServerHandle.stdio("npx").client_name(""), "non-empty string"),
    ],
)
def test_bad_options_say_what_to_fix(make: Any, says: str) -> None:
    with pytest.raises(UserError) as raised:
        make()
    assert says in str(raised.value)


def test_the_builder_collects_its_options(tmp_path: Path) -> None:
    builder = (
        McpServerHandle.stdio(
            "npx", ["-y", "@modelcontextprotocol/server-filesystem", tmp_path], cwd=tmp_path
        )
        .tool_prefix("fs_")
        .lazy()
        .allow_tools(["read_file"])
        .deny_tools(["write_file"])
        .cache_tools_list(False)
        .call_timeout(5)
        .assume_destructive()
    )
    options = builder.options
    assert (options.prefix, options.lazy, options.cache_tools_list, options.call_timeout) == (
        "fs_",
        True,
        False,
        5.0,
    )
    assert options.allow == {"read_file"} and options.deny == {"write_file"} and options.assume_destructive
    assert options.label == "stdio:npx" and repr(builder) == "McpConnectBuilder(stdio:npx)"


class Counting:
    """A server whose tools list grows on each call of `grow`, telling the client or not."""

    def __init__(self) -> None:
        self.lists = 0
        self.names = ["grow", "quiet_grow"]

    def server(self) -> Server[Any]:
        async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
            self.lists += 1
            schema = {"type": "object"}
            return mcp_types.ListToolsResult(
                tools=[mcp_types.Tool(name=n, input_schema=schema) for n in self.names]
            )

        async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
            self.names.append(f"t{len(self.names)}")
            if params.name == "grow":
                await ctx.session.send_tool_list_changed()
            return mcp_types.CallToolResult(content=[mcp_types.TextContent(text="grown")])

        return Server("counting", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_the_cached_list_is_listed_again_only_when_the_server_says_it_changed() -> None:
    counting = Counting()
    async with McpServerHandle.transport(in_memory(counting.server())) as handle:
        assert counting.lists == 1  # at connect
        await handle.list_tools(None)
        await handle.list_tools(RunContext.ephemeral(None))
        assert counting.lists == 1
        await handle.call_tool("quiet_grow")
        assert len(await handle.list_tools(None)) == 2 and counting.lists == 1  # not told: still cached
        await handle.call_tool("grow")
        assert len(await handle.list_tools(None)) == 4 and counting.lists == 2
        assert len(handle.tools()) == 4
        assert len(await handle.refresh_tools()) == 4 and counting.lists == 3


async def test_without_the_cache_every_turn_lists_the_tools() -> None:
    counting = Counting()
    async with McpServerHandle.transport(in_memory(counting.server())).cache_tools_list(False) as handle:
        await handle.list_tools(None)
        await handle.list_tools(None)
        assert counting.lists == 3


async def test_an_async_predicate_filters_by_the_run_context() -> None:
    async def only_grow(ctx: RunContext[Any] | None, tool: Any) -> bool:
        return ctx is not None and tool.name == "grow"

    async with McpServerHandle.transport(in_memory(Counting().server())).tool_filter(only_grow) as handle:
        assert await handle.list_tools(None) == []
        assert [t.name for t in await handle.list_tools(RunContext.ephemeral(None))] == ["grow"]


def test_a_sampling_request_becomes_a_model_request() -> None:
    params = mcp_types.CreateMessageRequestParams(
        messages=[
            mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(text="hi")),
            mcp_types.SamplingMessage(role="assistant", content=mcp_types.TextContent(text="hello")),
            mcp_types.SamplingMessage(
                role="user", content=[mcp_types.ImageContent(data="aGk=", mime_type="image/png")]
            ),
        ],
        system_prompt="be brief",
        max_tokens=12,
        temperature=0.5,
    )
    request = sampling_request(params)
    assert [type(m) for m in request.messages] == [SystemMessage, UserMessage, AssistantMessage, UserMessage]
    assert request.model_settings.max_output_tokens == 12 and request.model_settings.temperature == 0.5
    assert request.messages[3].content[0].type == "image"  # type: ignore[union-attr]


def test_the_client_loads_neither_the_sdk_nor_the_server_stack_until_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from helikon.mcp import McpServerHandle\n"
        "print(sorted(m for m in ('mcp', 'anyio', 'starlette', 'uvicorn') if m in sys.modules))\n"
        "from helikon.mcp import McpAgentServer\n"
        "print('starlette' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split("\n")[:2] == ["[]", "True"]
