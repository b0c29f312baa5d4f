"""`helikon.sessions.postgres` against a real PostgreSQL server, real pools and real processes."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from datetime import UTC, datetime

import asyncpg
import pytest
from session_helpers import every_kind, say, seqs, texts

from helikon.core.exceptions import SessionBackendError, SessionError, SessionUnavailable, UserError
from helikon.core.session import (
    SequenceId,
    Session,
    SessionEvent,
    ToolCalled,
    UnknownEvent,
    project,
)
from helikon.core.session._log_cache import WARM
from helikon.core.session.checkpoint import CHECKPOINT_EVERY, PROJECTOR_VERSION, fingerprint
from helikon.core.session.codec import FORMAT_VERSION, encode_event
from helikon.sessions.postgres import MIGRATION_LOCK_KEY, SCHEMA_VERSION, PostgresSession, open_session
from helikon.testing import session_conformance as conformance
from helikon.testing.servers import PostgresServer, free_port

pytestmark = pytest.mark.integration


async def run_writer(script: str, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()[-3000:]
    return out.decode()


# --- the conformance suite -------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    conformance.checks_for(
        conformance.ConformanceBackend(
            name="postgres",
            open=lambda session_id: open_session(session_id, dsn=""),  # never opened: checks_for reads flags
            opener="helikon.sessions.postgres:open_session",
            crash_safe=True,
        )
    ),
    ids=lambda check: check.__name__,
)
async def test_conformance(check: conformance.Check, postgres_pool: asyncpg.Pool, postgres_dsn: str) -> None:
    async def open_(session_id: str) -> Session:
        return await PostgresSession.open(postgres_pool, session_id)

    backend = conformance.ConformanceBackend(
        name="postgres",
        open=open_,
        opener="helikon.sessions.postgres:open_session",
        opener_kwargs={"dsn": postgres_dsn},
        crash_safe=True,
    )
    await check(backend)


# --- semantics -------------------------------------------------------------------------------


async def test_append_events_since_and_snapshot(postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "user-42")
    assert isinstance(session, Session)
    assert session.session_id == "user-42" and session.pool is postgres_pool
    assert await session.events() == [] and (await session.snapshot()).messages == ()

    logged = every_kind()
    await session.append(logged[:1])
    await session.append([])  # a no-op
    await session.append(logged[1:])
    entries = await session.events()
    assert seqs(entries) == [0, 1, 2, 3, 4, 5]
    assert [entry.event for entry in entries] == logged

    assert seqs(await session.events(since=SequenceId(0))) == [1, 2, 3, 4, 5]
    assert seqs(await session.events(since=SequenceId(4))) == [5]
    assert await session.events(since=SequenceId(5)) == []
    assert await session.events(since=SequenceId(99)) == []
    assert seqs(await session.events(since=SequenceId(-7))) == [0, 1, 2, 3, 4, 5]
    assert await session.snapshot() == project(logged)

    again = PostgresSession.open_without_migrate(postgres_pool, "user-42")
    assert await again.events() == entries


async def test_the_stored_format(postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "fmt")
    logged = every_kind()
    await session.append(logged)
    columns = await postgres_pool.fetch(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = 'session_events' ORDER BY ordinal_position"
    )
    assert [tuple(row) for row in columns] == [
        ("session_id", "text", "NO"),
        ("sequence", "bigint", "NO"),
        ("kind", "text", "NO"),
        ("payload", "json", "NO"),
        ("ts", "timestamp with time zone", "YES"),
        ("format", "integer", "NO"),
        ("event_id", "text", "YES"),
    ]
    key = await postgres_pool.fetchval(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'session_events'::regclass "
        "AND contype = 'p'"
    )
    assert key == "PRIMARY KEY (session_id, sequence)"
    rows = await postgres_pool.fetch(
        "SELECT session_id, sequence, kind, payload::text, ts, format FROM session_events ORDER BY sequence"
    )
    for row, event in zip(rows, logged, strict=True):
        assert row["session_id"] == "fmt" and row["kind"] == event.type and row["format"] == FORMAT_VERSION
        assert row["payload"] == encode_event(event)  # `json` keeps the codec's text, byte for byte
        assert row["ts"] == event.ts
    assert [row["sequence"] for row in rows] == list(range(len(logged)))
    migrations = await postgres_pool.fetch("SELECT version, applied_at FROM helikon_schema_migrations")
    assert [row["version"] for row in migrations] == [1, 2, 3, 4, SCHEMA_VERSION]
    assert SCHEMA_VERSION == 5
    assert isinstance(migrations[0]["applied_at"], datetime)
    checkpoint_columns = await postgres_pool.fetch(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = 'session_checkpoints' ORDER BY ordinal_position"
    )
    assert [tuple(row) for row in checkpoint_columns] == [
        ("session_id", "text", "NO"),
        ("as_of_seq", "bigint", "NO"),
        ("projector", "text", "NO"),
        ("fingerprint", "text", "NO"),
        ("state", "text", "NO"),
        ("written", "timestamp with time zone", "NO"),
    ]


async def test_sessions_are_isolated(postgres_pool: asyncpg.Pool) -> None:
    a = await PostgresSession.open(postgres_pool, "a")
    b = PostgresSession.open_without_migrate(postgres_pool, "b")
    await a.append([say("a0")])
    await b.append([say("b0"), say("b1")])
    await a.append([say("a1")])
    assert texts(await a.events()) == ["a0", "a1"] and seqs(await a.events()) == [0, 1]
    assert texts(await b.events()) == ["b0", "b1"] and seqs(await b.events()) == [0, 1]
    similar = PostgresSession.open_without_migrate(postgres_pool, "a ")
    assert await similar.events() == []


async def test_twenty_concurrent_writers_get_contiguous_sequences(postgres_pool: asyncpg.Pool) -> None:
    await PostgresSession.migrate(postgres_pool)
    writers, per_writer = 20, 10

    async def writer(index: int) -> None:
        session = PostgresSession.open_without_migrate(postgres_pool, "busy")
        for n in range(per_writer):
            await session.append([say(f"w{index}:{n}")])

    await asyncio.gather(*(writer(i) for i in range(writers)))
    entries = await PostgresSession.open_without_migrate(postgres_pool, "busy").events()
    assert seqs(entries) == list(range(writers * per_writer))
    logged = texts(entries)
    for index in range(writers):
        assert [t for t in logged if t.startswith(f"w{index}:")] == [
            f"w{index}:{n}" for n in range(per_writer)
        ]


async def test_a_pool_defaulting_to_repeatable_read_still_numbers_contiguously(postgres_dsn: str) -> None:
    # The lock must be taken before the snapshot MAX(sequence) is read from: sessions set
    # READ COMMITTED for their transactions instead of inheriting the pool's isolation.
    settings = {"default_transaction_isolation": "repeatable read"}
    async with asyncpg.create_pool(postgres_dsn, min_size=1, max_size=8, server_settings=settings) as pool:
        await asyncio.gather(*(PostgresSession.migrate(pool) for _ in range(4)))

        async def writer(index: int) -> None:
            session = PostgresSession.open_without_migrate(pool, "rr")
            for n in range(10):
                await session.append([say(f"w{index}:{n}"), say(f"w{index}:{n}+")])

        await asyncio.gather(*(writer(i) for i in range(8)))
        assert seqs(await PostgresSession.open_without_migrate(pool, "rr").events()) == list(range(160))


WRITER = """
import asyncio, sys
from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.sessions.postgres import open_session

