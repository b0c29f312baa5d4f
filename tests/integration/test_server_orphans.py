"""A server killed mid-run: the next one on the same SQLite sessions reports the run failed, orphaned."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from server_helpers import sse_frames

SCRIPT = Path(__file__).with_name("server_process.py")
SESSION = {"X-Session-Id": "ticket-3"}


@asynccontextmanager
async def server_process(path: Path) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), str(path), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        port = int((await asyncio.wait_for(process.stdout.readline(), 120)).decode())
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def test_a_run_left_by_a_killed_server_is_failed_orphaned_on_the_next(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    session = {"X-Session-Id": "ticket-9"}
    async with server_process(path) as (first, base), httpx2.AsyncClient(base_url=base, timeout=60) as client:
        run = (
            await client.post("/agents/worker/runs?mode=async", json={"input": "work"}, headers=session)
        ).json()
        while True:  # wait until the log shows the call started: the run is mid-call, on disk
            events = (await client.get("/sessions/ticket-9/events")).json()["events"]
            if any(e["event"]["type"] == "tools_started" for e in events):
                break
            await asyncio.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        await first.wait()

    async with server_process(path) as (_, base), httpx2.AsyncClient(base_url=base, timeout=60) as client:
        path_ = f"/agents/worker/runs/{run['run_id']}"
        found = (await client.get(path_)).json()
        assert (found["status"], found["error"]["cause"]) == ("failed", "orphaned")
        async with client.stream("GET", f"{path_}/stream") as stream:
            frames = [frame async for frame in sse_frames(stream)]
        assert [f.event for f in frames] == ["run_failed"]  # its stream ends with a terminal frame
        listed = (await client.get("/sessions/ticket-9/runs")).json()["runs"]
        assert [r["run_id"] for r in listed] == [run["run_id"]]
        after = (await client.post("/agents/worker/runs", json={"input": "hello"}, headers=session)).json()
        assert after["status"] == "succeeded"  # the session goes on: its open turn is repaired
        closed = [
            e["event"]
            for e in (await client.get("/sessions/ticket-9/events")).json()["events"]
            if e["event"]["type"] == "turn_closed"
        ]
        assert closed[0]["outcome"] == "interrupted" and closed[0]["run_id"].startswith(run["run_id"])


async def test_sigterm_stops_a_served_server_with_a_run_still_going_and_writes_its_turn(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), str(path), "--serve", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 120)).decode()
        base = line.strip().removeprefix("helikon server: ")
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client, asyncio.timeout(120):
            frames = []  # (the timeout: a server that waits on the run keeps the stream open for ever)
            body = {"input": "work"}
            async with client.stream(
                "POST", "/agents/worker/runs?stream=sse", json=body, headers=SESSION
            ) as stream:
                async for frame in sse_frames(stream):
                    frames.append(frame)
                    if frame.event == "tool_call_item":  # the run hangs in its tool from here on
                        process.send_signal(signal.SIGTERM)
        assert frames[-1].event == "run_failed" and frames[-1].json["error"]["kind"] == "cancelled"
        await asyncio.wait_for(process.wait(), 60)  # uvicorn did not wait on the run
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    from helikon.server import SqliteSessionProvider

    reader = SqliteSessionProvider(path)
    events = await (await reader.session("ticket-3")).events()
    await reader.aclose()
    closed = [entry.event for entry in events if entry.event.type == "turn_closed"]
    assert [c.outcome for c in closed] == ["cancelled"]  # type: ignore[attr-defined]
