"""Replays of real MCP sessions: the recorded server answers, helikon's client must ask the same.

Each transcript in `fixtures/mcp/transcripts` is a real client's requests (`*.c2s.jsonl`)
and the real server's answers (`*.s2c.jsonl`). The server side here is scripted from the
s2c file over in-memory streams (through `McpServerHandle.transport`); the client is driven
to do what the recorded client did, and what it sends must match the recording, ids and
`clientInfo` aside.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp.shared.message import SessionMessage
from mcp_peers import FIXTURES

from helikon import ToolError
from helikon.mcp import McpServerHandle

TRANSCRIPTS = FIXTURES / "transcripts"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def normalized(message: dict[str, Any]) -> dict[str, Any]:
    """A client message without what may differ between clients: the id, clientInfo, the envelope."""
    params = dict(message.get("params") or {})
    params.pop("clientInfo", None)
    kept = {k: v for k, v in message.items() if k not in ("id", "jsonrpc", "params")}
    return {**kept, "params": params} if params else kept


class ScriptedServer:
    """Answers each request with the next recorded response (under the request's own id)."""

    def __init__(self, s2c: list[dict[str, Any]]) -> None:
        self.script = list(s2c)
        self.seen: list[dict[str, Any]] = []

    def _next_batch(self, request_id: Any) -> list[dict[str, Any]]:
        """The recorded messages up to this request's response, and the notifications after it."""
        batch: list[dict[str, Any]] = []
        while self.script:
            item = self.script.pop(0)
            if "id" in item:
                batch.append({**item, "id": request_id})
                break
            batch.append(item)
        while self.script and "id" not in self.script[0]:
            batch.append(self.script.pop(0))
        return batch

    @contextlib.asynccontextmanager
    async def transport(self) -> AsyncGenerator[tuple[Any, Any]]:
        to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](16)

        async def serve() -> None:
            async with to_client, from_client:
                async for item in from_client:
                    sent = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                    self.seen.append(sent)
                    if "id" in sent and "method" in sent:
                        for reply in self._next_batch(sent["id"]):
                            message = mcp_types.jsonrpc_message_adapter.validate_python(reply, by_name=False)
                            await to_client.send(SessionMessage(message))

        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            try:
                yield client_reads, client_writes
            finally:
                client_writes.close()
                group.cancel_scope.cancel()


async def drive(handle: McpServerHandle, request: dict[str, Any]) -> None:
    """Make the client send `request` (a recorded one) through its public API."""
    method, params = request["method"], request.get("params") or {}
    if method == "tools/call":
        with contextlib.suppress(ToolError):  # recorded error results are part of the replay
            await handle.call_tool(params["name"], params.get("arguments"))
    elif method == "resources/list":
        await handle.resources()
    elif method == "resources/templates/list":
        await handle.resource_templates()
    elif method == "prompts/list":
        await handle.prompts()
    elif method == "resources/read":
        await handle.read_resource(params["uri"])
    elif method == "prompts/get":
        await handle.get_prompt(params["name"], params.get("arguments"))
    else:
        raise AssertionError(f"the replay does not know how to make the client send {method}")


NAMES = sorted(p.name.removesuffix(".c2s.jsonl") for p in TRANSCRIPTS.glob("*.c2s.jsonl"))


def test_every_transcript_is_replayed() -> None:
    assert NAMES == [
        "inspector-cli-to-python-echo",
        "python-echo-example",
        "server-everything",
        "server-filesystem",
    ]


@pytest.mark.parametrize("name", NAMES)
async def test_the_client_asks_what_the_recorded_client_asked(name: str) -> None:
    c2s = lines(TRANSCRIPTS / f"{name}.c2s.jsonl")
    server = ScriptedServer(lines(TRANSCRIPTS / f"{name}.s2c.jsonl"))
    handshake = [m["method"] for m in c2s[:3]]
    assert handshake == ["initialize", "notifications/initialized", "tools/list"]
    async with McpServerHandle.transport(server.transport) as handle:
        for request in c2s[3:]:
            await drive(handle, request)
    assert [normalized(m) for m in server.seen] == [normalized(m) for m in c2s]
    assert server.seen[0]["params"]["clientInfo"]["name"] == "helikon"
    assert server.script == []  # every recorded answer was asked for


async def test_the_replayed_answers_map_as_the_book_says() -> None:
    server = ScriptedServer(lines(TRANSCRIPTS / "server-everything.s2c.jsonl"))
    async with McpServerHandle.transport(server.transport) as handle:
        assert len(handle.tools()) == 13
        assert (await handle.call_tool("echo", {"message": "hello from python mcp client"})).value == (
            "Echo: hello from python mcp client"
        )
        assert (await handle.call_tool("get-sum", {"a": 2, "b": 40})).value == "The sum of 2 and 40 is 42."
        weather = await handle.call_tool("get-structured-content", {"location": "New York"})
        assert weather.value == {"temperature": 33, "conditions": "Cloudy", "humidity": 82}
        with pytest.raises(ToolError, match="MCP error -32602: Tool does-not-exist not found"):
            await handle.call_tool("does-not-exist", {})
