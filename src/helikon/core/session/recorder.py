"""`SessionRecorder`: turns a run's `AgentEvent`s into the `SessionEvent`s to persist."""

from __future__ import annotations

from collections.abc import Iterable

from .._internal.json_value import JsonObject
from ..events import (
    AgentEvent,
    GuardrailTriggered,
    HandoffItem,
    MessageOutput,
    RepairStarted,
    RequestSent,
    RunPaused,
    TokenUsage,
    ToolCallItem,
    ToolOutputItem,
)
from ..items import AssistantMessage, Item, SystemMessage, TextPart, ToolCall, ToolResult, UserMessage
from ..model import ModelFallback
from . import (
    ApprovalPending,
    AssistantMessageEvent,
    CustomEvent,
    HandoffOccurred,
    RequestHeader,
    SessionEvent,
    SubRunPaused,
    ToolCalled,
    ToolReturned,
    TurnOpened,
    UserMessageEvent,
)

INTERRUPTED_TOOL_TEXT = "The tool call was interrupted before it returned a result."

FALLBACK_KIND = "helikon.model_fallback"
"""The `CustomEvent` kind a `ModelFallback` is recorded as."""


class SessionRecorder:
    """Accumulates the session events of one run.

    Seed it with the run's new input, feed it every `AgentEvent` with `observe`, and
    `drain` it at the end. `drain` answers any tool call left without a result with an
    error `ToolReturned`, so the log always projects to a conversation providers accept.

    Give it the `RequestSent` of each model call too (`request_sent`: what a run's
    `RunObserver` is handed): it then logs a `RequestHeader`
    whenever the request differs from the last one
    (`last_header`: the session's latest, so an unchanged agent adds no header), and puts
    each call's usage on the assistant message it produced. A `ToolOutputItem`'s metadata
    (what a UI shows of a tool's result) goes on its `ToolReturned`. A `RunPaused` logs an
    `ApprovalPending` per call it waits on (those calls get no result).

    Example:
        ```python
        from helikon import SessionRecorder, UserMessage

        recorder = SessionRecorder([UserMessage.from_text("hi")])
        assert [e.type for e in recorder.drain()] == ["user_message"]
        ```
    """

    __slots__ = ("_events", "_header", "_open_calls", "_returned", "_usage", "refused")

    def __init__(
        self,
        new_input: Iterable[Item] = (),
        *,
        last_header: RequestHeader | None = None,
        turn: TurnOpened | None = None,
        usage: TokenUsage | None = None,
    ) -> None:
        self._events: list[SessionEvent] = [] if turn is None else [turn]
        self.refused = False
        """Whether an input guardrail refused the run's input (its events were dropped)."""
        self._open_calls: dict[str, str] = {}  # call_id -> tool name
        self._returned: set[str] = set()  # calls recorded by `returned`, their ToolOutputItem still to come
        # The request fields of the header in force, as a `RequestSent` carries them.
        self._header: tuple[object, ...] | None = None if last_header is None else _key_of(last_header)
        # The last call's, for the message it answered (`usage`: a call made by an earlier recorder's run).
        self._usage = usage
        for item in new_input:
            self._record_item(item)

    def _record_item(self, item: Item) -> None:
        if isinstance(item, UserMessage):
            self._events.append(UserMessageEvent(content=item.content))
        elif isinstance(item, AssistantMessage):
            usage, self._usage = self._usage, None
            self._events.append(AssistantMessageEvent(content=item.content, agent=item.agent, usage=usage))
        elif isinstance(item, ToolCall):
            self._open_calls[item.call_id] = item.name
            self._events.append(ToolCalled(call_id=item.call_id, name=item.name, args=item.args))
        elif isinstance(item, ToolResult):
            self._record_result(item, None)
        # A SystemMessage in the input is per-run instruction, not conversation history.

    def _record_result(self, item: ToolResult, metadata: JsonObject | None) -> None:
        self._open_calls.pop(item.call_id, None)
        self._events.append(
            ToolReturned(
                call_id=item.call_id,
                content=item.content,
                is_error=item.is_error,
                name=item.name,
                metadata=metadata,
            )
        )

    def returned(self, output: ToolOutputItem) -> None:
        """Record a tool's result as soon as its call returns, ahead of the batch's `ToolOutputItem`s.

        A durable run stores it at once (`take`); the same result in the stream later adds
        nothing.
        """
        self._returned.add(output.item.call_id)
        self._record_result(output.item, output.metadata)

    def observe(self, event: AgentEvent) -> None:
        """Record what `event` adds to the conversation (deltas and control events add nothing)."""
        if isinstance(event, ToolOutputItem):
            if self._returned and event.item.call_id in self._returned:
                self._returned.discard(event.item.call_id)  # recorded when its call returned
                return
            self._record_result(event.item, event.metadata)  # the tool's metadata is kept for a UI
        elif isinstance(event, MessageOutput | ToolCallItem | RepairStarted):
            if event.item is not None:  # a RepairStarted's: the message an output is sent back with
                self._record_item(event.item)
        elif isinstance(event, HandoffItem):
            self._events.append(HandoffOccurred(from_agent=event.from_agent, to_agent=event.to_agent))
        elif isinstance(event, GuardrailTriggered):
            self._forget_blocked(event)
        elif type(event) is ModelFallback:  # which model answered is worth keeping
            self._events.append(CustomEvent(kind=FALLBACK_KIND, data=_fallback_data(event)))
        elif type(event) is RunPaused:
            # The calls wait for a person: each is recorded as pending, and stays without a
            # result (not an interrupted one) until a resume runs it; a sub-agent that paused
            # is recorded with its conversation, to go on with it.
            for sub in event.sub_runs:
                self._events.append(
                    SubRunPaused(via=sub.via, agent=sub.agent, messages=sub.messages, usage=sub.usage)
                )
            for pending in event.pending:
                self._open_calls.pop(pending.run_call, None)
                self._events.append(ApprovalPending.of(pending))

    def request_sent(self, sent: RequestSent) -> None:
        """Note what a model call was sent: a `RequestHeader` is logged when it differs from the last."""
        self._usage = sent.usage
        # Within a run these are the very objects of the previous call (the comparison stops
        # at identity); across runs equal values compare equal element by element.
        key = (sent.provider, sent.model, sent.system, sent.injected, sent.tools, sent.settings)
        if key != self._header:
            from .request_log import header_of  # pydantic, only when something changed

            self._events.append(header_of(sent))
        self._header = key

    def _forget_blocked(self, event: GuardrailTriggered) -> None:
        """What a guardrail stopped is not conversation: keep it out of the log.

        A refused input would otherwise be re-sent (and re-refused) on every later run; a
        blocked answer would be shown to the model as something it said.
        """
        if event.stage == "input":
            self.refused = True
            self._events.clear()
            self._open_calls.clear()
            self._header = None  # a header recorded in this run went with the rest
            return
        for index in range(len(self._events) - 1, -1, -1):
            if isinstance(self._events[index], AssistantMessageEvent):
                del self._events[index]
                return

    def take(self) -> list[SessionEvent]:
        """Return the events recorded since the last `take` (a durable run's flush); calls stay open."""
        events, self._events = self._events, []
        return events

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
        self._returned = set()
        return events


def _fallback_data(event: ModelFallback) -> JsonObject:
    return {
        "from_model": event.from_model,
        "to_model": event.to_model,
        "error_kind": event.error_kind,
        "error": event.error,
    }


def _key_of(header: RequestHeader) -> tuple[object, ...]:
    """The comparison key of a logged header, in the shape `RequestSent` carries it.

    A runner seeds every run with the same header object until it changes: the key of the
    last one is kept, so its settings are parsed once, not once per run.
    """
    global _last_key
    if _last_key is not None and _last_key[0] is header:
        return _last_key[1]
    from .request_log import settings_from_json

    key = (
        header.provider,
        header.model,
        tuple(SystemMessage(text=text) for text in header.system),
        header.injected,
        header.tools,
        settings_from_json(header.settings),
    )
    _last_key = (header, key)
    return key


_last_key: tuple[RequestHeader, tuple[object, ...]] | None = None


__all__ = ["FALLBACK_KIND", "INTERRUPTED_TOOL_TEXT", "SessionRecorder"]
