"""Golden logs: every backend reads what earlier helikon versions stored, upgraded on read, never rewritten.

`tests/fixtures/sessions/v<N>_<backend>.*` hold one session ("golden") exactly as helikon
wrote it at format N: v1 by helikon before event ids (commit 7624098), v2 by the version
that introduced them. Each test loads the raw rows/entries with the store's own client,
opens the session with today's helikon and checks events, envelope and listing; then
appends and checks that the old rows are byte-for-byte unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import asyncpg
import pytest
import redis.asyncio as aioredis
from session_helpers import stream_entries

from helikon.core.exceptions import MetadataConflict
from helikon.core.items import TextPart
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    HandoffOccurred,
    SessionEvent,
    SessionMetadata,
    SessionRecord,
    ToolCalled,
    ToolReturned,
    UnknownEvent,
    UserMessageEvent,
    project,
)
from helikon.core.session._envelope import legacy_event_id
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"


def _t(second: int) -> datetime:
    return datetime(2026, 3, 1, 10, 0, second, tzinfo=UTC)


def _text(text: str) -> tuple[TextPart, ...]:
    return (TextPart(text=text),)


# The events the fixtures hold (what the writers appended).
V1_EVENTS: list[SessionEvent] = [
    UserMessageEvent(content=_text("What is my dining budget?"), ts=_t(0)),
    ToolCalled(
        call_id="call_1", name="budget_status", args={"category": "Dining", "ü": [1, 2.5, None]}, ts=_t(1)
    ),
    ToolReturned(call_id="call_1", content=_text('{"left": 120}'), name="budget_status", ts=_t(2)),
    UnknownEvent(
        type="branch_switched",
        data={"type": "branch_switched", "branch": "b2", "ts": "2026-03-01T10:00:03.000000Z"},
        version=1,
    ),
    AssistantMessageEvent(content=_text("You have 120 left."), agent="budgeter", ts=_t(4)),
    HandoffOccurred(from_agent="budgeter", to_agent="planner", ts=_t(5)),
    Compacted(summary="The user asked about dining; 120 left.", original_count=5, ts=_t(6)),
    UserMessageEvent(content=_text("Thanks"), ts=_t(7)),
]
V2_EVENTS: list[SessionEvent] = [
    *V1_EVENTS,
    UnknownEvent(type="ui_note", data={"type": "ui_note", "ignorable": True, "text": "pinned"}, version=2),
    AssistantMessageEvent(content=_text("You're welcome."), agent="planner", ts=_t(9)),
]
V2_CHOSEN_IDS = {8: "golden-8", 9: "golden-9"}  # the last append chose its ids


def _expected_ids(version: int) -> list[str]:
    events = V1_EVENTS if version == 1 else V2_EVENTS
    return [V2_CHOSEN_IDS.get(seq) or legacy_event_id("golden", seq) for seq in range(len(events))]


def _check_records(records: list[SessionRecord], version: int) -> None:
    events = V1_EVENTS if version == 1 else V2_EVENTS
    assert [r.event for r in records] == events
    assert [r.id for r in records] == _expected_ids(version)
    expected_versions = [1] * 8 if version == 1 else [2, 2, 2, 1, 2, 2, 2, 2, 2, 2]
    assert [r.version for r in records] == expected_versions
    assert [r.ts for r in records] == [e.ts for e in events]


async def _check_session(session: Any, version: int) -> None:
    events = V1_EVENTS if version == 1 else V2_EVENTS
    assert [e.event for e in await session.events()] == events
    assert await session.snapshot() == project(events)
    _check_records(await session.records(), version)
    # Appending to an old log: new events are format 2, and it stays readable as a whole.
    more = UserMessageEvent(content=_text("one more"), ts=_t(30))
    await session.append([more], ids=["after-upgrade"], expected_seq=len(events) - 1)
    await session.append([more], ids=["after-upgrade"])  # a retry: nothing more
    records = await session.records()
    assert [r.event for r in records] == [*events, more]
    assert (records[-1].id, records[-1].version) == ("after-upgrade", 2)


async def _check_metadata(session: Any, version: int) -> None:
    """An old session's metadata reads at version 0, and compare-and-set works on it from there."""
    expected = (
        SessionMetadata(title="Dining budget", metadata={"user": "u1"}) if version == 2 else SessionMetadata()
    )
    assert await session.metadata() == expected
    with pytest.raises(MetadataConflict):
        await session.set_metadata(title="stale", expected_version=1)
    await session.set_metadata(title=expected.title, metadata=expected.metadata, expected_version=0)
    assert await session.metadata() == SessionMetadata(
        title=expected.title, metadata=expected.metadata, version=1
    )


