"""Conformance checks for compaction over any backend: the keep-recent window, and tool turns kept whole.

Same shape as the checks of `helikon.testing.session_conformance` (`async def
check_x(backend) -> None`, raising `AssertionError` with a readable message), so the suite
can list them beside its own. `random_log` builds the random logs the second one reads (and
helikon's own property test draws).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from helikon.core.conversation_check import is_provider_valid
from helikon.core.items import (
    ContentPart,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UserMessage,
)
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    HandoffOccurred,
    Rewound,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
    _log_cache,
    active_path,
    project,
)
from helikon.core.session.branches import open_calls_at
from helikon.core.session.codec import decode_event, encode_event
from helikon.core.session.compaction import DEFAULT_USER_SUMMARY_PREFIX, CompactingSession

from ._conformance_util import close_session, new_id, require, user_event
from ._mock_model import MockModel
from ._scripts import text_turn

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend


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


Choose = Callable[[int, int], int]
"""`choose(lo, hi)`: a whole number from `lo` to `hi`, both included (`random.Random.randint`, a draw)."""


class _LogBuilder:
    """Builds a random log turn by turn, with compaction markers dropped in anywhere."""

    def __init__(self, choose: Choose) -> None:
        self.choose = choose
        self.log: list[SessionEvent] = []
        self.cuts = [-1]  # seqs where no turn is open: where a rewind may go back to
        self.serial = 0

    def _text(self, kind: str) -> tuple[ContentPart, ...]:
        self.serial += 1  # every message distinct, so a test can tell which one it sees
        return (TextPart(text=f"{kind} {self.serial}"),)

    def add(self, events: list[SessionEvent]) -> None:
        """Append a turn's events, each perhaps after a `Compacted` marker (inside the turn too)."""
        for event in events:
            if self.choose(0, 4) == 0:
                self.log.append(self.marker())
            self.log.append(event)
        if events:
            self.cuts.append(len(self.log) - 1)

    def marker(self) -> Compacted:
        """A marker as any writer may leave one: any count, a window edge or none, either role."""
        index = len(self.log)
        first_kept = None if self.choose(0, 2) else self.choose(-1, index + 1)
        role: Literal["system", "user"] = "user" if self.choose(0, 1) else "system"
        return Compacted(
            summary=f"summary at {index}",
            original_count=self.choose(0, index + 1),
            first_kept_seq=first_kept,
            summary_role=role,
        )

    def tool_turn(self) -> list[SessionEvent]:
        """Reasoning or not, 1-3 (parallel) calls as items or as parts, their results in any order."""
        choose = self.choose
        ids = [f"call-{self.serial}-{i}" for i in range(choose(1, 3))]
        self.serial += 1
        reasoning = choose(0, 1) == 1
        events: list[SessionEvent] = []
        if choose(0, 1):  # Anthropic-style: the calls are parts of one assistant message
            parts: list[ContentPart] = [ReasoningPart(text="thinking", signature="sig")] if reasoning else []
            parts += [ToolUsePart(call_id=i, name="lookup", args={"q": i}) for i in ids]
            events.append(AssistantMessageEvent(content=tuple(parts), agent="a"))
        else:
            if reasoning:
                events.append(
                    AssistantMessageEvent(content=(ReasoningPart(text="thinking", signature="sig"),))
                )
            events += [ToolCalled(call_id=i, name="lookup", args={"q": i}) for i in ids]
        turn = choose(0, len(ids) - 1)
        for call_id in ids[turn:] + ids[:turn]:
            events.append(ToolReturned(call_id=call_id, content=self._text("result"), name="lookup"))
        return events

    def turn(self) -> None:
        """One random turn: a user message, an answer, a tool turn, audit markers, or a rewind."""
        kind = self.choose(0, 6)
        if kind == 0:
            self.add([UserMessageEvent(content=self._text("user"))])
        elif kind == 1:
            self.add([AssistantMessageEvent(content=self._text("answer"), agent="a")])
        elif kind in (2, 3):
            self.add(self.tool_turn())
        elif kind == 4:
            run = f"run-{self.serial}"
            self.serial += 1
            self.add(
                [
                    TurnOpened(run_id=run),
                    HandoffOccurred(from_agent="a", to_agent="b"),
                    TurnClosed(run_id=run),
                ]
            )
        elif kind == 5:  # back to where no turn was open, on this branch or an abandoned one
            self.log.append(Rewound(to_seq=self.cuts[self.choose(0, len(self.cuts) - 1)]))
        else:
            self.log.append(self.marker())


def random_log(choose: Choose, turns: int) -> list[SessionEvent]:
    """A random log of `turns` turns, as a session may hold one, markers of any writer included.

    User messages, answers, tool turns (reasoning, parallel calls as items or parts, results
    in any order), audit markers, rewinds to where no turn was open, and `Compacted` markers
    of any count, window edge and role anywhere, inside tool turns too. Every tool call has
    its result in the log: only markers fall between them.
    """
    builder = _LogBuilder(choose)
    for _ in range(turns):
        builder.turn()
    return builder.log


def settled(events: list[SessionEvent]) -> bool:
    """Whether no turn is open at the end of the current branch (no call or reasoning waits)."""
    if open_calls_at(events, len(events) - 1):
        return False
    for index in reversed(active_path(events)):
        event = events[index]
        if isinstance(event, AssistantMessageEvent):
            return not (event.content and all(isinstance(p, ReasoningPart) for p in event.content))
        if isinstance(event, UserMessageEvent | ToolCalled | ToolReturned):
            return True
    return True


async def _new_objects_read(backend: ConformanceBackend, sid: str, expected: object, when: str) -> None:
    """New session objects read the log alike: continuing this process's projection, and cold."""
    for path in ("continuing another object's projection", "cold (checkpoint and tail)"):
        if path.startswith("cold"):
            _log_cache.WARM.clear()  # only an optimization: forgetting it forces the checkpoint path
        session = await backend.open(sid)
        try:
            snapshot = await session.snapshot()
        finally:
            await close_session(session)
        require(snapshot == expected, f"{when}: a new object's snapshot ({path}) != project(events())")


async def check_compaction_keeps_tool_turns_whole(backend: ConformanceBackend) -> None:
    """Random logs with compaction markers anywhere (inside tool turns too) read exactly as `project`.

    Through every read path of `backend` (the same object as the log grows, a new object that
    continues another's projection, a new object from the stored checkpoint) the snapshot is
    `project(events)`, and it is provider-valid whenever no turn is open: a summary never
    parts a tool call from its result. One log runs past several checkpoint intervals.
    """
    for seed in range(10):
        rng = random.Random(seed)
        log = random_log(rng.randint, 160 if seed == 0 else rng.randint(5, 30))
        sid = new_id(f"whole-turns-{seed}")
        session = await backend.open(sid)
        try:
            written = 0
            while written < len(log):
                batch = log[written : written + rng.randint(1, 8)]
                await session.append(batch)
                written += len(batch)
                expected = project(log[:written])
                when = f"seed {seed}, after {written} of {len(log)} events"
                require(await session.snapshot() == expected, f"{when}: snapshot() != project(events())")
                if settled(log[:written]):
                    require(is_provider_valid(expected.messages), f"{when}: not provider-valid")
                if rng.randint(0, 3) == 0 or written == len(log):
                    await _new_objects_read(backend, sid, expected, when)
        finally:
            await close_session(session)


__all__ = [
    "Choose",
    "check_compaction_keeps_tool_turns_whole",
    "check_window_compaction_keeps_recent_turns_and_pairs",
    "random_log",
    "settled",
]
