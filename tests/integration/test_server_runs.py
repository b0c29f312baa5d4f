"""The agent server over real HTTP on 127.0.0.1: runs in three modes, reading runs back, streams."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest
from server_helpers import Gate, echo_agent, serving, sse_frames
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from helikon.server import AgentServer


def build(*agents: object) -> AgentServer:
    builder = AgentServer.builder().with_default_context()
    for agent in agents:
        builder = builder.agent(agent)  # type: ignore[arg-type]
    return builder.build()


async def test_one_shot_sse_and_async_runs() -> None:
    server = build(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        agents = (await client.get("/agents")).json()
        assert agents == {"agents": [{"name": "echo", "description": None}]}

        one = await client.post("/agents/echo/runs", json={"input": "hi"})
        assert one.status_code == 200 and one.headers["x-run-id"] == one.json()["run_id"]
        assert (one.json()["status"], one.json()["output"]) == ("succeeded", "answer 0")

        async with client.stream("POST", "/agents/echo/runs?stream=sse", json={"input": "hi"}) as streamed:
            assert streamed.headers["content-type"].startswith("text/event-stream")
            frames = [frame async for frame in sse_frames(streamed)]
        assert frames[0].event == "run_started" and frames[-1].event == "run_completed"
        assert [f.id for f in frames] == [str(i) for i in range(len(frames))]  # each carries its seq
        assert frames[-2].json["item"]["content"][0]["text"] == "answer 1"

        started = await client.post("/agents/echo/runs?mode=async", json={"input": "hi"})
        assert started.status_code == 202 and started.json()["status"] in ("queued", "running")
        run_id = started.headers["x-run-id"]
        waited = await client.get(f"/agents/echo/runs/{run_id}/wait")
        assert (waited.json()["status"], waited.json()["output"]) == ("succeeded", "answer 2")
        again = await client.get(f"/agents/echo/runs/{run_id}")
        assert again.json() == waited.json() and again.headers["x-run-id"] == run_id


async def test_runs_on_one_session_share_its_history_and_the_session_reads_back() -> None:
    server = build(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        headers = {"X-Session-Id": "ticket-7"}
        for text in ("first", "second"):
            assert (
                await client.post("/agents/echo/runs", json={"input": text}, headers=headers)
            ).status_code == 200
        messages = {"messages": [{"type": "user_message", "content": [{"type": "text", "text": "third"}]}]}
        assert (await client.post("/agents/echo/runs", json=messages, headers=headers)).json()[
            "output"
        ] == "answer 2"

        listed = (await client.get("/sessions")).json()["sessions"]
        assert [s["session_id"] for s in listed] == ["ticket-7"]
        session = (await client.get("/sessions/ticket-7")).json()
        assert session["event_count"] == session["last_seq"] + 1 and session["branches"][0]["active"]
        events = (await client.get("/sessions/ticket-7/events", params={"after_seq": -1})).json()["events"]
        users = [e["event"]["content"][0]["text"] for e in events if e["event"]["type"] == "user_message"]
        assert users == ["first", "second", "third"]
        tail = (await client.get("/sessions/ticket-7/events", params={"after_seq": events[-3]["seq"]})).json()
        assert [e["seq"] for e in tail["events"]] == [e["seq"] for e in events[-2:]]
        runs = (await client.get("/sessions/ticket-7/runs")).json()["runs"]
        assert [r["status"] for r in runs] == ["succeeded"] * 3


async def test_a_websocket_replays_then_tails_and_sse_resumes_after_last_event_id() -> None:
    gate = Gate()
    server = build(gate.agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        run = (await client.post("/agents/slow/runs?mode=async", json={"input": "go"})).json()
        await gate.entered.wait()  # mid-run: the tool call is logged, its result is not
        path = f"/agents/slow/runs/{run['run_id']}"
        async with client.stream("GET", f"{path}/stream") as first:
            seen = []
            async for frame in sse_frames(first):
                seen.append(frame)
                if frame.event == "tool_call_item":
                    break  # the client drops mid-run
        async with connect(f"{base.replace('http', 'ws')}{path}/events?after=-1") as socket:
            replayed = [json.loads(await socket.recv()) for _ in seen]
            assert [m["seq"] for m in replayed] == list(range(len(seen)))
            gate.open.set()
            rest = [json.loads(message) async for message in socket]
        assert rest[-1]["type"] == "run_completed" and rest[0]["seq"] == len(seen)
        last = seen[-1].id
        async with client.stream("GET", f"{path}/stream", headers={"Last-Event-ID": last}) as resumed:
            after = [frame async for frame in sse_frames(resumed)]
        assert [int(f.id or -1) for f in after] == [m["seq"] for m in rest]  # no gap, no repeat
        assert [f.event for f in after] == [m["type"] for m in rest]


async def test_bad_requests_get_clear_json_errors_and_nothing_breaks() -> None:
    server = AgentServer.builder().with_default_context().agent(echo_agent()).body_limit(2048).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        cases = [
            (client.post("/agents/nope/runs", json={"input": "x"}), 404, "unknown_agent"),
            (client.post("/agents/echo/runs", content=b"{not json"), 400, "invalid_json"),
            (client.post("/agents/echo/runs", json={"input": ""}), 400, "invalid_request"),
            (client.post("/agents/echo/runs", json={"input": "x", "messages": []}), 400, "invalid_request"),
            (client.post("/agents/echo/runs", json={"inputs": "x"}), 400, "invalid_request"),
            (client.post("/agents/echo/runs", json={"messages": [{"type": "nope"}]}), 400, "invalid_request"),
            (client.post("/agents/echo/runs", json={"input": "x" * 4096}), 413, "body_too_large"),
            (client.post("/agents/echo/runs?stream=ws", json={"input": "x"}), 400, "invalid_request"),
            (
                client.post("/agents/echo/runs", json={"input": "x"}, headers={"X-Session-Id": "../etc"}),
                400,
                "invalid_session_id",
            ),
            (
                client.post("/agents/echo/runs", json={"input": "x", "multitask_strategy": "drop"}),
                400,
                "invalid_request",
            ),
            (client.get("/agents/echo/runs/unknown"), 404, "unknown_run"),
            (
                client.get("/agents/echo/runs/unknown/stream", headers={"Last-Event-ID": "x"}),
                404,
                "unknown_run",
            ),
            (client.get("/nowhere"), 404, "not_found"),
            (client.delete("/agents"), 405, "method_not_allowed"),
            (client.get("/sessions", params={"limit": "many"}), 400, "invalid_request"),
        ]
        for request, status, code in cases:
            response = await request
            assert (response.status_code, response.json()["error"]["code"]) == (status, code), response.text
            assert "Traceback" not in response.text
        assert (
            "messages[0] is not an item"
            in (await client.post("/agents/echo/runs", json={"messages": [{}]})).text
        )
        ok = await client.post("/agents/echo/runs", json={"input": "still fine"})
        assert ok.json()["status"] == "succeeded"  # nothing above broke the server


async def test_misusing_the_websocket_closes_it_with_an_error() -> None:
    gate = Gate()
    server = build(gate.agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        run_id = (await client.post("/agents/slow/runs?mode=async", json={"input": "go"})).json()["run_id"]
        await gate.entered.wait()
        ws = base.replace("http", "ws")
        async with connect(f"{ws}/agents/slow/runs/nope/events") as socket:
            assert json.loads(await socket.recv())["code"] == "unknown_run"
            with pytest.raises(ConnectionClosed):
                await socket.recv()
            assert socket.close_code == 1008
        async with connect(f"{ws}/agents/slow/runs/{run_id}/events?after=1000") as socket:
            await socket.send("hello?")
            assert json.loads(await socket.recv())["code"] == "websocket_misuse"
            with pytest.raises(ConnectionClosed):
                await socket.recv()
            assert socket.close_code == 1008
        gate.open.set()
        done = await client.get(f"/agents/slow/runs/{run_id}/wait")
        assert done.json()["status"] == "succeeded"  # the run never noticed


async def test_the_app_mounts_under_a_prefix_beside_other_routes() -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    server = build(echo_agent())

    async def healthz(request: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    outer = Starlette(routes=[Route("/healthz", healthz), Mount("/api/v1", app=server.app())])
    runner = uvicorn.Server(uvicorn.Config(outer, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(runner.serve())
    while not runner.started:  # uvicorn says when it listens by a flag only
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    base = f"http://127.0.0.1:{runner.servers[0].sockets[0].getsockname()[1]}"
    try:
        async with httpx2.AsyncClient(base_url=base) as client:
            assert (await client.get("/healthz")).text == "ok"
            run = await client.post("/api/v1/agents/echo/runs", json={"input": "hi"})
            assert run.json()["status"] == "succeeded"
            waited = await client.get(f"/api/v1/agents/echo/runs/{run.json()['run_id']}/wait")
            assert waited.json()["output"] == "answer 0"
    finally:
        runner.should_exit = True
        await task
        await server.aclose()


async def test_a_session_is_rewound_and_forked_over_http() -> None:
    server = build(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        headers = {"X-Session-Id": "tree"}
        for text in ("one", "two"):
            await client.post("/agents/echo/runs", json={"input": text}, headers=headers)
        events = (await client.get("/sessions/tree/events")).json()["events"]
        assert all(e["active"] for e in events if e["parent"] is not None)
        assert [e["parent"] for e in events[:3]] == [-1, 0, 1]
        second = next(e["seq"] for e in events if e["event"].get("content", [{}])[0].get("text") == "two")
        rewound = await client.post("/sessions/tree/rewind", json={"to_seq": second - 1})
        assert rewound.status_code == 200 and len(rewound.json()["branches"]) == 2
        await client.post("/agents/echo/runs", json={"input": "three"}, headers=headers)
        events = (await client.get("/sessions/tree/events")).json()["events"]
        active = [
            e["event"]["content"][0]["text"]
            for e in events
            if e["active"] and e["event"]["type"] == "user_message"
        ]
        assert active == ["one", "three"]  # "two" stays in the log, off the active branch
        forked = await client.post("/sessions/tree/fork", json={"at_seq": second - 1, "session_id": "tree-b"})
        assert forked.status_code == 201 and forked.json() == {"session_id": "tree-b"}
        copy = (await client.get("/sessions/tree-b/events")).json()["events"]
        assert [e["event"]["type"] for e in copy][-1] == "forked"
        bad = await client.post("/sessions/tree/rewind", json={"to_seq": 10_000})
        assert bad.status_code == 409 and bad.json()["error"]["code"] == "invalid_point"
        junk = await client.post("/sessions/tree/fork", json={"at_seq": "x"})
        assert junk.status_code == 400
