"""Helpers shared by the workflow agents' tests: scripted children, gated children, event digests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from helikon import (
    AgentEvent,
    AgentUpdated,
    LlmAgent,
    MessageOutput,
    ModelRequest,
    RunConfig,
    RunContext,
    RunStarted,
    RunStream,
)
from helikon.core.input import RunInput
from helikon.core.model import Usage
from helikon.testing import FunctionModel, MockModel, text_turn


def scripted(name: str, *texts: str, tokens: int = 0, description: str = "") -> LlmAgent[Any]:
    """An LlmAgent answering `texts` in turn (one per run), each call costing `tokens` input tokens."""
    usage = Usage(input_tokens=tokens, output_tokens=1) if tokens else None
    model = MockModel.with_scripts([text_turn(t, usage=usage) for t in texts])
    return LlmAgent(name=name, model=model, description=description)


def failing(name: str) -> LlmAgent[Any]:
    """An LlmAgent whose model has no script: its run fails with a model error."""
    return LlmAgent(name=name, model=MockModel.with_scripts([]))


class Gate:
    """Children that block on an asyncio.Event until released, and record what happened to them."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.finished: list[str] = []
        self.closed: list[str] = []
        self._progress = asyncio.Event()

    def mark_started(self, name: str) -> None:
        self.started.append(name)
        self._progress.set()

    async def wait_started(self, count: int) -> None:
        """Wait (at most 5 s, never hang a test) until `count` children are blocked on the gate."""
        async with asyncio.timeout(5):
            while len(self.started) < count:
                self._progress.clear()
                await self._progress.wait()

    def agent(self, name: str, text: str | None = None) -> LlmAgent[Any]:
        """A cooperative child: its model call waits for the gate (the driver interrupts it on cancel)."""

        async def answer(request: ModelRequest) -> Any:
            self.mark_started(name)
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(name)
                raise
            self.finished.append(name)
            return text_turn(text if text is not None else name)

        return LlmAgent(name=name, model=FunctionModel(answer))

    def stubborn(self, name: str, *, chatty: bool = False) -> StubbornAgent:
        """A child that ignores its cancel token (`chatty`: says "working" before it waits)."""
        return StubbornAgent(name, self, chatty)


class StubbornAgent:
    """An `Agent` that waits on the gate and never looks at its cancel token."""

    def __init__(self, name: str, gate: Gate, chatty: bool) -> None:
        self.name = name
        self.description = "waits for the gate"
        self._gate = gate
        self._chatty = chatty

    def run(
        self, input: RunInput, *, context: RunContext[Any] | None = None, config: RunConfig | None = None
    ) -> RunStream:
        return RunStream(self._events())

    async def _events(self) -> AsyncIterator[AgentEvent]:
        from helikon import AssistantMessage, RunCompleted, TokenUsage

        yield RunStarted(agent=self.name)
        self._gate.mark_started(self.name)
        try:
            if self._chatty:
                yield MessageOutput(item=AssistantMessage.from_text("working", agent=self.name))
            try:
                await self._gate.release.wait()
            except asyncio.CancelledError:
                self._gate.cancelled.append(self.name)
                raise
            self._gate.finished.append(self.name)
            yield MessageOutput(item=AssistantMessage.from_text(self.name, agent=self.name))
            yield RunCompleted(usage=TokenUsage())
        finally:
            self._gate.closed.append(self.name)


def digest(events: list[AgentEvent]) -> list[str]:
    """Events as short strings: `run_started:x`, `agent_updated:x`, `message_output:x:text`, or the type."""
    out: list[str] = []
    for event in events:
        if isinstance(event, RunStarted | AgentUpdated):
            out.append(f"{event.type}:{event.agent}")
        elif isinstance(event, MessageOutput):
            out.append(f"message_output:{event.item.agent}:{event.item.text}")
        elif event.type in ("turn_started", "token_delta"):
            continue
        else:
            out.append(event.type)
    return out


async def settle(ticks: int = 20) -> None:
    """Let the event loop run other tasks for a few iterations."""
    for _ in range(ticks):
        await asyncio.sleep(0)


def other_tasks() -> set[asyncio.Task[Any]]:
    """The tasks still alive besides the current one (orphans, after a workflow run ended)."""
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}
