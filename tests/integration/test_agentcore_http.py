"""AgentCore's HTTP protocol on 127.0.0.1: /ping, /invocations (JSON and SSE), /ws, bad requests."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import httpx2
import pytest
from agentcore_helpers import (
    SSE,
    ThreadGate,
    counting_agent,
    data_frames,
    echo_agent,
    eventually,
    ping,
    serving,
    session,
)
from websockets.asyncio.client import connect

from helikon.agentcore import AgentCoreServer, Health
from helikon.server import InMemorySessionProvider


def counting_clock() -> Any:
    """A clock that moves one second at every reading: a stamp taken when none is due shows."""
    ticks = itertools.count(1_800_000_000)
    return lambda: float(next(ticks))


async def test_ping_before_during_and_after_a_run_even_when_the_run_hogs_its_loop() -> None:
    gate = ThreadGate()
    server = AgentCoreServer(gate.agent(hog_the_loop=True), health=Health(clock=counting_clock()))
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        before = await ping(client)
        assert before == {"status": "Healthy", "time_of_last_update": 1_800_000_000}
        assert await ping(client) == before  # pinging never re-stamps

        invocation = asyncio.create_task(client.post("/invocations", json={"prompt": "go"}))
        await gate.wait_entered()  # the tool now blocks the loop the run is on
        during = await ping(client)  # answered all the same: /ping is not on that loop
        assert during["status"] == "HealthyBusy"
        assert during["time_of_last_update"] > before["time_of_last_update"]
        assert await ping(client) == during

        gate.open.set()
        answered = await invocation
        assert answered.status_code == 200 and answered.json()["output"] == "done"

        async def idle() -> bool:
            return (await ping(client))["status"] == "Healthy"

        await eventually(idle, "the container says Healthy once the run is written")
        after = await ping(client)
        assert after["time_of_last_update"] > during["time_of_last_update"]
        assert await ping(client) == after


async def test_background_work_keeps_the_container_busy() -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        with server.health.busy():
            assert (await ping(client))["status"] == "HealthyBusy"
        assert (await ping(client))["status"] == "Healthy"


async def test_a_json_invocation_answers_the_runs_outcome() -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        answered = await client.post("/invocations", json={"prompt": "hello"}, headers=session("s-json"))
    assert answered.status_code == 200
    assert answered.headers["content-type"] == "application/json"
    body = answered.json()
    assert set(body) == {"run_id", "session_id", "status", "output", "usage"}
    assert (body["session_id"], body["status"], body["output"]) == ("s-json", "succeeded", "You said: hello")
    assert body["usage"]["requests"] == 1


async def test_an_sse_invocation_streams_every_event_as_a_data_frame_to_the_terminal_one() -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        answered = await client.post(
            "/invocations", json={"prompt": "stream me"}, headers={**SSE, **session("s-sse")}
        )
    assert answered.status_code == 200
    assert answered.headers["content-type"].startswith("text/event-stream")
    events = data_frames(answered.text)
    assert [e["type"] for e in events] == [
        "run_started",
        "turn_started",
        "token_delta",
        "message_output",
        "run_completed",
    ]
    assert events[3]["item"]["content"] == [{"type": "text", "text": "You said: stream me"}]


async def test_the_websocket_runs_one_payload_per_message_on_its_session() -> None:
    sessions = InMemorySessionProvider()
    server = AgentCoreServer(counting_agent(), sessions=sessions)
    async with serving(server) as base:
        url = base.replace("http://", "ws://") + "/ws"
        async with connect(url, additional_headers=session("s-ws")) as socket:
            outputs: list[str] = []
            for prompt in ("one", "two"):
                await socket.send(json.dumps({"prompt": prompt}))
                outputs.append(await answer_of(socket))
            await socket.send("{not json")
            error = json.loads(await socket.recv())
            assert error["error"] == "Invalid JSON"
            await socket.send(json.dumps({"action": "cancel"}))
            assert json.loads(await socket.recv())["error"] == "Nothing to cancel"
            await socket.send(json.dumps({"prompt": "still open"}))  # errors leave the socket open
            outputs.append(await answer_of(socket))
    assert outputs == ["1 message(s): one", "2 message(s): two", "3 message(s): still open"]
    users = [m.text for m in (await (await sessions.session("s-ws")).snapshot()).messages if m.type == "user"]
    assert users == ["one", "two", "still open"]


async def answer_of(socket: Any) -> str:
    """The text of the run's answer, read to its terminal event."""
    text = ""
    while (event := json.loads(await socket.recv()))["type"] != "run_completed":
        assert "error" not in event, event
        if event["type"] == "message_output":
            text = event["item"]["content"][0]["text"]
    return text


