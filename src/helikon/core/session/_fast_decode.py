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

from .._carrier import raw_constructor
from ..events import TokenUsage
from ..items import (
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
from ..model import ToolDef
from . import (
    AssistantMessageEvent,
    Compacted,
    CustomEvent,
    Forked,
    HandoffOccurred,
    KnownSessionEvent,
    RequestHeader,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)


class _Irregular(Exception):
    """The object is not a plain, well-formed event: let pydantic decide."""


# Positional builders for the hot classes (every field, in declaration order): each value
# is checked here first, so the keyword `__init__`'s defaults are not needed.
_text_part = raw_constructor(TextPart)
_reasoning_part = raw_constructor(ReasoningPart)
_tool_use_part = raw_constructor(ToolUsePart)
_user_event = raw_constructor(UserMessageEvent)
_assistant_event = raw_constructor(AssistantMessageEvent)
_header_event = raw_constructor(RequestHeader)
_tool_def = raw_constructor(ToolDef)
_usage = raw_constructor(TokenUsage)
_called_event = raw_constructor(ToolCalled)
_returned_event = raw_constructor(ToolReturned)
_user_item = raw_constructor(UserMessage)
_assistant_item = raw_constructor(AssistantMessage)
_call_item = raw_constructor(ToolCall)
_result_item = raw_constructor(ToolResult)
_fromisoformat = datetime.fromisoformat


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
    stamp = _fromisoformat(obj["ts"])  # TypeError for a non-string: the careful path
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
        text = obj["text"]
        if type(text) is not str:
            raise _Irregular
        return _text_part("text", text)
    if kind == "reasoning":
        return _reasoning_part(
            "reasoning", _str(obj, "text"), _opt_str(obj, "signature"), _opt_str(obj, "provider")
        )
    if kind == "tool_use":
        return _tool_use_part("tool_use", _str(obj, "call_id"), _str(obj, "name"), obj["args"])
    if kind == "image":
        return ImagePart(source=_source(obj["source"]), detail=_opt_str(obj, "detail"))
    if kind == "audio":
        return AudioPart(source=_source(obj["source"]))
    raise _Irregular


def _content(obj: dict[str, Any]) -> tuple[ContentPart, ...]:
    parts: list[Any] = obj["content"]
    if type(parts) is not list:
        raise _Irregular
    if len(parts) == 1:  # by far the most common shape: skip building a list
        part = parts[0]
        if part["type"] == "text":  # and the most common part: what `_part` does, one call less
            text = part["text"]
            if type(text) is not str:
                raise _Irregular
            return (_text_part("text", text),)
        return (_part(part),)
    return tuple([_part(p) for p in parts])  # pyright: ignore[reportUnknownVariableType]


def _is_error(o: dict[str, Any]) -> bool:
    is_error = o.get("is_error", False)
    if type(is_error) is not bool:
        raise _Irregular
    return is_error


def _user(o: dict[str, Any]) -> KnownSessionEvent:
    stamp = _fromisoformat(o["ts"])  # `_ts`, inlined: the hottest builder
    if stamp.tzinfo is None:
        raise _Irregular
    return _user_event("user_message", _content(o), stamp)


def _assistant(o: dict[str, Any]) -> KnownSessionEvent:
    stamp = _fromisoformat(o["ts"])
    if stamp.tzinfo is None:
        raise _Irregular
    agent = o.get("agent")
    if agent is not None and type(agent) is not str:
        raise _Irregular
    usage = o.get("usage")
    return _assistant_event(
        "assistant_message", _content(o), agent, stamp, None if usage is None else _opt_usage(o)
    )


_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens", "requests")


def _opt_usage(o: dict[str, Any]) -> TokenUsage | None:
    """The message's usage; a malformed one reads as unknown (None): it never costs the message."""
    usage = o.get("usage")
    if usage is None or type(usage) is not dict:
        return None
    counts = [cast("dict[str, Any]", usage).get(key, 0) for key in _USAGE_KEYS]
    for count in counts:
        if type(count) is not int:
            return None
    return _usage(*counts)


def _str_tuple(obj: dict[str, Any], key: str) -> tuple[str, ...]:
    values: Any = obj.get(key, [])
    if type(values) is not list:
        raise _Irregular
    texts = cast("list[Any]", values)
    for value in texts:
        if type(value) is not str:
            raise _Irregular
    return tuple(cast("list[str]", texts))


def _tool(obj: Any) -> ToolDef:
    parameters = obj["parameters"]
    strict = obj.get("strict", False)
    if type(parameters) is not dict or type(strict) is not bool:
        raise _Irregular
    return _tool_def(_str(obj, "name"), _str(obj, "description"), parameters, strict)


def _header(o: dict[str, Any]) -> KnownSessionEvent:
    settings = o.get("settings", {})
    tools = o.get("tools", [])
    if type(settings) is not dict or type(tools) is not list:
        raise _Irregular
    return _header_event(
        "request_header",
        _str(o, "provider"),
        _str(o, "model"),
        settings,
        _str_tuple(o, "system"),
        tuple([_tool(t) for t in tools]),  # pyright: ignore[reportUnknownVariableType]
        _str_tuple(o, "injected"),
        _ts(o),
    )


def _called(o: dict[str, Any]) -> KnownSessionEvent:
    return _called_event("tool_called", _str(o, "call_id"), _str(o, "name"), o["args"], _ts(o))


def _returned(o: dict[str, Any]) -> KnownSessionEvent:
    metadata = o.get("metadata")
    return _returned_event(
        "tool_returned",
        _str(o, "call_id"),
        _content(o),
        _is_error(o),
        _opt_str(o, "name"),
        _ts(o),
        # What a UI shows, not conversation: a malformed one reads as absent, never costs the event.
        metadata if type(metadata) is dict else None,
    )


def _handoff(o: dict[str, Any]) -> KnownSessionEvent:
    return HandoffOccurred(from_agent=_str(o, "from_agent"), to_agent=_str(o, "to_agent"), ts=_ts(o))


def _opt_int(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is not None and type(value) is not int:
        raise _Irregular
    return value


def _compacted(o: dict[str, Any]) -> KnownSessionEvent:
    count = o["original_count"]
    if type(count) is not int:
        raise _Irregular
    role = o.get("summary_role", "system")
    if role != "system" and role != "user":
        raise _Irregular
    return Compacted(
        summary=_str(o, "summary"),
        original_count=count,
        ts=_ts(o),
        first_kept_seq=_opt_int(o, "first_kept_seq"),
        tokens_before=_opt_int(o, "tokens_before"),
        summary_role=role,
    )


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj[key]
    if type(value) is not int:
        raise _Irregular
    return value


_OUTCOMES = frozenset(("completed", "failed", "cancelled", "refused", "interrupted"))


def _turn_opened(o: dict[str, Any]) -> KnownSessionEvent:
    return TurnOpened(run_id=_str(o, "run_id"), agent=_opt_str(o, "agent"), ts=_ts(o))


def _turn_closed(o: dict[str, Any]) -> KnownSessionEvent:
    outcome = o.get("outcome", "completed")
    if outcome not in _OUTCOMES:
        raise _Irregular
    return TurnClosed(run_id=_str(o, "run_id"), outcome=outcome, ts=_ts(o))


def _tools_started(o: dict[str, Any]) -> KnownSessionEvent:
    if type(o.get("call_ids")) is not list:
        raise _Irregular
    return ToolsStarted(call_ids=_str_tuple(o, "call_ids"), ts=_ts(o))


def _forked(o: dict[str, Any]) -> KnownSessionEvent:
    return Forked(from_session=_str(o, "from_session"), at_seq=_int(o, "at_seq"), ts=_ts(o))


def _custom(o: dict[str, Any]) -> KnownSessionEvent:
    # Its __post_init__ checks `kind` and `data` (a UserError is a ValueError: the careful path).
    return CustomEvent(kind=_str(o, "kind"), data=o.get("data"), ts=_ts(o))


_BUILDERS: dict[str, Callable[[dict[str, Any]], KnownSessionEvent]] = {
    "user_message": _user,
    "assistant_message": _assistant,
    "tool_called": _called,
    "tool_returned": _returned,
    "handoff_occurred": _handoff,
    "compacted": _compacted,
    "request_header": _header,
    "turn_opened": _turn_opened,
    "turn_closed": _turn_closed,
    "tools_started": _tools_started,
    "forked": _forked,
    "custom": _custom,
}


_FALLBACK = (_Irregular, KeyError, TypeError, ValueError, AttributeError)


def decode_objects(
    objects: list[Any], careful: Callable[[dict[str, Any]], SessionEvent]
) -> list[SessionEvent] | None:
    """`fast_decode` each of `objects` (parsed JSON), `careful` for a dict it cannot take.

    None when one is not a dict (not a stored event at all). The common case costs one
    dictionary lookup and the builder per object: no type checks on the way, as any
    irregular object raises in its builder (or in the lookup) and takes the careful path.
    """
    out: list[SessionEvent] = []
    append = out.append
    builders = _BUILDERS
    for obj in objects:
        try:
            append(builders[obj["type"]](obj))
        except _FALLBACK:
            if type(obj) is not dict:
                return None
            append(careful(cast("dict[str, Any]", obj)))
    return out


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
    except _FALLBACK:
        return None


IRREGULAR = object()
"""`fast_step`'s answer when the object needs the careful path."""


def _user_step(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)  # validated as `fast_decode` would, so both paths agree on every object
    return _user_item("user", _content(o))


def _assistant_step(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)
    return _assistant_item("assistant", _content(o), _opt_str(o, "agent"))


def _called_step(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)
    return _call_item("tool_call", _str(o, "call_id"), _str(o, "name"), o["args"])


def _returned_step(o: dict[str, Any]) -> Item | Compacted | None:
    _ts(o)
    return _result_item("tool_result", _str(o, "call_id"), _content(o), _is_error(o), _opt_str(o, "name"))


def _handoff_step(o: dict[str, Any]) -> Item | Compacted | None:
    _handoff(o)
    return None


def _header_step(o: dict[str, Any]) -> Item | Compacted | None:
    _header(o)
    return None


def _compacted_step(o: dict[str, Any]) -> Item | Compacted | None:
    event = _compacted(o)
    return event if isinstance(event, Compacted) else None


def _marker_step(o: dict[str, Any]) -> Item | Compacted | None:
    _BUILDERS[o["type"]](o)  # validated as `fast_decode` would; a marker projects to nothing
    return None


def _careful_step(o: dict[str, Any]) -> Item | Compacted | None:
    # A branch marker changes the projection: it is rare, so the careful path decodes it.
    raise _Irregular


_STEPS: dict[str, Callable[[dict[str, Any]], Item | Compacted | None]] = {
    "user_message": _user_step,
    "assistant_message": _assistant_step,
    "tool_called": _called_step,
    "tool_returned": _returned_step,
    "handoff_occurred": _handoff_step,
    "compacted": _compacted_step,
    "request_header": _header_step,
    "rewound": _careful_step,
    "turn_opened": _marker_step,
    "turn_closed": _marker_step,
    "tools_started": _marker_step,
    "forked": _marker_step,
    "custom": _marker_step,
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
