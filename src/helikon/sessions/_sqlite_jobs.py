"""The SQL of `SqliteSession`: the schema and its migrations, and the jobs run on a connection.

Each job is a plain function of a `sqlite3.Cursor`: `SqliteDatabase` runs it on its worker
thread, or inline on the event loop's own connection when that cannot wait. Kept apart from
`sqlite.py`, which holds the database (threads, connections) and the session.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import weakref
from datetime import UTC, datetime
from typing import Final

from helikon.core.exceptions import MetadataConflict, SessionConflict, UserError
from helikon.core.session import SequenceId, SessionEvent, SessionInfo, UnknownEvent
from helikon.core.session._envelope import MetadataFilter, retry_plan, scalar_kind
from helikon.core.session.checkpoint import PROJECTOR_VERSION, Checkpoint, fingerprint
from helikon.core.session.codec import FORMAT_VERSION, encode_event, stored_version

SCHEMA_VERSION: Final = 4
"""The newest schema migration this version of helikon knows and applies."""

MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (1, ("""CREATE TABLE IF NOT EXISTS session_events (
            session_id TEXT NOT NULL, sequence INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
            ts TEXT NOT NULL, format INTEGER NOT NULL, PRIMARY KEY (session_id, sequence)
        ) WITHOUT ROWID""",)),
    # Format 2: a writer-chosen id per event (NULL in rows written before, or when the writer
    # chose none: those read with an id derived from session and seq), and a row per session
    # for `list_sessions`, filled from the existing rows. No stored event is rewritten.
    (2, (
        "ALTER TABLE session_events ADD COLUMN event_id TEXT",
        """CREATE UNIQUE INDEX IF NOT EXISTS session_events_event_id
            ON session_events (session_id, event_id) WHERE event_id IS NOT NULL""",
        """CREATE TABLE IF NOT EXISTS helikon_sessions (
            session_id TEXT NOT NULL PRIMARY KEY, created TEXT NOT NULL, title TEXT,
            metadata TEXT NOT NULL DEFAULT '{}'
        ) WITHOUT ROWID""",
        """INSERT OR IGNORE INTO helikon_sessions (session_id, created)
            SELECT session_id, COALESCE(MIN(NULLIF(ts, '')), '') FROM session_events GROUP BY session_id""",
    )),
    # A projection checkpoint per session (`helikon.core.session.checkpoint`), so a cold snapshot reads
    # it and the tail instead of the whole log. Starts empty: readers fill it in. A rowid table,
    # since a row holds a whole conversation and WITHOUT ROWID suits only small rows.
    (3, ("""CREATE TABLE IF NOT EXISTS session_checkpoints (
            session_id TEXT NOT NULL PRIMARY KEY, as_of_seq INTEGER NOT NULL, projector TEXT NOT NULL,
            fingerprint TEXT NOT NULL, state TEXT NOT NULL, written TEXT NOT NULL
        )""",)),
    # A version per session's metadata, counting the `set_metadata` calls: what compare-and-set
    # (`expected_version`) checks. Existing sessions start at 0; no row is rewritten.
    (4, ("ALTER TABLE helikon_sessions ADD COLUMN metadata_version INTEGER NOT NULL DEFAULT 0",)),
)  # fmt: skip
CREATE_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS helikon_schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)"
)
APPLIED = "SELECT version FROM helikon_schema_migrations"
RECORD = "INSERT INTO helikon_schema_migrations (version, applied_at) VALUES (?, ?)"
NEXT = "SELECT COALESCE(MAX(sequence), -1) + 1 FROM session_events WHERE session_id = ?"
INSERT = (
    "INSERT INTO session_events (session_id, sequence, kind, payload, ts, format, event_id) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# Only a session's first append writes its row: an ignored insert dirties no page, while an
# update per append would add a page to every commit (measured: a third of the append rate).
SUMMARY = "INSERT OR IGNORE INTO helikon_sessions (session_id, created) VALUES (?, ?)"
STORED_IDS = (
    "SELECT event_id, sequence, payload FROM session_events WHERE session_id = ? AND event_id IN ({})"
)
SELECT = (
    "SELECT sequence, payload, format FROM session_events WHERE session_id = ? AND sequence > ? "
    "ORDER BY sequence LIMIT ?"
)
# The same rows with the payloads as their bytes: for a read that met a payload that is not
# UTF-8 (which sqlite3 cannot make into a str), so the codec keeps that one as undecodable.
SELECT_BYTES = (
    "SELECT sequence, CAST(payload AS BLOB), format FROM session_events WHERE session_id = ? "
    "AND sequence > ? ORDER BY sequence LIMIT ?"
)
# One pass over the session's primary-key range; the first and last sequence come from two
# index seeks. `group_concat` joins in the order the loop visits the rows, which is key order
# for exactly the plan `joined_in_order` checks (SQLite before 3.44 has no ORDER BY inside an
# aggregate, and an ordered subquery costs a copy of every payload).
_RANGE = "FROM session_events WHERE session_id = ?1 AND sequence > ?2"
SELECT_JOINED = (
    f"SELECT count(*), group_concat(payload, ','), min(format), max(format), "
    f"(SELECT min(sequence) {_RANGE}), (SELECT max(sequence) {_RANGE}) {_RANGE}"
)
_KEY_ORDER_LOOP = "SEARCH session_events USING PRIMARY KEY (session_id=? AND sequence>?)"
SELECT_RECORDS = (
    "SELECT sequence, event_id, ts, format, payload FROM session_events "
    "WHERE session_id = ? AND sequence > ? ORDER BY sequence"
)
SELECT_RECORDS_BYTES = (
    "SELECT sequence, event_id, ts, format, CAST(payload AS BLOB) FROM session_events "
    "WHERE session_id = ? AND sequence > ? ORDER BY sequence"
)
# A session's event count and last update come from its last event: one primary-key seek
# each (the log itself is not read).
LIST_HEAD = """
SELECT s.session_id, s.created,
    COALESCE((SELECT NULLIF(e.ts, '') FROM session_events e WHERE e.session_id = s.session_id
              ORDER BY e.sequence DESC LIMIT 1), s.created) AS updated,
    (SELECT COALESCE(MAX(e.sequence), -1) + 1 FROM session_events e WHERE e.session_id = s.session_id),
    s.title, s.metadata
