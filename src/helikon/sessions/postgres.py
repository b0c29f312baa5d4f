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
    payload    JSON NOT NULL,            -- the event, the text the codec's `encode_event` wrote
    ts         TIMESTAMPTZ,              -- the event's `ts`, NULL when it has none
    format     INT NOT NULL,             -- the payload's format version (FORMAT_VERSION)
    event_id   TEXT,                     -- the id the writer chose, if it chose one (else NULL)
    PRIMARY KEY (session_id, sequence)
);
CREATE UNIQUE INDEX session_events_event_id ON session_events (session_id, event_id)
    WHERE event_id IS NOT NULL;
CREATE TABLE helikon_sessions (          -- one summary row per session, for list_sessions
    session_id  TEXT PRIMARY KEY,
    created     TIMESTAMPTZ NOT NULL,    -- first append (or set_metadata, if earlier)
    updated     TIMESTAMPTZ NOT NULL,    -- last append (created, if none)
    event_count BIGINT NOT NULL,
    title       TEXT,
    metadata    JSON NOT NULL DEFAULT '{}',
    metadata_version BIGINT NOT NULL DEFAULT 0  -- set_metadata calls (compare-and-set)
);
CREATE TABLE session_checkpoints (       -- one projection checkpoint per session (optional)
    session_id  TEXT PRIMARY KEY,
    as_of_seq   BIGINT NOT NULL,         -- the last event the state folds
    projector   TEXT NOT NULL,           -- helikon.core.session.checkpoint.PROJECTOR_VERSION that built it
    fingerprint TEXT NOT NULL,           -- SHA-1 (hex) of the UTF-8 of payload::text at as_of_seq
    state       TEXT NOT NULL,           -- helikon.core.session.checkpoint.encode_state (JSON)
    written     TIMESTAMPTZ NOT NULL
);
CREATE TABLE helikon_schema_migrations (version INT PRIMARY KEY, applied_at TIMESTAMPTZ);
```

The summary row is written by the same statement as the events of each append. A checkpoint
row is written by readers (see `PostgresSession.snapshot`) and is never the truth: a reader
trusts one only as `helikon.core.session.checkpoint` describes, and folds the whole log otherwise.

Requires the `sessions-postgres` extra: `pip install 'paigasus-helikon[sessions-postgres]'`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, Self, cast

from helikon.core._internal.extras import missing_extra

try:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]
except ImportError as exc:  # pragma: no cover - the extra is installed for the test suite
    raise missing_extra("helikon.sessions.postgres needs asyncpg", "sessions-postgres") from exc

from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import (
    MetadataConflict,
    SessionConflict,
    SessionError,
    SessionUnavailable,
    UserError,
)
from helikon.core.session import (
    SessionEntry,
    SessionEvent,
    SessionInfo,
    SessionMetadata,
    UnknownEvent,
)
from helikon.core.session._envelope import (
    check_filter,
    check_page,
    retry_plan,
    scalar_kind,
)
from helikon.core.session.checkpoint import (
    PROJECTOR_VERSION,
    Checkpoint,
    fingerprint,
    load,
)
from helikon.core.session.codec import (
    FORMAT_VERSION,
    decode_events,
    decode_joined,
    encode_event,
    new_entry,
    stored_version,
    upgrade_all,
)

from ._base import StoredRow, StoredSession
from ._postgres_schema import MIGRATIONS as _MIGRATIONS

Pool = asyncpg.Pool
"""The asyncpg connection pool type sessions run on."""


class _Connection(Protocol):
    """The part of asyncpg's (untyped) connection this module uses."""

    async def execute(self, query: str, *args: object) -> str: ...
    async def fetch(self, query: str, *args: object) -> list[Sequence[Any]]: ...
    async def fetchrow(self, query: str, *args: object) -> Sequence[Any]: ...
    async def fetchval(self, query: str, *args: object) -> Any: ...
    def transaction(self, *, isolation: str) -> AbstractAsyncContextManager[object]: ...


class _Pool(Protocol):
    """The part of asyncpg's (untyped) pool this module uses."""

    def acquire(self) -> AbstractAsyncContextManager[_Connection]: ...
    async def fetch(self, query: str, *args: object) -> list[Sequence[Any]]: ...
    async def fetchrow(self, query: str, *args: object) -> Sequence[Any]: ...
    async def fetchval(self, query: str, *args: object) -> Any: ...
    async def close(self) -> None: ...


SCHEMA_VERSION = 5
"""The newest version of the tables this module creates (a row of `helikon_schema_migrations`)."""

MIGRATION_LOCK_KEY = 0x68656C696B6F6E01
"""The advisory-lock key (`b"helikon\\x01"`) that serializes `migrate` across processes."""

_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
# MAX(sequence) is read in the INSERT, a statement after the lock's: under READ COMMITTED (set
# explicitly, whatever the pool's default) it then sees every append committed before this one
# took the lock. One statement can't do both: its snapshot would predate the lock.
# One statement inserts the events (unless the log does not end at $7, the expected seq) and
# updates the summary row; it returns the next seq it found and how many rows it inserted.
_INSERT = """
WITH next AS (
    SELECT COALESCE(MAX(sequence), -1) + 1 AS first FROM session_events WHERE session_id = $1
), inserted AS (
    INSERT INTO session_events (session_id, sequence, kind, payload, ts, format, event_id)
    SELECT $1, next.first + event.ordinal - 1, event.kind, event.payload::json, event.ts, event.format,
           event.id
    FROM next, unnest($2::text[], $3::text[], $4::timestamptz[], $5::int[], $6::text[])
        WITH ORDINALITY AS event(kind, payload, ts, format, id, ordinal)
    WHERE $7::bigint IS NULL OR next.first = $7::bigint + 1
    RETURNING sequence
), summary AS (
    INSERT INTO helikon_sessions (session_id, created, updated, event_count)
    SELECT $1, now(), now(), MAX(sequence) + 1 FROM inserted HAVING count(*) > 0
    ON CONFLICT (session_id) DO UPDATE SET updated = excluded.updated, event_count = excluded.event_count
)
SELECT (SELECT first FROM next), (SELECT count(*) FROM inserted)
"""
# A retry's stored events (under the append's lock): each id's seq and payload, and the log's last seq.
_STORED_IDS = """
SELECT event_id, sequence, payload::text FROM session_events
WHERE session_id = $1 AND event_id = ANY($2::text[])
"""
_LAST = "SELECT COALESCE(MAX(sequence), -1) FROM session_events WHERE session_id = $1"
# payload::text: the text the writer stored (in a row from before schema 4: jsonb's rendering
# of it, keys reordered and spaces added). Row by row: what `_fetch` falls back to when the
# joined read below cannot be decoded in one pass.
_SELECT = """
SELECT sequence, payload::text, format FROM session_events
WHERE session_id = $1 AND sequence > $2 ORDER BY sequence
"""
# The same payloads as one comma-joined text, in sequence order: one value to fetch and
# decode instead of a row per event, with what says whether that text can stand for the
# rows: contiguous seqs, and the lowest and highest format.
_SELECT_JOINED = """
SELECT count(*), min(sequence), max(sequence), min(format), max(format),
       string_agg(payload::text, ',' ORDER BY sequence)
FROM session_events WHERE session_id = $1 AND sequence > $2
"""
_SELECT_RECORDS = """
SELECT sequence, event_id, ts, format, payload::text FROM session_events
WHERE session_id = $1 AND sequence > $2 ORDER BY sequence
"""
_LIST_HEAD = "SELECT session_id, created, updated, event_count, title, metadata::text FROM helikon_sessions"
_LIST_TAIL = " ORDER BY updated DESC, session_id LIMIT $1 OFFSET $2"
_LIST = _LIST_HEAD + _LIST_TAIL
# A filter key's condition, on the `json` column (no cast to `jsonb`, which refuses some stored
# text, e.g. `\u0000`): the key's value is of the same JSON kind and equal. {k}: the key's
# parameter, {v}: the value's (as text; numbers compare as numerics: 1 matches 1.0).
_SAME_KIND = {
    "null": "json_typeof(metadata -> {k}::text) = 'null'",
    "true": "json_typeof(metadata -> {k}::text) = 'boolean' AND metadata ->> {k}::text = 'true'",
    "false": "json_typeof(metadata -> {k}::text) = 'boolean' AND metadata ->> {k}::text = 'false'",
    "text": "json_typeof(metadata -> {k}::text) = 'string' AND metadata ->> {k}::text = {v}::text",
    "number": (
        "json_typeof(metadata -> {k}::text) = 'number' AND (metadata ->> {k}::text)::numeric = {v}::numeric"
    ),
}
_INSERT_METADATA = """
INSERT INTO helikon_sessions (session_id, created, updated, event_count, title, metadata, metadata_version)
VALUES ($1, now(), now(), (SELECT COALESCE(MAX(sequence), -1) + 1 FROM session_events WHERE session_id = $1),
        CASE WHEN $3::boolean THEN $2::text END, COALESCE($4::json, '{}'), 1)
"""
_SET_METADATA = (
    _INSERT_METADATA
    + """ON CONFLICT (session_id) DO UPDATE SET
    title = CASE WHEN $3 THEN excluded.title ELSE helikon_sessions.title END,
    metadata = COALESCE($4::json, helikon_sessions.metadata),
    metadata_version = helikon_sessions.metadata_version + 1
"""
)
# Compare-and-set: an existing row changes only at the expected version ($5); a missing one
# (version 0) is inserted only if $5 is 0 and no one inserted it first. Under READ COMMITTED a
# concurrent update of the row makes this one re-check its WHERE against the new version.
_UPDATE_METADATA_AT = """
UPDATE helikon_sessions SET
    title = CASE WHEN $3 THEN $2 ELSE title END,
    metadata = COALESCE($4::json, metadata),
    metadata_version = metadata_version + 1
WHERE session_id = $1 AND metadata_version = $5 RETURNING metadata_version
"""
_INSERT_METADATA_AT = _INSERT_METADATA + "ON CONFLICT (session_id) DO NOTHING RETURNING metadata_version"
_METADATA = "SELECT title, metadata::text, metadata_version FROM helikon_sessions WHERE session_id = $1"

# The stored checkpoint and the payload now at its as_of_seq (NULL: no event there), whose
# `helikon.core.session.checkpoint.fingerprint` the client computes: PostgreSQL's sha1() is not in
# every build (nor before version 11), and one event's payload is small.
_CHECKPOINT = """
SELECT c.as_of_seq, c.projector, c.fingerprint, c.state, e.payload::text
FROM session_checkpoints c
LEFT JOIN session_events e ON e.session_id = c.session_id AND e.sequence = c.as_of_seq
WHERE c.session_id = $1
"""
_PAYLOAD_AT = "SELECT payload::text FROM session_events WHERE session_id = $1 AND sequence = $2"
# Compare-and-set on as_of_seq: a checkpoint only moves forward, unless the stored one is
# unusable, and then any good one replaces it: another projector built it, the reader found
# it unusable ($4: a fingerprint or state that does not check out, which SQL cannot see), or
# the log holds no event at its as_of_seq. Nothing is written when the log holds no event at
# $2 (the SELECT finds no row), so a checkpoint never runs ahead of its log.
_SAVE_CHECKPOINT = """
INSERT INTO session_checkpoints (session_id, as_of_seq, projector, fingerprint, state, written)
SELECT $1, $2, $3, $5, $6, now() FROM session_events WHERE session_id = $1 AND sequence = $2
ON CONFLICT (session_id) DO UPDATE SET
    as_of_seq = excluded.as_of_seq, projector = excluded.projector, fingerprint = excluded.fingerprint,
    state = excluded.state, written = excluded.written
WHERE excluded.as_of_seq > session_checkpoints.as_of_seq
    OR $4 OR excluded.projector <> session_checkpoints.projector
    OR NOT EXISTS (
        SELECT 1 FROM session_events e WHERE e.session_id = $1 AND e.sequence = session_checkpoints.as_of_seq
    )
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


def _unmigrated() -> UserError:
    return UserError(
        "this database's tables predate metadata versions: run `await PostgresSession.migrate(pool)` "
        "once (PostgresSession.open and open_session do), then read or set metadata"
    )


def _check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id or "\x00" in session_id:
        raise UserError(f"session_id must be a non-empty string without NUL characters, got {session_id!r}")
    return session_id


class PostgresSession(StoredSession):
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

    __slots__ = ("_db", "_pool")

    def __init__(self, pool: Pool, session_id: str, *, owns_pool: bool = False) -> None:
        """A session on an already migrated `pool` (what `open_without_migrate` returns).

        Args:
            pool: The asyncpg pool to use.
            session_id: The log this instance reads and writes.
            owns_pool: Close `pool` in `aclose()`.
        """
        super().__init__(_check_session_id(session_id), owns_store=owns_pool)
        self._pool = pool
        self._db = cast(_Pool, pool)

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

    # --- the store's part of the Session (see StoredSession) -----------------------------------

    @property
    def pool(self) -> Pool:
        """The asyncpg pool this session uses."""
        return self._pool

    async def _write(
        self, events: Sequence[SessionEvent], ids: list[str] | None, expected: int | None
    ) -> None:
        # One transaction: the session's advisory lock, then one multi-row INSERT (see the class).
        kinds: list[str] = []
        payloads: list[str] = []
        stamps: list[datetime | None] = []
        versions: list[int] = []
        for event in events:
            kinds.append(event.type)
            payloads.append(encode_event(event))
            stamps.append(event.ts)
            versions.append(stored_version(event))
        sid = self._session_id
        try:
            try:
                async with self._db.acquire() as conn, conn.transaction(isolation="read_committed"):
                    await conn.execute(_LOCK, sid)
                    first, inserted = await conn.fetchrow(
                        _INSERT, sid, kinds, payloads, stamps, versions, ids, expected
                    )
                    if not inserted:  # only the expected seq stops a non-empty insert
                        raise SessionConflict(
                            expected_seq=cast(int, expected), actual_seq=first - 1, session_id=sid
                        )
            except (SessionConflict, asyncpg.UniqueViolationError):
                if ids is None:
                    raise
                # Maybe a retry whose earlier attempts stored some of the events: write the rest.
                await self._append_rest(kinds, payloads, stamps, versions, ids, expected)
        except _ERRORS as exc:
            raise _translate(exc, "append") from exc

    async def _append_rest(
        self,
        kinds: list[str],
        payloads: list[str],
        stamps: list[datetime | None],
        versions: list[int],
        ids: list[str],
        expected: int | None,
    ) -> None:
        """Append the events of a batch its earlier attempts did not store (see `retry_plan`)."""
        sid = self._session_id
        async with self._db.acquire() as conn, conn.transaction(isolation="read_committed"):
            await conn.execute(_LOCK, sid)  # each statement after it sees every earlier append
            stored = {row[0]: (int(row[1]), row[2]) for row in await conn.fetch(_STORED_IDS, sid, ids)}
            last = int(await conn.fetchval(_LAST, sid))
            rest = retry_plan(sid, payloads, ids, stored, last, expected)
            if rest:
                await conn.fetchrow(
                    _INSERT,
                    sid,
                    [kinds[k] for k in rest],
                    [payloads[k] for k in rest],
                    [stamps[k] for k in rest],
                    [versions[k] for k in rest],
                    [ids[k] for k in rest],
                    None,  # checked by the plan, under the lock
                )

    async def _read_records(self, after: int) -> list[StoredRow]:
        try:
            rows = await self._db.fetch(_SELECT_RECORDS, self._session_id, after)
        except _ERRORS as exc:
            raise _translate(exc, "records") from exc
        return [(int(row[0]), row[1], row[2], row[3], row[4]) for row in rows]

    async def _store_metadata(self, title: str | None, metadata: str | None, expected: int | None) -> None:
        sid = self._session_id
        args = (sid, title, title is not None, metadata)
        try:
            if expected is None:
                await self._db.fetch(_SET_METADATA, *args)
                return
            if await self._db.fetch(_UPDATE_METADATA_AT, *args, expected):
                return
            if expected == 0 and await self._db.fetch(_INSERT_METADATA_AT, *args):
                return
            actual = await self._db.fetchval(
                "SELECT metadata_version FROM helikon_sessions WHERE session_id = $1", sid
            )
        except asyncpg.UndefinedColumnError as exc:
            raise _unmigrated() from exc
        except _ERRORS as exc:
            raise _translate(exc, "set_metadata") from exc
        raise MetadataConflict(expected_version=expected, actual_version=int(actual or 0), session_id=sid)

    async def _read_metadata(self) -> SessionMetadata:
        try:
            row = cast("Sequence[Any] | None", await self._db.fetchrow(_METADATA, self._session_id))
        except asyncpg.UndefinedColumnError as exc:
            raise _unmigrated() from exc
        except _ERRORS as exc:
            raise _translate(exc, "metadata") from exc
        if row is None:
            return SessionMetadata()
        return SessionMetadata(title=row[0], metadata=json.loads(row[1]), version=int(row[2]))

    @staticmethod
    async def list_sessions(
        pool: Pool, *, limit: int = 100, offset: int = 0, filter: Mapping[str, JsonValue] | None = None
    ) -> list[SessionInfo]:
        """The sessions in the database, most recently updated first, from their summary rows.

        No log is read. `offset` skips that many first (the next page: `offset + limit`).
        `filter`: only the sessions whose metadata has each of its top-level keys with an
        equal JSON scalar (see `SqliteSession.list_sessions`), compared in the query.

        Example:
            `[info.session_id for info in await PostgresSession.list_sessions(pool, filter={"user": "u1"})]`
        """
        limit, offset = check_page(limit, offset)
        query, args = _LIST, list[object]([limit, offset])
        pairs = check_filter(filter)
        if pairs:
            conditions: list[str] = []
            for key, value in pairs:
                kind = scalar_kind(value)
                args.append(key)
                k = f"${len(args)}"
                if kind in ("text", "number"):
                    args.append(value if isinstance(value, str) else json.dumps(value))
                conditions.append(_SAME_KIND[kind].format(k=k, v=f"${len(args)}"))
            query = f"{_LIST_HEAD} WHERE {' AND '.join(conditions)}{_LIST_TAIL}"
        try:
            rows = await cast(_Pool, pool).fetch(query, *args)
        except _ERRORS as exc:
            raise _translate(exc, "list_sessions") from exc
        return [
            SessionInfo(
                session_id=row[0],
                created=row[1],
                updated=row[2],
                event_count=int(row[3]),
                title=row[4],
                metadata=json.loads(row[5]),
            )
            for row in rows
        ]

    async def _start_from_checkpoint(self) -> None:
        try:
            row = await self._db.fetch(_CHECKPOINT, self._session_id)
        except asyncpg.UndefinedTableError:
            return  # a schema from before migration 3 (opened without `migrate`): no checkpoints
        except _ERRORS as exc:
            raise _translate(exc, "snapshot") from exc
        if not row:
            return
        as_of_seq, projector, stored, state, payload = row[0]
        found = None if payload is None else fingerprint(payload)
        projection = load(Checkpoint(int(as_of_seq), projector, stored, state), found)
        if projection is None:
            self._stale_checkpoint = True  # rebuilt from the whole log and replaced below
            return
        self._log.start_at(projection, int(as_of_seq))

    async def _store_checkpoint(self, as_of_seq: int, state: str) -> bool:
        sid = self._session_id
        try:
            # The event at as_of_seq is immutable once written, so the fingerprint of its payload,
            # read here, is the one any later reader compares with.
            payload = await self._db.fetchval(_PAYLOAD_AT, sid, as_of_seq)
            if payload is None:  # the log was cut back under us: nothing to fingerprint
                return False
            args = (sid, as_of_seq, PROJECTOR_VERSION, self._stale_checkpoint, fingerprint(payload), state)
            await self._db.fetch(_SAVE_CHECKPOINT, *args)  # one statement: its own transaction
        except _ERRORS:
            return False  # only an optimization: the snapshot is read already; a later one retries
        return True

    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        sid = self._session_id
        try:
            count, first, last, low, high, joined = await self._db.fetchrow(_SELECT_JOINED, sid, after)
            if not count:
                return []
            if last - first + 1 == count:  # contiguous, as appends write them
                events = decode_joined(joined, count)
                # Mixed formats (an old log appended to since) matter only for unknown events.
                if events is not None and (
                    low == high or (high <= FORMAT_VERSION and UnknownEvent not in set(map(type, events)))
                ):
                    seqs = range(first, first + count)
                    events = upgrade_all(sid, seqs, high, events)
                    return list(map(new_entry, zip(seqs, events, strict=True)))
            # A damaged payload, a gap or mixed formats: row by row, each with its own format.
            rows = await self._db.fetch(_SELECT, sid, after)
        except _ERRORS as exc:
            raise _translate(exc, action) from exc
        seqs = [row[0] for row in rows]
        events = upgrade_all(sid, seqs, [row[2] for row in rows], decode_events([r[1] for r in rows]))
        return list(map(new_entry, zip(seqs, events, strict=True)))

    # --- lifecycle -----------------------------------------------------------------------------

    async def _close_store(self) -> None:
        await self._db.close()

    @property
    def _store(self) -> object:
        return self._pool

    async def _sibling(self, session_id: str) -> Self:
        return type(self).open_without_migrate(self._pool, session_id)

    def __repr__(self) -> str:
        return f"PostgresSession(session_id={self._session_id!r})"


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
