"""Branches: rewind a session, switch between its branches, fork it into a new session.

A session's log is append-only, so going back never deletes anything. `rewind(to_seq)`
appends a `Rewound` marker: the conversation (`snapshot()`) is again what it was at
`to_seq`, and the events after it stay in `events()` as an abandoned branch. New events
grow a new branch from `to_seq`. `branches()` lists every branch with its last event, and
rewinding to a branch's `head_seq` switches to it. `fork(at_seq)` copies events
`0..at_seq` (same seqs, same ids) into a new session and appends a `Forked` marker naming
the parent: the two then grow independently.

Both refuse a cut inside an open turn (after a tool call, before its result): the
conversation there is not one a provider accepts. Both take `expected_seq`, as `append`
does: a caller that chose the point from an earlier read gets `SessionConflict` if another
writer appended since, instead of silently cutting that writer's events off the branch.

Every backend (`MemorySession`, SQLite, PostgreSQL, Redis) has these methods, from
`Branching`; they are built on `append`, `events` and `records` alone.

Example:
    ```python
    import asyncio

    from helikon import MemorySession, TextPart, UserMessageEvent

    def say(text: str) -> UserMessageEvent:
        return UserMessageEvent(content=(TextPart(text=text),))

    async def main() -> None:
        session = MemorySession()
        await session.append([say("plan a trip"), say("to Oslo")])
        await session.rewind(0)                       # take "to Oslo" back
        await session.append([say("to Lisbon")])
        assert [m.text for m in (await session.snapshot()).messages] == ["plan a trip", "to Lisbon"]
        assert len(await session.events()) == 4       # nothing deleted: 3 events and the marker
        old = next(b for b in await session.branches() if not b.active)
        await session.rewind(old.head_seq)            # switch back to the Oslo branch
        fork = await session.fork(1)                  # a new session from "to Oslo"
        assert [m.text for m in (await fork.snapshot()).messages] == ["plan a trip", "to Oslo"]

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import uuid
from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Self

from .._internal.carrier import carrier
from ..exceptions import SessionConflict, UserError
from ..items import ReasoningPart, ToolUsePart
from . import (
    AssistantMessageEvent,
    Forked,
    Rewound,
    SequenceId,
    Session,
    SessionEvent,
    SessionRecord,
    ToolCalled,
    ToolReturned,
    active_path,
)
from ._envelope import check_expected_seq


@carrier
class Branch:
    """One branch of a session's log, as `branches()` lists it.

    `head_seq` is its last event (rewind to it to switch to this branch; -1: an empty
    branch before the first event), `base_seq` the event it grew from (where it leaves
    the branch it shares history with; -1: from the start), `length` the number of
    events on it from the start of the log, markers included. `active` is the branch
    `snapshot()` projects; `updated` its last event's timestamp.
    """

    head_seq: int
    base_seq: int
    length: int
    active: bool
    updated: datetime | None = None


@carrier
class Lineage:
    """Where a forked session came from: the parent session and the seq it was forked at."""

    from_session: str
    at_seq: int


def head_of(events: Sequence[SessionEvent]) -> int:
    """The seq of the last event on the current branch (-1: the branch is empty)."""
    index = len(events) - 1
    while index >= 0:
        event = events[index]
        if not isinstance(event, Rewound):
            break
        index = min(event.to_seq, index - 1)
    return max(index, -1)


def _parents(events: Sequence[SessionEvent]) -> tuple[dict[int, int], int]:
    """Each event's parent (the head when it was appended; markers excluded) and the head now."""
    parents: dict[int, int] = {}
    heads: list[int] = []  # the head after each event
    head = -1
    for index, event in enumerate(events):
        if isinstance(event, Rewound):
            target = min(max(event.to_seq, -1), index - 1)
            head = heads[target] if target >= 0 else -1
        else:
            parents[index] = head
            head = index
        heads.append(head)
    return parents, head


def event_parents(events: Sequence[SessionEvent]) -> tuple[dict[int, int], int]:
    """Each event's parent seq (-1: the start; markers have none), and the active branch's head.

    The events of a log form a tree: an event's parent is the head when it was appended,
    which a `Rewound` marker moves back. A UI draws the tree from these.
    """
    return _parents(events)


