"""A turn's tool results project in call order, whatever order a durable run logged them in.

A durable run appends each result as its call returns, so a parallel batch's results reach
the log in the order the calls finished; the conversation keeps the order the model asked
for, as a run that never stopped does.
"""

from __future__ import annotations

import asyncio

import pytest
from log_events import THINKING, call, result, user

from helikon import LlmAgent, MemorySession, RunConfig, RunContext, tool
from helikon.core.items import (
    AssistantMessage,
    Item,
    ToolCall,
    ToolResult,
    ToolUsePart,
)
from helikon.core.session import (
    AssistantMessageEvent,
    Projection,
    Rewound,
    SessionEvent,
    ToolReturned,
    event_step,
    project,
)
from helikon.core.session.checkpoint import decode_state, encode_state, restored_projection
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_calls_turn


def results(messages: tuple[Item, ...] | list[Item]) -> list[str]:
    return [m.call_id for m in messages if isinstance(m, ToolResult)]


def batch(*finished: str) -> list[SessionEvent]:
    """A turn calling c1, c2, c3, its results logged in the order `finished`."""
    return [user("q"), THINKING, call("c1"), call("c2"), call("c3"), *map(result, finished)]


@pytest.mark.parametrize(
    "finished", [("c1", "c2", "c3"), ("c3", "c1", "c2"), ("c2", "c3", "c1"), ("c3", "c2", "c1")]
)
def test_results_logged_in_any_order_project_in_call_order(finished: tuple[str, ...]) -> None:
    assert results(project(batch(*finished)).messages) == ["c1", "c2", "c3"]


def test_a_turn_still_waiting_for_a_result_shows_the_ones_in_call_order() -> None:
    assert results(project(batch("c3", "c1")).messages) == ["c1", "c3"]


def test_calls_carried_in_the_assistant_message_order_their_results_too() -> None:
    parts = (ToolUsePart(call_id="u1", name="t", args={}), ToolUsePart(call_id="u2", name="t", args={}))
    log: list[SessionEvent] = [user("q"), AssistantMessageEvent(content=parts), result("u2"), result("u1")]
    messages = project(log).messages
    assert isinstance(messages[1], AssistantMessage)
    assert results(messages) == ["u1", "u2"]


def test_a_result_of_no_call_of_the_turn_stays_where_it_was_logged_and_is_not_passed() -> None:
    # Not this turn's: the repair before a model call decides what it is.
    assert results(project([*batch("c2"), result("stray"), result("c1")]).messages) == ["c2", "stray", "c1"]
    assert results(project([*batch("c2"), result("stray")]).messages) == ["c2", "stray"]


def test_turns_are_ordered_each_on_its_own() -> None:
    second = [call("d1"), call("d2"), result("d2"), result("d1")]
    log = [*batch("c2", "c1", "c3"), *second]
    assert results(project(log).messages) == ["c1", "c2", "c3", "d1", "d2"]


def test_folding_one_event_at_a_time_gives_the_same_conversation() -> None:
    log = batch("c3", "c1", "c2")
    projection = Projection()
    for event in log:
        projection.add(event_step(event))
    assert projection.snapshot() == project(log)


def test_a_rewind_into_the_middle_of_reordered_results_keeps_the_ones_logged_by_then() -> None:
    # Logged c3 (seq 5), c1 (seq 6), c2 (seq 7); shown c1, c2, c3. Back to seq 5: only c3 was there.
    log = [*batch("c3", "c1", "c2"), Rewound(to_seq=5)]
    assert results(project(log).messages) == ["c3"]
    back_to_6 = [*batch("c3", "c1", "c2"), Rewound(to_seq=6)]
    assert results(project(back_to_6).messages) == ["c1", "c3"]


def test_a_checkpoint_of_reordered_results_restores_the_same_conversation() -> None:
    log = batch("c3", "c1", "c2")
    projection = restored_projection()
    for event in log:
        projection.add(event_step(event))
    restored = decode_state(encode_state(projection), len(log) - 1)
    assert restored is not None
    assert restored.snapshot() == project(log)
    restored.add(event_step(Rewound(to_seq=6)))  # and a rewind after the restore still goes back right
    if restored.stale:
        restored.refold([event_step(e) for e in [*log, Rewound(to_seq=6)]])
    assert results(restored.snapshot().messages) == ["c1", "c3"]


@tool
async def slow(n: int) -> str:
    """Slow."""
    await asyncio.sleep(0.05)
    return f"slow {n}"


@tool
async def quick(n: int) -> str:
    """Quick."""
    return f"quick {n}"


async def test_a_durable_run_logs_each_result_as_it_returns_and_projects_them_in_call_order() -> None:
    session = MemorySession()
    model = MockModel.with_scripts(
        [tool_calls_turn([("slow", {"n": 1}), ("quick", {"n": 2})], call_ids=["s", "q"]), text_turn("done")]
    )
    agent = LlmAgent[None](name="a", model=model, tools=[slow, quick])
    ctx = RunContext.ephemeral(None).with_session(session)
    await AsyncioRunner[None]().run(agent, "go", ctx, RunConfig(durable=True))
    logged = [e.event.call_id for e in await session.events() if isinstance(e.event, ToolReturned)]
    assert logged == ["q", "s"]  # quick returned first, and was stored then
    assert results((await session.snapshot()).messages) == ["s", "q"]
    # The second model call saw them in call order too, as the next run will.
    second = model.requests[1].messages
    assert [m.call_id for m in second if isinstance(m, ToolCall | ToolResult)] == ["s", "q", "s", "q"]


async def test_a_quick_result_is_in_the_log_while_its_sibling_still_runs() -> None:
    session = MemorySession()
    release = asyncio.Event()
    stored_while_running: list[list[str]] = []

    @tool
    async def waits() -> str:
        """Waits for the test."""
        await release.wait()
        return "waited"

    @tool
    async def charges() -> str:
        """Returns at once."""
        return "charged"

    model = MockModel.with_scripts(
        [tool_calls_turn([("waits", {}), ("charges", {})], call_ids=["w", "c"]), text_turn("done")]
    )
    agent = LlmAgent[None](name="a", model=model, tools=[waits, charges])
    ctx = RunContext.ephemeral(None).with_session(session)
    run = asyncio.ensure_future(AsyncioRunner[None]().run(agent, "go", ctx, RunConfig(durable=True)))
    try:
        async with asyncio.timeout(30):  # only a run that stores results once the batch is done waits
            while not any(isinstance(e.event, ToolReturned) for e in await session.events()):
                assert not run.done(), "the run ended before any result was stored"
                await asyncio.sleep(0)
    finally:
        release.set()
    stored_while_running.append(
        [e.event.call_id for e in await session.events() if isinstance(e.event, ToolReturned)]
    )
    await run
    assert stored_while_running == [["c"]]
    assert [e.event.call_id for e in await session.events() if isinstance(e.event, ToolReturned)] == [
        "c",
        "w",
    ]
