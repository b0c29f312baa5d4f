"""The `Session` protocol and what it reads and lists: entries, records, a session's info and metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from datetime import datetime
from typing import NamedTuple, NewType, Protocol, cast, runtime_checkable

from .._internal.carrier import carrier
from .._internal.json_value import JsonValue
from ..exceptions import UserError
from ._events import SessionEvent
from ._projection import ConversationSnapshot

SequenceId = NewType("SequenceId", int)
"""A position in one session's log: 0 for the first event, then +1 per event."""


class SessionEntry(NamedTuple):
    """A stored event and its sequence number."""

    seq: SequenceId
    event: SessionEvent


class SessionRecord(NamedTuple):
    """A stored event with its whole envelope, as the durable backends' `records()` return it.

    `id` is the writer's (a UUID unless `append(..., ids=...)` chose it); an event stored
    before ids existed (format 1) gets a stable one derived from the session id and `seq`.
    `ts` is the event's timestamp (None if it has none); `version` its stored format version.
    """

    seq: SequenceId
    id: str
    ts: datetime | None
    version: int
    event: SessionEvent


@carrier
class SessionInfo:
    """One session as a store lists it (`list_sessions`), read from a summary kept beside the log.

    `created` is when the session began (its first append, or `set_metadata` if earlier),
    `updated` the time of its last append (SQLite: the first and last events' own `ts`),
    `event_count` the number of events, `title` and `metadata` what `set_metadata` stored.
    """

    session_id: str
    created: datetime
    updated: datetime
    event_count: int
    title: str | None = None
    metadata: dict[str, JsonValue] = field(default_factory=lambda: {})


@carrier
class SessionMetadata:
    """One session's title and metadata, as `await session.metadata()` reads them.

    `version` counts the `set_metadata` calls that changed them (0: never set): pass it
    back as `set_metadata(..., expected_version=...)` to write only if no one else wrote
    since you read (compare-and-set; see `MetadataConflict`).
    """

    title: str | None = None
    metadata: dict[str, JsonValue] = field(default_factory=lambda: {})
    version: int = 0


@runtime_checkable
class Session(Protocol):
    """Conversation persistence as an append-only event log.

    `events(since)` is exclusive: `since=SequenceId(n)` returns the events after `n`.

    Besides the three methods, a session declares two flags, `durable` and `supports_ids`
    (class attributes will do), so that a runner reads what it is instead of guessing. Every
    helikon backend declares both; a session of your own must too: a runner refuses one that
    does not (`check_session`), and pyright reports it missing where a `Session` is expected.

    Example:
        ```python
        from helikon import MemorySession
        from helikon.core.session import check_session

        session = check_session(MemorySession())  # the memory backend declares both flags
        assert (session.durable, session.supports_ids) == (False, True)
        ```
    """

    __slots__ = ()

    durable: bool
    """Whether a run writes its events as they settle, by default (`RunConfig.durable=None`).

    True for a store that outlives the process (SQLite, PostgreSQL, Redis): a crash then
    loses nothing settled, and the next run repairs the turn it cut short. False for
    `MemorySession`, whose runs are written once they end. A wrapper declares its inner one's.
    """

    supports_ids: bool
    """Whether `append` honours `ids` and `expected_seq` (idempotent retries, conflict checks).

    False: `append(events)` is all it takes, and a runner calls it so; a retried write may
    then store an event twice, and a run cannot tell that another writer appended meanwhile.
    """

    async def append(
        self,
        events: Sequence[SessionEvent],
        *,
        ids: Sequence[str] | None = None,
        expected_seq: int | None = None,
    ) -> None:
        """Write `events` to the end of the log, atomically: all of them or none.

        Args:
            events: The events, in order. An empty list writes nothing (and checks nothing).
            ids: One unique id per event, chosen by the writer; default: a fresh UUID each.
                Idempotency is per event id: an event whose id is stored already is skipped
                and the rest are appended, in order, so retrying a failed or timed-out append
                with the same ids never duplicates an event (and a batch whose ids are all
                stored is a no-op). A stored id must come with the same event (`ts` aside):
                one with other content is a `UserError` (a `SessionConflict` if it was stored
                after `expected_seq`: another writer's), never an overwrite.
            expected_seq: The seq of the last event the writer saw (-1: an empty log). If
                the log ends elsewhere, the append raises `SessionConflict` and writes nothing;
                the batch's own events stored by an earlier attempt do not count as moving it.
        """
        ...

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """Read the log (after `since`, when given), each event with its sequence number."""
        ...

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log."""
        ...


@runtime_checkable
class SharedLog(Protocol):
    """A session object over a store that other objects share: one stored log, many objects.

    A server opens a new session object per request; a runner knows the objects of one
    stored log as one by their `log_key` (the store, the session id), so they share its
    queue of turns and what it knows of the log. helikon's durable backends declare it, and
    `CompactingSession` declares its inner session's. A session that does not is known by
    the object itself.

    Example:
        ```python
        from helikon import MemorySession
        from helikon.core.session import SharedLog

        assert not isinstance(MemorySession(), SharedLog)  # one object, one log
        ```
    """

    __slots__ = ()

    @property
    def log_key(self) -> tuple[object, str]:
        """The store and the session id: objects with the same store and id share one log."""
        ...


_DECLARED = ("durable", "supports_ids")


def check_session(session: object) -> Session:
    """`session`, checked to declare the flags the `Session` protocol asks for (`durable`, `supports_ids`).

    Raises:
        UserError: A flag is missing or not a bool; the message names it and says what to declare.

    Example:
        ```python
        from helikon import UserError
        from helikon.core.session import check_session

        class Notes:  # a log with no flags declared
            async def append(self, events): ...
            async def events(self, since=None): return []
            async def snapshot(self): ...

        message = ""
        try:
            check_session(Notes())
        except UserError as exc:
            message = str(exc)
        assert message.startswith("Notes does not declare durable and supports_ids")
        ```
    """
    missing = [name for name in _DECLARED if not isinstance(getattr(session, name, None), bool)]
    if missing:
        raise UserError(
            f"{type(session).__name__} does not declare {' and '.join(missing)} as a bool, as every "
            "Session must: add class attributes, e.g. `durable = False` (its runs are written when "
            "they end; True: as they go, for a store that outlives the process) and `supports_ids = "
            "True` (its `append` honours `ids` and `expected_seq`; False: it takes only the events). "
            "See docs/sessions.md, 'A backend of your own'."
        )
    return cast("Session", session)


__all__ = [
    "SequenceId",
    "Session",
    "SessionEntry",
    "SessionInfo",
    "SessionMetadata",
    "SessionRecord",
    "SharedLog",
    "check_session",
]
