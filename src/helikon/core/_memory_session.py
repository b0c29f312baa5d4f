"""`MemorySession`: the in-memory `Session`, for tests and ephemeral runs."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from ._envelope import check_expected_seq, check_ids, partly_stored
from .branches import Branching
from .codec import stored_version, upgrade
from .exceptions import SessionConflict, UnreadableSessionEvent
from .session import (
    ConversationSnapshot,
    Projection,
    SequenceId,
    SessionEntry,
    SessionEvent,
    SessionRecord,
    UnknownEvent,
    event_step,
)


class MemorySession(Branching):
    """An in-memory session: one instance is one conversation's log.

    It keeps the same envelope as the durable backends (an id per event, idempotent
    retries, `expected_seq`) and reads an `UnknownEvent` by the same rules as if it had been
    stored (`helikon.core.codec.upgrade`), so code tested on it behaves the same on them.

    Example:
        ```python
        import asyncio

        from helikon import MemorySession
        from helikon.core.items import TextPart
        from helikon.core.session import UserMessageEvent

        async def main() -> None:
            session = MemorySession()
            await session.append([UserMessageEvent(content=(TextPart(text="hi"),))])
            [(seq, event)] = await session.events()
            assert seq == 0 and (await session.snapshot()).messages[0].text == "hi"

        asyncio.run(main())
        ```
    """

    __slots__ = ("_ids", "_index", "_log", "_projection", "_session_id", "_unreadable")

    def __init__(self, events: Sequence[SessionEvent] = (), *, session_id: str | None = None) -> None:
        self._session_id = session_id if session_id is not None else uuid.uuid4().hex
        self._log: list[SessionEvent] = []
        self._ids: list[str] = []
        self._index: set[str] = set()
        self._unreadable: int | None = None  # the first seq a reader must refuse
        # The running projection of the log: a snapshot folds only the events appended since
        # the last one (the log is append-only), like a durable session's checkpoint + tail.
        self._projection = Projection()
        self._add(list(events), [str(uuid.uuid4()) for _ in events])

    def __len__(self) -> int:
        return len(self._log)

    def __repr__(self) -> str:
        return f"MemorySession({len(self._log)} events)"

    @property
    def session_id(self) -> str:
        """The session's id (a fresh one unless given): what a fork's lineage names."""
        return self._session_id

    async def _sibling(self, session_id: str) -> MemorySession:
        return MemorySession(session_id=session_id)

    async def append(
        self,
        events: Sequence[SessionEvent],
        *,
        ids: Sequence[str] | None = None,
        expected_seq: int | None = None,
    ) -> None:
        """Add `events` to the end of the log (no await inside: atomic on the event loop).

        See `Session.append` for `ids` (idempotent retries) and `expected_seq`.

        Raises:
            SessionConflict: The log does not end at `expected_seq`; nothing was added.
            UserError: Bad `ids` or `expected_seq`, or only some of the `ids` are stored.
        """
        chosen = check_ids(events, ids)
        expected = check_expected_seq(expected_seq)
        if not events:
            return
        if chosen is None:
            chosen = [str(uuid.uuid4()) for _ in events]  # no place to derive one from: a UUID
        else:
            index = self._index
            stored = sum(1 for i in chosen if i in index)
            if stored == len(chosen):
                return  # a retry of an append that went through
            if stored:
                raise partly_stored(None, stored, len(chosen))
        last = len(self._log) - 1
        if expected is not None and expected != last:
            raise SessionConflict(expected_seq=expected, actual_seq=last)
        self._add(list(events), chosen)

    def _add(self, events: list[SessionEvent], ids: list[str]) -> None:
        if self._unreadable is None:
            start = len(self._log)
            for offset, event in enumerate(events):
                if type(event) is UnknownEvent:  # the only kind a reader may refuse
                    try:
                        upgrade(start + offset, event.version, event)
                    except UnreadableSessionEvent:
                        self._unreadable = start + offset  # refused on read, as if stored
                        break
        self._log.extend(events)
        self._ids.extend(ids)
        self._index.update(ids)

    def _check_readable(self) -> None:
        if self._unreadable is not None:
            event = self._log[self._unreadable]
            upgrade(self._unreadable, stored_version(event), event)  # raises UnreadableSessionEvent

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The log after `since` (exclusive), each event with its sequence number.

        Raises:
            UnreadableSessionEvent: The log holds an event this version must not skip.
        """
        self._check_readable()
        start = 0 if since is None else max(since + 1, 0)
        return [SessionEntry(SequenceId(i), e) for i, e in enumerate(self._log[start:], start)]

    async def records(self, since: SequenceId | None = None) -> list[SessionRecord]:
        """The log after `since` (exclusive), each event in its envelope (seq, id, ts, version)."""
        self._check_readable()
        start = 0 if since is None else max(since + 1, 0)
        return [
            SessionRecord(SequenceId(i), self._ids[i], e.ts, stored_version(e), e)
            for i, e in enumerate(self._log[start:], start)
        ]

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log."""
        self._check_readable()
        projection, log = self._projection, self._log
        for index in range(projection.count, len(log)):
            projection.add(event_step(log[index]))
        if projection.stale:  # a rewind reached behind the last compaction: fold the whole log
            projection.refold([event_step(event) for event in log])
        return projection.snapshot()
