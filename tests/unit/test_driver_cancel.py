"""Cancellation wins wherever the driver is suspended: a cancel made before the terminal event
ends the run cancelled, promptly, with nothing after it but that terminal event.

The consumer cancels from inside its `async for` at each event the run streams (a stop
button in the loop that renders tokens), and a timer or the run's own code cancels while the
driver awaits user code (hooks, guardrails, the instructions). The models stall after the
event where the cancel happens, so a cancel that is lost shows as a hang (caught by
`HANG_GUARD`) or as late events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from helikon import (
    ApprovalOutcome,
    CancellationToken,
    GuardrailInput,
    GuardrailVerdict,
    HookDecision,
    HookEvent,
    LlmAgent,
    PermissionDecision,
    RunConfig,
    RunContext,
    RunFailed,
    TokenDelta,
    ToolContext,
    tool,
)
from helikon.core.events import AgentEvent, RequestSent, ToolOutputItem
from helikon.core.model import ReasoningDelta
from helikon.testing import Delay, MockModel, text_turn, tool_call_turn, tool_calls_turn

HANG_GUARD = 10.0  # seconds; only a lost cancel gets near it
STALL = Delay(3600)  # a model that never sends its next event
DELTAS = ("token_delta", "tool_call_delta", "reasoning_delta")


@tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo:{text}"


async def run_cancelling(
    agent: LlmAgent[Any],
    when: Callable[[AgentEvent], bool],
    *,
    ctx: RunContext[Any] | None = None,
    config: RunConfig | None = None,
) -> tuple[list[AgentEvent], int]:
    """Run `agent`, cancelling from the consumer's loop at the first event `when` matches.

    Returns the events and the index of the event the cancel was made at.
    """
    token = CancellationToken()
    context = (ctx or RunContext.ephemeral(None)).with_cancel(token)
    events: list[AgentEvent] = []
    at = -1

    async def consume() -> None:
        nonlocal at
        async for event in agent.run("hi", context=context, config=config):
            events.append(event)
            if at < 0 and when(event):
                at = len(events) - 1
                token.cancel("stop")

    await asyncio.wait_for(consume(), HANG_GUARD)
    assert at >= 0, "the event to cancel at never came"
    return events, at


def assert_cancelled_after(events: list[AgentEvent], at: int) -> None:
    """After the cancel point: no more deltas, and the run ends cancelled.

    What had settled before the cancel (the other events of the same step, such as the
    `TurnStarted` after `RunStarted`) may still come: it happened, and a recorder keeps it.
    """
    after = [e.type for e in events[at + 1 :]]
    assert not any(t in DELTAS for t in after), [e.type for e in events]
    assert [t for t in after if t in ("run_completed", "run_failed")] == ["run_failed"], after
    last = events[-1]
    assert isinstance(last, RunFailed) and last.error.kind == "cancelled", [e.type for e in events]
    assert "stop" in last.error.message


def of_type(name: str) -> Callable[[AgentEvent], bool]:
    return lambda event: event.type == name


# --- the consumer cancels at each event --------------------------------------------------------


@pytest.mark.parametrize("delta", [TokenDelta(text="partial"), ReasoningDelta(text="thinking")])
async def test_a_cancel_on_a_delta_stops_a_stalled_model(delta: TokenDelta | ReasoningDelta) -> None:
    model = MockModel.with_scripts([[delta, STALL, TokenDelta(text="late")]])
    events, at = await run_cancelling(LlmAgent(name="a", model=model), of_type(delta.type))
    assert_cancelled_after(events, at)


async def test_a_cancel_on_a_tool_call_delta_stops_a_stalled_model() -> None:
    script = [*tool_call_turn("echo", {"text": "x"})[:1], STALL]
    model = MockModel.with_scripts([script, text_turn("never")])
    events, at = await run_cancelling(
        LlmAgent(name="a", model=model, tools=[echo]), of_type("tool_call_delta")
    )
    assert_cancelled_after(events, at)
    assert model.remaining == 1


async def test_a_cancel_on_a_delta_reads_no_more_of_a_model_that_does_not_pause() -> None:
    model = MockModel.with_scripts([text_turn("one two three four", chunk_size=4)])
    events, at = await run_cancelling(LlmAgent(name="a", model=model), of_type("token_delta"))
    assert at == 2  # run_started, turn_started, the first delta
    assert_cancelled_after(events, at)


@pytest.mark.parametrize("event_type", ["run_started", "turn_started"])
async def test_a_cancel_before_the_first_model_call_skips_it(event_type: str) -> None:
    model = MockModel.with_scripts([text_turn("never")])
    events, at = await run_cancelling(LlmAgent(name="a", model=model), of_type(event_type))
    assert_cancelled_after(events, at)
    assert model.requests == []


def recording_agent() -> tuple[LlmAgent[Any], MockModel, list[str]]:
    """An agent whose one tool call (then a final answer) notes each run of the tool in `ran`."""
    ran: list[str] = []

    @tool
    async def record(text: str) -> str:
        """Record a call."""
        ran.append(text)
        return "recorded"

    model = MockModel.with_scripts([tool_call_turn("record", {"text": "x"}), text_turn("never")])
    return LlmAgent(name="a", model=model, tools=[record]), model, ran


async def test_a_cancel_once_the_calls_are_known_runs_no_tool() -> None:
    agent, model, ran = recording_agent()
    events, at = await run_cancelling(agent, of_type("tool_call_item"))
    assert_cancelled_after(events, at)
    assert ran == [] and model.remaining == 1


@pytest.mark.parametrize("event_type", ["tool_output_item", "turn_started"])
async def test_a_cancel_between_turns_skips_the_next_model_call(event_type: str) -> None:
    model = MockModel.with_scripts([tool_call_turn("echo", {"text": "x"}), text_turn("never")])
    agent = LlmAgent(name="a", model=model, tools=[echo])
    seen_tools = False

    def after_the_tools(event: AgentEvent) -> bool:
        nonlocal seen_tools
        seen_tools = seen_tools or event.type == "tool_output_item"
        return seen_tools and event.type == event_type

    events, at = await run_cancelling(agent, after_the_tools)
    assert_cancelled_after(events, at)
    assert len(model.requests) == 1


async def test_a_cancel_while_a_call_waits_for_approval_stops_the_other_calls_too() -> None:
    other_cancelled = asyncio.Event()

    @tool
    async def slow() -> str:
        """Never returns."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            other_cancelled.set()
            raise
        return "unreachable"

    class Policy:
        async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
            return PermissionDecision.ask_user("ok?") if tool == "echo" else PermissionDecision.allow()

    class NeverAnswers:
        async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
            await asyncio.sleep(3600)
            return ApprovalOutcome.allow()

    model = MockModel.with_scripts(
        [tool_calls_turn([("echo", {"text": "x"}), ("slow", {})]), text_turn("no")]
    )
    agent = LlmAgent(name="a", model=model, tools=[echo, slow])
    ctx = RunContext.ephemeral(None).with_permission_policy(Policy()).with_approval_handler(NeverAnswers())
    events, at = await run_cancelling(agent, of_type("approval_requested"), ctx=ctx)
    assert_cancelled_after(events, at)
    assert other_cancelled.is_set()


