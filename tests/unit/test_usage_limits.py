"""Usage limits: `RunConfig(usage_limits=UsageLimits(...))` caps requests, tokens and tool calls,
summed over handoffs, agents as tools and workflow children, and fails the run with
`UsageLimitExceeded` (issue 18 §6)."""

from __future__ import annotations

from typing import Any

import pytest

from helikon import (
    AgentAsTool,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    MemorySession,
    MessageOutput,
    ParallelAgent,
    RunCompleted,
    RunConfig,
    RunContext,
    RunError,
    RunFailed,
    SequentialAgent,
    SwarmAgent,
    ToolOutputItem,
    TurnStarted,
    UsageLimitExceeded,
    UsageLimits,
    UserError,
    tool,
)
from helikon.core.events import AgentError, AgentEvent
from helikon.core.model import Usage
from helikon.core.session import TurnClosed, TurnOpened
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn

CALLS: list[str] = []


@tool
async def lookup(city: str) -> str:
    """Look up a city."""
    CALLS.append(city)
    return f"{city}: 12 C"


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def used(input_tokens: int, output_tokens: int = 0) -> Usage:
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens)


def weather(*scripts: Any, name: str = "weather") -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts(list(scripts))
    return LlmAgent(name=name, model=model, tools=[lookup], description="Knows the weather."), model


def two_lookups_then_answer() -> tuple[LlmAgent[Any], MockModel]:
    return weather(
        tool_call_turn("lookup", {"city": "Oslo"}, call_id="c1", usage=used(10, 5)),
        tool_call_turn("lookup", {"city": "Rome"}, call_id="c2", usage=used(20, 5)),
        text_turn("Oslo 12 C, Rome 12 C.", usage=used(30, 10)),
    )


def limited(**limits: int) -> RunConfig:
    return RunConfig(usage_limits=UsageLimits(**limits))


async def events_of(agent: Any, config: RunConfig | None = None, **kwargs: Any) -> list[AgentEvent]:
    return [e async for e in agent.run("Weather?", config=config, **kwargs)]


def failure(events: list[AgentEvent]) -> AgentError:
    last = events[-1]
    assert isinstance(last, RunFailed), last
    return last.error


# --- the carrier -----------------------------------------------------------------------------


def test_limits_are_whole_numbers_or_none() -> None:
    assert not UsageLimits().any and UsageLimits(tool_calls_limit=0).any
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(UserError, match=r"UsageLimits\(request_limit=.*\): give a whole number >= 0"):
            UsageLimits(request_limit=bad)  # pyright: ignore[reportArgumentType]
    with pytest.raises(
        UserError, match=r"RunConfig\(usage_limits=\{'request_limit': 3\}\): give a UsageLimits"
    ):
        RunConfig(usage_limits={"request_limit": 3})  # pyright: ignore[reportArgumentType]
    config = RunConfig().with_usage_limits(UsageLimits(request_limit=3))
    assert config.usage_limits == UsageLimits(request_limit=3)
    assert config.with_usage_limits(None).usage_limits is None


def test_the_error_is_a_run_error_with_the_limit_and_the_figure() -> None:
    error = AgentError(kind="usage_limit_exceeded", message="m", limit=3, cause="request_limit", used=4)
    raised = RunError.from_agent_error(error)
    assert isinstance(raised, UsageLimitExceeded) and isinstance(raised, RunError)
    assert (raised.kind, raised.limit_name, raised.limit, raised.used) == (
        "usage_limit_exceeded",
        "request_limit",
        3,
        4,
    )


# --- each limit ------------------------------------------------------------------------------


async def test_request_limit_the_call_that_would_pass_it_is_not_made() -> None:
    agent, model = two_lookups_then_answer()
    with pytest.raises(UsageLimitExceeded) as caught:
        await agent.run("Weather?", config=limited(request_limit=2))
    assert len(model.requests) == 2  # the third call was never sent
    assert CALLS == ["Oslo", "Rome"]  # the tools of the calls that were made ran
    assert (caught.value.limit_name, caught.value.limit, caught.value.used) == ("request_limit", 2, 3)
    assert str(caught.value) == (
        "UsageLimits.request_limit=2 exceeded: 'weather' would make model request 3, so it was not sent "
        "(the run, its handoffs and sub-agents count together)"
    )


async def test_request_limit_streams_the_failure_without_the_turn_it_refused() -> None:
    agent, _ = two_lookups_then_answer()
    events = await events_of(agent, limited(request_limit=2))
    assert isinstance(events[-2], ToolOutputItem)  # the second call's result, then the failure
    assert sum(isinstance(e, TurnStarted) for e in events) == 2
    assert failure(events).kind == "usage_limit_exceeded"
    last = events[-1]
    assert isinstance(last, RunFailed) and (last.usage.requests, last.usage.input_tokens) == (2, 30)


async def test_request_limit_zero_makes_no_call_at_all() -> None:
    agent, model = two_lookups_then_answer()
    events = await events_of(agent, limited(request_limit=0))
    assert [e.type for e in events] == ["run_started", "run_failed"]
    assert model.requests == [] and failure(events).used == 1


