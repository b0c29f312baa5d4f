"""`SessionRecorder`: turns a run's `AgentEvent`s into the `SessionEvent`s to persist."""

from __future__ import annotations

from collections.abc import Iterable

from .events import AgentEvent, GuardrailTriggered, HandoffItem, MessageOutput, ToolCallItem, ToolOutputItem
from .items import AssistantMessage, Item, TextPart, ToolCall, ToolResult, UserMessage
from .session import (
    AssistantMessageEvent,
    HandoffOccurred,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
)

INTERRUPTED_TOOL_TEXT = "The tool call was interrupted before it returned a result."


class SessionRecorder:
    """Accumulates the session events of one run.

    Seed it with the run's new input, feed it every `AgentEvent` with `observe`, and
    `drain` it at the end. `drain` answers any tool call left without a result with an
    error `ToolReturned`, so the log always projects to a conversation providers accept.

    Example:
        ```python
        from helikon import SessionRecorder, UserMessage

        recorder = SessionRecorder([UserMessage.from_text("hi")])
        assert [e.type for e in recorder.drain()] == ["user_message"]
        ```
    """

    __slots__ = ("_events", "_open_calls")

    def __init__(self, new_input: Iterable[Item] = ()) -> None:
        self._events: list[SessionEvent] = []
        self._open_calls: dict[str, str] = {}  # call_id -> tool name
        for item in new_input:
            self._record_item(item)

    def _record_item(self, item: Item) -> None:
        if isinstance(item, UserMessage):
            self._events.append(UserMessageEvent(content=item.content))
        elif isinstance(item, AssistantMessage):
            self._events.append(AssistantMessageEvent(content=item.content, agent=item.agent))
        elif isinstance(item, ToolCall):
            self._open_calls[item.call_id] = item.name
            self._events.append(ToolCalled(call_id=item.call_id, name=item.name, args=item.args))
        elif isinstance(item, ToolResult):
            self._open_calls.pop(item.call_id, None)
            self._events.append(
                ToolReturned(
                    call_id=item.call_id, content=item.content, is_error=item.is_error, name=item.name
                )
            )
        # A SystemMessage in the input is per-run instruction, not conversation history.

    def observe(self, event: AgentEvent) -> None:
        """Record what `event` adds to the conversation (deltas and control events add nothing)."""
        if isinstance(event, MessageOutput | ToolCallItem | ToolOutputItem):
            self._record_item(event.item)
        elif isinstance(event, HandoffItem):
            self._events.append(HandoffOccurred(from_agent=event.from_agent, to_agent=event.to_agent))
        elif isinstance(event, GuardrailTriggered):
            self._forget_blocked(event)

    def _forget_blocked(self, event: GuardrailTriggered) -> None:
        """What a guardrail stopped is not conversation: keep it out of the log.

        A refused input would otherwise be re-sent (and re-refused) on every later run; a
        blocked answer would be shown to the model as something it said.
        """
        if event.stage == "input":
            self._events.clear()
            self._open_calls.clear()
            return
        for index in range(len(self._events) - 1, -1, -1):
            if isinstance(self._events[index], AssistantMessageEvent):
                del self._events[index]
                return

    def drain(self) -> list[SessionEvent]:
        """Return the recorded events and reset; interrupted tool calls get an error result."""
        events = self._events
        for call_id, name in self._open_calls.items():
            events.append(
                ToolReturned(
                    call_id=call_id, content=(TextPart(text=INTERRUPTED_TOOL_TEXT),), is_error=True, name=name
                )
            )
        self._events = []
        self._open_calls = {}
        return events
