"""The one-statement full read of a SQLite session (`read_joined`) and when it steps aside.

`group_concat` joins rows in the order its loop visits them; the read trusts that order only
when SQLite's plan for the statement is one primary-key range loop, and only for a
contiguous run of sequence numbers. Otherwise it returns None and the session reads row by
row, which the end-to-end checks here confirm still gives the whole log, in order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.core.session.codec import decode_joined
from helikon.sessions._sqlite_jobs import append_rows, event_row, joined_in_order, migrate_schema, read_joined
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession


def said(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


@pytest.fixture
def cur(tmp_path: Path) -> Iterator[sqlite3.Cursor]:
    with closing(sqlite3.connect(tmp_path / "s.db", isolation_level=None)) as conn:
        cursor = conn.cursor()
        migrate_schema(cursor)
        yield cursor


def write(cur: sqlite3.Cursor, session_id: str, texts: list[str]) -> None:
    append_rows(cur, session_id, [event_row(said(t)) for t in texts], None, None, "2026-01-01T00:00:00Z")


def test_the_migrated_schema_is_read_in_key_order_in_one_statement(cur: sqlite3.Cursor) -> None:
    write(cur, "a", [f"a{i}" for i in range(300)])
    write(cur, "b", ["b0"])
    assert joined_in_order(cur)
    joined = read_joined(cur, "a", 99)
    assert joined is not None
    count, first, text, low, high = joined
    assert (count, first, low, high) == (200, 100, 2, 2)
    assert [json.loads(f"[{text}]")[i]["content"][0]["text"] for i in (0, 199)] == ["a100", "a299"]
    assert read_joined(cur, "a", 299) == (0, 0, "", 2, 2)  # nothing after the last
    assert read_joined(cur, "nobody", -1) == (0, 0, "", 2, 2)


def test_a_gap_in_the_sequence_numbers_is_refused(cur: sqlite3.Cursor) -> None:
    write(cur, "a", ["x", "y", "z"])
    cur.execute("DELETE FROM session_events WHERE session_id = 'a' AND sequence = 1")
    assert read_joined(cur, "a", -1) is None


def test_a_table_read_by_another_plan_is_not_joined(tmp_path: Path) -> None:
    """A `session_events` without the primary key is scanned, not searched: no joined read."""
    with closing(sqlite3.connect(tmp_path / "other.db")) as conn:
        conn.execute(
            "CREATE TABLE session_events (session_id TEXT, sequence INTEGER, kind TEXT, payload TEXT, "
            "ts TEXT, format INTEGER)"
        )
        cursor = conn.cursor()
        assert not joined_in_order(cursor)
        assert read_joined(cursor, "a", -1) is None


async def test_rows_stored_out_of_insertion_order_read_in_sequence_order(tmp_path: Path) -> None:
    """Rows inserted in reverse (by hand) still read 0, 1, 2 ... through the session."""
    path = tmp_path / "rev.db"
    db = await SqliteDatabase.open(path)
    try:
        await SqliteSession.migrate(db)
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            kind, payload, ts, version = event_row(said("?"))
            for seq in reversed(range(400)):
                row = (seq, payload.replace('"?"', f'"m{seq}"'), ts, version)
                conn.execute(
                    "INSERT INTO session_events (session_id, sequence, kind, payload, ts, format) "
                    "VALUES ('r', ?, 'user_message', ?, ?, ?)",
                    row,
                )
        entries = await SqliteSession.open_without_migrate(db, "r").events()
        assert [e.seq for e in entries] == list(range(400))
        assert [e.event.content[0].text for e in entries[:3]] == ["m0", "m1", "m2"]  # type: ignore[union-attr]
        assert kind == "user_message"
    finally:
        await db.aclose()


def test_decode_joined_of_a_read_gives_the_events() -> None:
    text = ",".join(
        json.dumps(
            {"type": "user_message", "content": [{"type": "text", "text": t}], "ts": "2026-01-01T00:00:00Z"}
        )
        for t in "abc"
    )
    events = decode_joined(text, 3)
    assert events is not None
    assert [e.content[0].text for e in events] == ["a", "b", "c"]  # type: ignore[union-attr]
    assert decode_joined(text, 4) is None  # a count that does not match: row by row
