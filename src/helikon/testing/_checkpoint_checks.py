"""Conformance checks of projection checkpoints (`helikon.core.session.checkpoint`): O(tail) snapshots.

A backend may keep a checkpoint of its projection so a new session object reads it plus the
tail. Whatever it keeps, `snapshot()` must equal `project(events())` exactly: these checks
read long logs (past several checkpoint intervals, with compaction markers of both kinds,
handoffs and ignorable unknown events) through new session objects at many lengths, and,
where the backend can damage its stored checkpoint, check that a stale, foreign or corrupt
one is ignored and replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helikon.core._internal.json_value import JsonValue
from helikon.core.items import TextPart
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    HandoffOccurred,
    Session,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    UnknownEvent,
    UserMessageEvent,
    project,
)
from helikon.core.session.checkpoint import CHECKPOINT_EVERY

from ._conformance_backend import Damage
from ._conformance_util import new_id

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend

DAMAGES: tuple[Damage, ...] = ("beyond_the_log", "other_projector", "garbage", "other_prefix")


def _fail(message: str) -> AssertionError:
    return AssertionError(message)


async def _close(session: Session) -> None:
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()


def _turn(i: int) -> list[SessionEvent]:
    """One varied turn: every few turns a compaction marker (both kinds), a handoff or an unknown event."""
    text = (TextPart(text=f"turn {i}"),)
    events: list[SessionEvent] = [UserMessageEvent(content=text)]
    if i % 3 == 0:
        events += [
            ToolCalled(call_id=f"c{i}", name="lookup", args={"i": i}),
            ToolReturned(call_id=f"c{i}", content=text, name="lookup"),
        ]
    events.append(AssistantMessageEvent(content=text, agent="a"))
    if i % 7 == 3:
        events.append(HandoffOccurred(from_agent="a", to_agent="b"))
    if i % 11 == 5:
        data: dict[str, JsonValue] = {"type": "ui_note", "ignorable": True, "n": i}
        events.append(UnknownEvent(type="ui_note", data=data, version=2))
    if i % 13 == 6:
        events.append(Compacted(summary=f"summary {i}", original_count=5))
    if i % 17 == 8:
        # Keep-recent window: the summary stands for what came before the last few events.
        events.append(Compacted(summary=f"window {i}", original_count=0, first_kept_seq=-1))
    return events


async def _fill(session: Session, turns: range) -> None:
    for i in turns:
        batch = _turn(i)
        window = batch[-1]
        if isinstance(window, Compacted) and window.first_kept_seq == -1:
            last = len(await session.events()) - 1
            kept = max(last - 4, 0)
            batch[-1] = Compacted(summary=window.summary, original_count=0, first_kept_seq=kept)
        await session.append(batch)


async def _cold_snapshot_matches(backend: ConformanceBackend, sid: str, when: str) -> None:
    """A NEW session object's snapshot (checkpoint + tail) against the projection of the whole log."""
    session = await backend.open(sid)
    try:
        snapshot = await session.snapshot()
        log = [entry.event for entry in await session.events()]
        again = await session.snapshot()
    finally:
        await _close(session)
    if snapshot != project(log):
        raise _fail(f"{when}: a new session object's snapshot() != project(events()) ({len(log)} events)")
    if again != snapshot:
        raise _fail(f"{when}: a second snapshot() of the same object differs")


async def check_checkpoint_plus_tail_is_the_projection(backend: ConformanceBackend) -> None:
    """New session objects read long, compacted logs exactly: checkpoint + tail == project(all events)."""
    sid = new_id("checkpoint")
    writer = await backend.open(sid)
    reader = await backend.open(sid)  # one long-lived reader too: it may write checkpoints
    try:
        turns = 0
        # Past a few checkpoint intervals, read cold at lengths on and off the interval.
        for step in (1, 5, CHECKPOINT_EVERY // 3, CHECKPOINT_EVERY // 2, 3, CHECKPOINT_EVERY, 1, 7):
            await _fill(writer, range(turns, turns + step))
            turns += step
            await _cold_snapshot_matches(backend, sid, f"after {turns} turns")
            if await reader.snapshot() != project([e.event for e in await reader.events()]):
                raise _fail(f"after {turns} turns: a long-lived reader's snapshot() != project(events())")
    finally:
        await _close(writer)
        await _close(reader)


async def check_a_damaged_checkpoint_is_rebuilt(backend: ConformanceBackend) -> None:
    """A stale, foreign or corrupt checkpoint is ignored (never trusted), and replaced by a good one."""
    damage = backend.damage_checkpoint
    if damage is None:
        return
    for how in DAMAGES:
        sid = new_id(f"checkpoint-{how}")
        writer = await backend.open(sid)
        try:
            await _fill(writer, range(CHECKPOINT_EVERY))  # several events a turn: past one interval
        finally:
            await _close(writer)
        await _cold_snapshot_matches(backend, sid, f"{how}: before the damage")  # writes a checkpoint
        if not await damage(sid, how):
            raise _fail(f"{how}: no checkpoint was stored after {CHECKPOINT_EVERY} turns were read")
        await _cold_snapshot_matches(backend, sid, f"{how}: reading past the damaged checkpoint")
        await _cold_snapshot_matches(backend, sid, f"{how}: after the rebuild")
        writer = await backend.open(sid)
        try:
            await _fill(writer, range(CHECKPOINT_EVERY, CHECKPOINT_EVERY + 3))
        finally:
            await _close(writer)
        await _cold_snapshot_matches(backend, sid, f"{how}: after appends past the rebuilt checkpoint")
