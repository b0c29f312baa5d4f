"""MCP tools as helikon tools: names, effects, destructive hints, results, lazy mode, pagination.

The server is the SDK's low-level `Server` in this process (over memory streams), listing
30 tools in two pages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import mcp_types
import pytest
from mcp.server.lowlevel import Server
from mcp_memory import in_memory

from helikon import RunContext, ToolContext, ToolEffect, ToolError
from helikon.core.items import AudioPart, ImagePart, TextPart
from helikon.mcp import McpServerHandle
from helikon.mcp._mcp_tool import PLACEHOLDER_SCHEMA, is_destructive, tool_name
from helikon.mcp._results import tool_output

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def listed() -> list[mcp_types.Tool]:
    tools = [
        mcp_types.Tool(name=f"item.{i}", description=f"Item number {i}", input_schema=SCHEMA)
        for i in range(27)
    ]
    tools.append(
        mcp_types.Tool(
            name="wipe",
            description="Wipes EVERYTHING",
            input_schema=SCHEMA,
            annotations=mcp_types.ToolAnnotations(read_only_hint=False),
        )
    )
    tools.append(
        mcp_types.Tool(
            name="look",
            description="Looks around",
            input_schema=SCHEMA,
            annotations=mcp_types.ToolAnnotations(read_only_hint=True, destructive_hint=True),
        )
    )
    tools.append(mcp_types.Tool(name="fail", description="Always fails", input_schema=SCHEMA))
    return tools


async def list_tools(ctx: Any, params: mcp_types.PaginatedRequestParams | None) -> mcp_types.ListToolsResult:
    tools = listed()
    if params is None or params.cursor is None:
        return mcp_types.ListToolsResult(tools=tools[:16], next_cursor="page-2")
    assert params.cursor == "page-2"
    return mcp_types.ListToolsResult(tools=tools[16:])


async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
    if params.name == "fail":
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(text="it broke")], is_error=True)
    x = (params.arguments or {})["x"]
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(text=f"{params.name}: {x}")])


@pytest.fixture
async def handle() -> AsyncIterator[McpServerHandle]:
    server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)
    async with McpServerHandle.transport(in_memory(server)).tool_prefix("p_").lazy() as connected:
        yield connected


def tool_ctx() -> ToolContext[None]:
    return ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="t", max_agent_depth=4)


async def test_every_page_is_listed_and_names_are_made_safe_for_providers(handle: McpServerHandle) -> None:
    names = [t.name for t in handle.tools()]
    assert len(names) == 31 and names[0] == "p_item_0" and names[-1] == "p_search_tools"
    out = await handle.tools()[3].invoke(tool_ctx(), {"x": 7})
    assert out.value == "item.3: 7"  # called by its remote name, dot and all


def test_tool_names() -> None:
    assert tool_name("fs_", "read_file") == "fs_read_file"
    assert tool_name("", "get-sum") == "get-sum"
    assert tool_name("x_", "a.b/c d") == "x_a_b_c_d"
    assert len(tool_name("p_", "n" * 100)) == 64


@pytest.mark.parametrize(
    ("annotations", "assume", "destructive"),
    [
        (None, False, False),  # no annotations: untrusted and unknown; ask only if told to
        (None, True, True),
        (mcp_types.ToolAnnotations(read_only_hint=True), True, False),
        (mcp_types.ToolAnnotations(read_only_hint=True, destructive_hint=True), False, False),
        (mcp_types.ToolAnnotations(read_only_hint=False), False, True),  # the MCP default: destructive
        (mcp_types.ToolAnnotations(), False, True),
        (mcp_types.ToolAnnotations(read_only_hint=False, destructive_hint=False), True, False),
        (mcp_types.ToolAnnotations(read_only_hint=False, destructive_hint=True), False, True),
    ],
)
def test_destructive_follows_the_mcp_defaults(annotations: Any, assume: bool, destructive: bool) -> None:
    assert is_destructive(annotations, assume) is destructive


async def test_effects_and_approval_prompts(handle: McpServerHandle) -> None:
    tools = {t.name: t for t in handle.tools()}
    assert tools["p_look"].effect is ToolEffect.READ_ONLY
    assert getattr(tools["p_look"], "approval_prompt", None) is None
    assert tools["p_wipe"].effect is ToolEffect.SIDE_EFFECT
    assert "'wipe' as destructive" in tools["p_wipe"].approval_prompt  # type: ignore[attr-defined]
    assert getattr(tools["p_item_1"], "approval_prompt", None) is None
    assert tools["p_search_tools"].effect is ToolEffect.READ_ONLY


async def test_lazy_mode_caps_the_search_at_twenty(handle: McpServerHandle) -> None:
    tools = {t.name: t for t in handle.tools()}
    assert all(t.schema == PLACEHOLDER_SCHEMA for n, t in tools.items() if n != "p_search_tools")
    search = tools["p_search_tools"]
    assert search.schema["required"] == ["query"]
    many = (await search.invoke(tool_ctx(), {"query": "ITEM"})).value
    assert isinstance(many, dict)
    assert len(many["tools"]) == 20 and many["total_matches"] == 27 and many["truncated"] is True  # type: ignore[arg-type]
    one = (await search.invoke(tool_ctx(), {"query": "everything"})).value
    assert one == {
        "tools": [{"name": "p_wipe", "description": "Wipes EVERYTHING", "input_schema": SCHEMA}],
        "total_matches": 1,
    }
    none = (await search.invoke(tool_ctx(), {"query": "zebra"})).value
    assert none == {"tools": [], "total_matches": 0}
    with pytest.raises(ToolError, match="query"):
        await search.invoke(tool_ctx(), {"q": "x"})


async def test_an_error_result_is_a_tool_error_with_the_servers_text(handle: McpServerHandle) -> None:
    with pytest.raises(ToolError, match=r"^it broke$"):
        await handle.call_tool("fail", {"x": 1})
    with pytest.raises(ToolError, match="expected a JSON object"):
        await handle.tools()[0].invoke(tool_ctx(), [1, 2])


def result(*blocks: Any, structured: Any = None, error: bool = False) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(blocks), structured_content=structured, is_error=error)


def test_results_map_as_the_book_says() -> None:
    text = mcp_types.TextContent(text="hello")
    image = mcp_types.ImageContent(data="aGk=", mime_type="image/png")
    audio = mcp_types.AudioContent(data="aGk=", mime_type="audio/wav")
    assert tool_output("t", result(text)).value == "hello"
    assert tool_output("t", result(text, structured={"a": 1})).value == {"a": 1}
    assert tool_output("t", result()).value == []
    two = tool_output("t", result(text, mcp_types.TextContent(text="world")))
    assert two.value == ["hello", "world"] and two.parts is None
    media = tool_output("t", result(text, image, audio))
    assert media.value == [
        "hello",
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
    ]
    assert media.parts is not None
    assert [type(p) for p in media.parts] == [TextPart, ImagePart, AudioPart]
    with pytest.raises(ToolError, match=r"^hello$"):
        tool_output("t", result(text, error=True))
    with pytest.raises(ToolError, match="an error result with no text"):
        tool_output("t", result(image, error=True))