FROM helikon_sessions s"""
LIST_TAIL = " ORDER BY updated DESC, s.session_id LIMIT ? OFFSET ?"
LIST = LIST_HEAD + LIST_TAIL
# One condition per filter key, in the query: the session's metadata has the key, with a JSON
# value of the same kind and an equal atom (numbers compare as numbers: 1 matches 1.0).
_HAS_KEY = "EXISTS (SELECT 1 FROM json_each(s.metadata) j WHERE j.key = ? AND {})"
_SAME_KIND = {
    "null": "j.type = 'null'",
    "true": "j.type = 'true'",
    "false": "j.type = 'false'",
    "text": "j.type = 'text' AND j.atom = ?",
    "number": "j.type IN ('integer', 'real') AND j.atom = ?",
}
SELECT_METADATA = "SELECT title, metadata, metadata_version FROM helikon_sessions WHERE session_id = ?"
SELECT_METADATA_VERSION = "SELECT metadata_version FROM helikon_sessions WHERE session_id = ?"
SET_METADATA = (
    "INSERT INTO helikon_sessions (session_id, created, title, metadata, metadata_version) "
    "VALUES (?1, ?2, ?3, COALESCE(?4, '{}'), 1) "
    "ON CONFLICT (session_id) DO UPDATE SET "
    "title = CASE WHEN ?5 THEN excluded.title ELSE title END, metadata = COALESCE(?4, metadata), "
    "metadata_version = metadata_version + 1"
)
SELECT_CHECKPOINT = (
    "SELECT as_of_seq, projector, fingerprint, state FROM session_checkpoints WHERE session_id = ?"
)
# As bytes: the fingerprint hashes the payload's UTF-8, and a payload that is not UTF-8 (which
# sqlite3 cannot read as a str) gets one too.
PAYLOAD_AT = "SELECT CAST(payload AS BLOB) FROM session_events WHERE session_id = ? AND sequence = ?"
# Compare-and-set on `as_of_seq`: a checkpoint only ever moves forward, unless the one stored
# was found unusable (`?7`) or another projector wrote it, and then it is replaced.
SAVE_CHECKPOINT = (
    "INSERT INTO session_checkpoints (session_id, as_of_seq, projector, fingerprint, state, written) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (session_id) DO UPDATE SET as_of_seq = excluded.as_of_seq, "
    "projector = excluded.projector, fingerprint = excluded.fingerprint, state = excluded.state, "
    "written = excluded.written "
    "WHERE ?7 OR excluded.as_of_seq > as_of_seq OR excluded.projector <> projector"
)


def migrate_schema(cur: sqlite3.Cursor) -> None:
    try:
        if max((v for (v,) in cur.execute(APPLIED).fetchall()), default=0) >= SCHEMA_VERSION:
            return  # the common case: already migrated, and no write lock taken
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
    cur.execute("BEGIN IMMEDIATE")  # one migrator at a time, across threads and processes
    try:
        cur.execute(CREATE_MIGRATIONS)
        applied = {v for (v,) in cur.execute(APPLIED).fetchall()}
        for version, statements in MIGRATIONS:
            if version not in applied:
                for statement in statements:
                    cur.execute(statement)
                cur.execute(RECORD, (version, rfc3339(datetime.now(UTC))))
        cur.execute("COMMIT")
    except BaseException:
        rollback(cur)
        raise


def append_rows(
    cur: sqlite3.Cursor,
    session_id: str,
    rows: list[EventRow],
    ids: list[str] | None,
    expected: int | None,
    created: str,
) -> None:
    """One append's transaction: check `expected`, insert the rows and (the first time) the session's.

    `ids`: the caller's, so they may be stored already (a retried append). The unique index
    on ids finds that on the insert, without a read on the common path.
    """
    cur.execute("BEGIN IMMEDIATE")  # waits up to busy_timeout for the write lock
    try:
        (seq,) = cur.execute(NEXT, (session_id,)).fetchone()
        if expected is not None and expected != seq - 1:
            if ids is None:
                raise SessionConflict(expected_seq=expected, actual_seq=seq - 1, session_id=session_id)
            append_rest(cur, session_id, rows, ids, expected, seq, created)  # maybe a retry
            return
        try:
            insert_rows(cur, session_id, seq, rows, ids)
        except sqlite3.IntegrityError:
            if ids is None:
                raise
            # Some ids are stored already (a retry): undo this attempt's rows, start over.
            cur.execute("ROLLBACK")
            cur.execute("BEGIN IMMEDIATE")
            (seq,) = cur.execute(NEXT, (session_id,)).fetchone()
            append_rest(cur, session_id, rows, ids, expected, seq, created)
            return
        if seq == 0:  # the session's first append (migration 2 added the sessions before it)
            cur.execute(SUMMARY, (session_id, created))
        cur.execute("COMMIT")
    except BaseException:
        rollback(cur)
        raise


def insert_rows(
    cur: sqlite3.Cursor, session_id: str, seq: int, rows: list[EventRow], ids: list[str] | None
) -> None:
    if len(rows) == 1:
        kind, payload, ts, version = rows[0]
        cur.execute(INSERT, (session_id, seq, kind, payload, ts, version, ids and ids[0]))
    else:
        cur.executemany(
            INSERT,
            [(session_id, seq + i, k, p, t, v, ids and ids[i]) for i, (k, p, t, v) in enumerate(rows)],
        )


def append_rest(
    cur: sqlite3.Cursor,
    session_id: str,
    rows: list[EventRow],
    ids: list[str],
    expected: int | None,
    seq: int,
    created: str,
) -> None:
    """Inside the append's transaction: write the events of a retry its earlier attempts did not."""
    stored: dict[str, tuple[int, str]] = {}
    for start in range(0, len(ids), 500):  # SQLite caps the parameters of one statement
        chunk = ids[start : start + 500]
        query = STORED_IDS.format(",".join("?" * len(chunk)))
        stored.update((i, (s, p)) for i, s, p in cur.execute(query, (session_id, *chunk)).fetchall())
    rest = retry_plan(session_id, [row[1] for row in rows], ids, stored, seq - 1, expected)
    if not rest:
        cur.execute("ROLLBACK")
        return
    insert_rows(cur, session_id, seq, [rows[k] for k in rest], [ids[k] for k in rest])
    if seq == 0:
        cur.execute(SUMMARY, (session_id, created))
    cur.execute("COMMIT")


