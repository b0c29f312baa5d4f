"""Testing idioms (issue 27): `result.tool_calls` says which tools ran with which arguments, and
`handoff_turn(target)` scripts a handoff without knowing the `transfer_to_<slug>` naming rule."""

from __future__ import annotations

import pytest

from helikon import Handoff, HandoffItem, LlmAgent, SwarmAgent, ToolCall, UserError, tool
from helikon.testing import MockModel, handoff_turn, text_turn, tool_call_turn, tool_calls_turn


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def forbidden() -> str:
    """Never allowed."""
    return "ran"


def test_tool_calls_lists_every_call_the_model_made_with_its_arguments() -> None:
    model = MockModel.with_scripts(
        [
            tool_calls_turn([("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})]),
            tool_call_turn("add", {"a": 3, "b": 7}),
            text_turn("10"),
        ]
    )
    result = LlmAgent(name="calc", model=model, tools=[add]).run_sync("sums")
    assert [(call.name, call.args) for call in result.tool_calls] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 3, "b": 4}),
        ("add", {"a": 3, "b": 7}),
    ]
    assert all(isinstance(call, ToolCall) for call in result.tool_calls)


def test_tool_calls_is_empty_for_a_run_without_tools() -> None:
    result = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")])).run_sync("hi")
    assert result.tool_calls == ()


@pytest.mark.parametrize("target", ["agent", "name", "handoff"])
def test_handoff_turn_transfers_to_the_agent_whatever_its_name(target: str) -> None:
    desk = LlmAgent(name="Billing Desk (EU)", model=MockModel.with_scripts([text_turn("Refunded.")]))
    given = {"agent": desk, "name": "Billing Desk (EU)", "handoff": Handoff.to(desk)}[target]
    triage = LlmAgent(name="triage", model=MockModel.with_scripts([handoff_turn(given)]), handoffs=[desk])
    result = triage.run_sync("refund please")
    assert result.final_output == "Refunded." and result.last_agent is desk
    assert [e.to_agent for e in result.events if isinstance(e, HandoffItem)] == ["Billing Desk (EU)"]
    assert [c.name for c in result.tool_calls] == ["transfer_to_billing_desk_eu"]


def test_handoff_turn_follows_a_renamed_transfer_tool_and_passes_arguments() -> None:
    desk = LlmAgent(name="billing", model=MockModel.with_scripts([text_turn("Refunded.")]))
    handoff = Handoff.to(desk, tool_name="escalate")
    model = MockModel.with_scripts([handoff_turn(handoff, {"why": "x"}, call_id="h1")])
    triage = LlmAgent(name="triage", model=model, handoffs=[handoff])
    result = triage.run_sync("refund please")
    assert result.final_output == "Refunded."
    assert result.tool_calls == (ToolCall(call_id="h1", name="escalate", args={"why": "x"}),)


def test_handoff_turn_scripts_a_swarm_member() -> None:
    billing = LlmAgent(name="billing", model=MockModel.with_scripts([text_turn("Paid.")]))
    triage = LlmAgent(name="triage", model=MockModel.with_scripts([handoff_turn(billing)]))
    assert SwarmAgent(name="desk", members=[triage, billing]).run_sync("pay").final_output == "Paid."


def test_handoff_turn_refuses_what_is_no_agent() -> None:
    with pytest.raises(UserError, match="handoff_turn"):
        handoff_turn(42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="handoff_turn"):
        handoff_turn("")