def list_branches(events: Sequence[SessionEvent]) -> list[Branch]:
    """The branches of a log (see `Branch`), the active one first, then the newest first."""
    parents, head = _parents(events)
    children: dict[int, int] = {}
    for parent in parents.values():
        children[parent] = children.get(parent, 0) + 1
    has_children = set(children)
    heads = [index for index in parents if index not in has_children]
    if head not in heads:  # rewound, nothing appended since: an empty new branch grows from `head`
        heads.append(head)
        children[head] = children.get(head, 0) + 1
    branches: list[Branch] = []
    for leaf in heads:
        length, node = 0, leaf
        while node >= 0:
            length += 1
            node = parents[node]
        # A leaf's own events go back to the nearest fork point; the empty branch grows from the head.
        base = parents[leaf] if leaf in parents and leaf not in has_children else leaf
        while base >= 0 and children.get(base, 0) < 2:
            base = parents[base]
        updated = events[leaf].ts if leaf >= 0 else None
        branches.append(
            Branch(head_seq=leaf, base_seq=base, length=length, active=leaf == head, updated=updated)
        )
    branches.sort(key=lambda b: (not b.active, -b.head_seq))
    return branches


def open_calls_at(events: Sequence[SessionEvent], seq: int) -> list[str]:
    """The tool calls without a result on the branch ending at `seq` (a cut there is inside a turn)."""
    prefix = events[: seq + 1]
    pending: dict[str, None] = {}
    for index in active_path(prefix):
        event = prefix[index]
        if isinstance(event, ToolCalled):
            pending[event.call_id] = None
        elif isinstance(event, AssistantMessageEvent):
            for part in event.content:
                if isinstance(part, ToolUsePart):
                    pending[part.call_id] = None
        elif isinstance(event, ToolReturned):
            pending.pop(event.call_id, None)
    return list(pending)


def _check_cut(what: str, events: Sequence[SessionEvent], seq: object, lowest: int) -> int:
    last = len(events) - 1
    if isinstance(seq, bool) or not isinstance(seq, int) or not lowest <= seq <= last:
        raise UserError(f"{what}({seq!r}): give the seq of an event in the log, {lowest}..{last}")
    if seq >= 0 and isinstance(events[seq], Rewound):
        raise UserError(
            f"{what}({seq}): seq {seq} is a rewind marker, not a point in the conversation; "
            f"use the seq it rewound to ({head_of(events[: seq + 1])})"
        )
    problem = cut_problem(events, seq)
    if problem:
        raise UserError(f"{what}({seq}) would cut inside an open turn: {problem}")
    return seq


def cut_problem(events: Sequence[SessionEvent], seq: int) -> str | None:
    """Why the conversation cannot end at `seq` (inside a turn), or None when it can."""
    dangling = open_calls_at(events, seq)
    if dangling:
        return (
            f"tool call {dangling[0]!r} has no result by then. "
            "Pick a seq before the call or after its result."
        )
    last = events[seq] if seq >= 0 else None
    if (
        isinstance(last, AssistantMessageEvent)
        and last.content
        and all(isinstance(part, ReasoningPart) for part in last.content)
    ):
        return (
            f"seq {seq} is the model's reasoning, which travels with the call or answer after it. "
            "Pick the seq before it or after that answer."
        )
    return None


