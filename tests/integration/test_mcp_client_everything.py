"""helikon's MCP client against the real `@modelcontextprotocol/server-everything` over stdio."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp_peers import peer

from helikon import CancellationToken, LlmAgent, RunContext, ToolEffect, ToolError
from helikon.core.exceptions import RunCancelled
from helikon.core.items import ImagePart, ToolResult
from helikon.mcp import McpConnectBuilder, McpError, McpServerHandle
from helikon.testing import MockModel, text_turn, tool_call_turn


def everything() -> McpConnectBuilder:
    return McpServerHandle.stdio(peer("mcp-server-everything"))


@pytest.fixture
async def server() -> AsyncIterator[McpServerHandle]:
    async with everything() as handle:
        yield handle


async def test_connect_lists_every_tool_with_its_schema_and_effect(server: McpServerHandle) -> None:
    assert server.server_info.name == "mcp-servers/everything"
    assert server.instructions is not None and "Everything Server" in server.instructions
    tools = {t.name: t for t in server.tools()}
    assert {"echo", "get-sum", "get-structured-content", "get-tiny-image"} <= set(tools)
    echo = tools["echo"]
    assert echo.description == "Echoes back the input string"
    assert echo.schema["properties"] == {"message": {"type": "string"}}
    assert echo.effect is ToolEffect.READ_ONLY
    assert tools["toggle-simulated-logging"].effect is ToolEffect.SIDE_EFFECT  # readOnlyHint false
    assert all(t.effect is not ToolEffect.WRITE for t in tools.values())
    # No capability advertised, so the server hides the tools that need one.
    assert "trigger-sampling-request" not in tools
    assert "trigger-elicitation-request" not in tools


async def test_a_user_built_transport_the_sdks_own_stdio_client() -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=str(peer("mcp-server-everything")))
    async with McpServerHandle.transport(lambda: stdio_client(params)).tool_prefix("sdk_") as handle:
        assert handle.label == "transport:<lambda>"
        assert (await handle.call_tool("get-sum", {"a": 20, "b": 22})).value == "The sum of 20 and 22 is 42."
        assert "sdk_echo" in [t.name for t in handle.tools()]


async def test_calls_map_text_structured_content_and_media(server: McpServerHandle) -> None:
    assert (await server.call_tool("echo", {"message": "hi"})).value == "Echo: hi"
    assert (await server.call_tool("get-sum", {"a": 2, "b": 40})).value == "The sum of 2 and 40 is 42."
    weather = await server.call_tool("get-structured-content", {"location": "New York"})
    assert isinstance(weather.value, dict) and set(weather.value) == {"temperature", "conditions", "humidity"}
    image = await server.call_tool("get-tiny-image", {})
    assert isinstance(image.value, list) and len(image.value) == 3
    assert image.value[0] == "Here's the image you requested:"
    assert isinstance(image.value[1], dict) and image.value[1]["type"] == "image"
    assert image.parts is not None and isinstance(image.parts[1], ImagePart)  # a vision model sees it


async def test_an_unknown_tool_and_bad_arguments_are_tool_errors(server: McpServerHandle) -> None:
    with pytest.raises(ToolError, match="Tool does-not-exist not found"):
        await server.call_tool("does-not-exist", {})
    with pytest.raises(ToolError):
        await server.call_tool("get-sum", {"a": "two"})
    assert (await server.call_tool("echo", {"message": "still up"})).value == "Echo: still up"


async def test_a_prefix_names_the_tools_and_the_call_uses_the_remote_name() -> None:
    async with everything().tool_prefix("ev_") as handle:
        tools = {t.name: t for t in handle.tools()}
        assert "ev_get-sum" in tools and "get-sum" not in tools
        ctx = RunContext.ephemeral(None)
        model = MockModel.with_scripts([tool_call_turn("ev_get-sum", {"a": 1, "b": 2}), text_turn("3")])
        agent = await LlmAgent.builder().name("a").model(model).mcp_servers([handle]).build_resolved()
        assert (await agent.run("add", context=ctx)).final_output == "3"
        [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResult)]
        assert result.text == "The sum of 1 and 2 is 3."


async def test_an_agent_adds_two_numbers_with_the_servers_tool(server: McpServerHandle) -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("get-sum", {"a": 2, "b": 40}),
            tool_call_turn("does-not-exist", {}),
            text_turn("2 + 40 = 42"),
        ]
    )
    agent = LlmAgent(name="adder", model=model, tool_sources=[server])
    result = await agent.run("Use the tool to add 2 and 40.")
    assert result.final_output == "2 + 40 = 42"
    results = [m for m in model.requests[-1].messages if isinstance(m, ToolResult)]
    assert results[0].text == "The sum of 2 and 40 is 42." and not results[0].is_error
    assert results[1].is_error  # the model never got a tool of that name: the run says so
    assert "get-sum" in [t.name for t in model.requests[0].tools]


async def test_a_cancelled_run_does_not_wait_for_a_long_operation(server: McpServerHandle) -> None:
    token = CancellationToken()
    model = MockModel.with_scripts(
        [tool_call_turn("trigger-long-running-operation", {"duration": 600, "steps": 600}), text_turn("no")]
    )
    agent = LlmAgent(name="patient", model=model, tool_sources=[server])
    run = asyncio.ensure_future(agent.run("go", context=RunContext.ephemeral(None).with_cancel(token)))
    for _ in range(1000):  # until the model has asked for the call
        if model.requests:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # the call is on its way to the server
    token.cancel("stop")
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(run, 60)  # a guard: without the race this would take 600 s
    assert (await server.call_tool("echo", {"message": "after"})).value == "Echo: after"


async def test_a_handle_used_on_another_event_loop_says_so() -> None:
    handle = await asyncio.to_thread(_connect_in_another_loop)  # and left open when that loop ended
    with pytest.raises(McpError.Service, match="another event loop"):
        await handle.refresh_tools()
    with pytest.raises(ToolError, match="another event loop"):
        await handle.call_tool("echo", {"message": "x"})
    await handle.close()


def _connect_in_another_loop() -> McpServerHandle:
    return asyncio.run(everything().connect())


async def test_allow_deny_and_a_predicate_of_the_run_context_filter_the_tools() -> None:
    def only_for_admins(ctx: RunContext[Any] | None, tool: Any) -> bool:
        return tool.name != "get-env" or (ctx is not None and ctx.user_ctx == "admin")

    builder = (
        everything()
        .allow_tools(["echo", "get-sum", "get-env", "get-tiny-image"])
        .deny_tools(["get-tiny-image"])
        .tool_filter(only_for_admins)
    )
    async with builder as handle:
        assert sorted(t.name for t in handle.tools()) == ["echo", "get-env", "get-sum"]
        guest = await handle.list_tools(RunContext.ephemeral("guest"))
        admin = await handle.list_tools(RunContext.ephemeral("admin"))
        assert sorted(t.name for t in guest) == ["echo", "get-sum"]
        assert sorted(t.name for t in admin) == ["echo", "get-env", "get-sum"]


async def test_lazy_mode_over_the_real_tool_list() -> None:
    async with everything().lazy().tool_prefix("ev_") as handle:
        tools = {t.name: t for t in handle.tools()}
        search = tools.pop("ev_search_tools")
        assert all(t.schema == {"type": "object", "additionalProperties": True} for t in tools.values())
        found = (await search.invoke(_tool_ctx(), {"query": "SUM"})).value
        assert found == {
            "tools": [
                {
                    "name": "ev_get-sum",
                    "description": "Returns the sum of two numbers",
                    "input_schema": (await _real_schema("get-sum")),
                }
            ],
            "total_matches": 1,
        }
        everything_matches = (await search.invoke(_tool_ctx(), {"query": ""})).value
        assert isinstance(everything_matches, dict)
        assert everything_matches["total_matches"] == len(tools) and "truncated" not in everything_matches
        # A placeholder schema still calls through with the model's arguments.
        out = await tools["ev_get-sum"].invoke(_tool_ctx(), {"a": 1, "b": 1})
        assert out.value == "The sum of 1 and 1 is 2."


async def test_resources_and_prompts(server: McpServerHandle) -> None:
    resources = await server.resources()
    assert resources, "server-everything lists resources"
    first = resources[0]
    contents = await server.read_resource(str(first.uri))
    assert contents and str(contents[0].uri) == str(first.uri)
    prompts = {p.name: p for p in await server.prompts()}
    assert "simple-prompt" in prompts
    prompt = await server.get_prompt("simple-prompt")
    assert prompt.messages and prompt.messages[0].role == "user"
    assert await server.resource_templates()


async def test_a_sampling_request_is_answered_by_the_configured_model() -> None:
    model = MockModel.with_scripts([text_turn("Sure: 42.")])
    async with everything().sampling_model(model) as handle:
        assert "trigger-sampling-request" in [t.name for t in handle.tools()]
        out = await handle.call_tool("trigger-sampling-request", {"prompt": "what is 6*7?", "maxTokens": 30})
        assert isinstance(out.value, str) and "Sure: 42." in out.value and '"endTurn"' in out.value
    [request] = model.requests
    assert request.model_settings.max_output_tokens == 30
    assert "what is 6*7?" in request.messages[-1].text  # type: ignore[union-attr]


async def test_elicitation_reaches_the_callback_which_may_accept_or_decline() -> None:
    asked: list[str] = []

    def accept(params: Any) -> dict[str, Any]:
        asked.append(params.message)
        return {"name": "Ada Lovelace", "check": True, "email": "ada@example.org"}

    async with everything().elicitation_handler(accept) as handle:
        out = await handle.call_tool("trigger-elicitation-request", {})
        assert isinstance(out.value, list) and "Ada Lovelace" in str(out.value)
    assert asked and "provide" in asked[0]
    async with everything().elicitation_handler(lambda params: None) as handle:
        out = await handle.call_tool("trigger-elicitation-request", {})
        assert "declined" in str(out.value)


async def _real_schema(name: str) -> Any:
    async with everything() as handle:
        [tool] = [t for t in handle.tools() if t.name == name]
        return tool.schema


def _tool_ctx() -> Any:
    from helikon import ToolContext

    return ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="t", max_agent_depth=4)
