"""SequentialAgent: order, state, usage, fail-fast, hooks, depth, validation, abandonment."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from workflow_support import Gate, digest, failing, other_tasks, scripted

from helikon import (
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    MaxAgentDepthExceeded,
    ModelError,
    RunConfig,
    RunContext,
    RunError,
    RunFailed,
    SequentialAgent,
    UserError,
)
from helikon.testing import MockModel, text_turn


async def test_steps_run_in_order_with_one_outer_start_and_completion() -> None:
    pipeline = SequentialAgent("pipe", "two steps").then(scripted("a", "A")).then(scripted("b", "B"))
    result = await pipeline.run("go")
    assert digest(result.events) == [
        "run_started:pipe",
        "agent_updated:a",
        "message_output:a:A",
        "agent_updated:b",
        "message_output:b:B",
        "run_completed",
    ]
    assert result.final_output == "B"


async def test_each_step_final_text_lands_in_state_for_later_steps() -> None:
    seen: list[Any] = []

    def instructions(ctx: RunContext[Any]) -> str:
        seen.append(ctx.state.get("researcher"))
        return f"notes: {ctx.state.get('researcher')}"

    model = MockModel.with_scripts([text_turn("brief")])
    writer = LlmAgent(name="writer", model=model, instructions=instructions)
    ctx = RunContext.ephemeral(None)
    await SequentialAgent("s").then(scripted("researcher", "the notes")).then(writer).run("x", context=ctx)
    assert seen == ["the notes"]
    assert model.requests[0].messages[0].text == "notes: the notes"  # type: ignore[union-attr]
    assert ctx.state.to_dict() == {"researcher": "the notes", "writer": "brief"}


async def test_then_keyed_separates_steps_that_share_a_name() -> None:
    ctx = RunContext.ephemeral(None)
    pipeline = (
        SequentialAgent("s").then_keyed("first", scripted("a", "1")).then_keyed("second", scripted("a", "2"))
    )
    await pipeline.run("x", context=ctx)
    assert ctx.state.to_dict() == {"first": "1", "second": "2"}


async def test_usage_is_summed_over_steps() -> None:
    pipeline = SequentialAgent("s").then(scripted("a", "A", tokens=3)).then(scripted("b", "B", tokens=5))
    result = await pipeline.run("x")
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (8, 2, 2)


async def test_every_step_gets_the_workflow_input() -> None:
    model = MockModel.with_scripts([text_turn("B")])
    await (
        SequentialAgent("s")
        .then(scripted("a", "A"))
        .then(LlmAgent(name="b", model=model))
        .run("the question")
    )
    assert [m.text for m in model.requests[0].messages] == ["the question"]  # type: ignore[union-attr]


async def test_the_first_failure_ends_the_run_and_later_steps_never_start() -> None:
    later = MockModel.with_scripts([text_turn("never")])
    ctx = RunContext.ephemeral(None)
    pipeline = (
        SequentialAgent("s")
        .then(scripted("a", "A", tokens=2))
        .then(failing("broken"))
        .then(LlmAgent(name="c", model=later))
    )
    events = [e async for e in pipeline.run("x", context=ctx)]
    assert digest(events)[-2:] == ["agent_updated:broken", "run_failed"]
    failure = events[-1]
    assert isinstance(failure, RunFailed)
    assert failure.error.kind == "model_error"
    assert "'broken'" in failure.error.message
    assert failure.usage.input_tokens == 2
    assert later.requests == []
    assert ctx.state.to_dict() == {"a": "A"}
    with pytest.raises(RunError) as caught:
        await SequentialAgent("s").then(failing("broken")).run("x")
    assert caught.value.kind == "model_error"


async def test_a_child_that_raises_is_a_failed_step() -> None:
    class Exploding:
        name = "boom"
        description = ""

        def run(self, input: Any, *, context: Any = None, config: Any = None) -> Any:
            raise ModelError("kaput")

    with pytest.raises(RunError) as caught:
        await SequentialAgent("s").then(Exploding()).run("x")  # type: ignore[arg-type]
    assert caught.value.kind == "other"
    assert "ModelError: kaput" in str(caught.value)


async def test_on_subagent_stop_fires_after_each_step_drains() -> None:
    seen: list[str] = []

    class Recorder:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            seen.append(f"{event.type}:{event.agent}")
            return HookDecision.allow()

    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry([Recorder()]))
    await SequentialAgent("s").then(scripted("a", "A")).then(scripted("b", "B")).run("x", context=ctx)
    stops = [s for s in seen if s.startswith("on_subagent_stop")]
    assert stops == ["on_subagent_stop:a", "on_subagent_stop:b"]
    # The child's own run completes before its stop is reported.
    assert seen.index("on_run_complete:a") < seen.index("on_subagent_stop:a") < seen.index("on_run_start:b")


async def test_nesting_past_max_agent_depth_fails() -> None:
    inner = SequentialAgent("inner").then(scripted("a", "A"))
    outer = SequentialAgent("outer").then(inner)
    config = RunConfig(max_agent_depth=1)
    events = [e async for e in outer.run("x", config=config)]
    failure = events[-1]
    assert isinstance(failure, RunFailed)
    assert failure.error.kind == "max_agent_depth_exceeded"
    assert failure.error.limit == 1
    with pytest.raises(MaxAgentDepthExceeded):
        await (
            SequentialAgent("outer")
            .then(SequentialAgent("inner").then(scripted("a", "A")))
            .run("x", config=config)
        )
    # A context already at the limit cannot start children at all.
    deep = RunContext.ephemeral(None).child()
    events = [
        e async for e in SequentialAgent("s").then(scripted("a", "A")).run("x", context=deep, config=config)
    ]
    assert digest(events) == ["run_started:s", "run_failed"]


async def test_an_empty_workflow_fails_its_run() -> None:
    with pytest.raises(RunError, match="no sub-agents"):
        await SequentialAgent("empty").run("x")


async def test_a_cancelled_context_fails_before_any_step() -> None:
    ctx = RunContext.ephemeral(None)
    ctx.cancel.cancel("stop")
    later = MockModel.with_scripts([text_turn("never")])
    events = [
        e async for e in SequentialAgent("s").then(LlmAgent(name="a", model=later)).run("x", context=ctx)
    ]
    assert digest(events) == ["run_started:s", "run_failed"]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "cancelled"
    assert later.requests == []


async def test_cancelling_the_run_stops_the_running_step() -> None:
    gate = Gate()
    ctx = RunContext.ephemeral(None)
    pipeline = SequentialAgent("s").then(gate.agent("slow")).then(scripted("b", "never"))
    events: list[Any] = []

    async def consume() -> None:
        events.extend([e async for e in pipeline.run("x", context=ctx)])

    task = asyncio.create_task(consume())
    await gate.wait_started(1)
    ctx.cancel.cancel("user stop")
    await asyncio.wait_for(task, 2)
    assert gate.cancelled == ["slow"]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "cancelled"
    assert "agent_updated:b" not in digest(events)


async def test_abandoning_the_stream_closes_the_running_step() -> None:
    gate = Gate()
    stream = SequentialAgent("s").then(gate.stubborn("stuck", chatty=True)).run("x").__aiter__()
    assert [(await anext(stream)).type for _ in range(3)] == [
        "run_started",
        "agent_updated",
        "message_output",
    ]
    await stream.aclose()  # type: ignore[attr-defined]
    assert gate.closed == ["stuck"]
    assert other_tasks() == set()


async def test_cancelling_the_consumer_task_cancels_the_running_step() -> None:
    gate = Gate()
    stream = SequentialAgent("s").then(gate.stubborn("stuck")).run("x").__aiter__()
    assert [(await anext(stream)).type for _ in range(2)] == ["run_started", "agent_updated"]
    pending = asyncio.ensure_future(anext(stream))
    await gate.wait_started(1)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert gate.cancelled == ["stuck"] and gate.closed == ["stuck"]


def test_constructor_and_builder_validate_their_arguments() -> None:
    with pytest.raises(UserError, match="non-empty name"):
        SequentialAgent("")
    with pytest.raises(UserError, match="non-empty name"):
        SequentialAgent(42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="description"):
        SequentialAgent("s", None)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="is not an Agent"):
        SequentialAgent("s").then("not an agent")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="state key"):
        SequentialAgent("s").then_keyed("", scripted("a", "A"))
    with pytest.raises(UserError, match="expected a RunConfig"):
        SequentialAgent("s").then(scripted("a", "A")).run("x", config={"max_turns": 1})  # type: ignore[arg-type]


def test_run_sync_and_repr() -> None:
    pipeline = SequentialAgent("s", "desc").then(scripted("a", "A"))
    assert pipeline.run_sync("x").final_output == "A"
    assert repr(pipeline) == "SequentialAgent(name='s')"
    assert (pipeline.name, pipeline.description) == ("s", "desc")


async def test_run_sync_refuses_a_running_loop() -> None:
    with pytest.raises(UserError, match="running event loop"):
        SequentialAgent("s").then(scripted("a", "A")).run_sync("x")
