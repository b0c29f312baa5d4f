"""Durable runs on a real Temporal dev server: the session log, the stream, small payloads, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporal_helpers import (
    SMALL_LIMIT,
    connect,
    on,
    payload_sizes,
    replayer,
    runner,
    served_as,
    worker,
)

from durable_cases import CASES, add, calculator, config_of, normalized
from helikon import LlmAgent, MemorySession, RunConfig, RunContext, RunError, tool
from helikon.core.events import RunFailed
from helikon.core.exceptions import UserError
from helikon.testing import MockModel, text_turn, tool_call_turn


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/sessions.db"


@tool
def page(n: int) -> str:
    """Return page `n` of a long document (50 KB)."""
    return f"page {n}: " + "lorem ipsum " * 4300


async def test_a_tool_run_records_the_same_session_events_as_in_process(
    temporal_server: str, store: str
) -> None:
    in_process, ctx = on(store, "in-process")
    await calculator().run("Add them up.", context=ctx)
    expected = await in_process.events()

    client = await connect(temporal_server)
    agent = calculator()
    session, ctx = on(store, "durable")
    async with worker(client, agent, store, "runs"):
        result = await runner(client, "runs").run(agent, "Add them up.", ctx)
    assert result.final_output == "3, 7 and 11"
    entries = await session.events()
    assert normalized(entries, "run_id") == normalized(expected, "run_id")
    assert [e.event.type for e in entries][:2] == ["turn_opened", "user_message"]

    # The run's history replays under the workflow code (a nondeterministic decision would not).
    history = await client.get_workflow_handle("helikon-durable").fetch_history()
    with served_as("runs", agent):
        replayed = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None


async def test_the_stream_is_the_run_s_settled_events_in_order(temporal_server: str, store: str) -> None:
    client = await connect(temporal_server)
    agent = calculator()
    _, ctx = on(store, "streamed")
    async with worker(client, agent, store, "streams"):
        kinds = [type(e).__name__ async for e in runner(client, "streams").run_streamed(agent, "Add.", ctx)]
    assert kinds == [
        "RunStarted",
        "TurnStarted",
        "ToolCallItem",
        "ToolCallItem",
        "ToolOutputItem",
        "ToolOutputItem",
        "TurnStarted",
        "ToolCallItem",
        "ToolOutputItem",
        "TurnStarted",
        "MessageOutput",
        "RunCompleted",
    ]


async def test_an_in_memory_session_fails_fast_saying_why(temporal_server: str) -> None:
    client = await connect(temporal_server)
    ctx = RunContext.ephemeral(None).with_session(MemorySession())
    with pytest.raises(UserError, match="in a store its workers and its client all reach"):
        runner(client, "nowhere").run_streamed(calculator(), "Hi", ctx)


async def test_forty_turns_of_fifty_kilobyte_results_stay_out_of_history(
    small_temporal_server: str, store: str
) -> None:
    """The anchors' design (the transcript in every model call) fails here at turn 1; this completes."""
    turns = [tool_call_turn("page", {"n": n}) for n in range(40)]
    model = MockModel.with_scripts([*turns, text_turn("read it all")])
    agent = LlmAgent(name="reader", model=model, tools=[page])
    client = await connect(small_temporal_server)
    session, ctx = on(store, "long")
    async with worker(client, agent, store, "long"):
        result = await runner(client, "long", payload_limit=SMALL_LIMIT).run(
            agent, "Read the document.", ctx, RunConfig(max_turns=64)
        )
    assert result.final_output == "read it all"
    stored = [e.event for e in await session.events() if e.event.type == "tool_returned"]
    assert len(stored) == 40 and all(len(e.content[0].text) > 50_000 for e in stored)  # pyright: ignore[reportAttributeAccessIssue]
    assert len(model.requests) == 41
    sizes = payload_sizes(await client.get_workflow_handle("helikon-long").fetch_history())
    assert max(sizes) < 2_000  # no result ever entered history: each step's input and result is small
    assert sum(sizes) < 40 * 50_000 / 20


async def test_a_model_answer_too_large_for_history_fails_the_run_once_naming_it(
    small_temporal_server: str, store: str
) -> None:
    huge = "x" * (2 * SMALL_LIMIT)
    model = MockModel.with_scripts(
        [tool_call_turn("add", {"a": 1, "b": 2, "note": huge}), text_turn("never")]
    )
    agent = LlmAgent(name="big", model=model, tools=[add])
    client = await connect(small_temporal_server)
    session, ctx = on(store, "too-big")
    async with worker(client, agent, store, "big"):
        with pytest.raises(
            RunError, match=r"model call of turn 0 .* over the Temporal server's payload limit"
        ):
            await runner(client, "big", payload_limit=SMALL_LIMIT).run(agent, "Go.", ctx)
    assert len(model.requests) == 1  # not retried
    kinds = [e.event.type for e in await session.events()]
    assert kinds[0] == "turn_opened" and kinds[-1] == "turn_closed"


@pytest.mark.parametrize("case", sorted(CASES))
async def test_each_kind_of_run_records_under_temporal_what_it_records_in_process(
    temporal_server: str, store: str, case: str
) -> None:
    """Guardrails, hooks, output validators, a handoff: as in process, step for step."""
    make, text = CASES[case]
    config = config_of(case)
    in_process, ctx = on(store, "in-process")
    expected = [event async for event in make().run(text, context=ctx, config=config)][-1]

    client = await connect(temporal_server)
    agent = make()
    queue = case.replace(" ", "-")
    session, ctx = on(store, queue)
    async with worker(client, agent, store, queue):
        terminal = [event async for event in runner(client, queue).run_streamed(agent, text, ctx, config)][-1]
    entries, logged = await session.events(), await in_process.events()
    assert normalized(entries, "run_id") == normalized(logged, "run_id")
    assert type(terminal) is type(expected)
    if isinstance(terminal, RunFailed) and isinstance(expected, RunFailed):
        assert (terminal.error.kind, terminal.error.message) == (expected.error.kind, expected.error.message)
