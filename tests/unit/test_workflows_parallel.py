"""ParallelAgent: overlap, merged output, state, usage, collect-all failure, duplicate keys, cancellation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from workflow_support import Gate, digest, failing, other_tasks, scripted

from helikon import (
    GraphAgent,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    LoopAgent,
    MessageOutput,
    ParallelAgent,
    RunContext,
    RunError,
    RunFailed,
    SequentialAgent,
    UserError,
)
from helikon.testing import Delay, MockModel, text_turn


async def test_branches_merge_into_a_sorted_key_json_object() -> None:
    fan = ParallelAgent("fan").branch("zeta", scripted("z", "last")).branch("alpha", scripted("a", "first"))
    result = await fan.run("x")
    assert result.final_output == '{"alpha":"first","zeta":"last"}'
    final = result.events[-2]
    assert isinstance(final, MessageOutput) and final.item.agent == "fan"
    assert digest(result.events)[:3] == ["run_started:fan", "agent_updated:z", "agent_updated:a"]
    assert digest(result.events)[-1] == "run_completed"
    assert [e.type for e in result.events].count("run_started") == 1


async def test_state_holds_each_branch_and_usage_is_summed() -> None:
    ctx = RunContext.ephemeral(None)
    fan = ParallelAgent("fan").add(scripted("a", "A", tokens=3)).add(scripted("b", "B", tokens=4))
    result = await fan.run("x", context=ctx)
    assert ctx.state.to_dict() == {"a": "A", "b": "B"}
    assert (result.usage.input_tokens, result.usage.requests) == (7, 2)
    assert json.loads(result.final_output) == {"a": "A", "b": "B"}


async def test_non_ascii_output_stays_readable() -> None:
    result = await ParallelAgent("fan").add(scripted("a", "Grüße €")).run("x")
    assert result.final_output == '{"a":"Grüße €"}'


async def test_a_blocked_branch_does_not_block_its_siblings() -> None:
    gate = Gate()
    fan = ParallelAgent("fan").add(gate.agent("slow")).add(scripted("fast", "done"))
    seen: list[str] = []

    async def consume() -> None:
        async for event in fan.run("x"):
            seen.append(digest([event])[0] if digest([event]) else event.type)
            if isinstance(event, MessageOutput) and event.item.agent == "fast":
                assert gate.started == ["slow"] and gate.finished == []
                gate.release.set()  # only reachable if "fast" finished while "slow" waited

    await asyncio.wait_for(consume(), 5)
    assert seen.index("message_output:fast:done") < seen.index("message_output:slow:slow")
    assert gate.finished == ["slow"]


async def test_branches_start_together_and_interleave_in_arrival_order() -> None:
    def delayed(name: str, seconds: float) -> LlmAgent[Any]:
        return LlmAgent(name=name, model=MockModel.with_scripts([[Delay(seconds), *text_turn(name)]]))

    fan = ParallelAgent("fan").add(delayed("late", 0.05)).add(delayed("early", 0.0))
    result = await asyncio.wait_for(fan.run("x"), 5)
    outputs = [d for d in digest(result.events) if d.startswith("message_output")]
    assert outputs == [
        "message_output:early:early",
        "message_output:late:late",
        'message_output:fan:{"early":"early","late":"late"}',
    ]


async def test_failure_is_collect_all_with_one_aggregate_run_failed() -> None:
    ctx = RunContext.ephemeral(None)
    slow = LlmAgent(name="slow", model=MockModel.with_scripts([[Delay(0.02), *text_turn("fine")]]))
    fan = ParallelAgent("fan").add(failing("broken")).add(slow).add(failing("also"))
    events = [e async for e in fan.run("x", context=ctx)]
    failures = [e for e in events if isinstance(e, RunFailed)]
    assert len(failures) == 1 and events[-1] is failures[0]
    error = failures[0].error
    assert error.kind == "model_error"
    assert "2 of 3 branches failed" in error.message
    assert error.message.index("'also'") < error.message.index("'broken'")
    assert ctx.state.to_dict() == {"slow": "fine"}  # the sibling finished
    assert not any(isinstance(e, MessageOutput) and e.item.agent == "fan" for e in events)


async def test_mixed_failure_kinds_aggregate_as_other() -> None:
    looping = LlmAgent(name="loops", model=MockModel.with_scripts([]))
    fan = (
        ParallelAgent("fan")
        .add(looping)
        .add(ParallelAgent("dup").add(scripted("a", "A")).add(scripted("a", "A")))
    )
    with pytest.raises(RunError) as caught:
        await fan.run("x")
    assert caught.value.kind == "other"
    assert "'dup'" in str(caught.value) and "'loops'" in str(caught.value)


async def test_duplicate_keys_fail_the_run_before_any_branch_starts() -> None:
    first, second = MockModel.with_scripts([text_turn("1")]), MockModel.with_scripts([text_turn("2")])
    fan = (
        ParallelAgent("fan")
        .add(LlmAgent(name="a", model=first))
        .branch("a", LlmAgent(name="b", model=second))
    )
    events = [e async for e in fan.run("x")]
    assert digest(events) == ["run_started:fan", "run_failed"]
    assert isinstance(events[-1], RunFailed)
    assert "duplicate branch key(s) 'a'" in events[-1].error.message
    assert first.requests == [] and second.requests == []


async def test_on_subagent_stop_fires_once_per_branch() -> None:
    stops: list[str] = []

    class Recorder:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            if event.type == "on_subagent_stop":
                stops.append(event.agent)
            return HookDecision.allow()

    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry([Recorder()]))
    events = [
        e async for e in ParallelAgent("fan").add(scripted("a", "A")).add(failing("b")).run("x", context=ctx)
    ]
    assert events[-1].type == "run_failed"
    assert sorted(stops) == ["a", "b"]


@pytest.mark.parametrize("kind", ["sequential", "loop", "parallel", "graph"])
async def test_on_subagent_stop_fires_before_the_childs_text_lands_in_state(kind: str) -> None:
    seen: list[object] = []

    class Recorder:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            if event.type == "on_subagent_stop":
                seen.append(ctx.state.get("a"))
            return HookDecision.allow()

    workflows: dict[str, Any] = {
        "sequential": lambda: SequentialAgent("w").then(scripted("a", "A")),
        "loop": lambda: LoopAgent("w", max_iterations=1).then(scripted("a", "A")),
        "parallel": lambda: ParallelAgent("w").add(scripted("a", "A")),
        "graph": lambda: GraphAgent("w", nodes={"a": scripted("a", "A")}),
    }
    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry([Recorder()]))
    [e async for e in workflows[kind]().run("x", context=ctx)]
    assert seen == [None] and ctx.state.get("a") == "A"  # every workflow: the hook, then the state


async def test_cancelling_the_outer_run_cancels_every_branch_promptly() -> None:
    gate = Gate()
    ctx = RunContext.ephemeral(None)
    fan = ParallelAgent("fan").add(gate.agent("a")).add(gate.agent("b")).add(gate.stubborn("c"))
    events: list[Any] = []

    async def consume() -> None:
        events.extend([e async for e in fan.run("x", context=ctx)])

    task = asyncio.create_task(consume())
    await gate.wait_started(3)
    ctx.cancel.cancel("user stop")
    await asyncio.wait_for(task, 2)
    assert sorted(gate.cancelled) == ["a", "b", "c"]  # the stubborn one too: its task was cancelled
    assert gate.finished == []
    failure = events[-1]
    assert isinstance(failure, RunFailed) and failure.error.kind == "cancelled"
    assert "'a'" in failure.error.message and "'c'" in failure.error.message
    assert other_tasks() == set()


async def test_abandoning_the_stream_cancels_every_branch() -> None:
    gate = Gate()
    fan = ParallelAgent("fan").add(gate.agent("a")).add(gate.stubborn("b", chatty=True))
    stream = fan.run("x").__aiter__()
    async for event in stream:
        if isinstance(event, MessageOutput):  # "b" is working, "a" waits on its model
            break
    await gate.wait_started(2)
    await stream.aclose()  # type: ignore[attr-defined]
    assert sorted(gate.cancelled) == ["a", "b"]
    assert other_tasks() == set()


async def test_cancelling_the_consumer_task_cancels_every_branch() -> None:
    gate = Gate()
    fan = ParallelAgent("fan").add(gate.agent("a")).add(gate.stubborn("b"))

    async def consume() -> None:
        async for _ in fan.run("x"):
            pass

    task = asyncio.create_task(consume())
    await gate.wait_started(2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(gate.cancelled) == ["a", "b"]
    assert other_tasks() == set()


def test_builder_validates_its_arguments() -> None:
    with pytest.raises(UserError, match="is not an Agent"):
        ParallelAgent("fan").add(object())  # type: ignore[arg-type]
    with pytest.raises(UserError, match="state key"):
        ParallelAgent("fan").branch(None, scripted("a", "A"))  # type: ignore[arg-type]
    with pytest.raises(UserError, match="non-empty name"):
        ParallelAgent("  ")


async def test_an_empty_parallel_fails_its_run() -> None:
    with pytest.raises(RunError, match="no sub-agents"):
        await ParallelAgent("fan").run("x")
