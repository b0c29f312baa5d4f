"""Dynamic tools: a tool's `enabled` predicate and the agent's `prepare_tools`, asked each model turn."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from tool_audit import ToolAudit

from helikon import (
    DenyRule,
    Governance,
    LlmAgent,
    MemorySession,
    RequestHeader,
    RunConfig,
    RunContext,
    RunError,
    ToolCalled,
    ToolContext,
    ToolDef,
    UserError,
    tool,
)
from helikon.core.items import ToolResult
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def offered(model: MockModel) -> list[list[str]]:
    """The tool names each request offered."""
    return [[t.name for t in request.tools] for request in model.requests]


def answers(model: MockModel) -> list[str]:
    return [m.text for m in model.requests[-1].messages if isinstance(m, ToolResult)]


# --- enabled ------------------------------------------------------------------------------------


async def test_a_disabled_tool_is_not_offered_and_a_call_to_it_gets_an_error_result() -> None:
    @tool(enabled=lambda ctx: ctx.user_ctx["admin"])
    def wipe() -> str:
        """Wipe everything."""
        return "wiped"

    model = MockModel.with_scripts([tool_call_turn("wipe", {}), text_turn("I cannot.")])
    agent = LlmAgent(name="a", model=model, tools=[search, wipe])
    result = await agent.run("Wipe it", context=RunContext.ephemeral({"admin": False}))
    assert result.final_output == "I cannot."
    assert offered(model) == [["search"], ["search"]]
    assert answers(model) == ["Error: the tool 'wipe' is not available now (available: search)."]


async def test_enabled_is_asked_each_turn_and_may_be_async() -> None:
    asked: list[int] = []

    async def once(ctx: RunContext[Any]) -> bool:
        asked.append(1)
        return len(asked) == 1

    @tool(enabled=once)
    def ping() -> str:
        """Ping."""
        return "pong"

    model = MockModel.with_scripts([tool_call_turn("ping", {}), tool_call_turn("ping", {}), text_turn("ok")])
    await LlmAgent(name="a", model=model, tools=[ping, search]).run("Go")
    assert offered(model) == [["ping", "search"], ["search"], ["search"]]
    assert len(asked) == 3
    assert answers(model)[0] == "pong" and "not available now" in answers(model)[1]


@pytest.mark.parametrize(
    ("enabled", "message"),
    [
        (lambda ctx: 1 / 0, "the enabled predicate of the tool 'ping' raised ZeroDivisionError"),
        (lambda ctx: None, "the enabled predicate of the tool 'ping' returned None, not a bool"),
    ],
)
async def test_an_enabled_predicate_that_raises_or_returns_no_bool_fails_the_run(
    enabled: Any, message: str
) -> None:
    ping = tool(name="ping", enabled=enabled)(_pong)
    model = MockModel.with_scripts([text_turn("unreachable")])
    with pytest.raises(RunError) as info:
        await LlmAgent(name="a", model=model, tools=[ping]).run("Go")
    assert info.value.error.cause == "enabled" and message in info.value.error.message
    assert model.requests == []


def _pong() -> str:
    """Ping."""
    return "pong"


def test_an_agent_without_enabled_tools_or_prepare_tools_is_static() -> None:
    assert not LlmAgent(name="a", model=MockModel(), tools=[search]).dynamic_tools
    assert LlmAgent(name="a", model=MockModel(), tools=[search], prepare_tools=lambda c, d: d).dynamic_tools


# --- prepare_tools ------------------------------------------------------------------------------


async def test_prepare_tools_filters_and_rewrites_definitions() -> None:
    seen: list[list[str]] = []

    def prepare(ctx: RunContext[Any], defs: list[ToolDef]) -> Sequence[ToolDef]:
        seen.append([d.name for d in defs])
        return [
            dataclasses.replace(d, description="Only European cities.") for d in defs if d.name == "weather"
        ]

    model = MockModel.with_scripts([tool_call_turn("weather", {"city": "Oslo"}), text_turn("Sunny.")])
    agent = LlmAgent(name="a", model=model, tools=[search, weather], prepare_tools=prepare)
    await agent.run("Weather?")
    assert seen == [["search", "weather"]] * 2
    assert [t.description for t in model.requests[0].tools] == ["Only European cities."]
    assert answers(model) == ["sunny in Oslo"]


async def test_a_renamed_definition_dispatches_to_its_tool_and_is_what_the_session_records() -> None:
    async def prepare(ctx: RunContext[Any], defs: list[ToolDef]) -> Mapping[str, ToolDef]:
        return {d.name: dataclasses.replace(d, name=f"v2_{d.name}") for d in defs}

    names: list[str] = []

    @tool
    def who(ctx: ToolContext[None]) -> str:
        """Who am I."""
        names.append(ctx.tool_name)
        return "me"

    model = MockModel.with_scripts([tool_call_turn("v2_who", {}), tool_call_turn("who", {}), text_turn("ok")])
    agent = LlmAgent(name="a", model=model, tools=[who], prepare_tools=prepare)
    session = MemorySession()
    await agent.run("Go", session=session)
    assert offered(model)[0] == ["v2_who"]
    assert names == ["v2_who"]
    first, second = [m for m in model.requests[-1].messages if isinstance(m, ToolResult)]
    assert first.text == "me" and "not available now (available: v2_who)" in second.text
    log = [entry.event for entry in await session.events()]
    assert [e.name for e in log if isinstance(e, ToolCalled)] == ["v2_who", "who"]
    [header] = [e for e in log if isinstance(e, RequestHeader)]
    assert [t.name for t in header.tools] == ["v2_who"]


async def test_hooks_see_the_offered_name_and_rules_the_tools_own() -> None:
    audit = ToolAudit()

    def prepare(ctx: RunContext[Any], defs: list[ToolDef]) -> Mapping[str, ToolDef]:
        return {d.name: dataclasses.replace(d, name="lookup") for d in defs}

    model = MockModel.with_scripts([tool_call_turn("lookup", {"query": "x"}), text_turn("ok")])
    agent = LlmAgent(name="a", model=model, tools=[search], prepare_tools=prepare, hooks=[audit])
    ctx = RunContext.ephemeral(None).with_governance(Governance(deny_rules=[DenyRule.tool("search")]))
    await agent.run("Go", context=ctx)
    assert audit.tools == ["lookup"]
    [answer] = answers(model)
    assert answer.startswith("Error: permission denied: denied by")


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda ctx, defs: 1 / 0, "the prepare_tools function of 'a' raised ZeroDivisionError"),
        (lambda ctx, defs: None, "the prepare_tools function of 'a' returned None, not a list of ToolDef"),
        (lambda ctx, defs: ["search"], "returned 'search', not a list of ToolDef"),
        (
            lambda ctx, defs: [dataclasses.replace(defs[0], name="other")],
            "not a definition of one of this turn's tools (search); to rename one, return a dict",
        ),
        (lambda ctx, defs: [defs[0], defs[0]], "not a ToolDef with a name of its own"),
    ],
    ids=["raises", "returns None", "returns names", "renames in a list", "repeats a tool"],
)
async def test_a_bad_prepare_tools_fails_the_run_naming_it(prepare: Any, message: str) -> None:
    model = MockModel.with_scripts([text_turn("unreachable")])
    with pytest.raises(RunError) as info:
        await LlmAgent(name="a", model=model, tools=[search], prepare_tools=prepare).run("Go")
    assert info.value.error.cause == "prepare_tools" and message in info.value.error.message


def test_prepare_tools_must_be_callable() -> None:
    with pytest.raises(
        UserError, match=r"LlmAgent\(prepare_tools=3\): give a function of \(ctx, tool definitions\)"
    ):
        LlmAgent(name="a", model=MockModel(), prepare_tools=3)  # pyright: ignore[reportArgumentType]


async def test_handoffs_stay_offered_beside_the_prepared_tools() -> None:
    other = LlmAgent(name="other", model=MockModel.with_scripts([text_turn("hi")]))
    model = MockModel.with_scripts([text_turn("ok")])
    agent = LlmAgent(name="a", model=model, tools=[search], handoffs=[other], prepare_tools=lambda c, d: [])
    await agent.run("Go")
    assert offered(model) == [["transfer_to_other"]]


# --- RunConfig.prepare_tools ----------------------------------------------------------------------


async def test_the_runs_prepare_tools_reaches_an_agent_without_one_and_runs_after_the_agents() -> None:
    seen: list[list[str]] = []

    def only_weather(ctx: RunContext[Any], defs: Sequence[ToolDef]) -> list[ToolDef]:
        seen.append([d.name for d in defs])
        return [d for d in defs if d.name == "weather"]

    def shout(ctx: RunContext[Any], defs: Sequence[ToolDef]) -> dict[str, ToolDef]:
        return {d.name: dataclasses.replace(d, name=d.name.upper()) for d in defs}

    model = MockModel.with_scripts([tool_call_turn("WEATHER", {"city": "Oslo"}), text_turn("Sunny.")])
    plain = LlmAgent[None](name="plain", model=model, tools=[search, weather])
    assert not plain.dynamic_tools
    await plain.run("Weather?", config=RunConfig(prepare_tools=shout))
    assert offered(model)[0] == ["SEARCH", "WEATHER"]
    assert answers(model) == ["sunny in Oslo"]  # the renamed call ran the right tool

    model = MockModel.with_scripts([text_turn("ok")])
    both = LlmAgent[None](name="both", model=model, tools=[search, weather], prepare_tools=only_weather)
    await both.run("Weather?", config=RunConfig(prepare_tools=shout))
    assert seen == [["search", "weather"]]  # the agent's own first
    assert offered(model)[0] == ["WEATHER"]  # then the run's


def test_a_runs_prepare_tools_must_be_a_function() -> None:
    with pytest.raises(UserError, match=r"RunConfig\(prepare_tools=3\): give a function"):
        RunConfig(prepare_tools=3)  # type: ignore[arg-type]


async def test_a_runs_prepare_tools_that_raises_fails_the_run_naming_it() -> None:
    def broken(ctx: RunContext[Any], defs: Sequence[ToolDef]) -> list[ToolDef]:
        raise ValueError("no tools today")

    agent = LlmAgent[None](name="a", model=MockModel.with_scripts([text_turn("x")]), tools=[search])
    with pytest.raises(RunError, match=r"RunConfig\.prepare_tools"):
        await agent.run("q", config=RunConfig(prepare_tools=broken))
