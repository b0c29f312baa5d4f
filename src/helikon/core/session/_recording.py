"""`RunRecording`: what an `AsyncioRunner` is told of its run besides the events it streams."""

from __future__ import annotations

import asyncio

from ..events import RequestSent, ToolOutputItem
from . import ToolsStarted
from ._writer import RunWriter
from .recorder import SessionRecorder


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
