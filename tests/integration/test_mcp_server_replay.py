"""The recorded MCP Inspector session with the official Python echo server, replayed against helikon's.

`inspector-cli-to-python-echo.c2s.jsonl` is what the Inspector CLI sent (initialize,
initialized, tools/list, tools/call echo_tool); it goes byte for byte to the example tool
server over stdio, and each answer must have the shape the Python server's recorded answer
has (`.s2c.jsonl`). Then the recorded call with missing arguments (from
`python-echo-example.c2s.jsonl`): an `isError` result, as there.

Known differences, by design: helikon's server declares only the tools capability (it has
no prompts or resources), and a tool returning `str` has no `outputSchema` and no
`structuredContent` (helikon adds them for non-string values; the SDK's own server wraps
every return value).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp_peers import FIXTURES
from mcp_server_helpers import EXAMPLE_COMMAND

pytestmark = pytest.mark.integration

TRANSCRIPTS = FIXTURES / "transcripts"


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (TRANSCRIPTS / name).read_text().splitlines() if line.strip()]


def shape(value: Any) -> Any:
    """`value` with every scalar replaced by its type's name: what two answers must share."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [shape(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return type(value).__name__


async def _replay(messages: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Send `messages` to the example tool server over stdio; its answers by request id."""
    process = await asyncio.create_subprocess_exec(
        *EXAMPLE_COMMAND, "--tools",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    answers: dict[Any, dict[str, Any]] = {}
    try:
        for message in messages:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()
            if "id" in message:
                answer = json.loads(await asyncio.wait_for(process.stdout.readline(), 30))
                answers[answer["id"]] = answer
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 30)
    return answers


async def test_the_inspector_transcript_gets_the_recorded_shapes() -> None:
    sent = _lines("inspector-cli-to-python-echo.c2s.jsonl")
    recorded = {answer["id"]: answer for answer in _lines("inspector-cli-to-python-echo.s2c.jsonl")}
    ours = await _replay(sent)
    assert set(ours) == set(recorded) == {m["id"] for m in sent if "id" in m}
    assert all("result" in answer and answer["jsonrpc"] == "2.0" for answer in ours.values())

    init, init_recorded = ours[0]["result"], recorded[0]["result"]
    assert set(init) == set(init_recorded)
    assert init["protocolVersion"] == init_recorded["protocolVersion"] == "2025-11-25"
    assert shape(init["serverInfo"]) == shape(init_recorded["serverInfo"])
    assert init["capabilities"]["tools"] == init_recorded["capabilities"]["tools"]

    (echo_recorded,) = recorded[1]["result"]["tools"]
    echo = next(tool for tool in ours[1]["result"]["tools"] if tool["name"] == "echo_tool")
    assert echo["description"] == echo_recorded["description"]
    schema, schema_recorded = echo["inputSchema"], echo_recorded["inputSchema"]
    assert (schema["type"], schema["required"]) == (schema_recorded["type"], schema_recorded["required"])
    assert {k: v["type"] for k, v in schema["properties"].items()} == {
        k: v["type"] for k, v in schema_recorded["properties"].items()
    }

    called, called_recorded = ours[2]["result"], recorded[2]["result"]
    assert called["content"] == called_recorded["content"] == [{"text": "hi", "type": "text"}]
    assert called["isError"] is called_recorded["isError"] is False


async def test_the_recorded_call_with_missing_arguments_is_an_error_result() -> None:
    sent = _lines("inspector-cli-to-python-echo.c2s.jsonl")[:2]
    bad = next(m for m in _lines("python-echo-example.c2s.jsonl") if m.get("id") == 10)
    recorded = next(a for a in _lines("python-echo-example.s2c.jsonl") if a["id"] == 10)
    answer = (await _replay([*sent, bad]))[10]
    assert shape(answer) == shape(recorded)
    assert answer["result"]["isError"] is recorded["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"] == "invalid arguments for 'echo_tool': text: Field required"