async def main(dsn, session_id, tag, count):
    async with await open_session(session_id, dsn=dsn) as session:
        for n in range(int(count)):
            await session.append([UserMessageEvent(content=(TextPart(text=f"{tag}:{n}"),))])

asyncio.run(main(*sys.argv[1:]))
"""


async def test_four_processes_write_one_session(postgres_dsn: str, postgres_pool: asyncpg.Pool) -> None:
    await asyncio.gather(*(run_writer(WRITER, postgres_dsn, "shared", f"p{i}", "50") for i in range(4)))
    entries = await PostgresSession.open_without_migrate(postgres_pool, "shared").events()
    assert seqs(entries) == list(range(200))
    logged = texts(entries)
    for i in range(4):
        assert [t for t in logged if t.startswith(f"p{i}:")] == [f"p{i}:{n}" for n in range(50)]


# --- failures --------------------------------------------------------------------------------


async def test_an_event_postgres_cannot_store_fails_the_whole_append(postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "nul")
    await session.append([say("before")])
    # The payload may hold a NUL (escaped in its JSON); the `kind` column, TEXT, cannot.
    odd = UnknownEvent(type="a NUL \x00 in a type", data={"type": "a NUL \x00 in a type"})
    with pytest.raises(SessionBackendError, match="0x00"):
        await session.append([say("fine"), odd, say("also fine")])
    assert texts(await session.events()) == ["before"]
    await session.append([say("after")])
    assert seqs(await session.events()) == [0, 1] and texts(await session.events())[-1] == "after"


async def test_the_codecs_json_is_stored_byte_for_byte(postgres_pool: asyncpg.Pool) -> None:
    # jsonb (before schema 4) read 1e308 and 1e20 back as ints and refused \u0000 anywhere.
    session = await PostgresSession.open(postgres_pool, "exact")
    args = {"b": 1e308, "a": 1e20, "z": -0.0, "tiny": 5e-324, "big": 2**70, "\x00": "NUL \x00"}
    logged = [ToolCalled(call_id="c", name="t", args=args), say("a NUL \x00 in a text")]
    await session.append(logged)
    rows = await postgres_pool.fetch(
        "SELECT payload::text FROM session_events WHERE session_id = 'exact' ORDER BY sequence"
    )
    assert [row[0] for row in rows] == [encode_event(event) for event in logged]
    [called, said] = [
        entry.event for entry in await PostgresSession.open_without_migrate(postgres_pool, "exact").events()
    ]
    assert said == logged[1] and isinstance(called, ToolCalled)
    assert json.dumps(called.args) == json.dumps(args)  # the same types, digits and key order
    await session.set_metadata(metadata={"n": 1e20, "nul": "\x00"})
    [info] = await PostgresSession.list_sessions(postgres_pool)
    assert json.dumps(info.metadata) == json.dumps({"n": 1e20, "nul": "\x00"})


async def test_a_connection_killed_mid_transaction_writes_nothing(postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "killed")
    await session.append([say("before")])
    async with postgres_pool.acquire() as holder, holder.transaction():
        # Hold the session's lock, so the append waits inside its transaction; then kill it there.
        await holder.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "killed")
        append = asyncio.create_task(session.append([say("lost 1"), say("lost 2")]))
        pid = None
        async with asyncio.timeout(30):
            while pid is None:
                await asyncio.sleep(0.01)
                # Inside a transaction pg_stat_activity is a snapshot taken at its first read:
                # drop it, or a first look before the append waits would be all it ever sees.
                await holder.execute("SELECT pg_stat_clear_snapshot()")
                pid = await holder.fetchval(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND wait_event = 'advisory' AND pid <> pg_backend_pid()"
                )
        assert await holder.fetchval("SELECT pg_terminate_backend($1)", pid)
        with pytest.raises(SessionUnavailable, match="PostgreSQL is unavailable, append did not complete"):
            await append
    assert texts(await session.events()) == ["before"]
    await session.append([say("after")])
    assert seqs(await session.events()) == [0, 1]


async def test_a_bad_session_id_or_a_closed_session_is_a_user_error(postgres_pool: asyncpg.Pool) -> None:
    for bad in ("", "nul\x00", 42):
        with pytest.raises(UserError, match="session_id"):
            PostgresSession.open_without_migrate(postgres_pool, bad)  # type: ignore[arg-type]
    session = await PostgresSession.open(postgres_pool, "closing")
    async with session:
        await session.append([say("hi")])
    with pytest.raises(UserError, match="closed"):
        await session.events()
    # The pool was the caller's: it stays open.
    assert await postgres_pool.fetchval("SELECT count(*) FROM session_events") == 1


async def test_open_session_owns_its_pool(postgres_dsn: str) -> None:
    async with await open_session("owned", dsn=postgres_dsn) as session:
        await session.append([say("hi")])
        pool = session.pool
    assert pool.is_closing()
    with pytest.raises(UserError, match="closed"):
        await session.append([say("again")])
    async with await open_session("owned", dsn=postgres_dsn) as reopened:
        assert texts(await reopened.events()) == ["hi"]


async def test_an_unreachable_server_is_session_unavailable() -> None:
    dsn = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(SessionUnavailable, match="PostgreSQL is unavailable, connect did not complete"):
        await open_session("nowhere", dsn=dsn)


async def test_server_down_then_back_loses_nothing() -> None:
    async with PostgresServer() as server, await open_session("outage", dsn=server.dsn) as session:
        await session.append([say("one"), say("two")])
        await asyncio.to_thread(server.stop, keep_data=True)
        with pytest.raises(SessionUnavailable, match="PostgreSQL is unavailable") as failed:
            await session.append([say("while down")])
        assert isinstance(failed.value, SessionError)
        with pytest.raises(SessionUnavailable, match="events did not complete"):
            await session.events()
        await asyncio.to_thread(server.start)
        assert texts(await session.events()) == ["one", "two"]
        await session.append([say("three")])
        assert seqs(await session.events()) == [0, 1, 2]


# --- unknown events ----------------------------------------------------------------------------


async def test_an_unknown_event_round_trips(postgres_pool: asyncpg.Pool) -> None:
    await PostgresSession.migrate(postgres_pool)
    # Written by a newer helikon (or another program), with its own spacing and key order.
    stored = (
        '{"type": "branch_switched",  "ts": "2026-11-30T07:00:01Z", '
        '"branch": "b2", "nested": {"k": [1, "x"]}}'
    )
    await postgres_pool.execute(
        "INSERT INTO session_events VALUES ('old', 0, 'branch_switched', $1::jsonb, $2, 1)",
        stored,
        datetime(2026, 11, 30, 7, 0, 1, tzinfo=UTC),
    )
    old = PostgresSession.open_without_migrate(postgres_pool, "old")
    await old.append([say("after it")])
    [(seq, event), (next_seq, _)] = await old.events()
    assert (seq, next_seq) == (0, 1)
    assert isinstance(event, UnknownEvent) and event.type == "branch_switched"
    assert event.data == json.loads(stored)
    assert event.ts == datetime(2026, 11, 30, 7, 0, 1, tzinfo=UTC)
    assert project([event]).messages == ()

    copy = PostgresSession.open_without_migrate(postgres_pool, "copy")
    await copy.append([event])
    row = await postgres_pool.fetchrow(
        "SELECT kind, payload::text, ts FROM session_events WHERE session_id = 'copy'"
    )
    assert row is not None
    assert row["kind"] == "branch_switched" and json.loads(row["payload"]) == json.loads(stored)
    assert row["ts"] == datetime(2026, 11, 30, 7, 0, 1, tzinfo=UTC)
    assert [entry.event for entry in await copy.events()] == [event]


# --- migrations --------------------------------------------------------------------------------


async def test_concurrent_migrations_are_serialized_and_idempotent(postgres_pool: asyncpg.Pool) -> None:
    await asyncio.gather(*(PostgresSession.migrate(postgres_pool) for _ in range(4)))
    await PostgresSession.migrate(postgres_pool)
    assert [
        tuple(row) for row in await postgres_pool.fetch("SELECT version FROM helikon_schema_migrations")
    ] == [(version,) for version in range(1, SCHEMA_VERSION + 1)]
    sessions = await asyncio.gather(*(PostgresSession.open(postgres_pool, f"s{i}") for i in range(4)))
    await asyncio.gather(*(s.append([say(s.session_id)]) for s in sessions))
    assert await postgres_pool.fetchval("SELECT count(*) FROM session_events") == 4


async def test_migration_4_keeps_each_stored_text_and_checkpoint(postgres_pool: asyncpg.Pool) -> None:
    from helikon.sessions._postgres_schema import MIGRATIONS

    # A database as helikon left it at schema 3: payloads in jsonb, a checkpoint written.
    await postgres_pool.execute(
        "CREATE TABLE helikon_schema_migrations (version INT PRIMARY KEY, applied_at TIMESTAMPTZ)"
    )
    for version, statement in MIGRATIONS[:3]:
        await postgres_pool.execute(statement)
        await postgres_pool.execute("INSERT INTO helikon_schema_migrations VALUES ($1, now())", version)
    old = PostgresSession.open_without_migrate(postgres_pool, "old")
    logged: list[SessionEvent] = [say(f"m{i}") for i in range(CHECKPOINT_EVERY + 2)]
    logged.append(ToolCalled(call_id="c", name="t", args={"b": 2, "a": 1.5}))
    await old.append(logged)
    before_snapshot = await old.snapshot()  # writes the checkpoint
    select = "SELECT sequence, payload::text FROM session_events ORDER BY sequence"
    before = [tuple(row) for row in await postgres_pool.fetch(select)]
    assert '"args": {"a": 1.5, "b": 2}' in before[-1][1]  # jsonb's rendering: keys sorted, spaces
    await PostgresSession.migrate(postgres_pool)
    assert [tuple(row) for row in await postgres_pool.fetch(select)] == before
    row = await postgres_pool.fetchrow(
        "SELECT c.fingerprint, e.payload::text FROM session_checkpoints c JOIN session_events e "
        "ON e.session_id = c.session_id AND e.sequence = c.as_of_seq"
    )
    assert row is not None and row[0] == fingerprint(row[1])  # still a checkpoint a reader trusts
    fresh = PostgresSession.open_without_migrate(postgres_pool, "old")
    assert [entry.event for entry in await fresh.events()] == logged
    assert await PostgresSession.open_without_migrate(postgres_pool, "old").snapshot() == before_snapshot
    after = ToolCalled(call_id="d", name="t", args={"n": 1e20})
    await fresh.append([after])
    assert (await postgres_pool.fetch(select))[-1][1] == encode_event(after)  # now stored as written


async def test_migrate_waits_for_the_migration_lock(postgres_pool: asyncpg.Pool) -> None:
    async with postgres_pool.acquire() as holder, holder.transaction():
        await holder.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK_KEY)
        migrating = asyncio.create_task(PostgresSession.migrate(postgres_pool))
        await asyncio.sleep(0.2)
        assert not migrating.done()
    await migrating
    assert (
        await postgres_pool.fetchval("SELECT MAX(version) FROM helikon_schema_migrations") == SCHEMA_VERSION
    )


# --- crash safety --------------------------------------------------------------------------------

BATCHES = """
import asyncio, sys
from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.sessions.postgres import open_session

