"""Conformance checks for branches: rewind, listing and switching branches, fork (`core.session.branches`)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from helikon.core.exceptions import SessionConflict, UserError
from helikon.core.items import TextPart
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    Forked,
    Rewound,
    Session,
    ToolCalled,
    ToolReturned,
    project,
)
from helikon.core.session.branches import Branching
from helikon.core.session.checkpoint import CHECKPOINT_EVERY

from ._conformance_util import close_session, require, user_event

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend


def _reply(text: str) -> AssistantMessageEvent:
    return AssistantMessageEvent(content=(TextPart(text=text),), agent="a")


def _said(snapshot_messages: Any) -> list[str]:
    return [getattr(m, "text", "") or m.type for m in snapshot_messages]


async def _branching(open_: Callable[[str], Awaitable[Session]], session_id: str) -> Branching:
    session = await open_(session_id)
    if not isinstance(session, Branching):
        await close_session(session)
        raise AssertionError(
            f"{session!r} has no rewind/branches/fork: subclass helikon.core.session.branches.Branching"
        )
    return session


async def _conversation(open_: Callable[[str], Awaitable[Session]], session_id: str) -> list[str]:
    """What a new session object for `session_id` projects (and that it equals `project(events())`)."""
    session = await open_(session_id)
    try:
        said = _said((await session.snapshot()).messages)
        full = _said(project([e.event for e in await session.events()]).messages)
    finally:
        await close_session(session)
    require(said == full, f"snapshot() {said} differs from project(events()) {full}")
    return said


async def check_rewind_survives_reopening(backend: ConformanceBackend) -> None:
    """`rewind` moves the head back without deleting; a new object (and `project`) sees the same."""
    sid = f"conformance-rewind-{uuid.uuid4().hex[:12]}"
    session = await _branching(backend.open, sid)
    try:
        await session.append([user_event("u0"), _reply("a0"), user_event("u1"), _reply("a1")])
        await session.rewind(1)
        await session.append([user_event("u2")])
        said = _said((await cast("Session", session).snapshot()).messages)
        require(said == ["u0", "a0", "u2"], f"after rewind(1) the conversation is {said}")
        kinds = [e.event.type for e in await session.events()]
        require(len(kinds) == 6 and kinds[4] == "rewound", f"the log must keep everything: {kinds}")
        try:
            await session.rewind(99)
        except UserError:
            pass
        else:
            raise AssertionError("rewind past the end of the log must be refused")
    finally:
        await close_session(session)
    require(
        await _conversation(backend.open, sid) == ["u0", "a0", "u2"], "a reopened session lost the rewind"
    )
    said = await _conversation(backend.open, sid)
    require(said == ["u0", "a0", "u2"], f"a reopened session lost the rewind: {said}")


async def check_branches_are_listed_and_switched(backend: ConformanceBackend) -> None:
    """`branches()` lists every branch; rewinding to a branch's head switches to it, also after reopening."""
    sid = f"conformance-branches-{uuid.uuid4().hex[:12]}"
    session = await _branching(backend.open, sid)
    try:
        await session.append([user_event("q"), _reply("first answer")])
        await session.rewind(0)
        await session.append([_reply("second answer")])
        branches = await session.branches()
        listed = [(b.head_seq, b.base_seq, b.active) for b in branches]
        require(listed == [(3, 0, True), (1, 0, False)], f"branches() listed {listed}")
        await session.rewind(branches[1].head_seq)
    finally:
        await close_session(session)
    require(await _conversation(backend.open, sid) == ["q", "first answer"], "switching to the first branch")
    again = await _branching(backend.open, sid)
    try:
        listed = [(b.head_seq, b.active) for b in await again.branches()]
        require(listed == [(1, True), (3, False)], f"after switching, a new object lists {listed}")
        await again.rewind(-1)  # an empty branch before the first event
        require(
            _said((await cast("Session", again).snapshot()).messages) == [],
            "rewind(-1) empties the conversation",
        )
        require((await again.branches())[0].head_seq == -1, "the empty branch is the active one")
    finally:
        await close_session(again)


