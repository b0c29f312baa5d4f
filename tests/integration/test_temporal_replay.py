"""Replay safety: recorded histories of the durable run replay under the current workflow code.

`histories/temporal/*.json` are histories of runs recorded by earlier versions (run
`python test_temporal_replay.py <address>` against a dev server to record them again, when a
change is meant to break replay, with a new `DRIVER_VERSION`). Each one is replayed with
Temporal's `Replayer`, with the agents it ran served as they were: a change of the
workflow's decisions (another activity, another order) fails here, before it can strand
runs in flight. A run made now is replayed too.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import pytest
from temporal_helpers import replayer, served_as
from temporalio.client import Client, WorkflowHistory

from helikon import Approve, LlmAgent, RunError, tool
from helikon.temporal.converter import prewarm
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn

HISTORIES = Path(__file__).parent / "histories" / "temporal"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(needs_approval=True)
def approved_add(a: int, b: int) -> int:
    """Add two numbers, once a person agrees."""
    return a + b


def agents() -> dict[str, LlmAgent[None, str]]:
    """The agents of the recorded runs, by task queue (replay needs only their shape)."""
    calc = MockModel.with_scripts(
        [
            tool_calls_turn([("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})]),
            tool_call_turn("add", {"a": 5, "b": 6}),
            text_turn("3, 7 and 11"),
        ]
    )
    failing = MockModel.with_scripts([tool_call_turn("nope", {}), tool_call_turn("nope", {})])
    asking = MockModel.with_scripts([tool_call_turn("approved_add", {"a": 1, "b": 2}), text_turn("3")])
    return {
        "replay-calc": LlmAgent(name="calc", model=calc, tools=[add]),
        "replay-unknown-tool": LlmAgent(name="lost", model=failing, tools=[add]),
        "replay-approval": LlmAgent(name="asking", model=asking, tools=[approved_add]),
    }


@pytest.fixture
def served() -> Iterator[None]:
    prewarm()
    with ExitStack() as stack:
        for queue, agent in agents().items():
            stack.enter_context(served_as(queue, agent))
        yield


def recorded() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))


def test_there_are_recorded_histories_to_replay() -> None:
    assert {path.stem for path in recorded()} >= {"calc-v1", "unknown-tool-v1", "approval-v1"}


@pytest.mark.parametrize("path", recorded(), ids=lambda path: path.stem)
async def test_a_recorded_history_replays_under_the_current_code(served: None, path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))  # noqa: ASYNC240
    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name} no longer replays: {result.replay_failure}"


async def test_reordered_decisions_fail_replay(served: None) -> None:
    """The check is real: a history whose activities come in another order does not replay."""
    data = json.loads((HISTORIES / "calc-v1.json").read_text())
    events = data["events"]
    scheduled = [e for e in events if e.get("activityTaskScheduledEventAttributes")]
    first, second = scheduled[0], scheduled[1]
    a, b = (first["activityTaskScheduledEventAttributes"], second["activityTaskScheduledEventAttributes"])
    a["activityType"], b["activityType"] = b["activityType"], a["activityType"]
    result = await replayer().replay_workflow(
        WorkflowHistory.from_json("x", data), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None


async def record(address: str) -> None:
    """Run each recorded case against the server at `address` and write its history."""
    from temporal_helpers import on, runner, worker

    client = await Client.connect(address)
    store = f"sqlite:///{tempfile.mkdtemp()}/sessions.db"
    names = {
        "replay-calc": "calc-v1",
        "replay-unknown-tool": "unknown-tool-v1",
        "replay-approval": "approval-v1",
    }
    for queue, agent in agents().items():
        _, ctx = on(store, queue)
        async with worker(client, agent, store, queue):
            with suppress(RunError):  # the unknown tool's run fails: its history is the point
                result = await runner(client, queue).run(agent, "Go.", ctx)
                if result.status == "paused":  # the approval's: decided by the update, it finishes
                    await runner(client, queue).resume(agent, ctx, {result.pending[0].request_id: Approve()})
        history = await client.get_workflow_handle(f"helikon-{queue}").fetch_history()
        HISTORIES.mkdir(parents=True, exist_ok=True)
        data: Any = json.loads(history.to_json())
        (HISTORIES / f"{names[queue]}.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1]))
