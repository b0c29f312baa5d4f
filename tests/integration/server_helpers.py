"""The agent server on 127.0.0.1 for the tests: uvicorn in the test's loop, an SSE reader, scripted agents."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import uvicorn

from helikon import LlmAgent, tool
from helikon.server import AgentServer
from helikon.testing import FunctionModel, MockModel, text_turn, tool_call_turn


@asynccontextmanager
async def serving(server: AgentServer) -> AsyncIterator[str]:
    """Serve `server` on a free port of 127.0.0.1 until the block ends; its base URL."""
    config = uvicorn.Config(server.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)
    task = asyncio.create_task(runner.serve())
    while not runner.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = runner.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        runner.should_exit = True
        await task


@dataclass
class Frame:
    """One SSE frame."""

    event: str
    data: str
    id: str | None

    @property
    def json(self) -> Any:
        return json.loads(self.data)


async def sse_frames(response: httpx2.Response) -> AsyncIterator[Frame]:
    """The frames of an SSE response, comments (pings) skipped."""
    event, data, ident = "message", [], None
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield Frame(event, "\n".join(data), ident)
            event, data, ident = "message", [], None
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                ident = value


class Gate:
    """A tool that waits until the test opens the gate: a run stays mid-call as long as the test needs."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()
        self.calls = 0

    def agent(self, name: str = "slow", answer: str = "done") -> LlmAgent[None, str]:
        gate = self

        @tool
        async def wait_for_gate() -> str:
            """Wait for the gate."""
            gate.calls += 1
            gate.entered.set()
            await gate.open.wait()
            return "opened"

        def reply(request: Any) -> Any:  # every run: call the tool, then answer once it returned
            if request.messages[-1].type == "tool_result":
                return text_turn(answer)
            return tool_call_turn("wait_for_gate", {})

        return LlmAgent(name=name, model=FunctionModel(reply), tools=[wait_for_gate])


def echo_agent(name: str = "echo", turns: int = 64) -> LlmAgent[None, str]:
    """An agent that answers `answer <n>` to its n-th input (0-based), across runs."""
    return LlmAgent(name=name, model=MockModel.with_scripts([text_turn(f"answer {i}") for i in range(turns)]))


@contextmanager
def serving_in_thread(server: AgentServer) -> Iterator[str]:
    """Serve `server` from a thread of its own (for synchronous clients); its base URL."""
    config = uvicorn.Config(server.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, name="agent-server", daemon=True)
    thread.start()
    while not runner.started:
        if not thread.is_alive():
            raise RuntimeError("the agent server did not start")
        time.sleep(0.01)
    port = runner.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        runner.should_exit = True
        thread.join(timeout=30)


def answering_agent(name: str = "echo") -> LlmAgent[None, str]:
    """An agent that answers every input with its text, for as many runs as a test makes."""

    def reply(request: Any) -> Any:
        last = request.messages[-1]
        return text_turn(f"you said: {getattr(last, 'text', '')}")

    return LlmAgent(name=name, model=FunctionModel(reply))


refunds: list[int] = []
"""The orders `refund` refunded: a test clears it, runs, and checks what really ran."""


@tool(needs_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    refunds.append(order)
    return f"refunded {order}"


def clerk(answer: str = "Refunded.") -> LlmAgent[None, str]:
    """An agent whose every run asks to refund order 7 (a call that waits for approval), then answers."""

    def reply(request: Any) -> Any:
        if request.messages[-1].type == "tool_result":
            return text_turn(answer)
        return tool_call_turn("refund", {"order": 7})

    return LlmAgent(name="clerk", model=FunctionModel(reply), tools=[refund])
