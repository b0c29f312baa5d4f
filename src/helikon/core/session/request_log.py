"""Request records: rebuild the exact `ModelRequest` of any past turn from a session's log.

A runner logs a `RequestHeader` before a model call whenever what the call is sent besides
the conversation (provider, model, settings, rendered system prompt, tool schemas) differs
from the last header in the log. A turn's request is then the header in force followed by
the projection of the log up to the turn's answer, made provider-valid the way the driver
makes every request valid before sending it.

A turn, in the log, is the answer of one model call: a run of consecutive assistant
messages and tool calls. A call that answered nothing (it failed, or returned an empty
message) leaves no turn to rebuild.

Example:
    ```python
    from helikon.core.items import TextPart
    from helikon.core.session.request_log import rebuild_request
    from helikon.core.session import AssistantMessageEvent, RequestHeader, UserMessageEvent

    log = [
        UserMessageEvent(content=(TextPart(text="hi"),)),
        RequestHeader(provider="openai", model="gpt-5-mini", system=("Be brief.",)),
        AssistantMessageEvent(content=(TextPart(text="Hello."),)),
    ]
    request = rebuild_request(log, 0)
    assert [m.type for m in request.messages] == ["system", "user"]
    ```
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .._internal.adapter import LazyAdapter
from .._internal.json_value import JsonValue
from ..conversation_check import valid_request
from ..events import RequestSent
from ..exceptions import UserError
from ..items import Item, SystemMessage
from ..model import ModelRequest, ModelSettings
from . import (
    AssistantMessageEvent,
    Projection,
    RequestHeader,
    SessionEntry,
    SessionEvent,
    Step,
    ToolCalled,
    event_step,
    project,
)

_SETTINGS_ADAPTER: LazyAdapter[ModelSettings] = LazyAdapter(lambda: ModelSettings)


def settings_to_json(settings: ModelSettings) -> dict[str, JsonValue]:
    """The fields of `settings` that are set, as JSON (what a `RequestHeader` stores)."""
    return _SETTINGS_ADAPTER.adapter.dump_python(settings, mode="json", exclude_none=True)


def settings_from_json(data: dict[str, JsonValue]) -> ModelSettings:
    """The `ModelSettings` a `RequestHeader` stores (`settings_to_json` reversed)."""
    return _SETTINGS_ADAPTER.validate_python(data) if data else ModelSettings()


def header_of(sent: RequestSent) -> RequestHeader:
    """The `RequestHeader` that records `sent`.

    Example:
        ```python
        from helikon.core.events import RequestSent
        from helikon.core.model import ModelSettings
        from helikon.core.session.request_log import header_of

        header = header_of(RequestSent(provider="p", model="m", settings=ModelSettings(temperature=0.0)))
        assert header.settings == {"temperature": 0.0}
        ```
    """
    return RequestHeader(
        provider=sent.provider,
        model=sent.model,
        settings=settings_to_json(sent.settings),
        system=tuple(m.text for m in sent.system),
        tools=sent.tools,
        injected=sent.injected,
    )


def request_of(header: RequestHeader, conversation: Sequence[Item]) -> ModelRequest:
    """The request `header` and `conversation` make, exactly as the driver builds and sends it."""
    messages: list[Item] = [SystemMessage(text=text) for text in header.system]
    messages.extend(conversation)
    if header.injected:
        # Hook-injected messages go after every leading system message, as the driver puts them.
        lead = 0
        while lead < len(messages) and isinstance(messages[lead], SystemMessage):
            lead += 1
        messages[lead:lead] = [SystemMessage(text=text) for text in header.injected]
    request = ModelRequest(
        messages=messages, tools=header.tools, model_settings=settings_from_json(header.settings)
    )
    return valid_request(request)


def turn_starts(entries: Sequence[SessionEntry] | Sequence[SessionEvent]) -> list[int]:
    """The index in `entries` of each turn's first event (see the module docstring)."""
    starts: list[int] = []
    answering = False
    for index, event in enumerate(_events(entries)):
        if isinstance(event, AssistantMessageEvent | ToolCalled):
            if not answering:
                starts.append(index)
            answering = True
        else:
            answering = False
    return starts


def rebuild_requests(entries: Sequence[SessionEntry] | Sequence[SessionEvent]) -> list[ModelRequest]:
    """The request of every turn in the log, in order (one pass over the log).

    Raises `UserError` if a turn has no `RequestHeader` before it (a log written before
    request records existed, or by a writer that does not record them).
    """
    requests: list[ModelRequest] = []
    projection = Projection()
    steps: list[Step] = []  # kept for a rewind that reaches behind a marker (a refold)
    header: RequestHeader | None = None
    answering = False
    for index, event in enumerate(_events(entries)):
        if isinstance(event, AssistantMessageEvent | ToolCalled):
            if not answering:
                if header is None:
                    raise UserError(f"the turn at index {index} has no request header before it")
                requests.append(request_of(header, projection.snapshot().messages))
            answering = True
        else:
            answering = False
            if isinstance(event, RequestHeader):
                header = event
        step = event_step(event)
        steps.append(step)
        projection.add(step)
        if projection.stale:
            projection.refold(steps)
    return requests


def rebuild_request(entries: Sequence[SessionEntry] | Sequence[SessionEvent], turn: int) -> ModelRequest:
    """The exact `ModelRequest` of turn `turn` (zero-based over the whole log; negative: from the end).

    `entries` is a session's log as `events()` returns it (or its bare events). Raises
    `IndexError` for a turn the log does not hold, `UserError` if no header precedes it.
    """
    events = list(_events(entries))
    starts = turn_starts(events)
    start = starts[turn]
    header = next((e for e in reversed(events[:start]) if isinstance(e, RequestHeader)), None)
    if header is None:
        raise UserError(f"turn {turn} has no request header before it")
    return request_of(header, project(events[:start]).messages)


def _events(entries: Sequence[Any]) -> Iterator[SessionEvent]:
    for entry in entries:
        yield entry.event if isinstance(entry, SessionEntry) else entry


__all__ = [
    "header_of",
    "rebuild_request",
    "rebuild_requests",
    "request_of",
    "settings_from_json",
    "settings_to_json",
    "turn_starts",
]
