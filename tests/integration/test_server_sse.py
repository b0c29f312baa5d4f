"""The SSE writer: frames as browsers read them, keep-alive comments, a client that leaves."""

from __future__ import annotations

import json

import httpx2
import pytest
from agentcore_helpers import SSE, ThreadGate, session
from agentcore_helpers import serving as serving_agentcore
from server_helpers import Gate, echo_agent, serving

from helikon.agentcore import AgentCoreServer
from helikon.server import AgentServer, StreamLimits


async def test_every_frame_has_its_seq_type_and_json_on_lines_ending_in_newline() -> None:
    server = AgentServer.builder().with_default_context().agent(echo_agent()).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        answered = await client.post("/agents/echo/runs?stream=sse", json={"input": "hi"})
    assert answered.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert answered.headers["cache-control"] == "no-store" and answered.headers["x-run-id"]
    assert "\r" not in answered.text and answered.text.endswith("\n\n")
    frames = [block.split("\n") for block in answered.text.removesuffix("\n\n").split("\n\n")]
    for seq, (ident, event, data) in enumerate(frames):
        assert ident == f"id: {seq}"
        assert event.removeprefix("event: ") == json.loads(data.removeprefix("data: "))["type"]
    assert frames[-1][1] == "event: run_completed"


async def test_a_quiet_stream_sends_keep_alive_comments_until_the_run_goes_on() -> None:
    gate = Gate()
    limits = StreamLimits(ping=0.05)
    server = AgentServer.builder().with_default_context().agent(gate.agent()).stream_limits(limits).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        lines: list[str] = []
        async with client.stream("POST", "/agents/slow/runs?stream=sse", json={"input": "go"}) as streamed:
            async for line in streamed.aiter_lines():
                lines.append(line)
                if line == ": ping":
                    gate.open.set()  # the run was quiet long enough for a comment: let it finish
    assert ": ping" in lines
    events = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    assert events[-1] == "run_completed" and "tool_output_item" in events


async def test_an_agentcore_stream_that_is_quiet_sends_a_comment_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from helikon.agentcore import invocations

    monkeypatch.setattr(invocations, "KEEP_ALIVE", 0.05)
    gate = ThreadGate()
    server = AgentCoreServer(gate.agent())
    async with serving_agentcore(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        lines: list[str] = []
        headers = {**SSE, **session("quiet")}
        async with client.stream("POST", "/invocations", json={"prompt": "go"}, headers=headers) as streamed:
            async for line in streamed.aiter_lines():
                lines.append(line)
                if line == ": ping":
                    gate.open.set()
    assert ": ping" in lines
    assert json.loads(lines[-2].removeprefix("data: "))["type"] == "run_completed"


async def test_a_client_that_leaves_a_quiet_stream_is_noticed_at_once() -> None:
    gate = Gate()
    server = AgentServer.builder().with_default_context().agent(gate.agent()).build()  # pings every 15 s
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        async with client.stream("POST", "/agents/slow/runs?stream=sse", json={"input": "go"}) as streamed:
            run_id = streamed.headers["x-run-id"]
            await gate.entered.wait()  # nothing more will be written until the gate opens
        left = await client.get(f"/agents/slow/runs/{run_id}/wait")  # long before any ping
    assert left.json()["status"] == "cancelled"