def missing_table(exc: sqlite3.OperationalError) -> bool:
    # A schema from before migration 3 (opened without `migrate`): no checkpoints, as if empty.
    return "no such table" in str(exc)


def read_checkpoint(cur: sqlite3.Cursor, session_id: str) -> tuple[Checkpoint, str | None] | None:
    """The stored checkpoint and the fingerprint of the payload now at its `as_of_seq` (None: no event)."""
    try:
        row = cur.execute(SELECT_CHECKPOINT, (session_id,)).fetchone()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return None
        raise
    if row is None:
        return None
    checkpoint = Checkpoint(*row)
    found = cur.execute(PAYLOAD_AT, (session_id, checkpoint.as_of_seq)).fetchone()
    return checkpoint, (fingerprint(found[0]) if found is not None else None)


def save_checkpoint(
    cur: sqlite3.Cursor, session_id: str, as_of_seq: int, state: str, replace: bool, now: str
) -> bool:
    """Store a checkpoint of events 0..`as_of_seq` (if newer, or `replace`); False if not stored.

    The event at `as_of_seq` is immutable once written, so its fingerprint, read here, is the
    one any later reader will compare with.
    """
    found = cur.execute(PAYLOAD_AT, (session_id, as_of_seq)).fetchone()
    if found is None:
        return False
    args = (session_id, as_of_seq, PROJECTOR_VERSION, fingerprint(found[0]), state, now, replace)
    try:
        cur.execute(SAVE_CHECKPOINT, args)  # one statement: its own transaction
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return False
        raise
    return True