async def check_a_rewind_behind_a_compaction_and_a_checkpoint(backend: ConformanceBackend) -> None:
    """A rewind to before a compaction marker and a stored checkpoint still projects the branch, fully."""
    sid = f"conformance-rewind-far-{uuid.uuid4().hex[:12]}"
    count = CHECKPOINT_EVERY + 20
    session = await _branching(backend.open, sid)
    try:
        await session.append([user_event(f"m{i}") for i in range(count)])
        await session.append([Compacted(summary="all of it", original_count=count)])
        await cast("Session", session).snapshot()  # a reader writes a checkpoint past the marker
        await session.append([user_event("after")])
    finally:
        await close_session(session)
    require(await _conversation(backend.open, sid) == ["all of it", "after"], "the compaction")
    session = await _branching(backend.open, sid)
    try:
        await session.rewind(4)
    finally:
        await close_session(session)
    said = await _conversation(backend.open, sid)  # a new object: checkpoint, then the marker behind it
    require(said == [f"m{i}" for i in range(5)], f"rewind(4) behind the compaction projects {said[:8]}")


async def check_fork_is_isolated(backend: ConformanceBackend) -> None:
    """`fork` shares history up to `at_seq` (same seqs and ids), records lineage; then each grows alone."""
    sid = f"conformance-fork-{uuid.uuid4().hex[:12]}"
    parent = await _branching(backend.open, sid)
    try:
        await parent.append([user_event("u0"), _reply("a0"), user_event("u1"), _reply("a1")])
        child = await parent.fork(1, session_id=f"{sid}-child")
        try:
            require(child.session_id == f"{sid}-child", "the fork has the id asked for")
            shared, copied = (await parent.records())[:2], (await child.records())[:2]
            require(
                [(r.seq, r.id, r.event) for r in shared] == [(r.seq, r.id, r.event) for r in copied],
                "the fork's events 0..at_seq must be the parent's, with the same seqs and ids",
            )
            marker = (await child.events())[-1].event
            require(
                isinstance(marker, Forked) and (marker.from_session, marker.at_seq) == (sid, 1),
                f"the fork's last event must be its lineage marker, not {marker!r}",
            )
            require([(x.from_session, x.at_seq) for x in await child.lineage()] == [(sid, 1)], "lineage")
            await child.append([user_event("only in the fork")])
            await parent.append([user_event("only in the parent")])
            again = await parent.fork(1, session_id=f"{sid}-child")  # a retry: a no-op
            await close_session(again)
        finally:
            await close_session(child)
        try:
            await parent.fork(2, session_id=f"{sid}-child")
        except UserError:
            pass
        else:
            raise AssertionError("forking into a session id that holds another log must be refused")
    finally:
        await close_session(parent)
    require(
        await _conversation(backend.open, f"{sid}-child") == ["u0", "a0", "only in the fork"],
        "the reopened fork",
    )
    require(
        await _conversation(backend.open, sid) == ["u0", "a0", "u1", "a1", "only in the parent"],
        "the parent after the fork",
    )


async def _conflicts(attempt: Awaitable[object], what: str, expected: int, actual: int) -> None:
    try:
        await attempt
    except SessionConflict as conflict:
        found = (conflict.expected_seq, conflict.actual_seq)
        require(found == (expected, actual), f"{what}: the conflict says {found}, not {(expected, actual)}")
    else:
        raise AssertionError(f"{what} on a log ending at {actual} must raise SessionConflict")