async def test_input_tokens_limit_fails_the_run_after_the_call_that_passes_it() -> None:
    agent, model = two_lookups_then_answer()
    events = await events_of(agent, limited(input_tokens_limit=25))
    # The second call (10 + 20 = 30 input tokens) was made and its tool call streamed...
    assert len(model.requests) == 2
    assert [e.type for e in events if e.type.endswith("_item")][-1] == "tool_call_item"
    assert CALLS == ["Oslo"]  # ...but its tool never ran
    error = failure(events)
    assert (error.cause, error.limit, error.used) == ("input_tokens_limit", 25, 30)
    assert error.message == (
        "UsageLimits.input_tokens_limit=25 exceeded: 30 input tokens used once a call of 'weather' "
        "answered (the run, its handoffs and sub-agents count together)"
    )


async def test_a_final_answer_over_a_token_limit_fails_instead_of_completing() -> None:
    agent, _ = two_lookups_then_answer()
    events = await events_of(agent, limited(output_tokens_limit=19))
    assert isinstance(events[-2], MessageOutput)  # the answer is streamed (and would be recorded)
    assert not any(isinstance(e, RunCompleted) for e in events)
    error = failure(events)
    assert (error.cause, error.limit, error.used) == ("output_tokens_limit", 19, 20)


async def test_total_tokens_limit_counts_input_plus_output_and_the_cap_itself_is_allowed() -> None:
    agent, _ = two_lookups_then_answer()  # 15 + 25 + 40 = 80 tokens
    result = await agent.run("Weather?", config=limited(total_tokens_limit=80))
    assert result.usage.total_tokens == 80
    agent, _ = two_lookups_then_answer()
    with pytest.raises(
        UsageLimitExceeded, match=r"total_tokens_limit=79 exceeded: 80 tokens \(input plus output\)"
    ):
        await agent.run("Weather?", config=limited(total_tokens_limit=79))


async def test_tool_calls_limit_a_batch_that_would_pass_it_does_not_run() -> None:
    agent, model = weather(
        tool_calls_turn([("lookup", {"city": "Oslo"}), ("lookup", {"city": "Rome"})]),
        tool_calls_turn([("lookup", {"city": "Bern"}), ("lookup", {"city": "Kyiv"})]),
        text_turn("done"),
    )
    events = await events_of(agent, limited(tool_calls_limit=3))
    assert CALLS == ["Oslo", "Rome"]  # the first batch ran; none of the second
    assert len(model.requests) == 2
    error = failure(events)
    assert (error.cause, error.limit, error.used) == ("tool_calls_limit", 3, 4)
    assert "2 tool calls would bring the tool calls to 4, so none of the batch ran" in error.message


# --- no limits: no change --------------------------------------------------------------------


async def test_no_limits_is_no_change() -> None:
    seen: list[RunContext[Any]] = []

    class Spy:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            seen.append(ctx)
            return HookDecision.allow()

    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry[Any]([Spy()]))
    runs: list[list[AgentEvent]] = []
    for config in (None, RunConfig(), RunConfig(usage_limits=UsageLimits())):
        agent, _ = two_lookups_then_answer()
        runs.append(await events_of(agent, config, context=ctx))
    assert runs[0] == runs[1] == runs[2] and isinstance(runs[0][-1], RunCompleted)
    assert seen and all(s is ctx for s in seen)  # the run's context is the caller's own: nothing attached


async def test_limits_are_per_run_not_per_context() -> None:
    ctx = RunContext.ephemeral(None)
    config = limited(request_limit=3)
    for _ in range(3):  # each run has its own three requests
        agent, _ = two_lookups_then_answer()
        await agent.run("Weather?", context=ctx, config=config)


# --- summed across handoffs, agents as tools, workflows ---------------------------------------


def triage_with(specialist: LlmAgent[Any]) -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts([tool_call_turn("transfer_to_weather", {}, usage=used(10, 2))])
    return LlmAgent(name="triage", model=model, handoffs=[specialist]), model


async def test_a_handoff_target_counts_into_the_same_limits() -> None:
    specialist, specialist_model = weather(text_turn("12 C", usage=used(7, 3)))
    triage, _ = triage_with(specialist)
    events = await events_of(triage, limited(input_tokens_limit=15))
    error = failure(events)
    assert (error.cause, error.used) == ("input_tokens_limit", 17)  # 10 (triage) + 7 (weather)
    assert "a call of 'weather' answered" in error.message
    last = events[-1]
    assert isinstance(last, RunFailed) and last.usage.input_tokens == 17

    specialist, specialist_model = weather(text_turn("12 C"))
    triage, _ = triage_with(specialist)
    with pytest.raises(UsageLimitExceeded, match="'weather' would make model request 2"):
        await triage.run("Weather?", config=limited(request_limit=1))
    assert specialist_model.requests == []


