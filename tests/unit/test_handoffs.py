"""Handoffs: transfer tools, the event sequence, transcripts, usage, depth, hooks, the session."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from helikon import (
    AgentUpdated,
    CancellationToken,
    Handoff,
    HandoffItem,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    MaxAgentDepthExceeded,
    MemorySession,
    RunCancelled,
    RunCompleted,
    RunConfig,
    RunContext,
    UserError,
    tool,
)
from helikon.core.events import AgentEvent
from helikon.core.handoff import handoff_slug
from helikon.core.model import Usage
from helikon.core.session import HandoffOccurred
from helikon.runtime import AsyncioRunner
from helikon.testing import Delay, MockModel, text_turn, tool_call_turn, tool_calls_turn


def specialist(name: str, answer: str, **kwargs: Any) -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts([text_turn(answer, usage=Usage(input_tokens=7, output_tokens=3))])
    agent = LlmAgent(
        name=name,
        model=model,
        description=f"Answers {name} questions.",
        instructions=f"You are {name}.",
        **kwargs,
    )
    return agent, model


def triage_to(*targets: LlmAgent[Any], call: str, **kwargs: Any) -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts(
        [tool_call_turn(call, {}, call_id="h1", usage=Usage(input_tokens=10, output_tokens=2))]
    )
    agent = LlmAgent(name="triage", model=model, instructions="Route.", handoffs=list(targets), **kwargs)
    return agent, model


def kinds(events: list[AgentEvent]) -> list[str]:
    return [e.type for e in events if e.type not in ("token_delta", "tool_call_delta")]


def test_slugs_and_transfer_tools() -> None:
    assert handoff_slug("investing specialist") == "investing_specialist"
    assert handoff_slug("  Budget--Coach 2.0! ") == "budget_coach_2_0"
    budgeting, _ = specialist("budgeting specialist", "x")
    handoff = Handoff.to(budgeting)
    assert handoff.tool_name == "transfer_to_budgeting_specialist"
    spec = handoff.tool_def()
    assert spec.description == "Answers budgeting specialist questions."
    assert spec.parameters == {"type": "object", "properties": {}, "additionalProperties": False}
    assert Handoff.to(budgeting, tool_name="to_budget", description="Budgets.").tool_def().name == "to_budget"


def test_colliding_handoffs_are_rejected_before_any_model_call() -> None:
    a, _ = specialist("Investing Specialist", "x")
    b, _ = specialist("investing-specialist", "y")
    with pytest.raises(UserError, match="transfer_to_investing_specialist"):
        LlmAgent(name="t", model=MockModel.with_scripts([]), handoffs=[a, b])

    @tool(name="transfer_to_investing_specialist")
    def clash() -> str:
        """A tool with the transfer tool's name."""
        return ""

    with pytest.raises(UserError, match="already called"):
        LlmAgent(name="t", model=MockModel.with_scripts([]), tools=[clash], handoffs=[a])
    with pytest.raises(UserError, match="expected an agent"):
        Handoff.to("investing")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="tool_name"):
        Handoff.to(a, tool_name="has spaces")


async def test_a_handoff_streams_the_transfer_then_the_targets_events() -> None:
    investing, investing_model = specialist("investing specialist", "Buy an index fund.")
    budgeting, budgeting_model = specialist("budgeting specialist", "Spend less.")
    triage, triage_model = triage_to(budgeting, investing, call="transfer_to_investing_specialist")
    events = [e async for e in triage.run("How do I invest $5,000?")]
    assert kinds(events) == [
        "run_started",
        "turn_started",
        "tool_call_item",
        "tool_output_item",
        "handoff_item",
        "agent_updated",
        "turn_started",
        "message_output",
        "run_completed",
    ]
    assert events[0].agent == "triage"  # type: ignore[union-attr]
    handoff = next(e for e in events if isinstance(e, HandoffItem))
    assert (handoff.from_agent, handoff.to_agent) == ("triage", "investing specialist")
    assert next(e for e in events if isinstance(e, AgentUpdated)).agent == "investing specialist"
    completed = events[-1]
    assert isinstance(completed, RunCompleted)
    assert (completed.usage.input_tokens, completed.usage.output_tokens, completed.usage.requests) == (
        17,
        5,
        2,
    )
    # The triage model saw both transfer tools, described by their targets.
    assert [t.name for t in triage_model.requests[0].tools] == [
        "transfer_to_budgeting_specialist",
        "transfer_to_investing_specialist",
    ]
    # The target continues the transcript under its own instructions.
    [request] = investing_model.requests
    assert [m.type for m in request.messages] == ["system", "user", "tool_call", "tool_result"]
    assert request.messages[0].text == "You are investing specialist."  # type: ignore[union-attr]
    assert budgeting_model.requests == []
    result = await triage_to(budgeting, investing, call="transfer_to_budgeting_specialist")[0].run("Budget?")
    assert result.final_output == "Spend less."


