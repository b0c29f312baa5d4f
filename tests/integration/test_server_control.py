"""The server's control: cancel, disconnects, busy sessions, approvals, auth, retention."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from server_helpers import Gate, clerk, echo_agent, refunds, serving, sse_frames

from helikon import UserError
from helikon.server import AgentServer, BearerTokenAuth, StreamLimits

SESSION = {"X-Session-Id": "s1"}


def build(*agents: Any, **options: Any) -> AgentServer:
    builder = AgentServer.builder().with_default_context()
    for agent in agents:
        builder = builder.agent(agent)
    for name, value in options.items():
        builder = (
            getattr(builder, name)(*value) if isinstance(value, tuple) else getattr(builder, name)(value)
        )
    return builder.build()


async def user_texts(client: httpx2.AsyncClient, session_id: str = "s1") -> list[str]:
    """Every user message in the session's log, on any branch."""
    events = (await client.get(f"/sessions/{session_id}/events")).json()["events"]
    return [e["event"]["content"][0]["text"] for e in events if e["event"]["type"] == "user_message"]


async def test_cancel_interrupt_keeps_the_partial_turn_and_rollback_rewinds_it() -> None:
    gate = Gate()
    server = build(gate.agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        first = (
            await client.post("/agents/slow/runs?mode=async", json={"input": "one"}, headers=SESSION)
        ).json()
        await gate.entered.wait()
        cancelled = await client.post(
            f"/agents/slow/runs/{first['run_id']}/cancel", params={"action": "interrupt"}
        )
        assert (cancelled.json()["status"], cancelled.json()["cancel_action"]) == ("cancelled", "interrupt")
        again = await client.post(
            f"/agents/slow/runs/{first['run_id']}/cancel", params={"action": "rollback"}
        )
        assert (
            again.json()["status"] == "cancelled" and again.json()["cancel_action"] == "interrupt"
        )  # idempotent
        kept = await server.sessions.session("s1")
        messages = (await kept.snapshot()).messages  # the partial turn stays: its input and its call
        assert [m.text for m in messages if m.type == "user"] == ["one"] and messages[1].type == "tool_call"

        gate.entered.clear()
        second = (
            await client.post("/agents/slow/runs?mode=async", json={"input": "two"}, headers=SESSION)
        ).json()
        await gate.entered.wait()
        rolled = await client.post(
            f"/agents/slow/runs/{second['run_id']}/cancel", params={"action": "rollback"}
        )
        assert (rolled.json()["status"], rolled.json()["cancel_action"]) == ("cancelled", "rollback")
        texts = [m.text for m in (await kept.snapshot()).messages if m.type == "user"]
        assert texts == ["one"]  # "two" left the active branch
        everything = await user_texts(client)
        assert everything == ["one", "two"]  # nothing was deleted
        branches = (await client.get("/sessions/s1")).json()["branches"]
        assert len(branches) == 2 and sum(b["active"] for b in branches) == 1


async def test_a_client_that_leaves_cancels_its_run_unless_it_asked_to_continue() -> None:
    gate = Gate()
    server = build(gate.agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        async with client.stream("POST", "/agents/slow/runs?stream=sse", json={"input": "a"}) as streamed:
            run_id = streamed.headers["x-run-id"]
            async for frame in sse_frames(streamed):
                if frame.event == "tool_call_item":
                    break  # the client leaves mid-run
        left = await client.get(f"/agents/slow/runs/{run_id}/wait")
        assert left.json()["status"] == "cancelled"

        gate.entered.clear()
        body = {"input": "b", "on_disconnect": "continue"}
        async with client.stream("POST", "/agents/slow/runs?stream=sse", json=body) as streamed:
            run_id = streamed.headers["x-run-id"]
            async for frame in sse_frames(streamed):
                if frame.event == "tool_call_item":
                    break
        await gate.entered.wait()
        assert (await client.get(f"/agents/slow/runs/{run_id}")).json()["status"] == "running"
        gate.open.set()
        assert (await client.get(f"/agents/slow/runs/{run_id}/wait")).json()["status"] == "succeeded"


async def test_an_async_run_outlives_its_connection() -> None:
    gate = Gate()
    server = build(gate.agent())
    async with serving(server) as base:
        async with httpx2.AsyncClient(base_url=base) as client:
            run_id = (await client.post("/agents/slow/runs?mode=async", json={"input": "a"})).json()["run_id"]
        await gate.entered.wait()
        gate.open.set()
        async with httpx2.AsyncClient(base_url=base) as client:
            done = await client.get(f"/agents/slow/runs/{run_id}/wait")
            assert (done.json()["status"], done.json()["output"]) == ("succeeded", "done")


async def test_every_multitask_strategy() -> None:
    gate = Gate()
    server = build(gate.agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        runs = "/agents/slow/runs?mode=async"
        first = (await client.post(runs, json={"input": "1"}, headers=SESSION)).json()
        await gate.entered.wait()
        queued = (
            await client.post(runs, json={"input": "2"}, headers=SESSION)
        ).json()  # enqueue: the default
        assert queued["status"] == "queued"
        rejected = await client.post(
            runs, json={"input": "3", "multitask_strategy": "reject"}, headers=SESSION
        )
        assert rejected.status_code == 409 and rejected.json()["error"]["run_id"] == queued["run_id"]
        gate.open.set()
        for run in (first, queued):
            assert (await client.get(f"/agents/slow/runs/{run['run_id']}/wait")).json()[
                "status"
            ] == "succeeded"

        gate.open.clear()
        gate.entered.clear()
        busy = (await client.post(runs, json={"input": "4"}, headers=SESSION)).json()
        await gate.entered.wait()
        gate.entered.clear()
        body = {"input": "5", "multitask_strategy": "interrupt"}
        interrupting = (await client.post(runs, json=body, headers=SESSION)).json()
        assert (await client.get(f"/agents/slow/runs/{busy['run_id']}")).json()[
            "cancel_action"
        ] == "interrupt"
        await gate.entered.wait()
        gate.entered.clear()
        body = {"input": "6", "multitask_strategy": "rollback"}
        rolling = (await client.post(runs, json=body, headers=SESSION)).json()
        undone = (await client.get(f"/agents/slow/runs/{interrupting['run_id']}")).json()
        assert (undone["status"], undone["cancel_action"]) == ("cancelled", "rollback")
        await gate.entered.wait()
        gate.open.set()
        assert (await client.get(f"/agents/slow/runs/{rolling['run_id']}/wait")).json()[
            "status"
        ] == "succeeded"
        kept = await server.sessions.session("s1")
        texts = [m.text for m in (await kept.snapshot()).messages if m.type == "user"]
        assert texts == ["1", "2", "4", "6"]  # 4 interrupted (kept), 5 rolled back (off the branch)


async def test_a_paused_run_is_approved_over_http_and_completes() -> None:
    refunds.clear()
    tokens = {"token-for-ada-0123456789": "ada"}
    server = build(clerk(), auth=BearerTokenAuth(tokens))
    auth = {"Authorization": "Bearer token-for-ada-0123456789"}
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, headers=auth) as client:
        paused = (await client.post("/agents/clerk/runs", json={"input": "refund 7"}, headers=SESSION)).json()
        assert paused["status"] == "paused" and refunds == []
        [pending] = paused["pending"]
        assert (pending["tool"], pending["args"]) == ("refund", {"order": 7})
        path = f"/agents/clerk/runs/{paused['run_id']}"
        unknown = await client.post(
            f"{path}/approvals", json={"decisions": {"nope": {"decision": "approve"}}}
        )
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_request"
        stale = {pending["request_id"]: {"decision": "approve", "digest": "sha256:" + "0" * 64}}
        mismatch = await client.post(f"{path}/approvals", json={"decisions": stale})
        assert mismatch.status_code == 409 and refunds == []
        decision = {pending["request_id"]: {"decision": "approve", "digest": pending["args_digest"]}}
        accepted = await client.post(f"{path}/approvals", json={"decisions": decision})
        assert accepted.status_code == 202
        done = (await client.get(f"{path}/wait")).json()
        assert (done["status"], done["output"]) == ("succeeded", "Refunded.") and refunds == [7]
        twice = await client.post(f"{path}/approvals", json={"decisions": decision})
        assert twice.status_code == 409 and twice.json()["error"]["code"] == "not_paused"
        events = (await client.get("/sessions/s1/events")).json()["events"]
        [decided] = [e["event"] for e in events if e["event"]["type"] == "approval_decided"]
        assert decided["by"] == "ada"  # the auth layer's identity is the approver


async def test_auth_rejections_and_the_host_allow_list() -> None:
    server = build(echo_agent(), auth=BearerTokenAuth({"a-token-that-is-long-enough": "ada"}))
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        missing = await client.get("/agents")
        assert missing.status_code == 401 and "Authorization" in missing.json()["error"]["message"]
        wrong = await client.get("/agents", headers={"Authorization": "Bearer a-token-that-is-long-enougH"})
        assert wrong.status_code == 401
        good = {"Authorization": "Bearer a-token-that-is-long-enough"}
        assert (await client.get("/agents", headers=good)).status_code == 200
        rebinding = await client.get("/agents", headers={**good, "Host": "attacker.example"})
        assert rebinding.status_code == 400 and rebinding.json()["error"]["code"] == "invalid_host"
        preflight = await client.options("/agents", headers={"Origin": "https://x.example", **good})
        assert "access-control-allow-origin" not in preflight.headers  # CORS is off unless configured


async def test_finished_runs_past_the_count_go_at_once_and_the_sweeper_lets_old_ones_go() -> None:
    gate = Gate()
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(echo_agent())
        .agent(gate.agent())
        .retention(seconds=60, max_runs=2)
        .build()
    )
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        slow = (await client.post("/agents/slow/runs?mode=async", json={"input": "go"})).json()["run_id"]
        await gate.entered.wait()
        ids = [
            (await client.post("/agents/echo/runs", json={"input": str(i)})).json()["run_id"]
            for i in range(3)
        ]
        # No sweep yet: past the count, the oldest finished runs went as the others finished.
        status = [(await client.get(f"/agents/echo/runs/{run_id}")).status_code for run_id in ids]
        assert status == [404, 404, 200]
        assert (await client.get(f"/agents/slow/runs/{slow}")).json()["status"] == "running"  # never trimmed
        gate.open.set()
        assert (await client.get(f"/agents/slow/runs/{slow}/wait")).json()["status"] == "succeeded"
        assert (await client.get(f"/agents/echo/runs/{ids[2]}")).status_code == 200
        assert server.runs.sweep() == 0  # none is older than its retention
        assert server.runs.sweep(now=server.runs.get(slow).updated + 61) == 2  # type: ignore[union-attr]
        assert (await client.get(f"/agents/slow/runs/{slow}")).status_code == 404


class BrokenContext:
    """A context provider that fails, its message carrying what must not leave the server."""

    async def build(self, request: Any, session: Any, cancel: Any) -> Any:
        raise RuntimeError("db password=hunter2 refused")


async def test_a_run_that_cannot_start_is_a_500_that_keeps_its_reason_inside() -> None:
    server = AgentServer.builder().context_provider(BrokenContext()).agent(echo_agent()).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        failed = await client.post("/agents/echo/runs", json={"input": "hi"})
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "run_not_started"
        assert "hunter2" not in failed.text and failed.headers["x-run-id"] == failed.json()["error"]["run_id"]
        async with client.stream("POST", "/agents/echo/runs?stream=sse", json={"input": "hi"}) as streamed:
            frames = [frame async for frame in sse_frames(streamed)]
        assert [f.event for f in frames] == ["run_failed"] and "hunter2" not in frames[0].data


async def test_subscriber_caps_and_the_idle_timeout() -> None:
    gate = Gate()
    limits = StreamLimits(per_run=1, idle_timeout=0.2)
    server = AgentServer.builder().with_default_context().agent(gate.agent()).stream_limits(limits).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        run_id = (await client.post("/agents/slow/runs?mode=async", json={"input": "go"})).json()["run_id"]
        await gate.entered.wait()
        async with client.stream("GET", f"/agents/slow/runs/{run_id}/stream") as first:
            second = await client.get(f"/agents/slow/runs/{run_id}/stream")
            assert second.status_code == 429 and second.json()["error"]["code"] == "too_many_subscribers"
            frames = [frame async for frame in sse_frames(first)]  # the run is stuck: the stream goes idle
        assert frames[-1].event == "stream_idle" and frames[-1].json["last_seq"] == len(frames) - 2
        gate.open.set()
        assert (await client.get(f"/agents/slow/runs/{run_id}/wait")).json()["status"] == "succeeded"


async def test_the_background_sweeper_lets_expired_runs_go() -> None:
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(echo_agent())
        .retention(seconds=0.05, sweep_every=0.05)
        .build()
    )
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        run_id = (await client.post("/agents/echo/runs", json={"input": "hi"})).json()["run_id"]
        async with asyncio.timeout(60):  # wait for the sweeper: the run goes once expired
            while True:
                if (await client.get(f"/agents/echo/runs/{run_id}")).status_code == 404:
                    break
                await asyncio.sleep(0.05)
        assert server.runs.get(run_id) is None and server.runs.all() == []


async def test_agents_from_a_mapping_are_looked_up_at_each_request() -> None:
    with pytest.raises(UserError, match=r"\.agent\(\.\.\.\) or \.agents\(source\), not both"):
        AgentServer.builder().with_default_context().agent(echo_agent()).agents({}).build()
    source = {"echo": echo_agent()}
    server = AgentServer.builder().with_default_context().agents(source).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        assert [a["name"] for a in (await client.get("/agents")).json()["agents"]] == ["echo"]
        source["other"] = echo_agent("other")  # the mapping changed: so does what the server runs
        ran = await client.post("/agents/other/runs", json={"input": "hi"})
        assert ran.json()["output"] == "answer 0"
        del source["echo"]
        assert (await client.post("/agents/echo/runs", json={"input": "hi"})).status_code == 404
