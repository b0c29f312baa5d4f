"""AgentCore invocations and their sessions: continuity, disconnects, approvals, context, traces."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from agentcore_helpers import (
    SSE,
    ThreadGate,
    closing_outcome,
    counting_agent,
    data_frames,
    echo_agent,
    eventually,
    ping,
    serving,
    session,
)
from server_helpers import clerk, refunds, sse_frames
from websockets.asyncio.client import connect

from helikon import RunContext
from helikon.agentcore import AgentCoreServer, custom_headers
from helikon.core.cancel import CancellationToken
from helikon.core.session import Session
from helikon.server import InMemorySessionProvider, ServerRequest, SqliteSessionProvider, session_provider


async def users_of(provider: Any, session_id: str) -> list[str]:
    """The user messages stored on `session_id`, read through `provider` (on the test's loop)."""
    snapshot = await (await provider.session(session_id)).snapshot()
    return [m.text for m in snapshot.messages if m.type == "user"]


async def converse(base: str, prompts: list[tuple[str, str]]) -> list[str]:
    """Each (session id, prompt) invoked in turn; the answers."""
    async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
        answers = []
        for session_id, prompt in prompts:
            answered = await client.post("/invocations", json={"prompt": prompt}, headers=session(session_id))
            assert answered.status_code == 200, answered.text
            answers.append(answered.json()["output"])
        return answers


CONVERSATION = [("ada", "hi"), ("bob", "hello"), ("ada", "again"), ("ada", "third")]
ANSWERS = ["1 message(s): hi", "1 message(s): hello", "2 message(s): again", "3 message(s): third"]


async def test_a_session_goes_on_across_invocations_and_server_restarts_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    first = AgentCoreServer(counting_agent(), sessions=session_provider(url))
    async with serving(first) as base:
        assert await converse(base, CONVERSATION[:3]) == ANSWERS[:3]
    second = AgentCoreServer(counting_agent(), sessions=session_provider(url))  # a new container
    async with serving(second) as base:
        assert await converse(base, CONVERSATION[3:]) == ANSWERS[3:]
    reader = SqliteSessionProvider(tmp_path / "sessions.db")
    assert await users_of(reader, "ada") == ["hi", "again", "third"]
    assert await users_of(reader, "bob") == ["hello"]
    await reader.aclose()


async def test_a_session_goes_on_across_invocations_and_server_restarts_on_redis(redis_url: str) -> None:
    first = AgentCoreServer(counting_agent(), sessions=session_provider(redis_url))
    async with serving(first) as base:
        assert await converse(base, CONVERSATION[:3]) == ANSWERS[:3]
    second = AgentCoreServer(counting_agent(), sessions=session_provider(redis_url))
    async with serving(second) as base:
        assert await converse(base, CONVERSATION[3:]) == ANSWERS[3:]
    reader = session_provider(redis_url)
    assert await users_of(reader, "ada") == ["hi", "again", "third"]
    await reader.aclose()  # type: ignore[attr-defined]


async def _left_mid_run(transport: str, base: str, gate: ThreadGate) -> None:
    """Start a run on session `left` over `transport`, and go away once the tool runs."""
    if transport == "websocket":
        url = base.replace("http://", "ws://") + "/ws"
        async with connect(url, additional_headers=session("left")) as socket:
            await socket.send(json.dumps({"prompt": "go"}))
            while json.loads(await socket.recv())["type"] != "tool_call_item":
                pass
        return
    async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
        if transport == "sse":
            headers = {**SSE, **session("left")}
            async with client.stream(
                "POST", "/invocations", json={"prompt": "go"}, headers=headers
            ) as streamed:
                async for frame in sse_frames(streamed):
                    if json.loads(frame.data)["type"] == "tool_call_item":
                        break  # the client leaves mid-run
            return
        invocation = asyncio.create_task(
            client.post("/invocations", json={"prompt": "go"}, headers=session("left"))
        )
        await gate.wait_entered()
        invocation.cancel()  # the client gives up: its connection closes
        await asyncio.gather(invocation, return_exceptions=True)


@pytest.mark.parametrize("transport", ["json", "sse", "websocket"])
async def test_a_client_that_leaves_cancels_the_run_and_the_turn_is_still_written(
    transport: str, tmp_path: Path
) -> None:
    gate = ThreadGate()
    provider = SqliteSessionProvider(tmp_path / "sessions.db")
    server = AgentCoreServer(gate.agent(), sessions=provider)
    async with serving(server) as base:
        await _left_mid_run(transport, base, gate)
        await gate.wait_entered()
        reader = SqliteSessionProvider(tmp_path / "sessions.db")
        kept: Session = await reader.session("left")

        async def written() -> bool:
            return await closing_outcome(kept) == "cancelled"

        await eventually(written, f"the cancelled turn written after the {transport} client left")
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:

            async def idle() -> bool:
                return (await ping(client))["status"] == "Healthy"

            await eventually(idle, "Healthy once the cancelled run is written")
        assert await users_of(reader, "left") == ["go"]
        snapshot = await kept.snapshot()
        assert [m.type for m in snapshot.messages][:2] == ["user", "tool_call"]
        await reader.aclose()
    gate.open.set()


async def test_a_run_paused_for_approval_is_decided_by_a_later_invocation() -> None:
    refunds.clear()
    sessions = InMemorySessionProvider()
    server = AgentCoreServer(clerk(), sessions=sessions)
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        paused = await client.post("/invocations", json={"prompt": "refund 7"}, headers=session("desk"))
        assert paused.status_code == 200
        body = paused.json()
        assert body["status"] == "paused" and refunds == []
        (pending,) = body["pending"]
        decision = {"decisions": {pending["request_id"]: {"decision": "approve"}}}
        decided = await client.post("/invocations", json=decision, headers={**SSE, **session("desk")})
        types = [event["type"] for event in data_frames(decided.text)]
    assert refunds == [7]
    assert types[0] == "approval_resolved" and types[-1] == "run_completed"


class HeaderContext:
    """A context provider that keeps what each request told it."""

    def __init__(self) -> None:
        self.seen: list[ServerRequest] = []

    async def build(
        self, request: ServerRequest, session: Session, cancel: CancellationToken
    ) -> RunContext[Any]:
        self.seen.append(request)
        return RunContext.ephemeral(custom_headers(request.headers)).with_session(session).with_cancel(cancel)


async def test_the_context_provider_gets_the_user_the_custom_headers_and_the_callers_trace(
    spans: Any,
) -> None:
    contexts = HeaderContext()
    server = AgentCoreServer(echo_agent(), contexts=contexts)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    headers = {
        **session("traced"),
        "X-Amzn-Bedrock-AgentCore-Runtime-User-Id": "user-42",
        "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Tenant": "acme",
        "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01",
        "baggage": "tenant=acme",
    }
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        answered = await client.post("/invocations", json={"prompt": "hi"}, headers=headers)
    assert answered.status_code == 200
    (request,) = contexts.seen
    assert (request.agent, request.session_id, request.identity) == ("echo", "traced", "user-42")
    assert custom_headers(request.headers) == {"tenant": "acme"}
    assert request.headers["traceparent"].startswith("00-" + trace_id)
    run_span = next(s for s in spans.get_finished_spans() if s.name == "invoke_agent echo")
    assert f"{run_span.context.trace_id:032x}" == trace_id  # the caller's trace goes on
    assert f"{run_span.parent.span_id:016x}" == "00f067aa0ba902b7"


async def test_without_a_traceparent_the_run_starts_a_trace_of_its_own(spans: Any) -> None:
    server = AgentCoreServer(echo_agent())
    async with serving(server) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        assert (await client.post("/invocations", json={"prompt": "hi"})).status_code == 200
    run_span = next(s for s in spans.get_finished_spans() if s.name == "invoke_agent echo")
    assert run_span.parent is None
