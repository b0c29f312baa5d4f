"""The stored form of session events: versioned JSON, upgraded on read.

Every backend stores an event as the JSON object `encode_event` returns (the event's
fields with a snake_case `type` tag and `ts` in RFC 3339, UTC) inside an envelope: its
`seq`, a writer-chosen `id`, `ts`, and the format version `v` (`stored_version`). This
version writes `FORMAT_VERSION` (2) and reads every earlier one; the storage is never
rewritten, an old event is upgraded as it is read (`upgrade`, pure):

- Format 1 (before ids): tolerant. An object this version cannot decode (an unknown
  `type`, or a known one a newer writer changed) becomes an `UnknownEvent` that keeps the
  object verbatim and is written back unchanged. Its id derives from session id and seq.
- Format 2: the same payloads, and a writer's id per event. An unknown `type` is kept as
  an `UnknownEvent` only when the payload says `"ignorable": true`; otherwise, like any
  event from a format newer than `FORMAT_VERSION`, reading it raises
  `UnreadableSessionEvent` (naming the seq): an older reader must not silently skip an
  event that changes what the log means.

In every format, a stored payload that is no event of any version (not UTF-8, not JSON,
nested too deeply to parse, a JSON value that is not an object, an object without a string
`type`) is kept as an `UnknownEvent` and never refused: projections skip it and the rest of
the log reads as usual. One that is no JSON object has type `"undecodable"` (see
`decode_event`).

Example:
    ```python
    from helikon.core.session.codec import decode_event, encode_event
    from helikon.core.session import ToolCalled, UnknownEvent

    event = ToolCalled(call_id="c1", name="lookup", args={"q": "x"})
    assert decode_event(encode_event(event)) == event
    future = decode_event('{"type": "branch_switched", "branch": "b2"}')
    assert isinstance(future, UnknownEvent)
    assert encode_event(future) == '{"type":"branch_switched","branch":"b2"}'
    ```
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from .._internal.format_version import FORMAT_VERSION
from .._internal.json_value import JsonValue
from ..exceptions import UnreadableSessionEvent
from ..items import ToolUsePart
from . import (
    SESSION_EVENT_ADAPTER,
    AssistantMessageEvent,
    ConversationSnapshot,
    CustomEvent,
    Forked,
    RequestHeader,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UnknownEvent,
    UserMessageEvent,
    project,
)


def stored_version(event: SessionEvent) -> int:
    """The format version `event` is stored in: `FORMAT_VERSION`, or an `UnknownEvent`'s own.

    An `UnknownEvent` read from a format-1 row is written back as format 1, so it keeps
    format 1's tolerant reading wherever it is copied.
    """
    return event.version if type(event) is UnknownEvent else FORMAT_VERSION


def upgrade(seq: int, version: int, event: SessionEvent, session_id: str | None = None) -> SessionEvent:
    """Read `event`, decoded from a row stored in format `version`, as this version's event.

    Pure: the same row always gives the same event. Raises `UnreadableSessionEvent` for a
    format newer than `FORMAT_VERSION`, and for a format-2 `UnknownEvent` with a `type` its
    writer did not mark ignorable. An `UnknownEvent` comes back carrying `version`.

    Example:
        ```python
        from helikon.core.session.codec import decode_event, upgrade
        from helikon.core.session import UnknownEvent

        old = decode_event('{"type": "branch_switched", "branch": "b2"}')
        assert upgrade(7, 1, old) == UnknownEvent(type="branch_switched", data=old.data, version=1)
        ```
    """
    if version > FORMAT_VERSION:
        kind = event.type
        raise UnreadableSessionEvent(seq=seq, version=version, kind=kind, session_id=session_id)
    if type(event) is UnknownEvent:
        # An object without a string `type` is no writer's event (of any version): nothing an
        # upgrade could read, so it is kept rather than making the whole session unreadable.
        if version >= 2 and not event.ignorable and type(event.data.get("type")) is str:
            raise UnreadableSessionEvent(seq=seq, version=version, kind=event.type, session_id=session_id)
        if event.version != version:
            return UnknownEvent(type=event.type, data=event.data, version=version)
    return event


def upgrade_all(
    session_id: str | None, seqs: Sequence[int], versions: Sequence[int] | int, events: list[SessionEvent]
) -> list[SessionEvent]:
    """`upgrade` each of `events` (in place, and returned); `versions` is one per event, or one for all.

    The common case (known events of a known format) costs one scan for `UnknownEvent`s.
    """
    if isinstance(versions, int):
        if versions > FORMAT_VERSION and events:
            upgrade(seqs[0], versions, events[0], session_id)  # raises
        if UnknownEvent not in set(map(type, events)):
            return events
        for index, event in enumerate(events):
            if type(event) is UnknownEvent:
                events[index] = upgrade(seqs[index], versions, event, session_id)
        return events
    if max(versions, default=1) <= FORMAT_VERSION and UnknownEvent not in set(map(type, events)):
        return events
    for index, (version, event) in enumerate(zip(versions, events, strict=True)):
        if version > FORMAT_VERSION or type(event) is UnknownEvent:
            events[index] = upgrade(seqs[index], version, event, session_id)
    return events


def encode_event(event: SessionEvent) -> str:
    r"""The stored JSON text of `event` (compact, UTF-8 friendly).

    An assistant message's `usage`, a tool result's `metadata` and a request header's
    `injected` are left out while they are empty: they read back as the same defaults,
    and most events never set them.
    A request header, a fork's lineage marker, a durable run's turn and tool-start
    markers and an application's `CustomEvent` say `"ignorable": true`, for readers that
    do not know them.

    Every event has a stored form (a tool's output or a model's arguments must never make
    a run's log unwritable):

    - A string holding a lone surrogate (a file name `os.listdir` decoded with
      `surrogateescape`, say) is written with each lone surrogate as a JSON `\uXXXX`
      escape; `json` reads the very same string back. A store that refuses such escapes
      (PostgreSQL's `jsonb`) refuses the append instead.
    - The serializer writes JSON values nested about 250 levels deep. An event holding a
      deeper one is stored with each of its JSON values (tool arguments, request settings,
      tool schemas) nested more than `MAX_STORED_DEPTH` levels replaced by a note,
      `{"unstored": "..."}`: the conversation read back shows that the value was not kept.
    """
    try:
        return _encode(event)
    except ValueError:  # pydantic's serializer met a lone surrogate, or nesting too deep
        return _encode_unusual(event)


def _encode(event: SessionEvent) -> str:
    if isinstance(event, UnknownEvent):
        text = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
        return text if text.isascii() else _escape_surrogates(text)
    adapter = SESSION_EVENT_ADAPTER.adapter
    if isinstance(event, AssistantMessageEvent) and event.usage is None:
        return _text(adapter.dump_json(event, exclude=_NO_USAGE))
    if isinstance(event, ToolReturned) and event.metadata is None:
        return _text(adapter.dump_json(event, exclude=_NO_METADATA))
    if isinstance(event, RequestHeader | Forked | TurnOpened | TurnClosed | ToolsStarted | CustomEvent):
        # Marked ignorable: a reader from before these events skips one (each projects to
        # nothing) instead of refusing the whole session.
        exclude = _NO_INJECTED if isinstance(event, RequestHeader) and not event.injected else None
        text = _text(adapter.dump_json(event, exclude=exclude))
        head = f'{{"type":"{event.type}",'
        return head + '"ignorable":true,' + text[len(head) :]
    return _text(adapter.dump_json(event))


_REPLACEMENT = "\ufffd".encode()


def _text(data: bytes) -> str:
    """The JSON pydantic wrote, as text; a ValueError when it may have replaced a lone surrogate.

    pydantic raises on a lone surrogate in a string value, but writes one in a mapping's
    key as U+FFFD, silently. Output holding U+FFFD is written again the careful way
    (`_encode_unusual`), which keeps a key's surrogate and writes a real U+FFFD as it is.
    """
    if _REPLACEMENT in data:
        raise ValueError("U+FFFD in pydantic's output: it may stand for a lone surrogate")
    return data.decode()


MAX_STORED_DEPTH = 128
"""How deep a JSON value in an event the serializer cannot write is kept (see `encode_event`)."""


def _encode_unusual(event: SessionEvent) -> str:
    """The stored form of an event pydantic's serializer refused (rare: never on the hot path)."""
    event = _within_depth(event)
    try:
        return _encode(event)
    except ValueError:  # a lone surrogate
        return _json_of(event)


def _json_of(event: SessionEvent) -> str:
    """What `_encode` writes for `event`, built with `json` and lone surrogates escaped."""
    if isinstance(event, UnknownEvent):
        return _encode(event)  # `json` writes it already
    exclude: set[str] | None = None
    if isinstance(event, AssistantMessageEvent) and event.usage is None:
        exclude = _NO_USAGE
    elif isinstance(event, ToolReturned) and event.metadata is None:
        exclude = _NO_METADATA
    elif isinstance(event, RequestHeader) and not event.injected:
        exclude = _NO_INJECTED
    # Python mode: the JSON mode encodes a dict key to UTF-8, and fails on a lone surrogate.
    data = cast(
        "dict[str, Any]", _jsonable(SESSION_EVENT_ADAPTER.adapter.dump_python(event, exclude=exclude))
    )
    if isinstance(event, RequestHeader | Forked | TurnOpened | TurnClosed | ToolsStarted | CustomEvent):
        data = {"type": data.pop("type"), "ignorable": True, **data}
    return _escape_surrogates(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


def _jsonable(value: object) -> object:
    """A Python-mode dump as pydantic's JSON mode writes it: times in RFC 3339, no NaN or infinity."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in cast("dict[str, object]", value).items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in cast("list[object]", value)]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogates(text: str) -> str:
    r"""`text` (JSON) with each lone surrogate as a `\uXXXX` escape: it only occurs inside strings."""
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _within_depth(event: SessionEvent) -> SessionEvent:
    """`event` with each JSON value nested deeper than `MAX_STORED_DEPTH` replaced by a note."""
    if type(event) is ToolCalled:
        return replace(event, args=_unstored()) if _too_deep(event.args) else event
    if isinstance(event, UserMessageEvent | AssistantMessageEvent | ToolReturned):
        parts = tuple(
            replace(part, args=_unstored()) if type(part) is ToolUsePart and _too_deep(part.args) else part
            for part in event.content
        )
        if type(event) is ToolReturned and event.metadata is not None and _too_deep(event.metadata):
            return replace(event, content=parts, metadata=_unstored())
        return replace(event, content=parts)
    if isinstance(event, RequestHeader):
        settings = {key: _unstored() if _too_deep(value) else value for key, value in event.settings.items()}
        tools = tuple(
            replace(tool, parameters=_unstored()) if _too_deep(tool.parameters) else tool
            for tool in event.tools
        )
        return replace(event, settings=settings, tools=tools)
    return event


def _unstored() -> dict[str, JsonValue]:
    return {"unstored": f"this value nested more than {MAX_STORED_DEPTH} levels deep; it was not stored"}


def _too_deep(value: object) -> bool:
    """Whether `value` nests lists and objects more than `MAX_STORED_DEPTH` levels (without recursing)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            depth += 1
            if depth > MAX_STORED_DEPTH:
                return True
            children = (
                cast("dict[str, object]", item).values()
                if isinstance(item, dict)
                else cast("list[object]", item)
            )
            stack.extend((child, depth) for child in children)
    return False


_NO_USAGE = {"usage"}
_NO_METADATA = {"metadata"}
_NO_INJECTED = {"injected"}


def event_kind(event: SessionEvent) -> str:
    """The event's `type` tag, as backends store it beside the payload."""
    return event.type


UNKNOWN_TIME = "1970-01-01T00:00:00+00:00"
"""The time a stored event without its `ts` reads as (the epoch: the same on every read)."""


def decode_event(payload: str | bytes | dict[str, Any]) -> SessionEvent:
    """Decode one stored event; anything it cannot decode becomes an `UnknownEvent`.

    An object of a type this version does not know (or a shape it cannot read) is kept
    verbatim. A payload that is no JSON object at all (bytes that are not UTF-8, text that
    is not JSON or is nested too deeply to parse, another JSON value) becomes
    `UnknownEvent(type="undecodable")` whose data is `{"type": "undecodable", "ignorable":
    true, "error": why, "raw": the stored text}` (`"raw_base64"`, the stored bytes in
    base64, instead of `"raw"` when they are not UTF-8): projections skip it, every reader
    keeps it, and `append` writes it back as that object.
    """
    if isinstance(payload, dict):
        return _decode_object(payload)
    text = payload if isinstance(payload, str) else _utf8(payload)
    if text is None:
        return _undecodable(payload, "not UTF-8")
    try:
        obj: Any = json.loads(text)
    except ValueError:  # (json's own message varies with the Python version: not kept)
        return _undecodable(text, "not JSON")
    except RecursionError:
        return _undecodable(text, "nested too deeply to parse")
    if type(obj) is not dict:
        return _undecodable(text, f"a JSON {_json_kind(obj)}, not an object")
    return _decode_object(cast("dict[str, Any]", obj))


_ASIDE = frozenset({("assistant_message", "usage"), ("tool_returned", "metadata")})
"""Fields a UI reads, not the conversation: a malformed one reads as absent, never costs its event."""


def _decode_object(obj: dict[str, Any]) -> SessionEvent:
    """The event a parsed stored object holds: `SESSION_EVENT_ADAPTER`'s, else an `UnknownEvent`."""
    from pydantic import ValidationError

    # A stored event that lost its time reads as the epoch, the same on every read: the
    # carriers' default (now) would give each read of the row another time.
    fields = obj if "ts" in obj else {**obj, "ts": UNKNOWN_TIME}
    try:
        try:
            return SESSION_EVENT_ADAPTER.validate_python(fields)
        except ValidationError as exc:
            malformed = {error["loc"][:2] for error in exc.errors()}
            if not malformed <= _ASIDE:
                raise
            kept = {key: value for key, value in fields.items() if (fields["type"], key) not in malformed}
            return SESSION_EVENT_ADAPTER.validate_python(kept)
    except (ValidationError, RecursionError):
        kind = obj.get("type")
        return UnknownEvent(type=kind if isinstance(kind, str) else "unknown", data=obj)


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


_JSON_KINDS: dict[type, str] = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def _json_kind(value: object) -> str:
    return "null" if value is None else _JSON_KINDS.get(type(value), "value")


def _undecodable(stored: str | bytes, why: str) -> UnknownEvent:
    """The ignorable `UnknownEvent` holding a stored payload that is no JSON object, verbatim."""
    data: dict[str, Any] = {"type": "undecodable", "ignorable": True, "error": why}
    if isinstance(stored, str):
        data["raw"] = stored
    else:
        data["raw_base64"] = base64.b64encode(stored).decode("ascii")
    return UnknownEvent(type="undecodable", data=data)


def decode_events(payloads: Sequence[str | bytes]) -> list[SessionEvent]:
    """`decode_event` each of `payloads`."""
    return [decode_event(payload) for payload in payloads]


new_entry: Callable[[tuple[int, SessionEvent]], SessionEntry] = SessionEntry._make
"""`SessionEntry(seq, event)` from a `(seq, event)` pair: `list(map(new_entry, zip(seqs, events)))`."""


def decode_joined(joined: str, count: int) -> list[SessionEvent] | None:
    """Decode `count` stored payloads joined by commas, as a SQL aggregate returns them.

    One string from the database instead of `count` row values is much cheaper to fetch; it
    is parsed as one JSON array, then each object is decoded as `decode_event` decodes it.
    Returns None when the text is not exactly `count` JSON objects (a damaged payload, or one
    holding several values): decode the rows one by one then, which isolates the bad one.
    """
    if count == 0:
        return []
    try:
        objects: list[Any] = json.loads("[" + joined + "]")
    except (ValueError, RecursionError):
        return None
    if len(objects) != count or any(type(obj) is not dict for obj in objects):
        return None
    return [_decode_object(obj) for obj in objects]


def snapshot_from_payloads(payloads: Sequence[str | bytes]) -> ConversationSnapshot:
    """The conversation stored `payloads` hold: `project(decode_events(payloads))`."""
    return project(decode_events(payloads))


__all__ = [
    "FORMAT_VERSION",
    "MAX_STORED_DEPTH",
    "UNKNOWN_TIME",
    "decode_event",
    "decode_events",
    "new_entry",
    "decode_joined",
    "encode_event",
    "event_kind",
    "snapshot_from_payloads",
    "stored_version",
    "upgrade",
    "upgrade_all",
]
