"""`StoredSession`: what the three stored backends (SQLite, PostgreSQL, Redis) share.

Each backend's file holds what is particular to its store: how it writes a batch, fetches
the entries after a seq, reads the envelopes, stores metadata and checkpoints, and closes
a store it owns. This base holds the rest once: the flags the `Session` protocol asks for,
the session id, the argument checks, the closed state, `aclose` and `async with`, and the
reads through the session object's `LogCache` (tail reads, checkpoint and warm starts).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Self

from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import MissingSessionEvents, UserError
from helikon.core.session import (
    ConversationSnapshot,
    SequenceId,
    SessionEntry,
    SessionEvent,
    SessionMetadata,
    SessionRecord,
)
from helikon.core.session._envelope import (
    check_expected_seq,
    check_expected_version,
    check_ids,
    legacy_event_id,
    metadata_json,
)
from helikon.core.session._log_cache import WARM, LogCache, start_warm
from helikon.core.session.branches import Branching
from helikon.core.session.checkpoint import CHECKPOINT_EVERY, encode_state
from helikon.core.session.codec import decode_events, upgrade_all

StoredRow = tuple[int, str | None, datetime | None, int, bytes | str]
"""One stored event as `_read_records` returns it: seq, id (None: stored without), ts, format, payload."""


class StoredSession(Branching):
    """One session's log in a store other objects and processes share, isolated by `session_id`."""

    durable = True  # the store outlives the process: a run writes as it goes, a crash loses nothing settled
    supports_ids = True

    __slots__ = ("_closed", "_log", "_owns_store", "_session_id", "_stale_checkpoint")

    def __init__(self, session_id: str, *, owns_store: bool) -> None:
        """Start the state every stored session keeps (`session_id` checked by the backend)."""
        self._session_id = session_id
        self._owns_store = owns_store
        self._closed = False
        self._log = LogCache()  # what this object has read: later reads fetch only the tail
        self._stale_checkpoint = False  # the stored checkpoint is unusable: replace it

    # --- what each backend does its own way ------------------------------------------------------

    @property
    @abstractmethod
    def _store(self) -> object:
        """The shared store behind this object (database, pool or client): what `WARM` keys sessions by."""

    @abstractmethod
    async def _write(
        self, events: Sequence[SessionEvent], ids: list[str] | None, expected: int | None
    ) -> None:
        """Append a checked, non-empty batch atomically (see `append`)."""

    @abstractmethod
    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        """The stored entries after seq `after`, decoded; `action` names the call in errors."""

    @abstractmethod
    async def _read_records(self, after: int) -> list[StoredRow]:
        """The stored rows after seq `after`, in order, undecoded."""

    @abstractmethod
    async def _store_metadata(self, title: str | None, metadata: str | None, expected: int | None) -> None:
        """Store a checked title and metadata JSON (None: leave it as it is), bumping their version.

        With `expected`, only if the stored version is that (else `MetadataConflict`), atomically.
        """

    @abstractmethod
    async def _read_metadata(self) -> SessionMetadata:
        """The stored title, metadata and version (an unknown session: the defaults)."""

    @abstractmethod
    async def _start_from_checkpoint(self) -> None:
        """Start the empty cache from the session's checkpoint, if one is usable."""

    @abstractmethod
    async def _store_checkpoint(self, as_of_seq: int, state: str) -> bool:
        """Store `state` as the checkpoint folding events 0..`as_of_seq`; whether it was stored.

        Only an optimization: a store that fails says False rather than raise.
        """

    @abstractmethod
    async def _close_store(self) -> None:
        """Close the store this session owns."""

    # --- the Session protocol ------------------------------------------------------------------

    @property
    def log_key(self) -> tuple[object, str]:
        """The store and the session id: what a runner knows this log by (`SharedLog`)."""
        return self._store, self._session_id

    @property
    def session_id(self) -> str:
        """The id of the log this instance reads and writes."""
        return self._session_id

    def _check_open(self) -> None:
        if self._closed:
            raise UserError(f"{self!r} is closed: open a new session")

    async def append(
        self,
        events: Sequence[SessionEvent],
        *,
        ids: Sequence[str] | None = None,
        expected_seq: int | None = None,
    ) -> None:
        """Write `events` to the end of the log atomically: all of them or none; an empty list is a no-op.

        See `Session.append` for `ids` (idempotent retries, also across processes) and
        `expected_seq`; both are checked inside the append's transaction (or script).

        Raises:
            SessionConflict: The log does not end at `expected_seq`; nothing was written.
            SessionUnavailable: The server cannot be reached (PostgreSQL, Redis).
            SessionBackendError: The store refused (SQLite: e.g. "database is locked" once
                `busy_timeout` ran out); nothing was written and the session stays usable.
            UserError: Bad `ids` or `expected_seq`, or an id stored with other content.
        """
        self._check_open()
        chosen = check_ids(events, ids)
        expected = check_expected_seq(expected_seq)
        if events:
            await self._write(events, chosen, expected)

    async def records(self, since: SequenceId | None = None) -> list[SessionRecord]:
        """The log after `since` (exclusive), each event in its envelope: seq, id, ts, format version.

        Read straight from the store (not cached): for audits, exports and checks of ids.

        Raises:
            UnreadableSessionEvent: An event of a newer format, or of an unknown type not
                marked ignorable (see `helikon.core.session.codec`).
        """
        self._check_open()
        rows = await self._read_records(-1 if since is None else int(since))
        sid = self._session_id
        seqs = [row[0] for row in rows]
        events = upgrade_all(sid, seqs, [row[3] for row in rows], decode_events([row[4] for row in rows]))
        return [
            SessionRecord(SequenceId(seq), event_id or legacy_event_id(sid, seq), ts, version, event)
            for (seq, event_id, ts, version, _), event in zip(rows, events, strict=True)
        ]

    async def set_metadata(
        self,
        *,
        title: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        expected_version: int | None = None,
    ) -> None:
        """Set the title and/or metadata `list_sessions` shows (None: leave it as it is).

        `metadata` replaces the whole object. With `expected_version` (the `version` that
        `metadata()` read) the write happens only if no one else set them since:
        compare-and-set, checked in the store's transaction (or script).

        Example: `await session.set_metadata(title="Trip to Lisbon", metadata={"user": "u1"})`.

        Raises:
            MetadataConflict: The stored version is not `expected_version`; nothing was written.
        """
        self._check_open()
        if title is not None and not isinstance(title, str):
            raise UserError(f"title must be a string or None, not {title!r}")
        text = metadata_json(metadata)
        await self._store_metadata(title, text, check_expected_version(expected_version))

    async def metadata(self) -> SessionMetadata:
        """The session's title, metadata and their version, read from the store (one round trip).

        A session no one set metadata for (or that does not exist) reads as
        `SessionMetadata()`: no title, `{}`, version 0.
        """
        self._check_open()
        return await self._read_metadata()

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The log after `since` (exclusive), in order, each event with its sequence number.

        A stored event this version cannot decode comes back as an `UnknownEvent`.

        Raises:
            MissingSessionEvents: The store skips a seq (events deleted outside helikon).
        """
        self._check_open()
        if since is not None and since >= 0 and len(self._log) == 0:
            # An object that has read nothing fetches only what is asked for (the cache holds
            # a prefix from seq 0, so these entries stay out of it): O(tail) for a server
            # that opens a session object per request.
            return self._contiguous(await self._fetch(int(since), "events"), int(since) + 1)
        await self._refresh("events")
        cached = self._log.after(since)
        if cached is None:  # started from a checkpoint: read the prefix it stands for, once
            await self._read_prefix("events")
            cached = self._log.after(since) or []
        return cached

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log: a checkpoint plus the events after it.

        A session object that has read nothing yet starts from the session's checkpoint (if
        it is usable, see `helikon.core.session.checkpoint`); later calls fold only new events. Once
        `CHECKPOINT_EVERY` events were folded past the checkpoint, it writes a newer one.

        Raises:
            MissingSessionEvents: The store skips a seq past the checkpoint (events deleted
                outside helikon).
        """
        self._check_open()
        log = self._log
        if not len(log) and not await self._start_warm():
            await self._start_from_checkpoint()
        await self._refresh("snapshot")
        snapshot = log.snapshot()
        if snapshot is None:  # a rewind reached behind the checkpoint: fold the whole log
            await self._read_prefix("snapshot")
            snapshot = log.snapshot() or ConversationSnapshot()
        if log.folded - 1 - log.checkpoint_seq >= CHECKPOINT_EVERY or self._stale_checkpoint or log.refolded:
            log.refolded = False
            await self._write_checkpoint()
        WARM.remember(self._store, self._session_id, log)
        return snapshot

    # --- reading through the cache -------------------------------------------------------------

    async def _read_prefix(self, action: str) -> None:
        """Fetch the entries a checkpoint stood for (the cache then holds the whole log)."""
        if not self._log.fill_prefix(await self._fetch(-1, action)):
            await self._read_all(action)

    async def _read_all(self, action: str) -> None:
        """Read the whole log afresh (what was read before no longer matches the store)."""
        self._log.clear()
        self._log.extend(self._contiguous(await self._fetch(-1, action), 0))

    def _contiguous(self, entries: list[SessionEntry], first: int) -> list[SessionEntry]:
        """`entries` read after seq `first - 1`, checked to hold every seq from `first` on.

        The seq is the truth: a stray copy of an entry already read (a Redis entry copied under
        a later ID) is dropped. A skipped seq means events were deleted from the store:
        `MissingSessionEvents`.
        """
        expected = first
        kept: list[SessionEntry] | None = None
        for index, entry in enumerate(entries):
            seq = int(entry.seq)
            if seq == expected:
                expected += 1
                if kept is not None:
                    kept.append(entry)
            elif seq < expected:  # a copy of one already read
                if kept is None:
                    kept = entries[:index]
            else:
                raise MissingSessionEvents(seq=expected, next_seq=seq, session_id=self._session_id)
        return entries if kept is None else kept

    async def _start_warm(self) -> bool:
        """Continue the projection another object of this session built in this process, if it holds."""
        warm = WARM.recall(self._store, self._session_id)
        if warm is None:
            return False
        if start_warm(self._log, warm, await self._fetch(warm.as_of_seq - 1, "snapshot")):
            return True
        WARM.forget(self._store, self._session_id)
        self._log.clear()
        return False

    async def _refresh(self, action: str) -> None:
        """Fetch and decode what was appended after what this object has already read."""
        after = self._log.last_seq
        if not self._log.extend(self._contiguous(await self._fetch(after, action), after + 1)):
            await self._read_all(action)  # the store no longer continues what we read
            self._stale_checkpoint = True

    async def _write_checkpoint(self) -> None:
        log = self._log
        as_of_seq = log.folded - 1
        try:
            state = encode_state(log.projection)
        except ValueError:
            # A conversation whose JSON cannot be written (read from rows nested too deeply for
            # pydantic, or holding a lone surrogate from an escape): only an optimization, skipped.
            log.checkpoint_seq = as_of_seq
            return
        if await self._store_checkpoint(as_of_seq, state):
            self._stale_checkpoint = False
            log.stored_checkpoint = as_of_seq
        log.checkpoint_seq = as_of_seq  # either way: not again before CHECKPOINT_EVERY more

    # --- lifecycle -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop using this handle; close the store too if this session owns it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._owns_store:
            await self._close_store()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


__all__ = ["StoredRow", "StoredSession"]
