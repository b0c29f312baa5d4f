"""The contract oracle: the same requests to AWS's own AgentCore app and to helikon's, compared.

AWS's `bedrock-agentcore` SDK runs in a virtual environment of its own
(`tests/oracles/agentcore/.venv`, installed by scripts/test-deps.sh), serving an echo
entrypoint shaped like helikon's echo agent (`tests/oracles/agentcore/echo_app.py`). What
the official app decides itself — `/ping`, JSON that does not parse, bad encodings,
routing, the SSE framing, content types — must come out of helikon the same: status codes,
content types, and every body's shape (its keys and the JSON types of their values).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from agentcore_helpers import SSE, data_frames, echo_agent, serving, session
from mcp_server_helpers import listening
from websockets.asyncio.client import connect

from helikon.agentcore import AgentCoreServer

ORACLE = Path(__file__).resolve().parents[1] / "oracles" / "agentcore"
ORACLE_PYTHON = ORACLE / ".venv" / "bin" / "python"


def shape(value: Any) -> Any:
    """The JSON types of `value`, keys kept: two bodies of one shape differ only in their values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


@pytest.fixture(scope="module")
def oracle() -> Any:
    """AWS's app on a free loopback port, from its own virtual environment."""
    assert ORACLE_PYTHON.exists(), "the AgentCore oracle is not installed: run `make test-deps`"
    with listening(lambda port: [str(ORACLE_PYTHON), str(ORACLE / "echo_app.py"), str(port)]) as (base, _):
        yield base


@pytest.fixture
async def helikon() -> AsyncIterator[str]:
    async with serving(AgentCoreServer(echo_agent())) as base:
        yield base


CORPUS: list[tuple[str, str, str, dict[str, str], bytes | None]] = [
    ("ping", "GET", "/ping", {}, None),
    ("json invocation", "POST", "/invocations", session("oracle-session-0001"), b'{"prompt": "hi"}'),
    ("no session header", "POST", "/invocations", {}, b'{"prompt": "hi"}'),
    (
        "sse invocation",
        "POST",
        "/invocations",
        {**SSE, **session("oracle-session-0002")},
        b'{"prompt": "hi"}',
    ),
    ("bad json", "POST", "/invocations", {}, b"{not json"),
    ("empty body", "POST", "/invocations", {}, b""),
    ("bad encoding", "POST", "/invocations", {}, b'{"prompt": "\xff\xfe"}'),
    ("no prompt", "POST", "/invocations", {}, b'{"question": "hi"}'),
    ("get invocations", "GET", "/invocations", {}, None),
    ("post ping", "POST", "/ping", {}, None),
    ("unknown path", "GET", "/nowhere", {}, None),
]


async def _send(
    base: str, method: str, path: str, headers: dict[str, str], body: bytes | None
) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
        return await client.request(method, path, headers=headers, content=body)


def _view(response: httpx2.Response) -> dict[str, Any]:
    """What is compared: the status, the content type, the body's shape (and the SDK's own words)."""
    kind = response.headers.get("content-type", "").split(";")[0]
    if kind == "application/json":
        body = response.json()
        said = {k: body[k] for k in ("error", "details") if isinstance(body, dict) and k in body}
        if said.get("error") == "Invalid payload":
            said.pop("details")  # the wording of a refused payload is each app's own
        return {"status": response.status_code, "type": kind, "shape": shape(body), "said": said}
    if kind == "text/event-stream":
        events = data_frames(response.text)
        return {"status": response.status_code, "type": kind, "shape": shape(events)}
    return {"status": response.status_code, "type": kind, "body": response.text}


@pytest.mark.parametrize(("case", "method", "path", "headers", "body"), CORPUS, ids=[c[0] for c in CORPUS])
async def test_helikon_answers_like_the_official_app(
    oracle: str, helikon: str, case: str, method: str, path: str, headers: dict[str, str], body: bytes | None
) -> None:
    theirs = await _send(oracle, method, path, headers, body)
    ours = await _send(helikon, method, path, headers, body)
    assert _view(ours) == _view(theirs), case


async def test_both_read_the_session_header_the_same_way(oracle: str, helikon: str) -> None:
    headers = session("oracle-session-0003")
    answers = [
        (await _send(base, "POST", "/invocations", headers, b'{"prompt": "hi"}')).json()
        for base in (oracle, helikon)
    ]
    assert [a["session_id"] for a in answers] == ["oracle-session-0003", "oracle-session-0003"]
    assert [a["output"] for a in answers] == ["You said: hi", "You said: hi"]


async def test_the_websocket_streams_the_same_events(oracle: str, helikon: str) -> None:
    seen = []
    for base in (oracle, helikon):
        url = base.replace("http://", "ws://") + "/ws"
        async with connect(url, additional_headers=session("oracle-ws")) as socket:
            await socket.send(json.dumps({"prompt": "hi"}))
            events = []
            while not events or events[-1]["type"] != "run_completed":
                events.append(json.loads(await socket.recv()))
        seen.append(events)
    assert shape(seen[1]) == shape(seen[0])
    assert seen[1][3]["item"]["content"] == seen[0][3]["item"]["content"]
