"""AgentCore's MCP protocol: stateless at /mcp, the platform's Mcp-Session-Id, durable sessions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from agentcore_helpers import ThreadGate, closing_outcome, counting_agent, eventually, serving, session
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_server_helpers import inspector, listening

from helikon import UserError
from helikon.agentcore import AgentCoreServer
from helikon.server import SqliteSessionProvider, session_provider

ROOT = Path(__file__).resolve().parents[2]
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}


def tool_call(text: str, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "counter", "arguments": {"input": text}},
    }


def answer_text(response: httpx2.Response) -> str:
    """The text a `tools/call` answered, from its SSE (or JSON) body."""
    assert response.status_code == 200, response.text
    body = response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        body = next(line for line in body.splitlines() if line.startswith("data: ")).removeprefix("data: ")
    return json.loads(body)["result"]["content"][0]["text"]


async def test_the_official_client_lists_and_calls_the_agent_and_each_call_starts_afresh() -> None:
    server = AgentCoreServer(counting_agent())
    async with (
        serving(server, mcp=True) as base,
        streamable_http_client(base + "/mcp") as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        (tool,) = (await client.list_tools()).tools
        first = await client.call_tool(tool.name, {"input": "one"})
        second = await client.call_tool(tool.name, {"input": "two"})
    assert tool.name == "counter"
    assert [first.content[0].text, second.content[0].text] == ["1 message(s): one", "1 message(s): two"]  # type: ignore[union-attr]


async def test_a_call_with_the_platforms_session_id_and_no_initialize_is_served() -> None:
    server = AgentCoreServer(counting_agent())
    headers = {**MCP_HEADERS, "Mcp-Session-Id": "platform-assigned-7f3a", **session("agentcore-s1")}
    async with serving(server, mcp=True) as base, httpx2.AsyncClient(base_url=base, timeout=60) as client:
        answered = await client.post("/mcp", headers=headers, json=tool_call("hello"))
    assert answer_text(answered) == "1 message(s): hello"


async def test_durable_mode_keys_the_conversation_on_the_agentcore_session(tmp_path: Path) -> None:
    server = AgentCoreServer(counting_agent(), sessions=session_provider(f"sqlite:///{tmp_path / 's.db'}"))
    async with (
        serving(server, mcp=True, durable=True) as base,
        httpx2.AsyncClient(base_url=base, timeout=60) as c,
    ):
        texts = []
        for who, text in (("ada", "hi"), ("bob", "yo"), ("ada", "again")):
            headers = {**MCP_HEADERS, **session(who)}
            texts.append(answer_text(await c.post("/mcp", headers=headers, json=tool_call(text))))
        unkeyed = answer_text(await c.post("/mcp", headers=MCP_HEADERS, json=tool_call("fresh")))
    assert texts == ["1 message(s): hi", "1 message(s): yo", "2 message(s): again"]
    assert unkeyed == "1 message(s): fresh"


def test_durable_mode_refuses_sessions_kept_in_memory() -> None:
    with pytest.raises(UserError, match=r"durable=True.*in memory"):
        AgentCoreServer(counting_agent()).mcp_app(durable=True)


@contextlib.contextmanager
def entry_point(*args: str) -> Iterator[str]:
    """`python -m helikon.agentcore examples.agentcore.agent:assistant ...` on a free loopback port."""
    command = [sys.executable, "-m", "helikon.agentcore", "examples.agentcore.agent:assistant", *args]
    with listening(lambda port: [*command, "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT) as (
        base,
        _,
    ):
        yield base


def test_the_inspector_lists_and_calls_the_agent_served_by_the_entry_point() -> None:
    with entry_point("--protocol", "mcp") as base:
        url = f"{base}/mcp"
        listed = inspector(url, "--transport", "http", "--method", "tools/list")
        called = inspector(
            url, "--transport", "http", "--method", "tools/call",
            "--tool-name", "assistant", "--tool-arg", "input=add 2 and 40",
        )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == ["assistant"]
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["content"] == [{"type": "text", "text": "The answer is 42."}]


async def test_a_caller_that_hangs_up_mid_call_cancels_the_run_and_its_turn_is_written(
    tmp_path: Path,
) -> None:
    gate = ThreadGate()
    url = f"sqlite:///{tmp_path / 's.db'}"
    server = AgentCoreServer(gate.agent(), sessions=session_provider(url))
    call = {**tool_call("go"), "params": {"name": "slow", "arguments": {"input": "go"}}}
    async with serving(server, mcp=True, durable=True) as base:
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
            hanging = asyncio.create_task(
                client.post("/mcp", headers={**MCP_HEADERS, **session("mcp-left")}, json=call)
            )
            await gate.wait_entered()
            hanging.cancel()  # the caller hangs up: its connection closes
            await asyncio.gather(hanging, return_exceptions=True)
        reader = SqliteSessionProvider(tmp_path / "s.db")
        kept = await reader.session("mcp-left")

        async def written() -> bool:
            return await closing_outcome(kept) == "cancelled"

        await eventually(written, "the cancelled turn written after the MCP caller hung up")
        assert [m.type for m in (await kept.snapshot()).messages][:2] == ["user", "tool_call"]
        await reader.aclose()
    gate.open.set()


async def test_the_mcp_app_closes_its_session_store_when_it_stops(tmp_path: Path) -> None:
    provider = SqliteSessionProvider(tmp_path / "s.db")
    server = AgentCoreServer(counting_agent(), sessions=provider)
    async with (
        serving(server, mcp=True, durable=True) as base,
        httpx2.AsyncClient(base_url=base, timeout=60) as c,
    ):
        answered = await c.post("/mcp", headers={**MCP_HEADERS, **session("kept")}, json=tool_call("hi"))
        assert answer_text(answered) == "1 message(s): hi"
        assert provider._db is not None  # opened by the call
    assert provider._db is None  # closed with the app
