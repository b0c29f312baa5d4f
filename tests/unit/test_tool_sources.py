"""Tool sources: tools asked for before each model turn (`LlmAgent(tool_sources=...)`), merged, checked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from helikon import LlmAgent, RunContext, RunError, Tool, ToolSource, ToolSourceError, UserError, tool
from helikon.core.exceptions import DuplicateName
from helikon.core.items import ToolResult
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
def forecast(city: str) -> str:
    """Tomorrow's weather."""
    return f"sun in {city}"


@tool
def tides(port: str) -> str:
    """High tide."""
    return f"high tide at 6 in {port}"


class Listed:
    """A source whose list can change between turns, and that records what it was asked with."""

    def __init__(self, *tools: Tool[Any]) -> None:
        self.tools: list[Tool[Any]] = list(tools)
        self.asked: list[RunContext[Any] | None] = []

    async def list_tools(self, ctx: RunContext[Any] | None) -> Sequence[Tool[Any]]:
        self.asked.append(ctx)
        return list(self.tools)

    def __repr__(self) -> str:
        return f"Listed({', '.join(t.name for t in self.tools)})"


def offered(model: MockModel) -> list[list[str]]:
    return [[t.name for t in request.tools] for request in model.requests]


async def test_a_sources_tools_are_offered_and_called() -> None:
    source = Listed(forecast)
    assert isinstance(source, ToolSource)
    model = MockModel.with_scripts([tool_call_turn("forecast", {"city": "Oslo"}), text_turn("sunny")])
    agent = LlmAgent(name="a", model=model, tool_sources=[source])
    result = await agent.run("weather?", context=RunContext.ephemeral({"user": "ada"}))
    assert result.final_output == "sunny"
    assert offered(model) == [["forecast"], ["forecast"]]
    assert [m.text for m in model.requests[-1].messages if isinstance(m, ToolResult)] == ["sun in Oslo"]
    assert [ctx.user_ctx if ctx else None for ctx in source.asked] == [{"user": "ada"}, {"user": "ada"}]


async def test_a_changed_list_is_seen_on_the_next_turn() -> None:
    source = Listed(forecast)

    @tool
    def add_tides() -> str:
        """Ask for the tide tool."""
        source.tools.append(tides)
        return "added"

    model = MockModel.with_scripts(
        [tool_call_turn("add_tides", {}), tool_call_turn("tides", {"port": "Bergen"}), text_turn("ok")]
    )
    agent = LlmAgent(name="a", model=model, tools=[add_tides], tool_sources=[source])
    assert (await agent.run("go")).final_output == "ok"
    assert offered(model) == [
        ["add_tides", "forecast"],
        ["add_tides", "forecast", "tides"],
        ["add_tides", "forecast", "tides"],
    ]


async def test_two_sources_with_one_name_fail_the_run_and_say_how_to_fix_it() -> None:
    model = MockModel.with_scripts([text_turn("never")])
    agent = LlmAgent(name="a", model=model, tool_sources=[Listed(forecast), Listed(forecast, tides)])
    with pytest.raises(RunError, match=r"two tools are named 'forecast'.*tool_prefix"):
        await agent.run("go")
    assert model.requests == []  # nothing reached the model


async def test_build_resolved_fails_on_a_clash_with_the_agents_own_tools() -> None:
    builder = LlmAgent.builder().name("a").model(MockModel.with_scripts([])).tool(forecast)
    with pytest.raises(ToolSourceError.DuplicateName) as caught:
        await builder.tool_source(Listed(forecast)).build_resolved()
    assert isinstance(caught.value, DuplicateName)
    assert (caught.value.name, caught.value.first, caught.value.second) == (
        "forecast",
        "the agent's own tools",
        "Listed(forecast)",
    )


async def test_build_resolved_asks_each_source_once_without_a_context() -> None:
    source = Listed(forecast)
    agent = (
        await LlmAgent.builder()
        .name("a")
        .model(MockModel.with_scripts([]))
        .mcp_servers([source])
        .build_resolved()
    )
    assert agent.tool_sources == (source,) and source.asked == [None]


async def test_a_source_that_raises_fails_the_run_naming_it() -> None:
    class Down:
        async def list_tools(self, ctx: RunContext[Any] | None) -> Sequence[Tool[Any]]:
            raise ConnectionError("server gone")

    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("never")]), tool_sources=[Down()])
    with pytest.raises(RunError, match="a tool source raised ConnectionError: server gone"):
        await agent.run("go")


def test_something_that_is_not_a_source_is_refused() -> None:
    with pytest.raises(UserError, match=r"item 0 .* is not a tool source"):
        LlmAgent(name="a", model=MockModel.with_scripts([]), tool_sources=[forecast])  # type: ignore[list-item]
    with pytest.raises(UserError, match="list of tool sources"):
        LlmAgent(name="a", model=MockModel.with_scripts([]), tool_sources="mcp")  # type: ignore[arg-type]


async def test_an_agent_without_sources_does_not_ask_per_turn() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]), tools=[forecast])
    assert not agent.dynamic_tools and agent.tool_sources == ()
