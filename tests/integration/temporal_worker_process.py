"""A durable-run worker in a process of its own, for the crash tests.

`python temporal_worker_process.py ADDRESS STORE QUEUE DIR [once]` serves until it is killed
(`once`: the `slow` tool is never run twice, `StepOptions.tool_attempts`).

Its agent counts its model calls in `DIR/model_calls` (one line each, across processes)
and calls two tools: `first` answers at once; `slow` notes each start in `DIR/slow_runs`
and, until `DIR/release` exists, hangs (the test kills the worker meanwhile). The worker
heartbeats, so a dead worker's step is retried about two seconds after it died.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client

from helikon import LlmAgent, ModelRequest, tool
from helikon.core.items import ToolResult
from helikon.temporal import StepOptions, TemporalAgentWorker
from helikon.testing import FunctionModel, text_turn, tool_call_turn


def crash_agent(state: Path) -> LlmAgent[None, str]:
    """The agent of the crash tests (see the module docstring)."""

    def answer(request: ModelRequest) -> Any:
        with (state / "model_calls").open("a") as calls:
            calls.write("call\n")
        results = [m for m in request.messages if isinstance(m, ToolResult)]
        if not results:
            return tool_call_turn("first", {})
        if len(results) == 1:
            return tool_call_turn("slow", {})
        return text_turn(f"done: {results[0].text} and {results[1].text}")

    @tool
    def first() -> str:
        """Answer at once."""
        return "one"

    @tool
    async def slow() -> str:
        """Hang until released."""
        with (state / "slow_runs").open("a") as runs:
            runs.write("run\n")
        while not (state / "release").exists():  # noqa: ASYNC110 - released by another process
            await asyncio.sleep(0.05)
        return "two"

    return LlmAgent(name="crashy", model=FunctionModel(answer), tools=[first, slow])


async def main(address: str, store: str, queue: str, state: Path, once: bool) -> None:
    client = await Client.connect(address)
    options = StepOptions(heartbeat_timeout=timedelta(seconds=2), tool_attempts={"slow": 1} if once else {})
    builder = TemporalAgentWorker.builder().client(client).agent(crash_agent(state)).sessions(store)
    async with builder.task_queue(queue).options(options).build():
        (state / f"ready-{queue}").touch()
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), sys.argv[5:] == ["once"]))