async def test_a_cancel_on_the_final_answer_wins_over_completion() -> None:
    model = MockModel.with_scripts([text_turn("done")])
    events, at = await run_cancelling(LlmAgent(name="a", model=model), of_type("message_output"))
    assert_cancelled_after(events, at)


async def test_a_cancel_while_a_recorder_stores_the_calls_runs_no_tool() -> None:
    agent, model, ran = recording_agent()
    token = CancellationToken()

    class CancelsAtTheCalls:
        """A recorder during whose store of the calls the run is cancelled."""

        def request_sent(self, sent: RequestSent) -> None:
            pass

        async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
            token.cancel("stop")

        async def tool_returned(self, output: ToolOutputItem) -> None:
            pass

    ctx = RunContext.ephemeral(None).with_cancel(token).with_observer(CancelsAtTheCalls())
    events = [e async for e in agent.run("hi", context=ctx)]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "cancelled"
    assert ran == [] and model.remaining == 1


async def test_a_cancel_before_a_handoff_is_applied_keeps_the_run_with_its_agent() -> None:
    target_model = MockModel.with_scripts([text_turn("never")])
    target = LlmAgent(name="billing", model=target_model)
    model = MockModel.with_scripts([tool_call_turn("transfer_to_billing", {})])
    agent = LlmAgent(name="triage", model=model, handoffs=[target])
    events, at = await run_cancelling(agent, of_type("tool_call_item"))
    assert_cancelled_after(events, at)
    assert not any(e.type in ("handoff_item", "agent_updated") for e in events)
    assert target_model.requests == []