async def check_rewind_and_fork_with_a_stale_expected_seq_change_nothing(backend: ConformanceBackend) -> None:
    """Two writers: one picks a rewind point, the other appends; a stale `expected_seq` changes nothing.

    Without it, the rewind would re-read the log and silently take the other writer's event
    off the active branch. With the right one, rewind and fork go through, and a retry of
    either is a no-op.
    """
    sid = f"conformance-rewind-race-{uuid.uuid4().hex[:12]}"
    mine, other = await _branching(backend.open, sid), await _branching(backend.open, sid)
    child_id = f"{sid}-child"
    try:
        await mine.append([user_event("u0"), _reply("a0"), user_event("u1"), _reply("a1")])
        seen = (await mine.events())[-1].seq  # 3: `mine` decides to go back to seq 1 from here
        await other.append([user_event("the other writer's")])  # seq 4, meanwhile
        await _conflicts(mine.rewind(1, expected_seq=seen), "rewind(1, expected_seq=3)", 3, 4)
        await _conflicts(
            mine.fork(1, session_id=child_id, expected_seq=seen), "fork(1, expected_seq=3)", 3, 4
        )
        require(len(await mine.events()) == 5, "a stale rewind must write nothing")
        said = _said((await cast("Session", other).snapshot()).messages)
        require(said[-1] == "the other writer's", f"the other writer's event left the conversation: {said}")
        await mine.rewind(1, expected_seq=4)
        await mine.rewind(1, expected_seq=4)  # a retry (say, after a timeout): stored once
        kinds = [e.event.type for e in await mine.events()]
        require(kinds.count("rewound") == 1, f"a retried rewind must be stored once: {kinds}")
        await _conflicts(mine.rewind(0, expected_seq=4), "another rewind(0, expected_seq=4)", 4, 5)
        fork = await mine.fork(1, session_id=child_id, expected_seq=5)
        await close_session(fork)
        again = await mine.fork(1, session_id=child_id, expected_seq=5)  # a retry: a no-op
        await close_session(again)
        await other.append([user_event("later")])
        again = await mine.fork(1, session_id=child_id, expected_seq=5)  # a retry after the parent moved
        await close_session(again)
    finally:
        await close_session(mine)
        await close_session(other)
    require(await _conversation(backend.open, sid) == ["u0", "a0", "later"], "the parent after the rewind")
    require(await _conversation(backend.open, child_id) == ["u0", "a0"], "the fork")
    child = await backend.open(child_id)
    try:
        require(len(await child.events()) == 3, "a retried fork must be stored once")
    finally:
        await close_session(child)


async def check_cuts_inside_a_turn_are_refused(backend: ConformanceBackend) -> None:
    """Neither `fork` nor `rewind` may cut between a tool call and its result; nothing is written."""
    sid = f"conformance-cut-{uuid.uuid4().hex[:12]}"
    session = await _branching(backend.open, sid)
    try:
        await session.append(
            [
                user_event("weather?"),
                ToolCalled(call_id="c1", name="weather", args={}),
                ToolReturned(call_id="c1", content=(TextPart(text="sunny"),), name="weather"),
                _reply("sunny"),
            ]
        )
        for attempt in (session.rewind, session.fork):
            try:
                await attempt(1)
            except UserError as exc:
                require("open turn" in str(exc), f"the error must say why: {exc}")
            else:
                raise AssertionError(f"{attempt.__name__}(1) cuts inside a turn and must be refused")
        require(len(await session.events()) == 4, "a refused cut must write nothing")
        await session.rewind(2)  # right after the result: a valid cut
        kinds = [e.event for e in await session.events()]
        require(isinstance(kinds[-1], Rewound), "rewind(2) is written")
    finally:
        await close_session(session)


BRANCH_CHECKS = (
    check_rewind_survives_reopening,
    check_branches_are_listed_and_switched,
    check_a_rewind_behind_a_compaction_and_a_checkpoint,
    check_fork_is_isolated,
    check_cuts_inside_a_turn_are_refused,
    check_rewind_and_fork_with_a_stale_expected_seq_change_nothing,
)

__all__ = [
    "BRANCH_CHECKS",
    "check_a_rewind_behind_a_compaction_and_a_checkpoint",
    "check_branches_are_listed_and_switched",
    "check_cuts_inside_a_turn_are_refused",
    "check_fork_is_isolated",
    "check_rewind_and_fork_with_a_stale_expected_seq_change_nothing",
    "check_rewind_survives_reopening",
]
