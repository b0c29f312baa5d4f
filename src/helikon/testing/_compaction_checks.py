"""Conformance checks for keep-recent-window compaction over any backend.

Same shape as the checks of `helikon.testing.session_conformance` (`async def
check_x(backend) -> None`, raising `AssertionError` with a readable message), so the suite
can list them beside its own.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from helikon.core.codec import decode_event, encode_event
from helikon.core.compaction import DEFAULT_USER_SUMMARY_PREFIX, CompactingSession
from helikon.core.conversation_check import is_provider_valid
from helikon.core.items import ReasoningPart, SystemMessage, TextPart, ToolCall, ToolResult, UserMessage
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    project,
)

from ._conformance_util import close_session, require, user_event
from ._mock_model import MockModel
from ._scripts import text_turn

if TYPE_CHECKING:
    from .session_conformance import ConformanceBackend


def _tool_turn(call_id: str, output: str) -> list[SessionEvent]:
    return [
        AssistantMessageEvent(content=(ReasoningPart(text="thinking", signature="sig"),)),
        ToolCalled(call_id=call_id, name="lookup", args={"q": call_id}),
        ToolReturned(call_id=call_id, content=(TextPart(text=output),), name="lookup"),
    ]


async def check_window_compaction_keeps_recent_turns_and_pairs(backend: ConformanceBackend) -> None:
    """Window compaction on `backend` keeps the recent turns whole and the log intact.

    The marker survives storage with `first_kept_seq` and `tokens_before`, nothing is
    deleted, the kept window is verbatim and provider-valid (no tool pair or reasoning
    split), a user-role summary is positional, and a second compaction carries the
    previous window forward.
    """
    session = await backend.open(f"window-{uuid.uuid4().hex[:12]}")
    try:
        model = MockModel.with_scripts([text_turn("S1"), text_turn("S2")])
        compacting = CompactingSession(
            session, model, threshold=10_000, keep_recent_tokens=40, summary_role="user"
        )
        log: list[SessionEvent] = [
            user_event("a" * 200),
            *_tool_turn("c1", "x" * 200),
            *_tool_turn("c2", "y" * 80),
        ]
        await compacting.append(log)
        first = await compacting.compact()
        entries = await session.events()
        snapshot = await session.snapshot()
        stored = [e.event for e in entries]
        await compacting.append([user_event("b" * 120)])
        second = await compacting.compact()
        after = await session.snapshot()
        final_log = [e.event for e in await session.events()]
    finally:
        await close_session(session)
    require(
        first is not None and first.first_kept_seq == 4, f"the first cut is the second model turn: {first}"
    )
    marker = stored[-1]
    require(isinstance(marker, Compacted), f"the marker was stored: {marker!r}")
    assert isinstance(marker, Compacted)
    require(
        (marker.first_kept_seq, marker.summary_role) == (4, "user") and marker.tokens_before is not None,
        f"the marker keeps its window fields through the backend: {marker!r}",
    )
    require(decode_event(encode_event(marker)) == marker, "the marker round-trips through the codec")
    require(len(stored) == len(log) + 1, "compaction deletes nothing")
    require(snapshot == project(stored), "snapshot == project(events) with a window marker")
    messages = snapshot.messages
    require(
        messages[0] == UserMessage.from_text(DEFAULT_USER_SUMMARY_PREFIX + "S1"),
        f"the summary is a positional user message: {messages[0]!r}",
    )
    require(
        [type(m) for m in messages[2:]] == [ToolCall, ToolResult] and is_provider_valid(messages),
        f"the window keeps the turn whole (reasoning, call, result): {messages!r}",
    )
    systems = [m for m in messages if isinstance(m, SystemMessage)]
    require(not systems, f"no system item with summary_role='user': {systems}")
    require(second is not None, "a second compaction ran")
    carried = [m for m in model.requests[1].messages if isinstance(m, ToolCall)]
    require(
        [c.call_id for c in carried] == ["c2"],
        "the second summary is asked over the previous window (nothing the model saw is dropped)",
    )
    require(
        after == project(final_log) and is_provider_valid(after.messages), "the second projection is valid"
    )


__all__ = ["check_window_compaction_keeps_recent_turns_and_pairs"]
