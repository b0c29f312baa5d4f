"""The conformance check that a backend stores JSON exactly: every value comes back as it went in."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from helikon.core.items import TextPart, ToolCall
from helikon.core.session import SessionEvent, ToolCalled, ToolReturned, UserMessageEvent

from ._conformance_util import close_session, new_id, require

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend

EXOTIC_TEXT = 'NUL \x00, separators \u2028\u2029, emoji 🦜👩🏽‍🚀, controls \t\x1f\x7f, quotes "\\/'


def _nested(depth: int) -> Any:
    value: Any = []
    for level in range(depth):
        value = [value] if level % 2 else {"d": value}
    return value


EXOTIC_ARGS: dict[str, Any] = {
    "past_64_bits": 2**70,
    "negative_past_64_bits": -(2**70),
    "largest_float": 1e308,
    "exponent_form": 1e20,
    "smallest_float": 5e-324,
    "negative_zero": -0.0,
    "small": 1e-7,
    "text": EXOTIC_TEXT,
    "\x00 a NUL in a key": "and \x00 in a value",
    "ü \u2028 🦜": [],
    "empty_object": {},
    "empty_string": "",
    "deep": _nested(100),
    "z_last_key_first_in_order": None,
    "a_keys_keep_their_order": [True, False, 0, -1, 1.5],
}
"""Tool arguments whose JSON a backend must keep exactly: the type, digits and key order of each value."""


def _exact(value: Any) -> str:
    """JSON that tells apart what `==` does not (1e20 and 10**20, -0.0 and 0, key order)."""
    return json.dumps(value, ensure_ascii=True)


async def check_exotic_json_round_trips(backend: ConformanceBackend) -> None:
    """Big integers, extreme floats, -0.0, NUL, U+2028, emoji, empty and deep containers read back exactly."""
    sid = new_id("exotic")
    logged: list[SessionEvent] = [
        UserMessageEvent(content=(TextPart(text=EXOTIC_TEXT),)),
        ToolCalled(call_id="c-\x00-🦜", name="exotic", args=EXOTIC_ARGS),
        ToolReturned(call_id="c-\x00-🦜", content=(TextPart(text=EXOTIC_TEXT),), name="exotic"),
    ]
    writer = await backend.open(sid)
    try:
        await writer.append(logged)
        warm = [e.event for e in await writer.events()]
    finally:
        await close_session(writer)
    reader = await backend.open(sid)
    try:
        cold = [e.event for e in await reader.events()]
        snapshot = await reader.snapshot()
    finally:
        await close_session(reader)
    for how, events in (("the writer's object", warm), ("a new session object", cold)):
        require(events == logged, f"the events read back on {how} differ from those appended: {events!r}")
        called = events[1]
        require(
            isinstance(called, ToolCalled) and _exact(called.args) == _exact(EXOTIC_ARGS),
            f"tool arguments changed on the way through the store ({how}): types, digits or key order "
            f"differ: {called!r}",
        )
    calls = [m for m in snapshot.messages if isinstance(m, ToolCall)]
    require(
        len(calls) == 1 and _exact(calls[0].args) == _exact(EXOTIC_ARGS),
        f"the snapshot's tool call does not carry the arguments exactly: {calls!r}",
    )
