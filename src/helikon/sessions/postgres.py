"""`PostgresSession`: a session's event log in a PostgreSQL table (asyncpg).

Every session shares one table, `session_events`, keyed by `(session_id, sequence)`; an
append is one transaction serialized per session by a transaction-scoped advisory lock, so
any number of writers, in any number of processes, get gap-free, duplicate-free sequence
numbers. The stored format (the table below) is stable and versioned: other programs may
read it.

```sql
CREATE TABLE session_events (
    session_id TEXT NOT NULL,
    sequence   BIGINT NOT NULL,          -- 0, 1, 2, ... per session (SequenceId)
    kind       TEXT NOT NULL,            -- the event's `type` tag, e.g. 'user_message'
    payload    JSONB NOT NULL,           -- the event as `helikon.core.codec.encode_event` writes it
    ts         TIMESTAMPTZ,              -- the event's `ts`, NULL when it has none
    format     INT NOT NULL,             -- the payload's format version (FORMAT_VERSION)
    PRIMARY KEY (session_id, sequence)
);
CREATE TABLE helikon_schema_migrations (version INT PRIMARY KEY, applied_at TIMESTAMPTZ);
```

Requires the `sessions-postgres` extra: `pip install 'paigasus-helikon[sessions-postgres]'`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self, cast

try:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]
except ImportError as exc:  # pragma: no cover - the extra is installed for the test suite
    raise ImportError(
        "helikon.sessions.postgres needs asyncpg: pip install 'paigasus-helikon[sessions-postgres]'"
    ) from exc

from helikon.core._log_cache import LogCache
from helikon.core.codec import FORMAT_VERSION, decode_events, encode_event
from helikon.core.exceptions import SessionError, SessionUnavailable, UserError
from helikon.core.session import ConversationSnapshot, SequenceId, SessionEntry, SessionEvent

Pool = asyncpg.Pool
"""The asyncpg connection pool type sessions run on."""


class _Connection(Protocol):
    """The part of asyncpg's (untyped) connection this module uses."""

    async def execute(self, query: str, *args: object) -> str: ...
    async def fetch(self, query: str, *args: object) -> list[Sequence[Any]]: ...
    def transaction(self, *, isolation: str) -> AbstractAsyncContextManager[object]: ...


class _Pool(Protocol):
    """The part of asyncpg's (untyped) pool this module uses."""

    def acquire(self) -> AbstractAsyncContextManager[_Connection]: ...
    async def fetch(self, query: str, *args: object) -> list[Sequence[Any]]: ...
    async def fetchval(self, query: str, *args: object) -> Any: ...
    async def close(self) -> None: ...


SCHEMA_VERSION = 1
"""The newest version of the tables this module creates (a row of `helikon_schema_migrations`)."""

MIGRATION_LOCK_KEY = 0x68656C696B6F6E01
"""The advisory-lock key (`b"helikon\\x01"`) that serializes `migrate` across processes."""

_MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE IF NOT EXISTS session_events (
            session_id TEXT NOT NULL,
            sequence BIGINT NOT NULL,
            kind TEXT NOT NULL,
            payload JSONB NOT NULL,
            ts TIMESTAMPTZ,
            format INT NOT NULL,
            PRIMARY KEY (session_id, sequence)
        )
        """,
    ),
)

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
# MAX(sequence) is read in the INSERT, a statement after the lock's: under READ COMMITTED (set
# explicitly, whatever the pool's default) it then sees every append committed before this one
# took the lock. One statement can't do both: its snapshot would predate the lock.
_INSERT = """
INSERT INTO session_events (session_id, sequence, kind, payload, ts, format)
SELECT $1, next.first + event.ordinal - 1, event.kind, event.payload::jsonb, event.ts, $5
FROM (SELECT COALESCE(MAX(sequence), -1) + 1 AS first FROM session_events WHERE session_id = $1) AS next,
     unnest($2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS event(kind, payload, ts, ordinal)
"""
# payload::text: jsonb's text form (keys reordered, spaces added), decoded in one pass by decode_events.
_SELECT = """
SELECT sequence, payload::text FROM session_events
WHERE session_id = $1 AND sequence > $2 ORDER BY sequence
"""


# Errors that mean "the server cannot be reached (now)", not "the server said no".
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.exceptions.TooManyConnectionsError,
)
_ERRORS: tuple[type[BaseException], ...] = (*_UNAVAILABLE, asyncpg.PostgresError, asyncpg.InterfaceError)


def _lost_connection(exc: BaseException) -> bool:
    # A connection dropped mid-transaction surfaces as an InterfaceError from the rollback
    # ("the underlying connection is closed"), with the real cause in its context.
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, _UNAVAILABLE) or (
            isinstance(seen, asyncpg.InterfaceError) and "connection is closed" in str(seen)
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _translate(exc: BaseException, action: str) -> SessionError:
    if _lost_connection(exc):
        hint = (
            " (it may or may not have been committed: read events() to check)" if action == "append" else ""
        )
        return SessionUnavailable(
            f"PostgreSQL is unavailable, {action} did not complete{hint}: {type(exc).__name__}: {exc}"
        )
    return SessionError.backend(exc)


def _check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id or "\x00" in session_id:
        raise UserError(f"session_id must be a non-empty string without NUL characters, got {session_id!r}")
    return session_id


class PostgresSession:
    """A session stored in PostgreSQL: one row per event in the shared `session_events` table.

    Many sessions share one asyncpg pool (bring your own, configured as you like, TLS
    included) and are isolated by `session_id`. Call `migrate(pool)` once at start-up and
    `open_without_migrate` on the hot path, or `open`, which does both. `open_session(id,
    dsn=...)` builds a small pool the session owns and closes in `aclose()`.

    `append` is one transaction: `pg_advisory_xact_lock(hashtextextended(session_id, 0))`,
    then one multi-row `INSERT` numbering the events from `COALESCE(MAX(sequence), -1) + 1`.
    Concurrent writers to one session queue on the lock; writers to different sessions
    don't contend. A failed append writes nothing.

    Example:
        ```python
        import asyncio

        import asyncpg

        from helikon.core.items import TextPart
        from helikon.core.session import SequenceId, UserMessageEvent
        from helikon.sessions.postgres import PostgresSession
        from helikon.testing.servers import PostgresServer


        async def main() -> None:
            async with PostgresServer() as server, asyncpg.create_pool(server.dsn) as pool:
                session = await PostgresSession.open(pool, "user-42")
                await session.append([UserMessageEvent(content=(TextPart(text="hi"),))])
                [(seq, event)] = await session.events()
                assert seq == 0 and (await session.snapshot()).messages[0].text == "hi"
                assert await session.events(since=SequenceId(0)) == []


        asyncio.run(main())
        ```
    """

    __slots__ = ("_closed", "_db", "_log", "_owns_pool", "_pool", "_session_id")

    def __init__(self, pool: Pool, session_id: str, *, owns_pool: bool = False) -> None:
        """A session on an already migrated `pool` (what `open_without_migrate` returns).

        Args:
            pool: The asyncpg pool to use.
            session_id: The log this instance reads and writes.
            owns_pool: Close `pool` in `aclose()`.
        """
        self._pool = pool
        self._db = cast(_Pool, pool)
        self._session_id = _check_session_id(session_id)
        self._owns_pool = owns_pool
        self._closed = False
        self._log = LogCache()  # what this object has read: later reads fetch only the tail

    # --- construction ------------------------------------------------------------------------

    @staticmethod
    async def migrate(pool: Pool) -> None:
        """Create or upgrade the tables. Idempotent; concurrent calls (any process) serialize.

        A database already at `SCHEMA_VERSION` (or newer) costs one query.

        Raises:
            SessionUnavailable: The server cannot be reached.
            SessionBackendError: The server refused (e.g. no CREATE privilege).
        """
        db = cast(_Pool, pool)
        try:
            if await _schema_version(db) >= SCHEMA_VERSION:
                return
            async with db.acquire() as conn, conn.transaction(isolation="read_committed"):
                await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_KEY)
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS helikon_schema_migrations "
                    "(version INT PRIMARY KEY, applied_at TIMESTAMPTZ)"
                )
                rows = await conn.fetch("SELECT version FROM helikon_schema_migrations")
                applied: set[int] = {row[0] for row in rows}
                for version, statement in _MIGRATIONS:
                    if version not in applied:
                        await conn.execute(statement)
                        await conn.execute(
                            "INSERT INTO helikon_schema_migrations (version, applied_at) VALUES ($1, now())",
                            version,
                        )
        except _ERRORS as exc:
            raise _translate(exc, "migrate") from exc

    @classmethod
    async def open(cls, pool: Pool, session_id: str) -> Self:
        """Migrate (see `migrate`), then open the session `session_id` on `pool`."""
        _check_session_id(session_id)
        await cls.migrate(pool)
        return cls(pool, session_id)

    @classmethod
    def open_without_migrate(cls, pool: Pool, session_id: str) -> Self:
        """Open the session `session_id` on a `pool` whose database is already migrated."""
        return cls(pool, session_id)

    # --- the Session protocol ----------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The id of the log this instance reads and writes."""
        return self._session_id

    @property
    def pool(self) -> Pool:
        """The asyncpg pool this session uses."""
        return self._pool

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Write `events` to the end of the log in one transaction; an empty list is a no-op.

        Raises:
            SessionUnavailable: The server cannot be reached.
            SessionBackendError: The server refused, e.g. text holding a NUL character
                (`jsonb` cannot store U+0000). Nothing was written.
        """
        self._check_open()
        if not events:
            return
        kinds: list[str] = []
        payloads: list[str] = []
        stamps: list[datetime | None] = []
        for event in events:
            kinds.append(event.type)
            payloads.append(encode_event(event))
            stamps.append(event.ts)
        try:
            async with self._db.acquire() as conn, conn.transaction(isolation="read_committed"):
                await conn.execute(_LOCK, self._session_id)
                await conn.execute(_INSERT, self._session_id, kinds, payloads, stamps, FORMAT_VERSION)
        except _ERRORS as exc:
            raise _translate(exc, "append") from exc

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The log after `since` (exclusive), in order, each event with its sequence number."""
        self._check_open()
        await self._refresh("events")
        return self._log.after(since)

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log (folded incrementally: only new events cost)."""
        self._check_open()
        await self._refresh("snapshot")
        return self._log.snapshot()

    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        try:
            rows = await self._db.fetch(_SELECT, self._session_id, after)
        except _ERRORS as exc:
            raise _translate(exc, action) from exc
        decoded = decode_events([row[1] for row in rows])
        return [SessionEntry(SequenceId(row[0]), event) for row, event in zip(rows, decoded, strict=True)]

    async def _refresh(self, action: str) -> None:
        """Fetch and decode what was appended after what this object has already read."""
        if not self._log.extend(await self._fetch(self._log.last_seq, action)):
            self._log.clear()  # the table no longer continues what we read
            self._log.extend(await self._fetch(-1, action))

    # --- lifecycle -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pool if this session owns it (`open_session`); otherwise only this handle."""
        if self._closed:
            return
        self._closed = True
        if self._owns_pool:
            await self._db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"PostgresSession(session_id={self._session_id!r})"

    def _check_open(self) -> None:
        if self._closed:
            raise UserError(f"{self!r} is closed: open a new session")


async def _schema_version(db: _Pool) -> int:
    try:
        version: Any = await db.fetchval("SELECT MAX(version) FROM helikon_schema_migrations")
    except asyncpg.UndefinedTableError:
        return 0
    return int(version or 0)


async def open_session(session_id: str, *, dsn: str, max_size: int = 4) -> PostgresSession:
    """Open `session_id` on a small pool of its own (closed by `aclose()`), migrating first.

    Use it in scripts and tests; servers should share one pool between sessions
    (`PostgresSession.open_without_migrate`). TLS: put `sslmode=...` in `dsn`, or build your
    own pool with `ssl=`.

    Args:
        session_id: The log to open.
        dsn: A `postgresql://` connection string.
        max_size: The pool's maximum number of connections.

    Raises:
        SessionUnavailable: The server cannot be reached.
    """
    _check_session_id(session_id)
    try:
        pool: Pool = await asyncpg.create_pool(dsn, min_size=1, max_size=max_size)  # pyright: ignore[reportUnknownMemberType]
    except _ERRORS as exc:
        raise _translate(exc, "connect") from exc
    try:
        await PostgresSession.migrate(pool)
    except BaseException:
        await cast(_Pool, pool).close()
        raise
    return PostgresSession(pool, session_id, owns_pool=True)


__all__ = ["MIGRATION_LOCK_KEY", "SCHEMA_VERSION", "PostgresSession", "open_session"]
