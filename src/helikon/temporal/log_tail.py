"""`LogTail`: one run's events, read back from its session's log as the workflow's steps write it.

A durable run's stream is its session log: each step writes its events under ids made from
the run, the step and the call, so an activity that Temporal retried never shows its events
twice, and a reader who comes late (or reconnects) reads the same events. The log holds the
run's settled events (the model's calls and answers, the tools' results, a handoff, a
pause); token deltas are not durable, and are not streamed. A model turn's `TurnStarted`
comes with its first settled event.
"""

from __future__ import annotations

from collections.abc import Sequence

from helikon.core.events import (
    AgentEvent,
    AgentUpdated,
    HandoffItem,
    MessageOutput,
    RunStarted,
    ToolCallItem,
    ToolOutputItem,
    TurnStarted,
)
from helikon.core.items import AssistantMessage, ToolCall, ToolResult
from helikon.core.session import (
    ApprovalPending,
    AssistantMessageEvent,
    HandoffOccurred,
    SequenceId,
    SessionEntry,
    ToolCalled,
    ToolReturned,
    TurnClosed,
    TurnOpened,
)


class LogTail:
    """Turns the entries of a session log into the `AgentEvent`s of run `run_id`, as they come."""

    __slots__ = ("_answered", "_turn", "closed", "pending", "run_id", "seq", "started")

    def __init__(self, run_id: str, since: SequenceId | None) -> None:
        self.run_id = run_id
        self.seq = since
        """The last entry read (the next read starts after it)."""
        self.started = False
        self.closed: str | None = None
        """The run's `TurnClosed` outcome once read."""
        self.pending: list[ApprovalPending] = []
        self._turn = 0
        self._answered = False  # the turn's results are in: the next model event opens a turn

    def read(self, entries: Sequence[SessionEntry]) -> list[AgentEvent]:
        """The run's events among `entries` (the log after `seq`, in order)."""
        events: list[AgentEvent] = []
        for entry in entries:
            self.seq = entry.seq
            if self.closed is None:
                self._read(entry.event, events)
        return events

    def _read(self, event: object, events: list[AgentEvent]) -> None:
        if not self.started:
            if isinstance(event, TurnOpened) and event.run_id == self.run_id:
                self.started = True
                if event.resumes is None:  # a resumed run goes on: it does not start again
                    events += [RunStarted(agent=event.agent or ""), TurnStarted(turn=0)]
            return
        if isinstance(event, ToolCalled):
            self._next_turn(events)
            events.append(
                ToolCallItem(item=ToolCall(call_id=event.call_id, name=event.name, args=event.args))
            )
        elif isinstance(event, ToolReturned):
            result = ToolResult(
                call_id=event.call_id, content=event.content, is_error=event.is_error, name=event.name
            )
            events.append(ToolOutputItem(item=result, metadata=event.metadata))
            self._answered = True
        elif isinstance(event, AssistantMessageEvent):
            self._next_turn(events)
            events.append(MessageOutput(item=AssistantMessage(content=event.content, agent=event.agent)))
        elif isinstance(event, HandoffOccurred):
            events += [
                HandoffItem(from_agent=event.from_agent, to_agent=event.to_agent),
                AgentUpdated(agent=event.to_agent),
            ]
        elif isinstance(event, ApprovalPending):
            self.pending.append(event)
        elif isinstance(event, TurnClosed) and event.run_id == self.run_id:
            self.closed = event.outcome

    def _next_turn(self, events: list[AgentEvent]) -> None:
        if self._answered:
            self._answered = False
            self._turn += 1
            events.append(TurnStarted(turn=self._turn))


__all__ = ["LogTail"]
