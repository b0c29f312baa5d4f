"""helikon.agentcore as the tests run it: served on 127.0.0.1, agents that wait for the test, session reads.

The agent runs on the server's worker loop, in another thread than the test: the gate here
is a thread-safe one (`threading.Event`), waited for without blocking the test's loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp_server_helpers import served_in_process

from helikon import LlmAgent, tool
from helikon.agentcore import AgentCoreServer
from helikon.core.session import Session
from helikon.testing import FunctionModel, text_turn, tool_call_turn

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
SSE = {"accept": "text/event-stream"}


def session(session_id: str) -> dict[str, str]:
    """The AgentCore session header naming `session_id`."""
    return {SESSION_HEADER: session_id}


class ThreadGate:
    """A tool that waits until the test opens the gate, on whatever loop or thread the agent runs."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()

    def agent(self, *, hog_the_loop: bool = False, answer: str = "done") -> LlmAgent[None, str]:
        """Every run calls `wait_for_gate`, then answers `answer`.

        `hog_the_loop`: the tool blocks its event loop outright (a badly written tool), so
        nothing else on that loop runs until the gate opens.
        """
        gate = self

        @tool
        async def wait_for_gate() -> str:
            """Wait for the gate."""
            gate.entered.set()
            if hog_the_loop:
                gate.open.wait(120)
            else:
                while not gate.open.is_set():  # noqa: ASYNC110 - the gate is opened from another thread
                    await asyncio.sleep(0.01)
            return "opened"

        def reply(request: Any) -> Any:
            if request.messages[-1].type == "tool_result":
                return text_turn(answer)
            return tool_call_turn("wait_for_gate", {})

        return LlmAgent(name="slow", model=FunctionModel(reply), tools=[wait_for_gate])

    async def wait_entered(self) -> None:
        """Until the tool runs (a failure after a minute: the run never got there)."""
        assert await asyncio.to_thread(self.entered.wait, 60), "the run never reached the tool"


def counting_agent() -> LlmAgent[None, str]:
    """Answers `<n> message(s): <last text>` with n the user messages it sees: a session's history shows."""

    def reply(request: Any) -> Any:
        users = [m for m in request.messages if m.type == "user"]
        return text_turn(f"{len(users)} message(s): {users[-1].text}")

    return LlmAgent(name="counter", model=FunctionModel(reply))


def echo_agent() -> LlmAgent[None, str]:
    """Answers `You said: <text>`, as the contract oracle's echo entrypoint does."""

    def reply(request: Any) -> Any:
        return text_turn(f"You said: {request.messages[-1].text}")

    return LlmAgent(name="echo", model=FunctionModel(reply))


@asynccontextmanager
async def serving(server: AgentCoreServer, *, mcp: bool = False, durable: bool = False) -> AsyncIterator[str]:
    """The server's HTTP protocol (or MCP, with `mcp`) on a free port of 127.0.0.1; its base URL."""
    app = server.mcp_app(durable=durable) if mcp else server.app()
    async with served_in_process(app) as base:
        yield base


def data_frames(text: str) -> list[Any]:
    """The JSON of each `data:` frame of an SSE body (comments skipped)."""
    assert "\r" not in text, "frames are separated by blank lines of \\n, as AgentCore's own SDK writes them"
    frames = [block for block in text.split("\n\n") if block.strip()]
    found: list[Any] = []
    for frame in frames:
        lines = [line for line in frame.split("\n") if not line.startswith(":")]
        if not lines:
            continue
        assert all(line.startswith("data: ") for line in lines), f"not a data-only frame: {frame!r}"
        found.append(json.loads("\n".join(line.removeprefix("data: ") for line in lines)))
    return found


async def eventually(check: Callable[[], Awaitable[bool]], what: str, deadline: float = 60.0) -> None:
    """Until `check()` holds (polled); a failure naming `what` if it never does within `deadline` s."""
    end = time.monotonic() + deadline
    while not await check():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.02)


async def closing_outcome(session: Session) -> str | None:
    """How the last turn on `session` was closed (None: no turn closed yet)."""
    closed = [entry.event for entry in await session.events() if entry.event.type == "turn_closed"]
    return closed[-1].outcome if closed else None  # type: ignore[attr-defined]


async def ping(client: httpx2.AsyncClient) -> dict[str, Any]:
    """`GET /ping`, checked to be a 200."""
    response = await client.get("/ping")
    assert response.status_code == 200
    return response.json()
