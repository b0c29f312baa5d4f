"""How a run on a session is recorded, besides the writing itself.

`RunRecording` is what the runner is told of the run besides its events; `RecordingSink` is
the sink the run's events pass through on their way to the caller.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..events import (
    AgentError,
    AgentEvent,
    MessageOutput,
    RequestSent,
    RunCompleted,
    RunFailed,
    RunPaused,
    ToolOutputItem,
    TurnStarted,
)
from . import ToolsStarted
from ._writer import RunWriter, TurnOutcome
from .recorder import SessionRecorder

if TYPE_CHECKING:
    from ..run.sink import EventSink

logger = logging.getLogger("helikon.runtime")


class RunRecording:
    """The runner's `RunObserver`: request records go to the recorder, tool starts and results to the session.

    A durable run stores the calls of a batch, then a `ToolsStarted` marker, before the
    calls run, and each call's result as soon as it returns: a crash in the middle of them
    is then repaired as interrupted tools, and only the calls still running are.
    """

    __slots__ = ("_writing", "durable", "recorder", "writer")

    def __init__(self, recorder: SessionRecorder, writer: RunWriter, durable: bool) -> None:
        self.recorder = recorder
        self.writer = writer
        self.durable = durable
        self._writing: asyncio.Lock | None = None  # the calls of a parallel batch return at once

    def request_sent(self, sent: RequestSent) -> None:
        self.recorder.request_sent(sent)

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        if self.durable:  # the calls, then (once they are stored) the marker
            await self.writer.write(self.recorder.take())
            await self.writer.write([ToolsStarted(call_ids=call_ids)])

    async def tool_returned(self, output: ToolOutputItem) -> None:
        if not self.durable:
            return  # stored with the rest of the run, from the stream
        self.recorder.returned(output)
        if self._writing is None:
            self._writing = asyncio.Lock()
        async with self._writing:  # one write at a time: the writer keeps the log's order
            await self.writer.write(self.recorder.take())


class RecordingSink:
    """The sink a run on a session writes to: each event recorded, then passed on to the caller's.

    Before a model call (`TurnStarted`) a durable run stores what has settled. The terminal
    event is held back: the runner passes it on once the run is stored.
    """

    __slots__ = ("agent", "final_text", "outcome", "recorder", "sink", "terminal", "writer")

    def __init__(
        self, sink: EventSink, recorder: SessionRecorder, writer: RunWriter | None, agent: str
    ) -> None:
        self.sink = sink
        self.recorder = recorder
        self.writer = writer  # a durable run's: it writes as the run goes
        self.agent = agent
        self.outcome: TurnOutcome = "cancelled"  # unless a terminal event says otherwise
        self.terminal: RunCompleted | RunFailed | RunPaused | None = None
        self.final_text: str | None = None

    async def put(self, event: AgentEvent) -> None:
        self.recorder.observe(event)
        if type(event) is TurnStarted:
            if self.writer is not None:  # a model call is next: a durable run stores what settled first
                await self.writer.write(self.recorder.take())
        elif type(event) is MessageOutput:
            self.final_text = event.item.text
        elif isinstance(event, RunCompleted | RunFailed | RunPaused):
            self.terminal = event
            self.outcome = _outcome(event)
            return
        await self.sink.put(event)

    def raised(self, exc: Exception) -> None:
        """The agent's run raised: it fails (recorded), unless it had ended already."""
        message = f"the run of agent {self.agent!r} raised {type(exc).__name__}: {exc}"
        if self.terminal is not None:  # after its terminal event: the outcome stands
            logger.warning("%s after its terminal event", message)
            return
        self.terminal = RunFailed(error=AgentError(kind="other", message=message))
        self.recorder.observe(self.terminal)
        self.outcome = "failed"


def _outcome(terminal: RunCompleted | RunFailed | RunPaused) -> TurnOutcome:
    if isinstance(terminal, RunCompleted):
        return "completed"
    if isinstance(terminal, RunPaused):
        return "paused"
    return "cancelled" if terminal.error.kind == "cancelled" else "failed"