# --- SQLite ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
async def test_sqlite_reads_every_format(tmp_path: Path, version: int) -> None:
    path = tmp_path / "golden.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript((FIXTURES / f"v{version}_sqlite.sql").read_text())
        before = conn.execute("SELECT * FROM session_events ORDER BY sequence").fetchall()
    async with await SqliteDatabase.open(path) as db:
        session = await SqliteSession.open(db, "golden")  # migrates a v1 file to schema 2
        [info] = await SqliteSession.list_sessions(db)
        assert (info.session_id, info.event_count) == (
            "golden",
            len(V1_EVENTS if version == 1 else V2_EVENTS),
        )
        assert info.created == _t(0) and info.updated == (_t(7) if version == 1 else _t(9))
        if version == 2:
            assert (info.title, info.metadata) == ("Dining budget", {"user": "u1"})
        await _check_metadata(session, version)
        listed = await SqliteSession.list_sessions(db, filter={"user": "u1"})
        assert [i.session_id for i in listed] == (["golden"] if version == 2 else [])
        await _check_session(session, version)
    with closing(sqlite3.connect(path)) as conn:
        after = conn.execute("SELECT * FROM session_events ORDER BY sequence").fetchall()
        migrations = [v for (v,) in conn.execute("SELECT version FROM helikon_schema_migrations")]
    if version == 1:  # the migration added a column (NULL in the old rows) and rewrote nothing
        assert [row[:6] for row in after[: len(before)]] == before
        assert {row[6] for row in after[: len(before)]} == {None}
    else:
        assert after[: len(before)] == before
    assert migrations == [1, 2, 3, 4]  # 3 only added the (empty) checkpoints table, 4 a column


# --- PostgreSQL --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
async def test_postgres_reads_every_format(postgres_pool: asyncpg.Pool, version: int) -> None:
    await postgres_pool.execute((FIXTURES / f"v{version}_postgres.sql").read_text())
    select = (
        "SELECT session_id, sequence, kind, payload::text, ts, format FROM session_events ORDER BY sequence"
    )
    before = [tuple(row) for row in await postgres_pool.fetch(select)]
    session = await PostgresSession.open(postgres_pool, "golden")  # migrates a v1 database to schema 2
    [info] = await PostgresSession.list_sessions(postgres_pool)
    assert (info.session_id, info.event_count) == ("golden", len(V1_EVENTS if version == 1 else V2_EVENTS))
    if version == 1:  # filled by the migration from the events' own timestamps
        assert info.created == _t(0) and info.updated == _t(7) and info.title is None
    else:
        assert (info.title, info.metadata) == ("Dining budget", {"user": "u1"})
    await _check_metadata(session, version)
    listed = await PostgresSession.list_sessions(postgres_pool, filter={"user": "u1"})
    assert [i.session_id for i in listed] == (["golden"] if version == 2 else [])
    await _check_session(session, version)
    after = [tuple(row) for row in await postgres_pool.fetch(select)]
    assert after[: len(before)] == before
    [listed] = await PostgresSession.list_sessions(postgres_pool)
    assert listed.event_count == info.event_count + 1 and listed.updated >= info.updated


# --- Redis -------------------------------------------------------------------------------------


async def _load_redis(client: aioredis.Redis, version: int) -> dict[str, Any]:
    fixture = json.loads((FIXTURES / f"v{version}_redis.json").read_text())
    for key, value in fixture["counter"].items():
        await client.set(key, value)
    for key, entries in fixture["streams"].items():
        for entry_id, fields in entries:
            await client.xadd(key, fields, id=entry_id)
    for key, fields in fixture.get("hashes", {}).items():
        await client.hset(key, mapping=fields)  # type: ignore[misc]
    for key, members in fixture.get("sorted_sets", {}).items():
        await client.zadd(key, dict(members))
    return fixture


@pytest.mark.parametrize("version", [1, 2])
async def test_redis_reads_every_format(redis_client: aioredis.Redis, version: int) -> None:
    fixture = await _load_redis(redis_client, version)
    assert sorted(k.decode() for k in cast("list[bytes]", await redis_client.keys("*"))) == fixture["keys"]
    stream = next(iter(fixture["streams"]))
    before = await stream_entries(redis_client, stream)
    session = RedisSession(redis_client, "golden")
    # A v1 server has no summaries: `migrate` adds them (reading only counters and end entries).
    assert await RedisSession.migrate(redis_client) == (1 if version == 1 else 0)
    assert await RedisSession.migrate(redis_client) == 0
    [info] = await RedisSession.list_sessions(redis_client)
    assert (info.session_id, info.event_count) == ("golden", len(V1_EVENTS if version == 1 else V2_EVENTS))
    if version == 1:
        assert info.created == _t(0) and info.updated == _t(7)
    else:
        assert (info.title, info.metadata) == ("Dining budget", {"user": "u1"})
    await _check_metadata(session, version)
    listed = await RedisSession.list_sessions(redis_client, filter={"user": "u1"})
    assert [i.session_id for i in listed] == (["golden"] if version == 2 else [])
    await _check_session(session, version)
    after = await stream_entries(redis_client, stream)
    assert after[: len(before)] == before