def rollback(cur: sqlite3.Cursor) -> None:
    if cur.connection.in_transaction:
        with contextlib.suppress(sqlite3.Error):  # the original error is the one to report
            cur.execute("ROLLBACK")


def not_utf8(exc: sqlite3.Error) -> bool:
    """Whether `exc` is sqlite3's refusal to read a TEXT value that is not UTF-8 as a str."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("Could not decode to UTF-8")


def read_rows(
    cur: sqlite3.Cursor, session_id: str, since: int, limit: int = -1
) -> tuple[tuple[SequenceId, ...], tuple[str | bytes, ...], tuple[int, ...]]:
    try:
        rows: list[tuple[SequenceId, str | bytes, int]] = cur.execute(
            SELECT, (session_id, since, limit)
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if not not_utf8(exc):
            raise
        rows = cur.execute(SELECT_BYTES, (session_id, since, limit)).fetchall()
    if not rows:
        return (), (), ()
    seqs, payloads, versions = zip(*rows, strict=True)
    return seqs, payloads, versions


def read_joined(cur: sqlite3.Cursor, session_id: str, since: int) -> tuple[int, int, str, int, int] | None:
    """The payloads after `since` as one comma-joined string: (count, first seq, text, min and max format).

    Fetching one aggregate value costs a fraction of fetching one row per event. None when
    the rows are not contiguous, or when this connection's plan for the query does not
    visit them in key order (then the caller reads row by row).
    """
    if not joined_in_order(cur):
        return None
    try:
        count, text, low, high, first, last = cur.execute(SELECT_JOINED, (session_id, since)).fetchone()
    except sqlite3.OperationalError as exc:
        if not_utf8(exc):  # a payload that is not UTF-8: row by row, which isolates it
            return None
        raise
    if not count:
        return 0, 0, "", FORMAT_VERSION, FORMAT_VERSION
    if last - first + 1 != count:
        return None
    return count, first, text, low, high


_PLANS_CHECKED: weakref.WeakKeyDictionary[sqlite3.Cursor, bool] = weakref.WeakKeyDictionary()


def joined_in_order(cur: sqlite3.Cursor) -> bool:
    """Whether SQLite runs `SELECT_JOINED` on `cur` as one primary-key range loop and no sort.

    Only then does `group_concat` see the rows in sequence order. Asked once per cursor
    (a connection's plan for a statement does not change while its schema does not).
    """
    known = _PLANS_CHECKED.get(cur)
    if known is None:
        plan: list[tuple[int, int, int, str]] = cur.execute(
            "EXPLAIN QUERY PLAN " + SELECT_JOINED, ("", -1)
        ).fetchall()
        # SQLite before 3.36 spells a loop "SEARCH TABLE name ...".
        loops = [
            (parent, detail.replace("SEARCH TABLE ", "SEARCH ", 1))
            for _, parent, _, detail in plan
            if not detail.startswith("SCALAR SUBQUERY")
        ]
        top = [detail for parent, detail in loops if parent == 0]
        known = top == [_KEY_ORDER_LOOP] and all(detail == _KEY_ORDER_LOOP for _, detail in loops)
        _PLANS_CHECKED[cur] = known
    return known


def read_records(
    cur: sqlite3.Cursor, session_id: str, since: int
) -> list[tuple[int, str | None, str, int, str | bytes]]:
    try:
        return cur.execute(SELECT_RECORDS, (session_id, since)).fetchall()
    except sqlite3.OperationalError as exc:
        if not not_utf8(exc):
            raise
        return cur.execute(SELECT_RECORDS_BYTES, (session_id, since)).fetchall()


def list_rows(
    cur: sqlite3.Cursor, limit: int, offset: int, pairs: MetadataFilter = ()
) -> list[tuple[str, str, str, int, str | None, str]]:
    if not pairs:
        return cur.execute(LIST, (limit, offset)).fetchall()
    conditions: list[str] = []
    args: list[object] = []
    for key, value in pairs:
        kind = scalar_kind(value)
        conditions.append(_HAS_KEY.format(_SAME_KIND[kind]))
        args += (key, value) if kind in ("text", "number") else (key,)
    query = f"{LIST_HEAD} WHERE {' AND '.join(conditions)}{LIST_TAIL}"
    return cur.execute(query, (*args, limit, offset)).fetchall()


def _no_version_column(exc: sqlite3.OperationalError) -> UserError | None:
    # A schema from before migration 4 (opened without `migrate`).
    if "metadata_version" not in str(exc):
        return None
    return UserError(
        "this database's schema predates metadata versions: run `await SqliteSession.migrate(db)` "
        "once (SqliteSession.open does), then read or set metadata"
    )


def metadata_row(cur: sqlite3.Cursor, session_id: str) -> tuple[str | None, str, int] | None:
    try:
        return cur.execute(SELECT_METADATA, (session_id,)).fetchone()
    except sqlite3.OperationalError as exc:
        error = _no_version_column(exc)
        if error is None:
            raise
        raise error from None


def set_metadata_row(
    cur: sqlite3.Cursor,
    session_id: str,
    now: str,
    title: str | None,
    set_title: bool,
    metadata: str | None,
    expected: int | None = None,
) -> None:
    cur.execute("BEGIN IMMEDIATE")  # the version check and the write under one lock
    try:
        if expected is not None:
            row = cur.execute(SELECT_METADATA_VERSION, (session_id,)).fetchone()
            actual = 0 if row is None else int(row[0])
            if actual != expected:
                raise MetadataConflict(
                    expected_version=expected, actual_version=actual, session_id=session_id
                )
        cur.execute(SET_METADATA, (session_id, now, title, metadata, set_title))
        cur.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        rollback(cur)
        error = _no_version_column(exc)
        if error is None:
            raise
        raise error from None
    except BaseException:
        rollback(cur)
        raise


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise UserError(f"session_id must be a non-empty string, not {session_id!r}")
    return session_id


def rfc3339(ts: datetime) -> str:
    if ts.tzinfo is not UTC:
        ts = ts.astimezone(UTC) if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
    iso = ts.isoformat()  # without `timespec`: a third cheaper (every append formats one)
    return iso[:-6] + "Z" if ts.microsecond else iso[:-6] + ".000000Z"


EventRow = tuple[str, str, str, int]  # kind, payload, ts, format version


def event_row(event: SessionEvent) -> EventRow:
    if isinstance(event, UnknownEvent):
        ts = event.data.get("ts")
        return (event.type, encode_event(event), ts if isinstance(ts, str) else "", stored_version(event))
    return (event.type, encode_event(event), rfc3339(event.ts), FORMAT_VERSION)


def all_known(events: list[SessionEvent], newest: int) -> bool:
    return newest <= FORMAT_VERSION and UnknownEvent not in set(map(type, events))


def parse_ts(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def session_info(row: tuple[str, str, str, int, str | None, str]) -> SessionInfo:
    session_id, created, updated, count, title, metadata = row
    epoch = datetime.fromtimestamp(0, UTC)
    return SessionInfo(
        session_id=session_id,
        created=parse_ts(created) or epoch,
        updated=parse_ts(updated) or epoch,
        event_count=count,
        title=title,
        metadata=json.loads(metadata) if metadata else {},
    )
