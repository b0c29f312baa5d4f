"""AgentAsTool (isolation, what crosses the boundary) and SwarmAgent (mesh, entry, budgets)."""

from __future__ import annotations

from typing import Any

import pytest

from helikon import (
    AgentAsTool,
    HandoffItem,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    MaxAgentDepthExceeded,
    MaxHandoffsExceeded,
    MemorySession,
    PermissionDenied,
    PermissionMode,
    RunCompleted,
    RunConfig,
    RunContext,
    SwarmAgent,
    SwarmBuildError,
    TokenUsage,
    ToolContext,
    ToolEffect,
    ToolOutputItem,
    TracerHandle,
    Unavailable,
    Usage,
    UsageLimits,
    tool,
)
from helikon.core.events import AgentEvent
from helikon.core.exceptions import UserError
from helikon.core.items import ToolResult
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn

# --- AgentAsTool ---------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        self.events.append(f"{event.type}:{event.agent}")
        return HookDecision.allow()


async def test_the_caller_gets_the_answer_and_the_sub_run_is_isolated() -> None:
    seen: dict[str, Any] = {}

    @tool
    def probe(ctx: ToolContext[dict[str, int]]) -> str:
        """Report what the sub-run sees."""
        seen.update(
            user=ctx.user_ctx, depth=ctx.agent_depth, tracer=ctx.tracer.session_id, state=len(ctx.state)
        )
        return "probed"

    inner_model = MockModel.with_scripts([tool_call_turn("probe", {}), text_turn("inner answer")])
    inner = LlmAgent(name="inner", description="Answers inner questions.", model=inner_model, tools=[probe])
    outer_model = MockModel.with_scripts(
        [tool_call_turn("ask_inner", {"input": "what?"}), text_turn("outer done")]
    )
    outer = LlmAgent(name="outer", model=outer_model, tools=[AgentAsTool(inner, name="ask_inner")])
    hooks = Recorder()
    session = MemorySession()
    ctx = (
        RunContext.ephemeral({"user": 1})
        .with_session(session)
        .with_hooks(HookRegistry[dict[str, int]]([hooks]))
        .with_tracer(TracerHandle(session_id="s-1"))
    )
    ctx.state.set("outer_key", "x")
    result = await AsyncioRunner[dict[str, int]]().run(outer, "go", ctx)
    assert result.final_output == "outer done"
    assert [e.item.text for e in result.events if isinstance(e, ToolOutputItem)] == ["inner answer"]
    # Crosses: user context, tracer, depth + 1. Isolated: state, hooks, session.
    assert seen == {"user": {"user": 1}, "depth": 1, "tracer": "s-1", "state": 0}
    assert inner_model.requests[0].messages[-1].text == "what?"  # type: ignore[union-attr]
    assert "pre_tool_use:inner" not in hooks.events  # the sub-run fires no hooks of the caller...
    assert "on_subagent_stop:inner" in hooks.events  # ...but its end is reported
    stored = [e.type for _, e in await session.events()]
    assert stored == ["user_message", "request_header", "tool_called", "tool_returned", "assistant_message"]


async def test_the_callers_permissions_govern_the_sub_agents_tools() -> None:
    @tool(effect=ToolEffect.WRITE)
    def change() -> str:
        """Change something."""
        return "changed"

    inner_model = MockModel.with_scripts([tool_call_turn("change", {}), text_turn("could not change it")])
    inner = LlmAgent(name="inner", model=inner_model, tools=[change])
    outer = LlmAgent(
        name="outer",
        model=MockModel.with_scripts([tool_call_turn("inner", {"input": "change it"}), text_turn("ok")]),
        tools=[AgentAsTool(inner)],
    )
    ctx = RunContext.ephemeral(None).with_permission_mode(PermissionMode.PLAN)
    await outer.run("go", context=ctx)
    [result] = [m for m in inner_model.requests[1].messages if m.type == "tool_result"]
    assert result.is_error and "PLAN" in result.text  # type: ignore[union-attr]