async def main(dsn, session_id):
    session = await open_session(session_id, dsn=dsn)
    number = 0
    while True:
        batch = [UserMessageEvent(content=(TextPart(text=f"b{number}:{i}"),)) for i in range(200)]
        await session.append(batch)
        print(number, flush=True)
        number += 1

asyncio.run(main(*sys.argv[1:]))
"""


async def wait_until_disconnected(pool: asyncpg.Pool, application_name: str) -> None:
    """Until the server has no connection named `application_name` (a killed client's).

    A client killed right after sending COMMIT leaves the server to finish that transaction:
    only once its backend has exited is the log final.
    """
    async with pool.acquire() as conn, asyncio.timeout(60):
        while True:
            # pg_stat_activity is a snapshot per transaction: drop it, so each look is fresh.
            await conn.execute("SELECT pg_stat_clear_snapshot()")
            found = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", application_name
            )
            if not found:
                return
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.037])
async def test_a_writer_killed_mid_append_leaves_whole_batches(
    postgres_dsn: str, postgres_pool: asyncpg.Pool, delay: float
) -> None:
    name = f"helikon-crash-writer-{delay}"
    dsn = f"{postgres_dsn}?application_name={name}"  # asyncpg sends it as a server setting
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", BATCHES, dsn, "crash", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        for _ in range(3):
            async with asyncio.timeout(120):
                assert await process.stdout.readline(), (await process.stderr.read()).decode()  # type: ignore[union-attr]
        await asyncio.sleep(delay)
        writers = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
        assert await postgres_pool.fetchval(writers, name), "the writer's connections are not named"
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
    await wait_until_disconnected(postgres_pool, name)
    session = PostgresSession.open_without_migrate(postgres_pool, "crash")
    entries = await session.events()
    assert len(entries) >= 600 and len(entries) % 200 == 0, len(entries)
    assert seqs(entries) == list(range(len(entries)))
    assert texts(entries) == [f"b{s // 200}:{s % 200}" for s in range(len(entries))]
    await session.append([say("after the crash")])
    assert seqs(await session.events(since=SequenceId(len(entries) - 1))) == [len(entries)]


# --- listing and the envelope --------------------------------------------------------------------


async def test_list_sessions_pages_and_metadata_updates(postgres_pool: asyncpg.Pool) -> None:
    empty = await PostgresSession.open(postgres_pool, "titled-before-any-event")
    await empty.set_metadata(title="Draft")
    for name in ("a", "b", "c"):
        await PostgresSession.open_without_migrate(postgres_pool, name).append([say(name), say(name)])
    listed = await PostgresSession.list_sessions(postgres_pool)
    assert [info.session_id for info in listed] == ["c", "b", "a", "titled-before-any-event"]
    assert (listed[-1].event_count, listed[-1].title, listed[-1].metadata) == (0, "Draft", {})
    a = PostgresSession.open_without_migrate(postgres_pool, "a")
    await a.set_metadata(metadata={"k": [1]})
    await a.set_metadata(title="A")  # None leaves the other field as it is
    [info] = [i for i in await PostgresSession.list_sessions(postgres_pool) if i.session_id == "a"]
    assert (info.title, info.metadata, info.event_count) == ("A", {"k": [1]}, 2)
    page = await PostgresSession.list_sessions(postgres_pool, limit=2, offset=1)
    assert [i.session_id for i in page] == ["b", "a"]  # metadata is not activity: the order stays
    with pytest.raises(UserError, match="limit must be a positive int"):
        await PostgresSession.list_sessions(postgres_pool, limit=0)


async def test_chosen_ids_are_stored_and_a_retry_appends_only_the_rest(postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "ids")
    await session.append([say("a"), say("b")], ids=["id-a", "id-b"])
    await session.append([say("c")])
    stored = await postgres_pool.fetch("SELECT event_id FROM session_events ORDER BY sequence")
    assert [row[0] for row in stored] == ["id-a", "id-b", None]
    with pytest.raises(UserError, match=r"id 'id-b' is stored in session 'ids' \(seq 1\) for another event"):
        await session.append([say("x"), say("not b")], ids=["id-x", "id-b"])
    assert len(await session.records()) == 3
    await session.append([say("x"), say("b")], ids=["id-x", "id-b"])  # "b" is stored: only "x" is new
    stored = await postgres_pool.fetch("SELECT event_id FROM session_events ORDER BY sequence")
    assert [row[0] for row in stored] == ["id-a", "id-b", None, "id-x"]
    count = await postgres_pool.fetchval("SELECT event_count FROM helikon_sessions WHERE session_id = 'ids'")
    assert count == 4


# --- projection checkpoints ------------------------------------------------------------------


async def checkpoint_row(pool: asyncpg.Pool, session_id: str) -> asyncpg.Record | None:
    return await pool.fetchrow(
        "SELECT as_of_seq, projector, fingerprint, state FROM session_checkpoints WHERE session_id = $1",
        session_id,
    )


async def test_a_reader_writes_a_checkpoint_a_new_object_starts_from(postgres_pool: asyncpg.Pool) -> None:
    writer = await PostgresSession.open(postgres_pool, "cp")
    logged = [say(f"m{i}") for i in range(CHECKPOINT_EVERY + 10)]
    await writer.append(logged)
    assert await writer.snapshot() == project(logged)
    row = await checkpoint_row(postgres_pool, "cp")
    assert row is not None and row["as_of_seq"] == len(logged) - 1 and row["projector"] == PROJECTOR_VERSION
    payload = await postgres_pool.fetchval(
        "SELECT payload::text FROM session_events WHERE session_id = 'cp' AND sequence = $1", row["as_of_seq"]
    )
    assert row["fingerprint"] == fingerprint(payload)  # what the docs promise other readers

    # A new object folds only the tail onto the checkpoint's state: an edit of that state
    # (kept well formed) shows in its snapshot, so the events before it were not folded again.
    await postgres_pool.execute(
        "UPDATE session_checkpoints SET state = replace(state, '\"m0\"', '\"M0\"') WHERE session_id = 'cp'"
    )
    more = [say("tail")]
    await writer.append(more)
    WARM.clear()  # as in another process: nothing this one built is reused
    reader = PostgresSession.open_without_migrate(postgres_pool, "cp")
    snapshot = await reader.snapshot()
    assert snapshot == project([say("M0"), *logged[1:], *more])
    assert texts(await reader.events())[:2] == ["m0", "m1"]  # the log itself, read when asked for
    assert await reader.snapshot() == snapshot


async def test_the_checkpoint_only_moves_forward(postgres_pool: asyncpg.Pool) -> None:
    writer = await PostgresSession.open(postgres_pool, "fwd")
    await writer.append([say(f"m{i}") for i in range(2 * CHECKPOINT_EVERY)])
    late = PostgresSession.open_without_migrate(postgres_pool, "fwd")
    await late.snapshot()
    await writer.append([say(f"n{i}") for i in range(CHECKPOINT_EVERY)])
    await PostgresSession.open_without_migrate(postgres_pool, "fwd").snapshot()
    newest = await checkpoint_row(postgres_pool, "fwd")
    assert newest is not None and newest["as_of_seq"] == 3 * CHECKPOINT_EVERY - 1
    # The late reader writes its older checkpoint again: the compare-and-set refuses it.
    late._log.checkpoint_seq = -1  # pyright: ignore[reportPrivateUsage]
    await late._write_checkpoint()  # pyright: ignore[reportPrivateUsage]
    assert await checkpoint_row(postgres_pool, "fwd") == newest
    cold = PostgresSession.open_without_migrate(postgres_pool, "fwd")
    assert await cold.snapshot() == project([entry.event for entry in await writer.events()])


async def test_a_schema_before_checkpoints_still_reads_and_migrates(postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "old")
    logged = [say(f"m{i}") for i in range(CHECKPOINT_EVERY + 3)]
    await session.append(logged)
    await postgres_pool.execute("DROP TABLE session_checkpoints")
    await postgres_pool.execute("DELETE FROM helikon_schema_migrations WHERE version >= 3")
    before = await postgres_pool.fetch("SELECT * FROM session_events ORDER BY sequence")
    # A version 2 schema (opened without migrate): no checkpoints, read and written, no errors.
    old = PostgresSession.open_without_migrate(postgres_pool, "old")
    assert await old.snapshot() == project(logged)
    await PostgresSession.migrate(postgres_pool)
    assert await postgres_pool.fetch("SELECT * FROM session_events ORDER BY sequence") == before
    assert await checkpoint_row(postgres_pool, "old") is None  # migration 3 only adds the table
    again = PostgresSession.open_without_migrate(postgres_pool, "old")
    assert await again.snapshot() == project(logged)
    assert await checkpoint_row(postgres_pool, "old") is not None
