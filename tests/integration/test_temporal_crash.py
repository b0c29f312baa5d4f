"""Crash-resume: the worker is SIGKILLed in the middle of a tool call, and a new one finishes the run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from temporal_helpers import connect, on, runner
from temporal_worker_process import crash_agent

HERE = Path(__file__).parent


def start_worker(address: str, store: str, state: Path, name: str, *more: str) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        str(HERE / "temporal_worker_process.py"),
        address,
        store,
        "crashy",
        str(state),
        *more,
    ]
    with (state / f"{name}.log").open("wb") as log:
        return subprocess.Popen(argv, cwd=HERE, start_new_session=True, stdout=log, stderr=log)


async def wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    """Until `path` exists (the worker's process must not die meanwhile)."""
    while not path.exists():  # noqa: ASYNC240 - a stat, while polling
        if process.poll() is not None:
            logs = "".join(log.read_text()[-2000:] for log in path.parent.glob("*.log"))
            raise AssertionError(f"the worker exited ({process.returncode}): {logs}")
        await asyncio.sleep(0.05)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


async def test_a_worker_killed_mid_tool_is_replaced_and_the_run_resumes_from_its_last_step(
    temporal_server: str, tmp_path: Path
) -> None:
    store, state = f"sqlite:///{tmp_path}/sessions.db", tmp_path
    first = start_worker(temporal_server, store, state, "first")
    second: subprocess.Popen[bytes] | None = None
    try:
        await wait_for(state / "ready-crashy", first)
        client = await connect(temporal_server)
        session, ctx = on(store, "crash")
        run = asyncio.ensure_future(runner(client, "crashy").run(crash_agent(state), "Go.", ctx))
        while lines(state / "slow_runs") == 0:  # the slow tool has started, in the first worker
            assert not run.done(), run.result()
            await asyncio.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        (state / "ready-crashy").unlink()
        assert lines(state / "model_calls") == 2 and not run.done()

        (state / "release").touch()
        second = start_worker(temporal_server, store, state, "second")
        result = await asyncio.wait_for(run, 120)
        assert result.final_output == "done: one and two"
        # The two model turns that had completed are not made again; only the third is new.
        assert lines(state / "model_calls") == 3
        assert lines(state / "slow_runs") == 2  # the interrupted call ran again, once
        kinds = [e.event.type for e in await session.events()]
        assert kinds.count("tool_returned") == 2 and kinds.count("tool_called") == 2
        assert kinds[-2:] == ["assistant_message", "turn_closed"]
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


async def test_a_tool_run_at_most_once_is_not_run_again_and_the_model_reads_why(
    temporal_server: str, tmp_path: Path
) -> None:
    store, state = f"sqlite:///{tmp_path}/sessions.db", tmp_path
    first = start_worker(temporal_server, store, state, "first", "once")
    second: subprocess.Popen[bytes] | None = None
    try:
        await wait_for(state / "ready-crashy", first)
        client = await connect(temporal_server)
        session, ctx = on(store, "once")
        run = asyncio.ensure_future(runner(client, "crashy").run(crash_agent(state), "Go.", ctx))
        while lines(state / "slow_runs") == 0:
            assert not run.done(), run.result()
            await asyncio.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        second = start_worker(temporal_server, store, state, "second", "once")
        result = await asyncio.wait_for(run, 120)
        assert lines(state / "slow_runs") == 1  # never run twice
        assert "outcome is unknown" in result.final_output and lines(state / "model_calls") == 3
        returned = [e.event for e in await session.events() if e.event.type == "tool_returned"]
        assert returned[-1].is_error and "max_attempts=1" in returned[-1].content[0].text  # pyright: ignore[reportAttributeAccessIssue]
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
