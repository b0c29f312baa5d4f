"""LoopAgent: escalation from any depth, the iteration budget, state, usage, nesting."""

from __future__ import annotations

from typing import Any

import pytest
from workflow_support import digest, failing, scripted

from helikon import (
    LlmAgent,
    LoopAgent,
    MaxIterationsExceeded,
    ParallelAgent,
    RunContext,
    RunFailed,
    SequentialAgent,
    ToolContext,
    UserError,
    tool,
)
from helikon.testing import FunctionModel, MockModel, text_turn, tool_call_turn


@tool
async def approve(ctx: ToolContext[Any]) -> str:
    """Accept the draft."""
    ctx.actions.escalate()
    return "approved"


def critic(*verdicts: bool, name: str = "critic") -> LlmAgent[Any]:
    """A critic that approves (escalates) on the runs where `verdicts` is True."""
    scripts: list[Any] = []
    for verdict in verdicts:
        if verdict:
            scripts += [tool_call_turn("approve"), text_turn("approved")]
        else:
            scripts.append(text_turn("needs work"))
    return LlmAgent(name=name, model=MockModel.with_scripts(scripts), tools=[approve])


async def test_an_escalating_tool_ends_the_loop_with_success() -> None:
    ctx = RunContext.ephemeral(None)
    loop = LoopAgent("refine", "", 5).then(scripted("drafter", "v1", "v2", "v3")).then(critic(False, True))
    result = await loop.run("x", context=ctx)
    updates = [d for d in digest(result.events) if d.startswith("agent_updated")]
    assert updates == ["agent_updated:drafter", "agent_updated:critic"] * 2
    assert result.final_output == "approved"
    assert ctx.state.to_dict() == {"drafter": "v2", "critic": "approved"}
    assert ctx.actions.escalated is False  # consumed by the loop
    assert digest(result.events)[0] == "run_started:refine" and result.events[-1].type == "run_completed"


async def test_a_mid_pass_escalation_skips_the_rest_of_the_pass() -> None:
    after = MockModel.with_scripts([text_turn("never")])
    loop = LoopAgent("l", "", 3).then(critic(True)).then(LlmAgent(name="after", model=after))
    result = await loop.run("x")
    assert after.requests == []
    assert [d for d in digest(result.events) if d.startswith("agent_updated")] == ["agent_updated:critic"]


async def test_exhausting_the_budget_fails_with_max_iterations_exceeded() -> None:
    ctx = RunContext.ephemeral(None)
    loop = LoopAgent("l", "", 3).then(scripted("drafter", "v1", "v2", "v3", tokens=2))
    events = [e async for e in loop.run("x", context=ctx)]
    failure = events[-1]
    assert isinstance(failure, RunFailed)
    assert failure.error.kind == "max_iterations_exceeded" and failure.error.limit == 3
    assert failure.usage.input_tokens == 6
    assert [d for d in digest(events) if d.startswith("agent_updated")] == ["agent_updated:drafter"] * 3
    assert ctx.state.get("drafter") == "v3"
    with pytest.raises(MaxIterationsExceeded) as caught:
        await LoopAgent("l", "", 1).then(scripted("d", "v1")).run("x")
    assert caught.value.error.limit == 1


async def test_escalation_from_a_grandchild_reaches_the_loop() -> None:
    # The escalating tool runs two levels down: loop -> sequential -> critic.
    inner = SequentialAgent("review").then(scripted("drafter", "v1", "v2")).then(critic(False, True))
    result = await LoopAgent("l", "", 4).then(inner).run("x")
    assert result.final_output == "approved"
    assert [d for d in digest(result.events) if d.startswith("agent_updated")].count(
        "agent_updated:review"
    ) == 2


async def test_escalation_inside_a_parallel_branch_stops_the_loop_after_the_parallel() -> None:
    fan = ParallelAgent("fan").add(critic(True)).add(scripted("other", "o"))
    result = await LoopAgent("l", "", 3).then(fan).run("x")
    assert result.events[-1].type == "run_completed"
    assert [d for d in digest(result.events) if d == "agent_updated:fan"] == ["agent_updated:fan"]


async def test_an_inner_loop_consumes_its_escalation() -> None:
    inner = LoopAgent("inner", "", 3).then(critic(True, True, name="judge"))
    outer = LoopAgent("outer", "", 2).then(inner)
    with pytest.raises(MaxIterationsExceeded) as caught:
        await outer.run("x")
    assert "'outer'" in str(caught.value)  # the outer loop ran both passes, each inner loop stopped at once


async def test_a_stale_escalation_does_not_stop_the_loop() -> None:
    ctx = RunContext.ephemeral(None)
    ctx.actions.escalate()  # left over from before the loop started
    with pytest.raises(MaxIterationsExceeded):
        await LoopAgent("l", "", 2).then(scripted("d", "1", "2")).run("x", context=ctx)


async def test_a_failing_step_ends_the_loop() -> None:
    events = [e async for e in LoopAgent("l", "", 3).then(scripted("a", "A")).then(failing("b")).run("x")]
    failure = events[-1]
    assert isinstance(failure, RunFailed) and failure.error.kind == "model_error"
    assert "step 'b'" in failure.error.message


async def test_then_keyed_and_every_pass_sees_the_previous_state() -> None:
    seen: list[Any] = []

    def reply(request: Any) -> Any:
        seen.append(request.messages[0].text)
        return text_turn(f"draft {len(seen)}")

    def instructions(ctx: RunContext[Any]) -> str:
        return f"previous: {ctx.state.get('draft')}"

    drafter = LlmAgent(name="d", model=FunctionModel(reply), instructions=instructions)
    loop = LoopAgent("l", "", 3).then_keyed("draft", drafter).then(critic(False, False, True))
    await loop.run("x")
    assert seen == ["previous: None", "previous: draft 1", "previous: draft 2"]


def test_max_iterations_must_be_a_positive_integer() -> None:
    for bad in (0, -1, 1.5, True, "3"):
        with pytest.raises(UserError, match="max_iterations"):
            LoopAgent("l", "", bad)  # type: ignore[arg-type]
    assert LoopAgent("l", "d", 2).max_iterations == 2