async def test_the_session_records_the_handoff_and_every_call_has_a_result() -> None:
    investing, _ = specialist("investing specialist", "Buy an index fund.")
    triage, _ = triage_to(investing, call="transfer_to_investing_specialist")
    session = MemorySession()
    await AsyncioRunner[None]().run(triage, "Invest?", RunContext.ephemeral(None).with_session(session))
    stored = [e for _, e in await session.events()]
    assert [e.type for e in stored] == [
        "user_message",
        "request_header",  # triage's request
        "tool_called",
        "tool_returned",
        "handoff_occurred",
        "request_header",  # the specialist's: other instructions and tools
        "assistant_message",
    ]
    handoff = stored[4]
    assert isinstance(handoff, HandoffOccurred)
    assert handoff == HandoffOccurred(from_agent="triage", to_agent="investing specialist", ts=handoff.ts)
    assert stored[6].agent == "investing specialist"  # type: ignore[union-attr]


async def test_other_calls_of_the_handoff_turn_are_answered_not_run() -> None:
    ran: list[str] = []

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        ran.append(q)
        return q

    investing, model = specialist("investing specialist", "Done.")
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts(
            [tool_calls_turn([("lookup", {"q": "x"}), ("transfer_to_investing_specialist", {})])]
        ),
        tools=[lookup],
        handoffs=[investing],
    )
    await triage.run("go")
    assert ran == []
    results = [m for m in model.requests[0].messages if m.type == "tool_result"]
    assert [(r.is_error, r.text.startswith("Error: not run")) for r in results] == [
        (True, True),
        (False, False),
    ]  # type: ignore[union-attr]


async def test_a_chain_is_bounded_by_max_agent_depth() -> None:
    c, _ = specialist("c", "from c")
    b = LlmAgent(name="b", model=MockModel.with_scripts([tool_call_turn("transfer_to_c", {})]), handoffs=[c])
    a = LlmAgent(name="a", model=MockModel.with_scripts([tool_call_turn("transfer_to_b", {})]), handoffs=[b])
    assert (await a.run("go")).final_output == "from c"
    a2 = LlmAgent(
        name="a",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_b", {})]),
        handoffs=[
            LlmAgent(
                name="b", model=MockModel.with_scripts([tool_call_turn("transfer_to_c", {})]), handoffs=[c]
            )
        ],
    )
    with pytest.raises(MaxAgentDepthExceeded) as info:
        await a2.run("go", config=RunConfig(max_agent_depth=1))
    assert info.value.error.limit == 1


async def test_an_on_handoff_hook_can_refuse_and_the_agent_goes_on() -> None:
    seen: list[tuple[str | None, str | None]] = []

    class Gate:
        async def on_event(self, ctx: RunContext[None], event: HookEvent) -> HookDecision:
            if event.type == "on_handoff":
                seen.append((event.from_agent, event.to_agent))
                return HookDecision.deny("specialists are offline")
            return HookDecision.allow()

    investing, investing_model = specialist("investing specialist", "never")
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts(
            [
                tool_call_turn("transfer_to_investing_specialist", {}),
                text_turn("I'll answer myself."),
            ]
        ),
        handoffs=[investing],
    )
    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry[None]([Gate()]))
    result = await triage.run("Invest?", context=ctx)
    assert result.final_output == "I'll answer myself."
    assert seen == [("triage", "investing specialist")]
    assert investing_model.requests == []
    assert not any(isinstance(e, HandoffItem) for e in result.events)


async def test_cancelling_during_the_targets_run_cancels_it() -> None:
    slow = LlmAgent(
        name="slow",
        model=MockModel.with_scripts([[Delay(30.0), *text_turn("late")]]),
    )
    triage, _ = triage_to(slow, call="transfer_to_slow")
    token = CancellationToken()
    task = asyncio.ensure_future(
        triage.run("go", context=RunContext.ephemeral(None).with_cancel(token)).collect()
    )
    await asyncio.sleep(0.05)
    token.cancel("user left")
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 5)
