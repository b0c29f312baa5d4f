"""`RunRecording`: what an `AsyncioRunner` is told of its run besides the events it streams."""

from __future__ import annotations

from helikon.core.events import RequestSent
from helikon.core.session import ToolsStarted
from helikon.core.session.recorder import SessionRecorder

from ._writer import RunWriter


class RunRecording:
    """The runner's `RunObserver`: request records go to the recorder, tool starts to the session.

    A durable run stores the calls of a batch, then a `ToolsStarted` marker, before the
    calls run: a crash in the middle of them is then repaired as interrupted tools.
    """

    __slots__ = ("durable", "recorder", "writer")

    def __init__(self, recorder: SessionRecorder, writer: RunWriter, durable: bool) -> None:
        self.recorder = recorder
        self.writer = writer
        self.durable = durable

    def request_sent(self, sent: RequestSent) -> None:
        self.recorder.observe(sent)

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        if self.durable:  # the calls, then (once they are stored) the marker
            await self.writer.write(self.recorder.take())
            await self.writer.write([ToolsStarted(call_ids=call_ids)])