async def test_bad_arguments_failures_and_depth_become_error_results() -> None:
    broken = LlmAgent(name="broken", model=MockModel.with_scripts([]))
    tool_ = AgentAsTool(broken, description="Breaks.")
    assert tool_.schema["required"] == ["input"] and tool_.effect is ToolEffect.READ_ONLY
    assert tool_.with_name("b2").name == "b2" and tool_.with_description("d").description == "d"
    outer_model = MockModel.with_scripts(
        [
            tool_call_turn("broken", {"wrong": 1}),
            tool_call_turn("broken", {"input": "x"}),
            text_turn("gave up"),
        ]
    )
    outer = LlmAgent(name="outer", model=outer_model, tools=[tool_])
    result = await outer.run("go")
    texts = [e.item.text for e in result.events if isinstance(e, ToolOutputItem)]
    assert "'input'" in texts[0] and "broken failed" in texts[1]

    deep = LlmAgent(
        name="outer",
        model=MockModel.with_scripts([tool_call_turn("broken", {"input": "x"}), text_turn("ok")]),
        tools=[tool_],
    )
    result = await deep.run(
        "go", context=RunContext.ephemeral(None).child(), config=RunConfig(max_agent_depth=1)
    )
    [text] = [e.item.text for e in result.events if isinstance(e, ToolOutputItem)]
    assert "max_agent_depth" in text


def caller_with_agent_tools() -> LlmAgent[None]:
    """A caller that asks two agent-tools at once (one answers, one fails), then answers."""
    helper = LlmAgent[None](
        name="helper",
        model=MockModel.with_scripts([text_turn("42", usage=Usage(input_tokens=7, output_tokens=3))]),
    )
    failing = LlmAgent[None](
        name="failing",
        model=MockModel.with_scripts(
            [
                tool_call_turn("missing", {}, usage=Usage(input_tokens=11)),  # no such tool: an error result
                [Unavailable("down")],  # then the run fails, having spent the first call
            ]
        ),
    )
    model = MockModel.with_scripts(
        [
            tool_calls_turn(
                [("helper", {"input": "x"}), ("failing", {"input": "y"})], usage=Usage(input_tokens=100)
            ),
            text_turn("done", usage=Usage(input_tokens=120, output_tokens=5)),
        ]
    )
    return LlmAgent[None](name="caller", model=model, tools=[AgentAsTool(helper), AgentAsTool(failing)])


async def test_the_callers_usage_includes_what_its_agent_tools_spent() -> None:
    """`RunResult.usage` counts an agent-tool's run (a failed one too), as the usage limits do."""
    result = await caller_with_agent_tools().run("go")
    # caller: 2 calls, 220 in, 5 out; helper: 1 call, 7 in, 3 out; failing: 1 answered call, 11 in
    assert result.usage == TokenUsage(input_tokens=238, output_tokens=8, requests=4)
    assert result.events[-1] == RunCompleted(usage=result.usage)
    for cap, passes in ((238, True), (237, False)):  # the limits count the same tokens
        config = RunConfig(usage_limits=UsageLimits(input_tokens_limit=cap))
        events = [e async for e in caller_with_agent_tools().run("go", config=config)]
        assert isinstance(events[-1], RunCompleted) == passes, events[-1]


# --- SwarmAgent ----------------------------------------------------------------------------------


def member(name: str, *scripts: Any, description: str = "") -> LlmAgent[Any]:
    return LlmAgent(
        name=name, description=description or f"{name} questions", model=MockModel.with_scripts(list(scripts))
    )


def kinds(events: list[AgentEvent]) -> list[str]:
    return [e.type for e in events if e.type not in ("token_delta", "tool_call_delta", "turn_started")]


async def test_a_swarm_starts_at_the_entry_and_ends_with_the_first_answer() -> None:
    triage = member("triage", tool_call_turn("transfer_to_investing", {}))
    budgeting = member("budgeting", text_turn("never"))
    investing = member("investing", tool_call_turn("transfer_to_budgeting", {}))
    swarm = SwarmAgent(name="support", members=[budgeting, triage, investing], entry="triage")
    result = await swarm.run("help")
    assert kinds(result.events)[:3] == ["run_started", "agent_updated", "tool_call_item"]
    assert result.events[0].agent == "support"  # type: ignore[union-attr]
    handoffs = [(e.from_agent, e.to_agent) for e in result.events if isinstance(e, HandoffItem)]
    assert handoffs == [("triage", "investing"), ("investing", "budgeting")]
    assert result.final_output == "never"
    assert sum(1 for e in result.events if e.type == "run_started") == 1
    # Every member got a transfer tool to each other member.
    assert {t.name for t in swarm.members["budgeting"].handoff_defs} == {
        "transfer_to_triage",
        "transfer_to_investing",
    }