# --- a cancel while the driver awaits user code ------------------------------------------------


class Stalls:
    """A hook that never returns from `event_type`."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == self.event_type:
            await asyncio.sleep(3600)
        return HookDecision.allow()


class StallingGuardrail:
    def __init__(self, *, run_in_parallel: bool = True) -> None:
        self.run_in_parallel = run_in_parallel

    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        await asyncio.sleep(3600)
        return GuardrailVerdict.pass_()


async def never_renders(ctx: RunContext[Any]) -> str:
    await asyncio.sleep(3600)
    return "unreachable"


def stalled_agents() -> dict[str, LlmAgent[Any]]:
    def model() -> MockModel:
        return MockModel.with_scripts([text_turn("done"), text_turn("done")])

    target = LlmAgent(name="billing", model=model())
    handing_off = MockModel.with_scripts([tool_call_turn("transfer_to_billing", {})])
    return {
        "on_run_start hook": LlmAgent(name="a", model=model(), hooks=[Stalls("on_run_start")]),
        "on_turn_start hook": LlmAgent(name="a", model=model(), hooks=[Stalls("on_turn_start")]),
        "on_handoff hook": LlmAgent(
            name="a", model=handing_off, handoffs=[target], hooks=[Stalls("on_handoff")]
        ),
        "input guardrail beside the model": LlmAgent(
            name="a", model=model(), input_guardrails=[StallingGuardrail()]
        ),
        "input guardrail before the model": LlmAgent(
            name="a", model=model(), input_guardrails=[StallingGuardrail(run_in_parallel=False)]
        ),
        "output guardrail": LlmAgent(name="a", model=model(), output_guardrails=[StallingGuardrail()]),
        "instructions function": LlmAgent(name="a", model=model(), instructions=never_renders),
    }


@pytest.mark.parametrize("stalled", list(stalled_agents()))
async def test_a_timer_cancel_interrupts_user_code_the_driver_awaits(stalled: str) -> None:
    agent = stalled_agents()[stalled]
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.01, token.cancel, "stop")
    stream = agent.run("hi", context=RunContext.ephemeral(None).with_cancel(token))
    events = await asyncio.wait_for(_all(stream), HANG_GUARD)
    last = events[-1]
    assert isinstance(last, RunFailed) and last.error.kind == "cancelled", [e.type for e in events]
    assert [e.type for e in events].count("run_started") == 1 and events[0].type == "run_started"
    assert sum(e.type in ("run_completed", "run_failed") for e in events) == 1
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def _all(stream: Any) -> list[AgentEvent]:
    return [event async for event in stream]


# --- the run's own code cancels it -------------------------------------------------------------


async def test_a_tool_that_cancels_its_run_ends_it_without_cancelling_the_consumer() -> None:
    @tool
    async def stop(ctx: ToolContext) -> str:
        """Stop the run."""
        ctx.cancel.cancel("stop")
        return "stopping"

    model = MockModel.with_scripts([tool_call_turn("stop", {}), text_turn("never")])
    agent = LlmAgent(name="a", model=model, tools=[stop])
    events: list[AgentEvent] = []

    async def consume() -> None:
        async for event in agent.run(
            "hi", context=RunContext.ephemeral(None).with_cancel(CancellationToken())
        ):
            events.append(event)
            await asyncio.sleep(0)  # the consumer's own awaits must not see the run's cancel

    await asyncio.wait_for(consume(), HANG_GUARD)
    last = events[-1]
    assert isinstance(last, RunFailed) and last.error.kind == "cancelled"
    assert len(model.requests) == 1
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_a_hook_that_cancels_its_run_and_waits_is_interrupted() -> None:
    class CancelsThenWaits:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            if event.type == "on_turn_start":
                ctx.cancel.cancel("stop")
                await asyncio.sleep(3600)
            return HookDecision.allow()

    model = MockModel.with_scripts([text_turn("never")])
    agent = LlmAgent(name="a", model=model, hooks=[CancelsThenWaits()])
    token = CancellationToken()
    stream = agent.run("hi", context=RunContext.ephemeral(None).with_cancel(token))
    events = await asyncio.wait_for(_all(stream), HANG_GUARD)
    assert [e.type for e in events] == ["run_started", "turn_started", "run_failed"]
    assert model.requests == []
