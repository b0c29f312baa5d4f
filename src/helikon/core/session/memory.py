"""`MemorySession`: the in-memory `Session`, for tests and ephemeral runs; `MemoryStore`: many by id."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from .._internal.json_value import JsonValue
from ..exceptions import MetadataConflict, SessionConflict, UnreadableSessionEvent, UserError
from . import (
    ConversationSnapshot,
    Projection,
    SequenceId,
    SessionEntry,
    SessionEvent,
    SessionInfo,
    SessionMetadata,
    SessionRecord,
    UnknownEvent,
    event_step,
)
from ._envelope import (
    MetadataFilter,
    check_expected_seq,
    check_expected_version,
    check_filter,
    check_ids,
    check_page,
    matches,
    metadata_json,
    retry_plan,
)
from .branches import Branching
from .codec import encode_event, stored_version, upgrade


class MemorySession(Branching):
    """An in-memory session: one instance is one conversation's log.

    It keeps the same envelope as the durable backends (an id per event, idempotent
    retries, `expected_seq`) and reads an `UnknownEvent` by the same rules as if it had been
    stored (`helikon.core.session.codec.upgrade`), so code tested on it behaves the same on them.

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

    durable = False  # its runs are written when they end: the log goes with the process anyway
    supports_ids = True

    __slots__ = (
        "_created",
        "_ids",
        "_index",
        "_log",
        "_metadata",
        "_projection",
        "_session_id",
        "_store",
        "_title",
        "_unreadable",
        "_updated",
        "_version",
    )

    def __init__(
        self,
        events: Sequence[SessionEvent] = (),
        *,
        session_id: str | None = None,
        store: MemoryStore | None = None,
    ) -> None:
        self._session_id = session_id if session_id is not None else uuid.uuid4().hex
        self._store = store
        self._title: str | None = None
        self._metadata: dict[str, JsonValue] = {}
        self._version = 0
        self._created: datetime | None = None
        self._updated: datetime | None = None
        self._log: list[SessionEvent] = []
        self._ids: list[str] = []
        self._index: dict[str, int] = {}  # each id's seq
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
        if self._store is not None:
            return await self._store.open(session_id)
        return MemorySession(session_id=session_id)

    async def set_metadata(
        self,
        *,
        title: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        expected_version: int | None = None,
    ) -> None:
        """Set the title and/or metadata `MemoryStore.list_sessions` shows (None: leave it as it is).

        With `expected_version` (what `metadata()` read), write only if no one wrote since.

        Raises:
            MetadataConflict: The metadata is at another version than `expected_version`.
        """
        if title is not None and not isinstance(title, str):
            raise UserError(f"title must be a string or None, not {title!r}")
        text = metadata_json(metadata)  # the same checks as the durable stores
        expected = check_expected_version(expected_version)
        if expected is not None and expected != self._version:
            raise MetadataConflict(
                expected_version=expected, actual_version=self._version, session_id=self._session_id
            )
        if title is not None:
            self._title = title
        if text is not None:
            self._metadata = json.loads(text)
        self._version += 1
        self._created = self._created or datetime.now(UTC)

    async def metadata(self) -> SessionMetadata:
        """The session's title, metadata and their version (see `SessionMetadata`)."""
        return SessionMetadata(title=self._title, metadata=dict(self._metadata), version=self._version)

    def info(self) -> SessionInfo | None:
        """How a store lists this session (None until it has events or metadata)."""
        if self._created is None:
            return None
        return SessionInfo(
            session_id=self._session_id,
            created=self._created,
            updated=self._updated or self._created,
            event_count=len(self._log),
            title=self._title,
            metadata=dict(self._metadata),
        )

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
            SessionConflict: The log does not end at `expected_seq` (its own stored events of
                this batch aside); nothing was added.
            UserError: Bad `ids` or `expected_seq`, or an id stored with other content.
        """
        chosen = check_ids(events, ids)
        expected = check_expected_seq(expected_seq)
        if not events:
            return
        last = len(self._log) - 1
        if chosen is None:
            chosen = [str(uuid.uuid4()) for _ in events]  # no place to derive one from: a UUID
        else:
            index, log = self._index, self._log
            stored = {i: (index[i], encode_event(log[index[i]])) for i in chosen if i in index}
            if stored:  # a retry: write only what its earlier attempts did not
                payloads = [encode_event(event) for event in events]
                rest = retry_plan(None, payloads, chosen, stored, last, expected)
                self._add([events[k] for k in rest], [chosen[k] for k in rest])
                return
        if expected is not None and expected != last:
            raise SessionConflict(expected_seq=expected, actual_seq=last)
        self._add(list(events), chosen)

    def _add(self, events: list[SessionEvent], ids: list[str]) -> None:
        start = len(self._log)
        if self._unreadable is None:
            for offset, event in enumerate(events):
                if type(event) is UnknownEvent:  # the only kind a reader may refuse
                    try:
                        upgrade(start + offset, event.version, event)
                    except UnreadableSessionEvent:
                        self._unreadable = start + offset  # refused on read, as if stored
                        break
        self._log.extend(events)
        self._ids.extend(ids)
        self._index.update(zip(ids, range(start, start + len(ids)), strict=True))
        if events:
            self._updated = datetime.now(UTC)
            self._created = self._created or self._updated

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


class MemoryStore:
    """Many `MemorySession`s by id, in this process: a durable store's shape without the durability.

    `open(session_id)` returns the same session object for the same id; `list_sessions`
    lists them as the durable stores do (most recently updated first); a fork of one of its
    sessions lands in it.

    Example:
        ```python
        import asyncio

        from helikon import MemoryStore, TextPart, UserMessageEvent

        async def main() -> None:
            store = MemoryStore()
            session = await store.open("trip")
            await session.append([UserMessageEvent(content=(TextPart(text="hi"),))])
            await session.set_metadata(title="Trip")
            assert await store.open("trip") is session
            [info] = await store.list_sessions()
            assert (info.session_id, info.event_count, info.title) == ("trip", 1, "Trip")

        asyncio.run(main())
        ```
    """

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, MemorySession] = {}

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._sessions)} sessions)"

    async def open(self, session_id: str) -> MemorySession:
        """The session `session_id` (created empty the first time)."""
        if not isinstance(session_id, str) or not session_id:
            raise UserError(f"session_id must be a non-empty string, not {session_id!r}")
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = MemorySession(session_id=session_id, store=self)
        return session

    def __len__(self) -> int:
        return len(self._sessions)

    def session_ids(self) -> list[str]:
        """The ids of the sessions the store holds, in the order they were first opened."""
        return list(self._sessions)

    def forget(self, session_id: str) -> None:
        """Drop the session `session_id` from the store (its objects in use keep their events)."""
        self._sessions.pop(session_id, None)

    async def list_sessions(
        self, *, limit: int = 100, offset: int = 0, filter: Mapping[str, JsonValue] | None = None
    ) -> list[SessionInfo]:
        """The sessions with events or metadata, most recently updated first (see `SessionInfo`).

        `filter`: only the sessions whose metadata has each of its keys with an equal value
        (JSON scalars; see `SqliteSession.list_sessions`).
        """
        limit, offset = check_page(limit, offset)
        pairs: MetadataFilter = check_filter(filter)
        infos = [
            info
            for session in self._sessions.values()
            if (info := session.info()) is not None and (not pairs or matches(info.metadata, pairs))
        ]
        infos.sort(key=lambda info: (info.updated, info.session_id), reverse=True)
        return infos[offset : offset + limit]


__all__ = ["MemorySession", "MemoryStore"]