class Branching(Session):
    """`rewind`, `branches`, `fork` and `lineage`, mixed into a `Session`, built on its reads and writes.

    A backend subclasses it beside its store's code: it brings the `Session` protocol (the
    three methods and the two flags) and, for the branches, `session_id`, `records` and
    `_sibling`, which this mixin asks for.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def session_id(self) -> str:
        """The session's id."""

    @abstractmethod
    async def records(self, since: SequenceId | None = None) -> list[SessionRecord]:
        """The log with its whole envelope (see `SessionRecord`)."""

    @abstractmethod
    async def _sibling(self, session_id: str) -> Self:
        """A session with id `session_id` in the same store as this one."""

    async def rewind(self, to_seq: int, *, expected_seq: int | None = None) -> None:
        """Move the head back to `to_seq` (-1: to before the first event), deleting nothing.

        Also switches branches: rewind to another branch's `head_seq` (see `branches`).

        Args:
            to_seq: The event the conversation ends at again.
            expected_seq: The seq of the last event the caller read when it chose `to_seq`.
                If another writer appended since, nothing is written (`SessionConflict`), so
                their events stay on the active branch. Without it, the rewind applies to
                the log as it reads it now. The marker's id derives from where it goes, so
                retrying with the same arguments after a timeout is a no-op.

        Raises:
            UserError: `to_seq` is not in the log, is a rewind marker, or cuts between a
                tool call and its result.
            SessionConflict: The log no longer ends at `expected_seq` (or, without it, another
                writer appended while this call ran); nothing was written.
        """
        expected = check_expected_seq(expected_seq)
        events = [entry.event for entry in await self.events()]
        last = len(events) - 1 if expected is None else expected
        _check_cut("rewind", events[: last + 1], to_seq, -1)  # the log as the caller saw it
        # Named after the session and the seq it is written at: a retry finds it, and a fork's
        # copy of it (same seq, another session) is not taken for this caller's.
        marker_id = f"helikon-rewound-{self.session_id}-{last + 1}"
        await self.append([Rewound(to_seq=to_seq)], ids=[marker_id], expected_seq=last)

    async def branches(self) -> list[Branch]:
        """Every branch of the log, the active one first (reads the whole log)."""
        return list_branches([entry.event for entry in await self.events()])

    async def fork(
        self, at_seq: int, *, session_id: str | None = None, expected_seq: int | None = None
    ) -> Self:
        """A new session holding this one's events `0..at_seq`, then a `Forked` marker.

        The copy keeps seqs and ids, so the two share that history; each grows on its own
        afterwards. Retrying a fork with the same `session_id` is a no-op.

        Args:
            at_seq: The last event to share (its branch is the fork's conversation).
            session_id: The new session's id; default: a fresh one.
            expected_seq: The seq of the last event the caller read when it chose `at_seq`:
                if this session's log no longer ends there, nothing is written
                (`SessionConflict`), unless `session_id` holds this very fork already (a retry).

        Raises:
            UserError: `at_seq` is not in the log or cuts inside a turn, or `session_id`
                already holds another log.
            SessionConflict: This session's log does not end at `expected_seq`.
        """
        expected = check_expected_seq(expected_seq)
        records = await self.records()
        last = len(records) - 1 if expected is None else expected
        events = [record.event for record in records[: last + 1]]  # the log as the caller saw it
        _check_cut("fork", events, at_seq, 0)
        new_id = session_id if session_id is not None else f"{self.session_id}~{uuid.uuid4().hex[:12]}"
        if not isinstance(new_id, str) or not new_id or new_id == self.session_id:
            raise UserError(f"fork(session_id={session_id!r}): give a new, non-empty session id")
        shared = records[: at_seq + 1]
        marker = Forked(from_session=self.session_id, at_seq=at_seq)
        ids = [*(r.id for r in shared), f"helikon-forked-{self.session_id}-{at_seq}"]
        child = await self._sibling(new_id)
        try:
            if last != len(records) - 1 and [r.id for r in await child.records()] != ids:
                # The log moved since the caller read it, and this is not a retry of a fork
                # that went through then.
                raise SessionConflict(
                    expected_seq=last, actual_seq=len(records) - 1, session_id=self.session_id
                )
            try:
                await child.append([*(r.event for r in shared), marker], ids=ids, expected_seq=-1)
            except SessionConflict:
                raise UserError(
                    f"fork: session {new_id!r} exists already; choose another session_id"
                ) from None
        except BaseException:
            await _close(child)
            raise
        set_metadata = getattr(child, "set_metadata", None)
        if set_metadata is not None:  # lineage where a listing shows it (the log has it anyway)
            await set_metadata(metadata={"forked_from": self.session_id, "forked_at_seq": at_seq})
        return child

    async def lineage(self) -> list[Lineage]:
        """The forks this session descends from, oldest first (empty for an original session)."""
        return [
            Lineage(from_session=entry.event.from_session, at_seq=entry.event.at_seq)
            for entry in await self.events()
            if isinstance(entry.event, Forked)
        ]


async def _close(session: Any) -> None:
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()


__all__ = [
    "Branch",
    "Branching",
    "Lineage",
    "cut_problem",
    "event_parents",
    "head_of",
    "list_branches",
    "open_calls_at",
]
