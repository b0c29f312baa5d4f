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
import contextlib
import gc
import json
import math
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from .._format import FORMAT_VERSION
from .._json import JsonValue
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
    Step,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UnknownEvent,
    UserMessageEvent,
    event_step,
    fold,
    project,
)
from ._fast_decode import IRREGULAR, decode_objects, fast_decode, fast_step


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
    if isinstance(event, AssistantMessageEvent) and event.usage is None:
        return SESSION_EVENT_ADAPTER.adapter.dump_json(event, exclude=_NO_USAGE).decode()
    if isinstance(event, ToolReturned) and event.metadata is None:
        return SESSION_EVENT_ADAPTER.adapter.dump_json(event, exclude=_NO_METADATA).decode()
    if isinstance(event, RequestHeader | Forked | TurnOpened | TurnClosed | ToolsStarted | CustomEvent):
        # Marked ignorable: a reader from before these events skips one (each projects to
        # nothing) instead of refusing the whole session.
        exclude = _NO_INJECTED if isinstance(event, RequestHeader) and not event.injected else None
        text = SESSION_EVENT_ADAPTER.adapter.dump_json(event, exclude=exclude).decode()
        head = f'{{"type":"{event.type}",'
        return head + '"ignorable":true,' + text[len(head) :]
    return SESSION_EVENT_ADAPTER.dump_json(event).decode()


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
        return _decode_object(payload, None)
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
    return _decode_object(cast("dict[str, Any]", obj), text)


def _decode_object(obj: dict[str, Any], text: str | None) -> SessionEvent:
    """The event a parsed stored object holds (`text`: the JSON it was parsed from, if any)."""
    from pydantic import ValidationError

    event = fast_decode(obj)
    if event is not None:
        return event
    try:
        if "ts" not in obj:
            # A stored event that lost its time reads as the epoch, the same on every read:
            # the carriers' default (now) would give each read of the row another time.
            return SESSION_EVENT_ADAPTER.validate_python({**obj, "ts": UNKNOWN_TIME})
        if text is None:
            return SESSION_EVENT_ADAPTER.validate_python(obj)
        return SESSION_EVENT_ADAPTER.validate_json(text)
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
    """Decode many stored events: one `json.loads` for the lot, then the fast path per event."""
    if not payloads:
        return []
    with gc_paused(len(payloads)):
        return _decode_many(payloads)


new_entry: Callable[[tuple[int, SessionEvent]], SessionEntry] = SessionEntry._make
"""`SessionEntry(seq, event)` from a `(seq, event)` pair: `list(map(new_entry, zip(seqs, events)))`."""

_GC_PAUSE_MIN = 256


@contextlib.contextmanager
def gc_paused(count: int) -> Generator[None, None, None]:
    """Hold the cyclic GC while a batch of `count` events (256 or more) is built.

    Decoding allocates several acyclic objects per event; with a large heap the collector
    would otherwise run repeatedly over everything alive, which costs more than the
    decoding itself. It is switched back on (if it was on) as soon as the batch is built.
    A backend holds it over the decoding and the wrapping of the entries both.
    """
    if count < _GC_PAUSE_MIN or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _decode_many(payloads: Sequence[str | bytes]) -> list[SessionEvent]:
    joined = _joined(payloads)
    objects = None if joined is None else _parse_array(joined)
    if objects is None:  # at least one payload is not JSON (or UTF-8): decode them one by one
        return [decode_event(p) for p in payloads]
    if len(objects) != len(payloads):  # a payload held no value, or several: one by one
        return [decode_event(p) for p in payloads]
    out: list[SessionEvent] = []
    for obj, payload in zip(objects, payloads, strict=True):
        event = fast_decode(obj)
        out.append(event if event is not None else decode_event(payload))
    return out


def decode_joined(joined: str, count: int) -> list[SessionEvent] | None:
    """Decode `count` stored payloads joined by commas, as a SQL aggregate returns them.

    One string from the database instead of `count` row values is much cheaper to fetch.
    Returns None when the text is not exactly `count` JSON objects (a damaged payload, or one
    holding several values): decode the rows one by one then, which isolates the bad one.
    """
    if count == 0:
        return []
    with gc_paused(count):
        return _decode_joined(joined, count)


def _decode_joined(joined: str, count: int) -> list[SessionEvent] | None:
    objects = _parse_array("[" + joined + "]")
    if objects is None:
        return None
    if len(objects) != count:
        return None
    return decode_objects(objects, decode_event)


def snapshot_from_payloads(payloads: Sequence[str | bytes]) -> ConversationSnapshot:
    """`project(decode_events(payloads))`, without building the event objects on the way.

    Backends' `snapshot()` reads only payloads, so it can fold them straight into the
    conversation; the result is identical to decoding then projecting.
    """
    if not payloads:
        return ConversationSnapshot()
    joined = _joined(payloads)
    objects = None if joined is None else _parse_array(joined)
    if objects is None:
        return project(decode_events(payloads))
    if len(objects) != len(payloads):  # a payload held no value, or several
        return project(decode_events(payloads))
    steps: list[Step] = []
    for obj, payload in zip(objects, payloads, strict=True):
        step = fast_step(obj)
        steps.append(event_step(decode_event(payload)) if step is IRREGULAR else step)  # pyright: ignore[reportArgumentType]
    return fold(steps)


def _joined(payloads: Sequence[str | bytes]) -> str | None:
    """The payloads as one JSON array's text; None when one is bytes that are not UTF-8."""
    try:
        return "[" + ",".join(p if isinstance(p, str) else p.decode() for p in payloads) + "]"
    except UnicodeDecodeError:
        return None


def _parse_array(text: str) -> list[Any] | None:
    """Parse a long JSON array: orjson when installed (about twice as fast), else `json`.

    orjson refuses some JSON that `json` takes (NaN) and reads integers past 64 bits as
    floats; such text is parsed by `json`, so the result never depends on which parser is
    installed. None when the text is not JSON, or nested too deeply to parse (orjson stops at
    1,024 levels, `json` at Python's recursion limit): the caller decodes one by one then.
    """
    global _fast_loads
    if _fast_loads is None:
        try:
            from orjson import loads as orjson_loads
        except ImportError:  # pragma: no cover - the sessions extras install it
            _fast_loads = json.loads
        else:
            _fast_loads = orjson_loads
    try:
        # orjson reads an integer past 64 bits as a float (silently inexact): a text with
        # such a long run of digits goes to `json` (a digit run inside a string too: safe).
        parsed: Any = json.loads(text) if _long_digits(text) else _fast_loads(text)
    except (ValueError, RecursionError):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return None
    return cast("list[Any]", parsed) if type(parsed) is list else None


_fast_loads: Callable[[str], Any] | None = None
# Every ASCII digit to "0", every other byte to " ": a run of 19 digits is then a substring
# search. A regex `[0-9]{19}` took longer than parsing the text (25 ms for a 1 MB read).
# UTF-8 encodes no other character with a byte in the ASCII range.
_DIGITS_AS_ZEROS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * 19


def _long_digits(text: str) -> bool:
    """Whether `text` holds a run of 19 or more ASCII digits (an integer JSON may hold past 64 bits)."""
    return _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZEROS)


__all__ = [
    "FORMAT_VERSION",
    "MAX_STORED_DEPTH",
    "UNKNOWN_TIME",
    "decode_event",
    "decode_events",
    "gc_paused",
    "new_entry",
    "decode_joined",
    "encode_event",
    "event_kind",
    "snapshot_from_payloads",
    "stored_version",
    "upgrade",
    "upgrade_all",
]
