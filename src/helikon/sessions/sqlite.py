"""`SqliteSession`: session logs in one SQLite file, shared by many sessions and processes.

Standard library `sqlite3` only. Every call that can block runs on the worker thread of a
`SqliteDatabase`, never on the event loop. Appends serialize on SQLite's write lock (`BEGIN
IMMEDIATE`), so each session's sequence numbers stay contiguous whatever the number of
writers. The stored format (`docs/sessions-sqlite.md`) is stable: table `session_events(
session_id, sequence, kind, payload, ts, format, event_id)`, one row per event (`payload`:
`helikon.core.session.codec.encode_event`'s JSON), and `helikon_sessions`, one row per session.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from queue import SimpleQueue
from types import TracebackType
from typing import Any, Final, Self, cast

try:
    import sqlite3
except ImportError as exc:  # pragma: no cover - a Python built without SQLite
    raise ImportError(
        "helikon.sessions.sqlite (pip install 'paigasus-helikon[sessions-sqlite]') needs the standard "
        "library's sqlite3 module, which this Python was built without"
    ) from exc

from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import SessionBackendError, SessionError, UserError
from helikon.core.session import (
    SequenceId,
    SessionEntry,
    SessionEvent,
    SessionInfo,
    SessionMetadata,
)
from helikon.core.session._envelope import check_filter, check_page
from helikon.core.session.checkpoint import (
    Checkpoint,
    load,
)
from helikon.core.session.codec import (
    decode_events,
    decode_joined,
    new_entry,
    upgrade_all,
)

from ._base import StoredRow, StoredSession
from ._sqlite_jobs import (
    SCHEMA_VERSION,
    all_known,
    append_rows,
    check_session_id,
    event_row,
    list_rows,
    metadata_row,
    migrate_schema,
    parse_ts,
    read_checkpoint,
    read_joined,
    read_records,
    read_rows,
    rfc3339,
    save_checkpoint,
    session_info,
    set_metadata_row,
)
from ._sqlite_worker import Job, Opened, Progress, start_worker, stop_worker, wal_checkpoint

_SYNCHRONOUS: Final = ("OFF", "NORMAL", "FULL", "EXTRA")
_JOURNAL_MODES: Final = ("WAL", "DELETE", "TRUNCATE", "PERSIST")  # MEMORY and OFF forfeit crash safety


BUSY: Final = object()
"""What an inline attempt returns when another connection holds the lock: use the worker."""
_LOCKED_CODES: Final = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_CHECKPOINT_EVERY: Final = 256  # inline commits between background checkpoints (~500 WAL pages)
_WAL_CAP_FRAMES: Final = 4096  # a WAL this long (~16 MiB): the next checkpoint holds inline writers
_INLINE_MAX_BYTES: Final = 64 * 1024  # larger appends write enough pages to go to the worker
_INLINE_READ_ROWS: Final = 256  # a tail read inline fetches at most this many rows


class SqliteDatabase:
    """One SQLite file and a worker thread: the store `SqliteSession`s share.

    Open it with `await SqliteDatabase.open(path)`, close it with `aclose()` or `async with`.

    Anything that may wait (for another writer's lock, an fsync, a checkpoint, a large
    read) runs on the worker thread's connection. In WAL mode with `synchronous` NORMAL or
    OFF (the defaults), a small append or tail read is first tried on a second connection
    on the event loop's thread, which never waits: it takes the write lock only if it is
    free at once, and a WAL commit at those settings writes pages without an fsync. When
    the lock is taken, or earlier jobs are still queued, the work goes to the worker, in
    order. `inline=False` sends everything to the worker.
    """

    __slots__ = (
        "__weakref__",
        "_closed",
        "_commits",
        "_cur",
        "_finalizer",
        "_jobs",
        "_path",
        "_progress",
        "_queued",
        "_queued_by",
        "_thread",
    )

    def __init__(
        self, path: str, jobs: SimpleQueue[Job], inline: sqlite3.Connection | None, progress: Progress
    ) -> None:
        """Use `SqliteDatabase.open`; this wraps an already-running worker."""
        self._path = path
        self._jobs = jobs
        self._closed = False
        self._cur = inline.cursor() if inline is not None else None
        self._progress = progress
        self._queued = 0  # awaited jobs of no one session put on the queue (see Progress)
        self._queued_by: dict[str, int] = {}  # the same, per session
        self._commits = 0
        self._thread = threading.get_ident()  # the inline connection is this thread's only
        # A database dropped without `aclose` still stops its thread and closes the file.
        self._finalizer = weakref.finalize(self, jobs.put, (None, stop_worker, (inline,), None))

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        synchronous: str = "NORMAL",
        journal_mode: str = "WAL",
        inline: bool = True,
    ) -> SqliteDatabase:
        """Open (creating if missing) the SQLite file at `path`.

        Args:
            path: The database file. `":memory:"` is refused: each connection would get
                its own private database.
            busy_timeout: Seconds one statement waits for another writer's lock before it
                fails with "database is locked". Size it to writers x appends x the slowest
                transaction, not one transaction.
            synchronous: `PRAGMA synchronous`: `NORMAL` (with WAL: a power loss may drop the
                newest commits, never corrupt), `FULL`, `EXTRA` or `OFF`.
            journal_mode: `WAL` (readers never wait for writers), `DELETE`, `TRUNCATE` or
                `PERSIST`.
            inline: Try small appends and tail reads on the event loop's thread first when
                that cannot block (see the class docstring); False: always the worker.

        Raises:
            UserError: An argument is invalid; the message names it.
            SessionBackendError: SQLite could not open or configure the file.
        """
        settings = _check_open_args(path, busy_timeout, synchronous, journal_mode)
        jobs: SimpleQueue[Job] = SimpleQueue()
        if not isinstance(inline, bool):
            raise UserError(f"inline must be True or False, not {inline!r}")
        ready: asyncio.Future[Opened] = asyncio.get_running_loop().create_future()
        # A daemon thread: a database that is never closed must not keep the process alive.
        threading.Thread(
            target=start_worker,
            args=(settings, inline, ready, jobs),
            name=f"helikon-sqlite:{settings[0]}",
            daemon=True,
        ).start()
        try:
            second, progress = await ready
        except BaseException as exc:
            jobs.put((None, stop_worker, (), None))  # cancelled: stop the thread if it did connect
            if isinstance(exc, sqlite3.Error):
                raise SessionBackendError(f"cannot open SQLite database {settings[0]!r}: {exc}") from exc
            raise
        return cls(settings[0], jobs, second, progress)

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called."""
        return self._closed

    def __repr__(self) -> str:
        return f"SqliteDatabase({self._path!r}{', closed' if self._closed else ''})"

    async def _run(self, fn: Callable[..., Any], *args: Any, key: str | None = None) -> Any:
        """Run `fn(cursor, *args)` on the worker thread; sqlite3 errors become `SessionBackendError`.

        Jobs run one at a time, in submission order. A job cancelled before it starts is
        skipped. `key`: the session the job concerns (None: none in particular).
        """
        if self._closed:
            raise UserError(f"{self!r} is closed: open a new one with SqliteDatabase.open(...)")
        fut = asyncio.get_running_loop().create_future()
        if key is None:
            self._queued += 1
        else:
            self._queued_by[key] = self._queued_by.get(key, 0) + 1
        self._jobs.put((fut, fn, args, key))
        try:
            return await fut
        except sqlite3.Error as exc:
            raise SessionError.backend(exc) from exc

    def _can_inline(self, key: str) -> bool:
        """Whether the loop may use its own connection now for session `key`.

        Not while a job of that session, or of no one session (a checkpoint, a migration),
        is queued or running on the worker: inline work never overtakes it.
        """
        progress = self._progress
        return (
            self._cur is not None
            and not self._closed
            and self._queued == progress.finished
            and self._queued_by.get(key, 0) == progress.by_session.get(key, 0)
            and threading.get_ident() == self._thread
        )

    def _inline(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(cursor, *args)` on the loop's connection; `BUSY` if the database is locked."""
        cur = self._cur
        assert cur is not None  # checked by `_can_inline`
        try:
            return fn(cur, *args)
        except sqlite3.OperationalError as exc:
            # Not every OperationalError comes from SQLite (the module's own, e.g. a value it
            # cannot convert, carry no error code).
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _LOCKED_CODES:
                return BUSY
            raise SessionError.backend(exc) from exc
        except sqlite3.Error as exc:
            raise SessionError.backend(exc) from exc

    def _committed_inline(self) -> None:
        """Count an inline commit; every so often, have the worker checkpoint the WAL.

        A checkpoint fsyncs twice (milliseconds), so it runs beside the inline writers. As
        their commits land meanwhile, the WAL cannot start over and grows during a burst of
        appends; past `_WAL_CAP_FRAMES` the next checkpoint holds this process's appends
        behind it on the worker, copies the whole WAL, and the next commit starts it over.
        """
        self._commits += 1
        if self._commits % _CHECKPOINT_EVERY == 0:
            progress = self._progress
            if progress.wal_frames < _WAL_CAP_FRAMES:
                self._jobs.put((None, wal_checkpoint, (progress, False), None))
            else:
                self._queued += 1
                fut = asyncio.get_running_loop().create_future()
                self._jobs.put((fut, wal_checkpoint, (progress, True), None))

    async def aclose(self) -> None:
        """Finish the queued jobs, close the connection and stop the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        fut = asyncio.get_running_loop().create_future()
        self._queued += 1
        self._jobs.put((fut, stop_worker, (self._cur.connection if self._cur is not None else None,), None))
        await asyncio.shield(fut)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _check_open_args(
    path: object, busy_timeout: object, synchronous: object, journal_mode: object
) -> tuple[str, float, str, str]:
    text: object = (
        os.fspath(cast("str | os.PathLike[str]", path)) if isinstance(path, str | os.PathLike) else None
    )
    if not isinstance(text, str):
        raise UserError(f"path must be a file path (str or os.PathLike[str]), not {path!r}")
    if text in ("", ":memory:"):
        raise UserError(
            f"path={text!r} is a private in-memory database that other connections cannot share: "
            "use a file path (a temporary directory for tests), or MemorySession"
        )
    if (
        isinstance(busy_timeout, bool)
        or not isinstance(busy_timeout, int | float)
        or not math.isfinite(busy_timeout)
        or busy_timeout <= 0
    ):
        raise UserError(f"busy_timeout must be a positive number of seconds, not {busy_timeout!r}")
    seconds = float(busy_timeout)
    sync = synchronous.upper() if isinstance(synchronous, str) else None
    if sync not in _SYNCHRONOUS:
        raise UserError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, not {synchronous!r}")
    mode = journal_mode.upper() if isinstance(journal_mode, str) else None
    if mode not in _JOURNAL_MODES:
        raise UserError(
            f"journal_mode must be one of {', '.join(_JOURNAL_MODES)} "
            f"(MEMORY and OFF lose data in a crash), not {journal_mode!r}"
        )
    return text, seconds, sync, mode


# --- the session -------------------------------------------------------------------------------


class SqliteSession(StoredSession):
    """One session's event log in a shared `SqliteDatabase`, isolated by `session_id`.

    Example:
        ```python
        import asyncio
        import tempfile
        from pathlib import Path

        from helikon.core.items import TextPart
        from helikon.core.session import UserMessageEvent
        from helikon.sessions.sqlite import SqliteDatabase, SqliteSession

        async def main() -> None:
            with tempfile.TemporaryDirectory() as tmp:
                async with await SqliteDatabase.open(Path(tmp) / "sessions.db") as db:
                    session = await SqliteSession.open(db, "user-42")
                    await session.append([UserMessageEvent(content=(TextPart(text="hi"),))])
                    [(seq, event)] = await session.events()
                    assert seq == 0 and (await session.snapshot()).messages[0].text == "hi"

        asyncio.run(main())
        ```
    """

    __slots__ = ("_db",)

    def __init__(self, db: SqliteDatabase, session_id: str) -> None:
        """The same as `open_without_migrate`: no IO, the schema must already exist."""
        if not isinstance(db, SqliteDatabase):
            raise UserError(f"db must be a SqliteDatabase, not {type(db).__name__}")
        super().__init__(check_session_id(session_id), owns_store=False)
        self._db = db

    @staticmethod
    async def migrate(db: SqliteDatabase) -> None:
        """Create or upgrade the schema. Idempotent, and safe from many processes at once."""
        await db._run(migrate_schema)

    @classmethod
    async def open(cls, db: SqliteDatabase, session_id: str) -> SqliteSession:
        """Run the migrations (one round trip when already applied), then open `session_id`."""
        session = cls(db, session_id)
        await db._run(migrate_schema)
        return session

    @classmethod
    def open_without_migrate(cls, db: SqliteDatabase, session_id: str) -> SqliteSession:
        """Open `session_id` without IO: the hot path after one `migrate(db)` at startup."""
        return cls(db, session_id)

    @property
    def database(self) -> SqliteDatabase:
        """The database the log lives in."""
        return self._db

    @property
    def _store(self) -> object:
        return self._db

    async def _sibling(self, session_id: str) -> Self:
        return type(self)(self._db, session_id)

    def __repr__(self) -> str:
        return f"SqliteSession({self._session_id!r}, {self._db.path!r})"

    async def _write(
        self, events: Sequence[SessionEvent], ids: list[str] | None, expected: int | None
    ) -> None:
        rows = [event_row(e) for e in events]
        created = rows[0][2] or rfc3339(datetime.now(UTC))  # the first event's ts, already formatted
        args = (self._session_id, rows, ids, expected, created)
        db = self._db
        if (
            db._can_inline(self._session_id)
            and sum(len(row[1]) for row in rows) <= _INLINE_MAX_BYTES
            and db._inline(append_rows, *args) is not BUSY
        ):
            db._committed_inline()
            return
        await db._run(append_rows, *args, key=self._session_id)

    async def _read_records(self, after: int) -> list[StoredRow]:
        rows = await self._db._run(read_records, self._session_id, after, key=self._session_id)
        return [
            (seq, event_id, parse_ts(ts), version, payload) for seq, event_id, ts, version, payload in rows
        ]

    async def _store_metadata(self, title: str | None, metadata: str | None, expected: int | None) -> None:
        now = rfc3339(datetime.now(UTC))
        args = (self._session_id, now, title, title is not None, metadata, expected)
        await self._db._run(set_metadata_row, *args, key=self._session_id)

    async def _read_metadata(self) -> SessionMetadata:
        row = await self._db._run(metadata_row, self._session_id, key=self._session_id)
        if row is None:
            return SessionMetadata()
        title, metadata, version = row
        return SessionMetadata(
            title=title, metadata=json.loads(metadata) if metadata else {}, version=version
        )

    @staticmethod
    async def list_sessions(
        db: SqliteDatabase,
        *,
        limit: int = 100,
        offset: int = 0,
        filter: Mapping[str, JsonValue] | None = None,
    ) -> list[SessionInfo]:
        """The sessions in `db`, most recently updated first, from their summary rows (no log is read).

        Args:
            db: The database.
            limit: At most this many.
            offset: Skip this many first (the next page: `offset + limit`).
            filter: Only the sessions whose metadata has each of these top-level keys with an
                equal value: JSON scalars (str, int, float, bool, None); numbers compare as
                numbers (1 matches 1.0), `None` matches a stored `null`, not a missing key.
                Compared in the query (SQLite's `json_each`), not by reading every session.

        Example:
            `[info.session_id for info in await SqliteSession.list_sessions(db, filter={"user": "u1"})]`
        """
        limit, offset = check_page(limit, offset)
        pairs = check_filter(filter)
        return [session_info(row) for row in await db._run(list_rows, limit, offset, pairs)]

    async def _start_from_checkpoint(self) -> None:
        db = self._db
        found = BUSY
        if db._can_inline(self._session_id):
            found = db._inline(read_checkpoint, self._session_id)
        if found is BUSY:
            found = await db._run(read_checkpoint, self._session_id, key=self._session_id)
        if found is None:
            return
        checkpoint, stored = cast("tuple[Checkpoint, str | None]", found)
        projection = load(checkpoint, stored)
        if projection is None:
            self._stale_checkpoint = True  # rebuilt from the whole log and replaced below
            return
        self._log.start_at(projection, checkpoint.as_of_seq)

    async def _store_checkpoint(self, as_of_seq: int, state: str) -> bool:
        now = rfc3339(datetime.now(UTC))
        try:
            await self._db._run(
                save_checkpoint,
                self._session_id,
                as_of_seq,
                state,
                self._stale_checkpoint,
                now,
                key=self._session_id,
            )
        except SessionError:
            return False  # only an optimization: the snapshot is read already; a later one retries
        return True

    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        # Decoding is CPU work that holds the GIL wherever it runs, and measured faster on the
        # event loop's thread than on the worker. A tail read (after what this object has read)
        # is tried inline first; a first read is a full one and goes to the worker.
        # (`action` names the call in a server's errors; SQLite's need no more than its own.)
        db = self._db
        head: list[SessionEntry] = []
        if after >= 0 and db._can_inline(self._session_id):
            got = db._inline(read_rows, self._session_id, after, _INLINE_READ_ROWS)
            if got is not BUSY:
                seqs, payloads, versions = got
                events = upgrade_all(self._session_id, seqs, versions, decode_events(payloads))
                head = list(map(new_entry, zip(seqs, events, strict=True)))
                if len(seqs) < _INLINE_READ_ROWS:
                    return head
                after = seqs[-1]  # a long tail: the rest from the worker
        joined = await db._run(read_joined, self._session_id, after, key=self._session_id)
        if joined is not None:
            count, first, text, low, high = joined
            events = decode_joined(text, count)
            # Mixed formats (an old log appended to since) matter only for unknown events.
            if events is not None and (low == high or all_known(events, high)):
                numbers = cast("Sequence[SequenceId]", range(first, first + count))  # plain ints
                events = upgrade_all(self._session_id, numbers, high, events)
                return head + list(map(new_entry, zip(numbers, events, strict=True)))
        # A damaged payload, mixed formats or an unexpected order: row by row, each with its version.
        seqs, payloads, versions = await db._run(read_rows, self._session_id, after, key=self._session_id)
        events = upgrade_all(self._session_id, seqs, versions, decode_events(payloads))
        return head + list(map(new_entry, zip(seqs, events, strict=True)))

    async def _close_store(self) -> None:
        await self._db.aclose()


async def open_session(
    session_id: str, *, path: str | os.PathLike[str], busy_timeout: float = 30.0
) -> SqliteSession:
    """Open `session_id` in the file at `path` on a database of its own (migrating it).

    The session owns that database: `await session.aclose()` (or `async with`) closes it.
    """
    check_session_id(session_id)
    db = await SqliteDatabase.open(path, busy_timeout=busy_timeout)
    try:
        session = await SqliteSession.open(db, session_id)
    except BaseException:
        await db.aclose()
        raise
    session._owns_store = True
    return session


__all__ = ["SCHEMA_VERSION", "SqliteDatabase", "SqliteSession", "open_session"]