async def test_the_websocket_takes_the_session_from_the_query_for_browsers() -> None:
    sessions = InMemorySessionProvider()
    server = AgentCoreServer(counting_agent(), sessions=sessions)
    async with serving(server) as base:
        url = base.replace("http://", "ws://") + "/ws?X-Amzn-Bedrock-AgentCore-Runtime-Session-Id=from-query"
        async with connect(url) as socket:
            await socket.send(json.dumps({"prompt": "hi"}))
            while json.loads(await socket.recv())["type"] != "run_completed":
                pass
    assert [info.session_id for info in await sessions.list_sessions()] == ["from-query"]


async def test_a_malformed_session_header_on_the_websocket_is_refused_with_why() -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base:
        url = (
            base.replace("http://", "ws://") + "/ws?X-Amzn-Bedrock-AgentCore-Runtime-Session-Id=" + "x" * 300
        )
        async with connect(url) as socket:
            refusal = json.loads(await socket.recv())
            await socket.wait_closed()
    assert refusal["error"] == "Invalid session id" and "at most 256" in refusal["details"]
    assert socket.close_code == 1008


@pytest.mark.parametrize(
    ("content", "headers", "error", "details"),
    [
        (b"{not json", {}, "Invalid JSON", "Expecting property name"),
        (b"", {}, "Invalid JSON", "Expecting value"),
        (b'{"prompt": "\xff"}', {}, "Invalid encoding", "utf-8"),
        (b'{"question": "hi"}', {}, "Invalid payload", 'send {"prompt": "<text>"}'),
        (b'["hi"]', {}, "Invalid payload", "a JSON array"),
        (b'{"prompt": "hi"}', session("has space"), "Invalid session id", "visible ASCII"),
        (b'{"prompt": "hi"}', session("x" * 257), "Invalid session id", "at most 256"),
        (b'{"decisions": {}}', session("s-bad"), "Invalid payload", "decide at least one"),
    ],
)
async def test_a_bad_request_is_a_400_that_says_what_to_fix_and_writes_nothing(
    content: bytes, headers: dict[str, str], error: str, details: str
) -> None:
    sessions = InMemorySessionProvider()
    server = AgentCoreServer(counting_agent(), sessions=sessions)
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        kept = await client.post("/invocations", json={"prompt": "kept"}, headers=session("s-bad"))
        assert kept.status_code == 200
        refused = await client.post("/invocations", content=content, headers=headers)
        assert (await ping(client))["status"] == "Healthy"  # a refusal leaves nothing open
    assert refused.status_code == 400
    assert refused.json()["error"] == error and details in refused.json()["details"]
    stored = await (await sessions.session("s-bad")).snapshot()
    assert [m.text for m in stored.messages if m.type == "user"] == ["kept"]  # nothing lost, nothing added


async def test_nothing_to_decide_is_a_409_that_says_so() -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        refused = await client.post(
            "/invocations",
            json={"decisions": {"r1": {"decision": "approve"}}},
            headers=session("never-paused"),
        )
    assert refused.status_code == 409
    assert refused.json()["error"] == "Cannot resume" and refused.json()["details"]


async def test_without_a_session_header_each_invocation_is_on_a_fresh_session_never_stored() -> None:
    sessions = InMemorySessionProvider()
    server = AgentCoreServer(counting_agent(), sessions=sessions)
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        first = (await client.post("/invocations", json={"prompt": "a"})).json()
        second = (await client.post("/invocations", json={"prompt": "b"})).json()
    assert (first["output"], second["output"]) == ("1 message(s): a", "1 message(s): b")
    assert first["session_id"] is None and await sessions.list_sessions() == []


async def test_routing_answers_like_any_starlette_app() -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        assert (await client.get("/invocations")).status_code == 405
        assert (await client.post("/ping")).status_code == 405
        assert (await client.get("/nowhere")).status_code == 404
