"""Handoff control: `input_filter` (what the target is sent), `input_type` (typed transfer
arguments, validated; invalid ones go back to the model), `on_handoff` (called with them).

The session log stays complete whatever the filter drops; a filter or callback that raises
fails the run, naming it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from helikon import (
    AssistantMessage,
    Handoff,
    HandoffInputData,
    HandoffItem,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    MemorySession,
    RunContext,
    RunError,
    UserError,
    UserMessage,
    keep_last_user_message,
    project,
    remove_tool_calls,
    tool,
)
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn


class Escalation(BaseModel):
    reason: str = Field(description="Why the customer needs a human.")
    priority: int = 1


@dataclasses.dataclass
class Ticket:
    ticket_id: int


class Opaque:
    """A class pydantic knows no schema for."""


class Topic(TypedDict):
    topic: str


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def target(answer: str = "Handled.") -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts([text_turn(answer)])
    return LlmAgent(name="support", model=model, instructions="You are support."), model


def triage(handoff: Handoff[Any], *turns: Any, tools: Any = ()) -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts(list(turns))
    return LlmAgent(
        name="triage", model=model, instructions="Route.", tools=list(tools), handoffs=[handoff]
    ), model


# --- input_filter ----------------------------------------------------------------------------


async def test_the_filter_is_given_the_three_parts_and_the_target_is_sent_what_it_returns() -> None:
    seen: list[HandoffInputData] = []

    def only_user(data: HandoffInputData) -> HandoffInputData:
        seen.append(data)
        return data.with_items(lambda item: isinstance(item, UserMessage))

    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_filter=only_user),
        tool_call_turn("lookup", {"order": "42"}, call_id="c1"),
        tool_call_turn("transfer_to_support", {}, call_id="h1"),
        tools=[lookup],
    )
    earlier = (UserMessage.from_text("Hi"), AssistantMessage.from_text("Hello!", agent="triage"))
    result = await agent.run([*earlier, UserMessage.from_text("Where is order 42?")])
    assert result.final_output == "Handled."
    [data] = seen
    assert [i.type for i in data.input_history] == ["user", "assistant", "user"]
    assert [i.type for i in data.pre_handoff_items] == ["tool_call", "tool_result"]  # the lookup turn
    assert [i.type for i in data.new_items] == ["tool_call", "tool_result"]  # the transfer turn
    assert data.new_items[0].call_id == "h1"  # type: ignore[union-attr]
    assert data.context is not None
    [request] = support_model.requests
    assert [m.type for m in request.messages] == ["system", "user", "user"]
    assert [m.text for m in request.messages[1:]] == ["Hi", "Where is order 42?"]  # type: ignore[union-attr]


async def test_remove_tool_calls_and_an_async_filter() -> None:
    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_filter=remove_tool_calls),
        tool_call_turn("lookup", {"order": "42"}),
        tool_call_turn("transfer_to_support", {}),
        tools=[lookup],
    )
    await agent.run("Where is order 42?")
    assert [m.type for m in support_model.requests[0].messages] == ["system", "user"]

    async def last_question(data: HandoffInputData) -> HandoffInputData:
        return keep_last_user_message(data)

    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_filter=last_question), tool_call_turn("transfer_to_support", {})
    )
    await agent.run(
        [UserMessage.from_text("Hi"), AssistantMessage.from_text("Hello!"), UserMessage.from_text("Refund?")]
    )
    assert [m.text for m in support_model.requests[0].messages] == ["You are support.", "Refund?"]  # type: ignore[union-attr]


async def test_without_a_filter_the_target_is_sent_the_whole_transcript() -> None:
    support, support_model = target()
    agent, _ = triage(Handoff.to(support), tool_call_turn("transfer_to_support", {}))
    await agent.run("Refund?")
    assert [m.type for m in support_model.requests[0].messages] == [
        "system",
        "user",
        "tool_call",
        "tool_result",
    ]


async def test_the_session_log_keeps_what_the_filter_drops() -> None:
    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_filter=remove_tool_calls),
        tool_call_turn("lookup", {"order": "42"}, call_id="c1"),
        tool_call_turn("transfer_to_support", {"note": "x"}, call_id="h1"),
        tools=[lookup],
    )
    session = MemorySession()
    await AsyncioRunner[None]().run(
        agent, "Where is order 42?", RunContext.ephemeral(None).with_session(session)
    )
    assert [m.type for m in support_model.requests[0].messages] == ["system", "user"]
    stored = [e for _, e in await session.events()]
    assert [e.type for e in stored if e.type != "request_header"] == [
        "user_message",
        "tool_called",
        "tool_returned",
        "tool_called",
        "tool_returned",
        "handoff_occurred",
        "assistant_message",
    ]
    # The log projects to the whole conversation (what a later run is sent), transfer call included.
    conversation = project(stored).messages
    assert [i.type for i in conversation] == [
        "user",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    assert conversation[3].args == {"note": "x"}  # type: ignore[union-attr]


async def test_two_handoffs_to_one_agent_each_apply_their_own_filter() -> None:
    support, support_model = target()
    agent = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("escalate_briefly", {})]),
        handoffs=[
            Handoff.to(support, tool_name="escalate_with_history"),
            Handoff.to(support, tool_name="escalate_briefly", input_filter=keep_last_user_message),
        ],
    )
    await agent.run("Refund?")
    assert [m.type for m in support_model.requests[0].messages] == ["system", "user"]


@pytest.mark.parametrize(
    ("input_filter", "message"),
    [
        (lambda data: 1 / 0, "the input_filter of the handoff to 'support' raised ZeroDivisionError"),
        (lambda data: data.all_items, "the input_filter of the handoff to 'support' returned (UserMessage("),
    ],
    ids=["raises", "returns the items"],
)
async def test_a_filter_that_raises_or_returns_no_data_fails_the_run(input_filter: Any, message: str) -> None:
    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_filter=input_filter), tool_call_turn("transfer_to_support", {})
    )
    with pytest.raises(RunError) as info:
        await agent.run("Refund?")
    assert info.value.error.kind == "other" and info.value.error.cause == "handoff"
    assert message in info.value.error.message
    assert support_model.requests == []


# --- input_type and on_handoff ---------------------------------------------------------------


def test_the_transfer_tools_schema_comes_from_the_input_type() -> None:
    support, _ = target()
    params: dict[str, Any] = Handoff.to(support, input_type=Escalation).tool_def().parameters
    assert params["required"] == ["reason"]
    assert params["properties"]["reason"] == {
        "type": "string",
        "description": "Why the customer needs a human.",
    }
    assert "title" not in params
    assert Handoff.to(support, input_type=Ticket).tool_def().parameters["properties"] == {
        "ticket_id": {"type": "integer"}
    }
    assert Handoff.to(support, input_type=Topic).tool_def().parameters["required"] == ["topic"]
    assert Handoff.to(support).tool_def().parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_bad_options_are_refused_when_the_handoff_is_built() -> None:
    support, _ = target()
    with pytest.raises(UserError, match="the arguments must be an object"):
        Handoff.to(support, input_type=int)
    with pytest.raises(UserError, match="cannot be turned into a JSON Schema"):
        Handoff.to(support, input_type=Opaque)
    with pytest.raises(UserError, match=r"input_filter='all'.*expected a function"):
        Handoff.to(support, input_filter="all")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"on_handoff=3.*expected a function"):
        Handoff.to(support, on_handoff=3)  # type: ignore[arg-type]


async def test_on_handoff_gets_the_validated_value_sync_or_async() -> None:
    got: list[Any] = []

    async def record(ctx: RunContext[Any], args: Escalation) -> None:
        got.append((ctx.agent_depth, args))

    support, _ = target()
    agent, _ = triage(
        Handoff.to(support, input_type=Escalation, on_handoff=record),
        tool_call_turn("transfer_to_support", {"reason": "double charge", "priority": "2"}),
    )
    assert (await agent.run("Charged twice")).final_output == "Handled."
    assert got == [(0, Escalation(reason="double charge", priority=2))]

    support, _ = target()
    agent, _ = triage(
        Handoff.to(support, input_type=Ticket, on_handoff=lambda ctx, args: got.append(args)),
        tool_call_turn("transfer_to_support", '{"ticket_id": 7}'),
    )
    await agent.run("Ticket 7")
    assert got[-1] == Ticket(ticket_id=7)

    support, _ = target()
    agent, _ = triage(
        Handoff.to(support, on_handoff=lambda ctx: got.append("no args")),
        tool_call_turn("transfer_to_support", {}),
    )
    await agent.run("Help")
    assert got[-1] == "no args"


async def test_invalid_arguments_go_back_to_the_model_once() -> None:
    got: list[Escalation] = []
    support, support_model = target()
    agent, model = triage(
        Handoff.to(support, input_type=Escalation, on_handoff=lambda ctx, args: got.append(args)),
        tool_calls_turn(
            [("transfer_to_support", {"priority": 3}), ("lookup", {"order": "1"})], call_ids=["h1", "c1"]
        ),
        tool_call_turn("transfer_to_support", {"reason": "angry"}, call_id="h2"),
        tools=[lookup],
    )
    result = await agent.run("Help")
    assert result.final_output == "Handled."
    assert got == [Escalation(reason="angry")]
    # The model read why, and the call beside it was not run.
    retry = model.requests[1].messages
    [invalid, beside] = [m for m in retry if m.type == "tool_result"]
    assert invalid.is_error and invalid.text.startswith("Error: invalid arguments: reason: Field required")  # type: ignore[union-attr]
    assert invalid.text.endswith("Fix the arguments to match the tool's schema and call it again.")  # type: ignore[union-attr]
    assert beside.is_error and beside.text.startswith("Error: not run")  # type: ignore[union-attr]
    assert sum(isinstance(e, HandoffItem) for e in result.events) == 1
    assert len(support_model.requests) == 1


async def test_invalid_arguments_twice_fail_the_run_and_never_reach_hooks_or_the_callback() -> None:
    fired: list[str] = []

    class Watch:
        async def on_event(self, ctx: RunContext[None], event: HookEvent) -> HookDecision:
            fired.append(event.type)
            return HookDecision.allow()

    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_type=Escalation, on_handoff=lambda ctx, args: fired.append("callback")),
        tool_call_turn("transfer_to_support", "not json"),
        tool_call_turn("transfer_to_support", {"reason": 5}),
    )
    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry[None]([Watch()]))
    with pytest.raises(RunError) as info:
        await agent.run("Help", context=ctx)
    error = info.value.error
    assert error.kind == "tool_error" and error.cause == "transfer_to_support"
    assert "got invalid arguments again after one correction" in error.message
    assert "reason: Input should be a valid string" in error.message
    assert "on_handoff" not in fired and "callback" not in fired
    assert support_model.requests == []


async def test_a_raising_on_handoff_fails_the_run_before_the_transfer() -> None:
    def broken(ctx: RunContext[Any], args: Escalation) -> None:
        raise LookupError("no queue for " + args.reason)

    support, support_model = target()
    agent, _ = triage(
        Handoff.to(support, input_type=Escalation, on_handoff=broken),
        tool_call_turn("transfer_to_support", {"reason": "refund"}),
    )
    stream = agent.run("Help")
    with pytest.raises(RunError) as info:
        await stream.collect()
    assert info.value.error.message == (
        "the on_handoff callback of the handoff to 'support' raised LookupError: no queue for refund"
    )
    assert info.value.error.cause == "handoff"
    assert support_model.requests == []


async def test_a_hook_refusal_skips_the_callback() -> None:
    called: list[str] = []

    class Gate:
        async def on_event(self, ctx: RunContext[None], event: HookEvent) -> HookDecision:
            return HookDecision.deny("closed") if event.type == "on_handoff" else HookDecision.allow()

    support, _ = target()
    agent, _ = triage(
        Handoff.to(support, on_handoff=lambda ctx: called.append("x")),
        tool_call_turn("transfer_to_support", {}),
        text_turn("I'll help myself."),
    )
    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry[None]([Gate()]))
    assert (await agent.run("Help", context=ctx)).final_output == "I'll help myself."
    assert called == []


# --- the pure loop ---------------------------------------------------------------------------


def test_the_loop_keeps_the_corrections_across_a_refused_handoff_and_bounds_invalid_args() -> None:
    from helikon.core.items import ToolCall
    from helikon.core.loop import (
        ApplyingHandoff,
        CallingModel,
        Failed,
        HandoffInvalidArgs,
        HandoffRefused,
        TransitionCtx,
        transition,
    )

    call = ToolCall(call_id="h1", name="transfer_to_b", args={})
    ctx = TransitionCtx(agent_name="a", handoffs={"transfer_to_b": "b"})
    applying = ApplyingHandoff(
        target="b", call_id="h1", transcript=(call,), calls=(call,), args_retried=("lookup",)
    )
    refused = transition(applying, HandoffRefused(reason="closed"), ctx).next_state
    assert isinstance(refused, CallingModel) and refused.args_retried == ("lookup",)
    invalid = transition(applying, HandoffInvalidArgs(errors=("reason: Field required",)), ctx)
    assert isinstance(invalid.next_state, CallingModel)
    assert invalid.next_state.args_retried == ("lookup", "transfer_to_b")
    again = dataclasses.replace(applying, args_retried=invalid.next_state.args_retried)
    failed = transition(again, HandoffInvalidArgs(errors=("reason: Field required",)), ctx).next_state
    assert isinstance(failed, Failed) and failed.error.kind == "tool_error"
