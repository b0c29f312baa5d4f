"""The agent server under load: 200 SSE clients at once on one process, and a client that stops reading."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx2
from server_helpers import Frame, serving, sse_frames

from helikon import LlmAgent, RunConfig, tool
from helikon.server import AgentServer, StreamLimits
from helikon.testing import FunctionModel, text_turn, tool_call_turn

STEPS = 5


def stepper(
    steps: int = STEPS, payload: int = 16, pause: float = 0.0, start: asyncio.Event | None = None
) -> LlmAgent[None, str]:
    """Calls `step` `steps` times, one a turn, then answers; results `payload` bytes, `pause` s apart.

    With `start`, the first step waits for it: the test attaches its clients to a run in progress.
    """

    @tool
    async def step(n: int) -> str:
        """One step."""
        if n == 0 and start is not None:
            await start.wait()
        await asyncio.sleep(pause)  # a reading client keeps up; one that stopped reading falls behind
        return f"{n}:" + "x" * payload

    def reply(request: Any) -> Any:
        done = sum(1 for m in request.messages if m.type == "tool_result")
        if done >= steps:
            return text_turn(f"{done} steps")
        return tool_call_turn("step", {"n": done})

    config = RunConfig(max_turns=steps + 1)
    return LlmAgent(name="stepper", model=FunctionModel(reply), tools=[step], run_config=config)


async def subscribers(run: Any, count: int) -> None:
    """Wait until `run` has `count` subscribers attached."""
    async with asyncio.timeout(60):
        while True:
            if run.log.subscribers == count:
                return
            await asyncio.sleep(0.01)


def in_order(frames: list[Frame]) -> bool:
    return [int(f.id or -1) for f in frames] == list(range(len(frames)))


async def test_two_hundred_sse_clients_each_get_every_event_of_their_run_in_order() -> None:
    server = AgentServer.builder().with_default_context().agent(stepper()).build()
    limits = httpx2.Limits(max_connections=250, max_keepalive_connections=250)
    async with (
        serving(server) as base,
        httpx2.AsyncClient(base_url=base, limits=limits, timeout=120) as client,
    ):

        async def one(i: int) -> list[Frame]:
            body = {"input": f"client {i}"}
            async with client.stream("POST", "/agents/stepper/runs?stream=sse", json=body) as response:
                assert response.status_code == 200
                return [frame async for frame in sse_frames(response)]

        results = await asyncio.gather(*(one(i) for i in range(200)))
    assert all(in_order(frames) for frames in results)
    assert all(frames[-1].event == "run_completed" for frames in results)
    assert {len(frames) for frames in results} == {len(results[0])}  # every run made the same events
    assert all(run.status == "succeeded" for run in server.runs.all()) and len(server.runs.all()) == 200


async def stalled_request(base: str, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Send `GET path` on a socket with a 4 KB receive buffer, then read nothing (a client that stalled)."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=sock)
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    return reader, writer


async def test_a_stalled_client_is_dropped_and_never_slows_the_run_or_the_others() -> None:
    start = asyncio.Event()
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(stepper(steps=400, payload=32 * 1024, pause=0.002, start=start))  # ~13 MB of results, paced
        .stream_limits(StreamLimits(backlog=64))
        .build()
    )
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=120) as client:
        run_id = (await client.post("/agents/stepper/runs?mode=async", json={"input": "go"})).json()["run_id"]
        run = server.runs.get(run_id)
        path = f"/agents/stepper/runs/{run_id}"
        reader, writer = await stalled_request(base, f"{path}/stream")
        await subscribers(run, 1)

        async def follow() -> list[Frame]:
            """Every event, as a real client gets them: reconnecting after its last seq if it is dropped."""
            frames: list[Frame] = []
            while not frames or frames[-1].event != "run_completed":
                after = {"Last-Event-ID": frames[-1].id or "-1"} if frames else {}
                async with client.stream("GET", f"{path}/stream", headers=after) as response:
                    got = [frame async for frame in sse_frames(response)]
                frames += [frame for frame in got if frame.id is not None]  # the drop frames have no seq
            return frames

        followers = [asyncio.create_task(follow()) for _ in range(3)]
        await subscribers(run, 4)  # everyone is attached to the run in progress: now it goes on
        start.set()
        others = await asyncio.gather(*followers)
        done = (await client.get(f"{path}/wait")).json()
        assert done["status"] == "succeeded"  # the run finished while one client read nothing
        assert all(frames[-1].event == "run_completed" and in_order(frames) for frames in others)
        assert {len(frames) for frames in others} == {done["events"]}
        async with asyncio.timeout(120):
            raw = await reader.read()  # now it reads what was sent: its stream ends with the drop
        writer.close()
        assert b"event: stream_dropped" in raw and raw.count(b"event: run_completed") == 0