def caller_of(sub: LlmAgent[Any], **kwargs: Any) -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts(
        [tool_call_turn("weather", {"input": "Oslo?"}, usage=used(10, 1)), text_turn("It is 12 C.")]
    )
    return LlmAgent(name="assistant", model=model, tools=[AgentAsTool(sub, **kwargs)]), model


async def test_an_agent_called_as_a_tool_counts_into_the_callers_limits() -> None:
    sub, _ = weather(text_turn("12 C", usage=used(100, 5)))
    caller, caller_model = caller_of(sub)
    events = await events_of(caller, limited(input_tokens_limit=50))
    assert len(caller_model.requests) == 1  # the caller makes no call after its sub-agent passed the cap
    result = next(e for e in events if isinstance(e, ToolOutputItem))
    assert result.item.is_error and "usage_limit_exceeded" in result.item.text  # recorded, answered
    error = failure(events)
    assert (error.cause, error.used) == ("input_tokens_limit", 110)
    assert "a call of 'weather' answered" in error.message


async def test_the_sub_agents_tool_calls_and_requests_count_too() -> None:
    sub, _ = weather(tool_call_turn("lookup", {"city": "Oslo"}), text_turn("12 C"))
    caller, _ = caller_of(sub)
    # The caller's call of the sub-agent is one tool call; the sub-agent's lookup a second.
    with pytest.raises(UsageLimitExceeded, match="tool_calls_limit=1 exceeded: a tool call would bring"):
        await caller.run("Weather?", config=limited(tool_calls_limit=1))
    assert CALLS == []
    sub, sub_model = weather(tool_call_turn("lookup", {"city": "Oslo"}), text_turn("12 C"))
    caller, _ = caller_of(sub)
    with pytest.raises(UsageLimitExceeded, match="'weather' would make model request 3"):
        await caller.run("Weather?", config=limited(request_limit=2))
    assert len(sub_model.requests) == 1 and CALLS == ["Oslo"]


async def test_a_sub_agents_own_limits_fail_only_the_sub_agent() -> None:
    sub, _ = weather(tool_call_turn("lookup", {"city": "Oslo"}), text_turn("12 C"))
    caller, caller_model = caller_of(sub, config=limited(request_limit=1))
    result = await caller.run("Weather?", config=limited(request_limit=5))
    assert result.final_output == "It is 12 C." and len(caller_model.requests) == 2
    answer = next(e for e in result.events if isinstance(e, ToolOutputItem))
    assert answer.item.is_error and "request_limit=1 exceeded" in answer.item.text


async def test_workflow_children_count_together() -> None:
    first, _ = weather(text_turn("notes", usage=used(5)), name="first")
    second, second_model = weather(text_turn("brief", usage=used(5)), name="second")
    pipeline = SequentialAgent[Any]("pipeline").then(first).then(second)
    with pytest.raises(UsageLimitExceeded, match="'second' would make model request 2") as caught:
        await pipeline.run("Topic", config=limited(request_limit=1))
    assert second_model.requests == [] and caught.value.used == 2

    left, left_model = weather(text_turn("l", usage=used(5)), name="left")
    right, right_model = weather(text_turn("r", usage=used(5)), name="right")
    fan = ParallelAgent[Any]("fan").add(left).add(right)
    with pytest.raises(UsageLimitExceeded) as caught:
        await fan.run("Topic", config=limited(request_limit=1))
    assert len(left_model.requests) + len(right_model.requests) == 1  # the branches share one budget
    assert caught.value.limit_name == "request_limit"


async def test_a_swarms_members_count_together() -> None:
    triage = LlmAgent[Any](
        name="triage", model=MockModel.with_scripts([tool_call_turn("transfer_to_weather", {})])
    )
    specialist, specialist_model = weather(text_turn("12 C"))
    swarm = SwarmAgent[Any](name="desk", members=[triage, specialist], run_config=limited(request_limit=1))
    with pytest.raises(UsageLimitExceeded, match="'weather' would make model request 2"):
        await swarm.run("Weather?")
    assert specialist_model.requests == []


# --- sessions --------------------------------------------------------------------------------


async def test_a_durable_run_stopped_by_a_limit_keeps_what_it_wrote() -> None:
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    agent, _ = two_lookups_then_answer()
    config = RunConfig(durable=True, usage_limits=UsageLimits(request_limit=1))
    with pytest.raises(UsageLimitExceeded):
        await AsyncioRunner[None]().run(agent, "Weather?", ctx, config)
    records = await session.records()
    opened, closed = records[0].event, records[-1].event
    assert isinstance(opened, TurnOpened) and isinstance(closed, TurnClosed) and closed.outcome == "failed"
    assert [m.type for m in (await session.snapshot()).messages] == ["user", "tool_call", "tool_result"]
    # The next run goes on from there, the stored exchange in front of it.
    agent, model = weather(text_turn("12 C in Oslo."))
    result = await AsyncioRunner[None]().run(agent, "And now?", ctx, RunConfig(durable=True))
    assert result.final_output == "12 C in Oslo."
    assert [m.type for m in model.requests[0].messages] == ["user", "tool_call", "tool_result", "user"]