async def test_the_entry_defaults_to_the_first_member() -> None:
    swarm = SwarmAgent(name="s", members=[member("a", text_turn("from a")), member("b", text_turn("from b"))])
    assert swarm.entry == "a"
    assert (await swarm.run("hi")).final_output == "from a"


async def test_run_sync_inside_a_running_loop_is_a_user_error_for_a_swarm_too() -> None:
    swarm = SwarmAgent(name="s", members=[member("a", text_turn("from a"))])
    with pytest.raises(UserError, match="inside a running event loop"):
        swarm.run_sync("hi")


def test_run_sync_runs_a_swarm_to_completion() -> None:
    swarm = SwarmAgent(name="s", members=[member("a", text_turn("from a"))])
    assert swarm.run_sync("hi").final_output == "from a"


async def test_max_handoffs_stops_a_ping_pong() -> None:
    ping = member("ping", *[tool_call_turn("transfer_to_pong", {}) for _ in range(5)])
    pong = member("pong", *[tool_call_turn("transfer_to_ping", {}) for _ in range(5)])
    swarm = SwarmAgent(name="s", members=[ping, pong], max_handoffs=3)
    with pytest.raises(MaxHandoffsExceeded) as info:
        await swarm.run("go")
    assert info.value.error.limit == 3
    # Without a budget, max_agent_depth is the bound.
    ping = member("ping", *[tool_call_turn("transfer_to_pong", {}) for _ in range(5)])
    pong = member("pong", *[tool_call_turn("transfer_to_ping", {}) for _ in range(5)])
    with pytest.raises(MaxAgentDepthExceeded):
        await SwarmAgent(name="s", members=[ping, pong]).run("go", config=RunConfig(max_agent_depth=4))


def test_swarm_build_errors() -> None:
    a = member("a")
    with pytest.raises(SwarmBuildError, match="no members"):
        SwarmAgent(name="s", members=[])
    with pytest.raises(SwarmBuildError, match="two members"):
        SwarmAgent(name="s", members=[a, member("a")])
    with pytest.raises(SwarmBuildError, match="entry 'z'"):
        SwarmAgent(name="s", members=[a], entry="z")
    with pytest.raises(SwarmBuildError, match="not an LlmAgent"):
        SwarmAgent(name="s", members=[a, "b"])  # type: ignore[list-item]
    with pytest.raises(SwarmBuildError, match="max_handoffs"):
        SwarmAgent(name="s", members=[a], max_handoffs=-1)


async def test_a_swarm_member_is_governed_like_any_agent() -> None:
    @tool(effect=ToolEffect.WRITE)
    def rebalance() -> str:
        """Rebalance the portfolio."""
        return "done"

    investing = LlmAgent(
        name="investing",
        model=MockModel.with_scripts([tool_call_turn("rebalance", {}), text_turn("I could not rebalance.")]),
        tools=[rebalance],
    )
    triage = member("triage", tool_call_turn("transfer_to_investing", {}))
    swarm = SwarmAgent(name="s", members=[triage, investing])
    result = await swarm.run(
        "rebalance", context=RunContext.ephemeral(None).with_permission_mode(PermissionMode.PLAN)
    )
    assert [e.tool for e in result.events if isinstance(e, PermissionDenied)] == ["rebalance"]
    assert result.final_output == "I could not rebalance."


async def test_the_caller_gets_the_answer_an_output_validator_rewrote() -> None:
    def signed(output: str) -> str:
        return output + " -- the research desk"

    researcher = LlmAgent[None](
        name="researcher", model=MockModel.with_scripts([text_turn("42")]), output_validators=[signed]
    )
    caller_model = MockModel.with_scripts([tool_call_turn("researcher", {"input": "6*7?"}), text_turn("ok")])
    caller = LlmAgent[None](name="caller", model=caller_model, tools=[AgentAsTool(researcher)])
    await caller.run("Ask the desk")
    results = [m for m in caller_model.requests[1].messages if isinstance(m, ToolResult)]
    assert [r.text for r in results] == ["42 -- the research desk"]
