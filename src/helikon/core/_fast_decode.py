"""A fast path for decoding stored session events: `json.loads` plus direct construction.

Reading a session decodes every event, so this is a hot path. It builds the carriers
straight from the parsed JSON for well-formed events of the known types, and returns
`None` for anything irregular (a missing field, a wrong type, an unknown tag): the codec
then falls back to pydantic's validation, which decides what the object is.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from .items import (
    AssistantMessage,
    AudioPart,
    Base64Source,
    ContentPart,
    ImagePart,
    Item,
    MediaSource,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UrlSource,
    UserMessage,
)
from .session import (
    AssistantMessageEvent,
    Compacted,
    HandoffOccurred,
    KnownSessionEvent,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
)


class _Irregular(Exception):
    """The object is not a plain, well-formed event: let pydantic decide."""


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj[key]
    if type(value) is not str:
        raise _Irregular
    return value


def _opt_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and type(value) is not str:
        raise _Irregular
    return value


def _ts(obj: dict[str, Any]) -> datetime:
    stamp = datetime.fromisoformat(_str(obj, "ts"))
    if stamp.tzinfo is None:
        raise _Irregular
    return stamp


def _source(obj: Any) -> MediaSource:
    kind = obj["type"]
    if kind == "url":
        return UrlSource(url=_str(obj, "url"))
    if kind == "base64":
        return Base64Source(media_type=_str(obj, "media_type"), data=_str(obj, "data"))
    raise _Irregular


def _part(obj: Any) -> ContentPart:
    kind = obj["type"]
    if kind == "text":
        return TextPart(text=_str(obj, "text"))
    if kind == "reasoning":
        return ReasoningPart(
            text=_str(obj, "text"), signature=_opt_str(obj, "signature"), provider=_opt_str(obj, "provider")
        )
    if kind == "tool_use":
        return ToolUsePart(call_id=_str(obj, "call_id"), name=_str(obj, "name"), args=obj["args"])
    if kind == "image":
        return ImagePart(source=_source(obj["source"]), detail=_opt_str(obj, "detail"))
    if kind == "audio":
        return AudioPart(source=_source(obj["source"]))
    raise _Irregular


def _content(obj: dict[str, Any]) -> tuple[ContentPart, ...]:
    parts = obj["content"]
    if type(parts) is not list:
        raise _Irregular
    return tuple(_part(p) for p in parts)  # pyright: ignore[reportUnknownVariableType]


def _user(o: dict[str, Any]) -> KnownSessionEvent:
    return UserMessageEvent(content=_content(o), ts=_ts(o))


def _assistant(o: dict[str, Any]) -> KnownSessionEvent:
    return AssistantMessageEvent(content=_content(o), agent=_opt_str(o, "agent"), ts=_ts(o))


def _called(o: dict[str, Any]) -> KnownSessionEvent:
    return ToolCalled(call_id=_str(o, "call_id"), name=_str(o, "name"), args=o["args"], ts=_ts(o))


def _returned(o: dict[str, Any]) -> KnownSessionEvent:
    is_error = o.get("is_error", False)
    if type(is_error) is not bool:
        raise _Irregular
    return ToolReturned(
        call_id=_str(o, "call_id"),
        content=_content(o),
        is_error=is_error,
        name=_opt_str(o, "name"),
        ts=_ts(o),
    )


def _handoff(o: dict[str, Any]) -> KnownSessionEvent:
    return HandoffOccurred(from_agent=_str(o, "from_agent"), to_agent=_str(o, "to_agent"), ts=_ts(o))


def _compacted(o: dict[str, Any]) -> KnownSessionEvent:
    count = o["original_count"]
    if type(count) is not int:
        raise _Irregular
    return Compacted(summary=_str(o, "summary"), original_count=count, ts=_ts(o))


_BUILDERS: dict[str, Callable[[dict[str, Any]], KnownSessionEvent]] = {
    "user_message": _user,
    "assistant_message": _assistant,
    "tool_called": _called,
    "tool_returned": _returned,
    "handoff_occurred": _handoff,
    "compacted": _compacted,
}


def fast_decode(obj: Any) -> KnownSessionEvent | None:
    """The event `obj` (parsed JSON) holds, or None when it needs the careful path."""
    if type(obj) is not dict:
        return None
    data = cast("dict[str, Any]", obj)
    kind = data.get("type")
    builder = _BUILDERS.get(kind) if type(kind) is str else None
    if builder is None:
        return None
    try:
        return builder(data)
    except (_Irregular, KeyError, TypeError, ValueError, AttributeError):
        return None


IRREGULAR = object()
"""`fast_step`'s answer when the object needs the careful path."""


def _user_item(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)  # validated as `fast_decode` would, so both paths agree on every object
    return UserMessage(content=_content(o))


def _assistant_item(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)
    return AssistantMessage(content=_content(o), agent=_opt_str(o, "agent"))


def _called_item(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)
    return ToolCall(call_id=_str(o, "call_id"), name=_str(o, "name"), args=o["args"])


def _returned_item(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)
    is_error = o.get("is_error", False)
    if type(is_error) is not bool:
        raise _Irregular
    return ToolResult(
        call_id=_str(o, "call_id"), content=_content(o), is_error=is_error, name=_opt_str(o, "name")
    )


def _handoff_item(o: dict[str, Any]) -> Item | Compacted | None:
    _handoff(o)
    return None


def _compacted_item(o: dict[str, Any]) -> Item | Compacted | None:
    event = _compacted(o)
    return event if isinstance(event, Compacted) else None


_STEPS: dict[str, Callable[[dict[str, Any]], Item | Compacted | None]] = {
    "user_message": _user_item,
    "assistant_message": _assistant_item,
    "tool_called": _called_item,
    "tool_returned": _returned_item,
    "handoff_occurred": _handoff_item,
    "compacted": _compacted_item,
}


def fast_step(obj: Any) -> Item | Compacted | object | None:
    """The projection step of one parsed event, skipping the event object; `IRREGULAR` if unsure.

    An object of a type no builder knows projects to nothing, as its `UnknownEvent` would.
    """
    if type(obj) is not dict:
        return IRREGULAR
    data = cast("dict[str, Any]", obj)
    kind = data.get("type")
    if type(kind) is not str:
        return IRREGULAR
    builder = _STEPS.get(kind)
    if builder is None:
        return None
    try:
        return builder(data)
    except (_Irregular, KeyError, TypeError, ValueError, AttributeError):
        return IRREGULAR
