"""The stored form of session events: versioned, tolerant JSON.

Every backend stores an event as the JSON object `encode_event` returns: the event's
fields with a snake_case `type` tag and `ts` in RFC 3339 (UTC). This is storage format
version `FORMAT_VERSION`. Decoding is tolerant: an object this version cannot decode (an
unknown `type`, or a known one a newer writer changed) becomes an `UnknownEvent` that
keeps the object verbatim, so no stored event ever makes a session unreadable, and an
`UnknownEvent` is written back byte-for-byte equivalent.

Example:
    ```python
    from helikon.core.codec import decode_event, encode_event
    from helikon.core.session import ToolCalled, UnknownEvent

    event = ToolCalled(call_id="c1", name="lookup", args={"q": "x"})
    assert decode_event(encode_event(event)) == event
    future = decode_event('{"type": "branch_switched", "branch": "b2"}')
    assert isinstance(future, UnknownEvent)
    assert encode_event(future) == '{"type":"branch_switched","branch":"b2"}'
    ```
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Generator, Sequence
from typing import Any, cast

from ._fast_decode import IRREGULAR, fast_decode, fast_step
from .items import Item
from .session import (
    SESSION_EVENT_ADAPTER,
    Compacted,
    ConversationSnapshot,
    SessionEvent,
    UnknownEvent,
    event_step,
    fold,
    project,
)

FORMAT_VERSION = 1
"""The version of the stored event format `encode_event` writes."""


def encode_event(event: SessionEvent) -> str:
    """The stored JSON text of `event` (compact, UTF-8 friendly)."""
    if isinstance(event, UnknownEvent):
        return json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
    return SESSION_EVENT_ADAPTER.dump_json(event).decode()


def event_kind(event: SessionEvent) -> str:
    """The event's `type` tag, as backends store it beside the payload."""
    return event.type


def decode_event(payload: str | bytes | dict[str, Any]) -> SessionEvent:
    """Decode one stored event; anything it cannot decode becomes an `UnknownEvent`."""
    from pydantic import ValidationError

    try:
        obj: Any = payload if isinstance(payload, dict) else json.loads(payload)
    except ValueError:
        return _unknown(payload)
    event = fast_decode(obj)
    if event is not None:
        return event
    try:
        if isinstance(payload, dict):
            return SESSION_EVENT_ADAPTER.validate_python(payload)
        return SESSION_EVENT_ADAPTER.validate_json(payload)
    except ValidationError:
        return _unknown(payload)


def decode_events(payloads: Sequence[str | bytes]) -> list[SessionEvent]:
    """Decode many stored events: one `json.loads` for the lot, then the fast path per event."""
    if not payloads:
        return []
    if len(payloads) >= _GC_PAUSE_MIN:
        with _gc_paused():
            return _decode_many(payloads)
    return _decode_many(payloads)


_GC_PAUSE_MIN = 256


@contextlib.contextmanager
def _gc_paused() -> Generator[None, None, None]:
    """Hold the cyclic GC while a big batch is built.

    Decoding allocates several acyclic objects per event; with a large heap the collector
    would otherwise run repeatedly over everything alive, which costs more than the
    decoding itself. It is switched back on (if it was on) as soon as the batch is built.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _decode_many(payloads: Sequence[str | bytes]) -> list[SessionEvent]:
    objects = _parse_array("[" + ",".join(p if isinstance(p, str) else p.decode() for p in payloads) + "]")
    if objects is None:  # at least one payload is not JSON: decode them one by one
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
    if count >= _GC_PAUSE_MIN:
        with _gc_paused():
            return _decode_joined(joined, count)
    return _decode_joined(joined, count)


def _decode_joined(joined: str, count: int) -> list[SessionEvent] | None:
    objects = _parse_array("[" + joined + "]")
    if objects is None:
        return None
    if len(objects) != count:
        return None
    out: list[SessionEvent] = []
    for obj in objects:
        if type(obj) is not dict:
            return None
        event = fast_decode(obj)
        out.append(event if event is not None else decode_event(cast("dict[str, Any]", obj)))
    return out


def snapshot_from_payloads(payloads: Sequence[str | bytes]) -> ConversationSnapshot:
    """`project(decode_events(payloads))`, without building the event objects on the way.

    Backends' `snapshot()` reads only payloads, so it can fold them straight into the
    conversation; the result is identical to decoding then projecting.
    """
    if not payloads:
        return ConversationSnapshot()
    objects = _parse_array("[" + ",".join(p if isinstance(p, str) else p.decode() for p in payloads) + "]")
    if objects is None:
        return project(decode_events(payloads))
    if len(objects) != len(payloads):  # a payload held no value, or several
        return project(decode_events(payloads))
    steps: list[Item | Compacted | None] = []
    for obj, payload in zip(objects, payloads, strict=True):
        step = fast_step(obj)
        steps.append(event_step(decode_event(payload)) if step is IRREGULAR else step)  # pyright: ignore[reportArgumentType]
    return fold(steps)


def _parse_array(text: str) -> list[Any] | None:
    """Parse a long JSON array: orjson when installed (about twice as fast), else `json`.

    orjson refuses some JSON that `json` takes (NaN, integers past 64 bits); such text is
    parsed again by `json`, so the result never depends on which parser is installed.
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
        parsed: Any = _fast_loads(text)
    except ValueError:
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
    return cast("list[Any]", parsed) if type(parsed) is list else None


_fast_loads: Callable[[str], Any] | None = None


def _unknown(payload: str | bytes | dict[str, Any]) -> UnknownEvent:
    data: Any = payload
    if not isinstance(payload, dict):
        try:
            data = json.loads(payload)
        except ValueError:
            text = payload if isinstance(payload, str) else payload.decode(errors="replace")
            return UnknownEvent(type="undecodable", data={"type": "undecodable", "raw": text})
    if not isinstance(data, dict):
        return UnknownEvent(type="undecodable", data={"type": "undecodable", "raw": data})
    obj = cast("dict[str, Any]", data)
    kind = obj.get("type")
    return UnknownEvent(type=kind if isinstance(kind, str) else "unknown", data=obj)


__all__ = [
    "FORMAT_VERSION",
    "decode_event",
    "decode_events",
    "decode_joined",
    "encode_event",
    "event_kind",
    "snapshot_from_payloads",
]
