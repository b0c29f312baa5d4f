"""`helikon.sessions.sqlite` against real SQLite files, threads and processes."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from session_helpers import every_kind, read_line, say, texts

from helikon.core.exceptions import SessionBackendError, SessionError, UnreadableSessionEvent, UserError
from helikon.core.items import TextPart
from helikon.core.session import (
    SequenceId,
    Session,
    SessionEntry,
    UnknownEvent,
    UserMessageEvent,
    project,
)
from helikon.core.session.codec import FORMAT_VERSION, encode_event
from helikon.sessions import sqlite as sqlite_module
from helikon.sessions.sqlite import SCHEMA_VERSION, SqliteDatabase, SqliteSession, open_session

pytestmark = pytest.mark.integration


def raw(path: Path) -> closing[sqlite3.Connection]:
    """A plain sqlite3 connection, as another program would open the file."""
    return closing(sqlite3.connect(path, isolation_level=None, timeout=10))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[SqliteDatabase]:
    async with await SqliteDatabase.open(tmp_path / "sessions.db") as database:
        yield database


async def spawn(code: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(proc: asyncio.subprocess.Process) -> None:
    _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()


# --- migrations ------------------------------------------------------------------------------


async def test_migrations_are_idempotent_and_create_the_documented_schema(
    db: SqliteDatabase, tmp_path: Path
) -> None:
    await SqliteSession.migrate(db)
    await SqliteSession.migrate(db)
    await SqliteSession.open(db, "a")
    with raw(tmp_path / "sessions.db") as conn:
        assert [v for (v, _) in conn.execute("SELECT * FROM helikon_schema_migrations")] == [1, 2, 3, 4]
        (applied_at,) = conn.execute("SELECT applied_at FROM helikon_schema_migrations").fetchone()
        assert datetime.fromisoformat(applied_at).tzinfo is not None
        columns = [(r[1], r[2], r[3], r[5]) for r in conn.execute("PRAGMA table_info(session_events)")]
        assert columns == [
            ("session_id", "TEXT", 1, 1),
            ("sequence", "INTEGER", 1, 2),
            ("kind", "TEXT", 1, 0),
            ("payload", "TEXT", 1, 0),
            ("ts", "TEXT", 1, 0),
            ("format", "INTEGER", 1, 0),
            ("event_id", "TEXT", 0, 0),
        ]
        summary = [(r[1], r[2], r[3], r[5]) for r in conn.execute("PRAGMA table_info(helikon_sessions)")]
        assert summary == [
            ("session_id", "TEXT", 1, 1),
            ("created", "TEXT", 1, 0),
            ("title", "TEXT", 0, 0),
            ("metadata", "TEXT", 1, 0),
            ("metadata_version", "INTEGER", 1, 0),
        ]
        checkpoints = [
            (r[1], r[2], r[3], r[5]) for r in conn.execute("PRAGMA table_info(session_checkpoints)")
        ]
        assert checkpoints == [
            ("session_id", "TEXT", 1, 1),
            ("as_of_seq", "INTEGER", 1, 0),
            ("projector", "TEXT", 1, 0),
            ("fingerprint", "TEXT", 1, 0),
            ("state", "TEXT", 1, 0),
            ("written", "TEXT", 1, 0),
        ]
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'session_events'").fetchone()
        assert "WITHOUT ROWID" in sql
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        assert mode == "wal"
    assert SCHEMA_VERSION == 4


async def test_concurrent_migrations_from_two_databases(tmp_path: Path) -> None:
    for attempt in range(5):
        path = tmp_path / f"race-{attempt}.db"
        first, second = await asyncio.gather(SqliteDatabase.open(path), SqliteDatabase.open(path))
        async with first, second:
            await asyncio.gather(SqliteSession.migrate(first), SqliteSession.migrate(second))
            a, b = await asyncio.gather(SqliteSession.open(first, "s"), SqliteSession.open(second, "s"))
            await asyncio.gather(a.append([say("a")]), b.append([say("b")]))
            assert sorted(texts(await a.events())) == ["a", "b"]
        with raw(path) as conn:
            assert conn.execute("SELECT version FROM helikon_schema_migrations").fetchall() == [
                (1,),
                (2,),
                (3,),
                (4,),
            ]


async def test_a_newer_schema_version_is_left_alone(db: SqliteDatabase, tmp_path: Path) -> None:
    await SqliteSession.migrate(db)
    with raw(tmp_path / "sessions.db") as conn:
        conn.execute("INSERT INTO helikon_schema_migrations VALUES (5, '2099-01-01T00:00:00Z')")
    session = await SqliteSession.open(db, "s")
    await session.append([say("still works")])
    assert texts(await session.events()) == ["still works"]


async def test_open_without_migrate_does_no_io(db: SqliteDatabase) -> None:
    session = SqliteSession.open_without_migrate(db, "s")
    assert session.session_id == "s" and session.database is db
    with pytest.raises(SessionBackendError, match="no such table"):
        await session.events()
    await SqliteSession.migrate(db)
    assert await session.events() == []


# --- the Session contract --------------------------------------------------------------------


async def test_append_events_since_and_snapshot(db: SqliteDatabase) -> None:
    session = await SqliteSession.open(db, "user-42")
    assert isinstance(session, Session)
    assert await session.events() == []
    assert await session.snapshot() == project([])

    log = every_kind()
    await session.append(log[:1])
    await session.append(log[1:])
    entries = await session.events()
    assert [e.seq for e in entries] == list(range(len(log)))
    assert [e.event for e in entries] == log  # exact round trip, timestamps included
    assert all(isinstance(e, SessionEntry) for e in entries)

    assert [e.seq for e in await session.events(since=SequenceId(0))] == [1, 2, 3, 4, 5]
    assert [e.seq for e in await session.events(since=SequenceId(3))] == [4, 5]
    assert await session.events(since=SequenceId(5)) == []
    assert await session.events(since=SequenceId(99)) == []
    assert [e.seq for e in await session.events(since=SequenceId(-7))] == list(range(6))

    assert await session.snapshot() == project(log)
    assert [m.type for m in (await session.snapshot()).messages] == ["user", "system"]


async def test_an_empty_append_is_a_no_op_without_a_transaction(db: SqliteDatabase, tmp_path: Path) -> None:
    session = await SqliteSession.open(db, "s")
    with raw(tmp_path / "sessions.db") as locker:
        locker.execute("BEGIN IMMEDIATE")  # an empty append must not wait for this lock
        await asyncio.wait_for(session.append([]), 1)
        locker.execute("ROLLBACK")
    assert await session.events() == []


async def test_stored_rows_are_the_documented_format(db: SqliteDatabase, tmp_path: Path) -> None:
    session = await SqliteSession.open(db, "fmt")
    log = every_kind()
    await session.append(log)
    with raw(tmp_path / "sessions.db") as conn:
        rows = conn.execute(
            "SELECT session_id, sequence, kind, payload, ts, format FROM session_events ORDER BY sequence"
        ).fetchall()
    assert [r[:3] for r in rows] == [("fmt", i, e.type) for i, e in enumerate(log)]
    assert [r[3] for r in rows] == [encode_event(e) for e in log]
    assert {r[5] for r in rows} == {FORMAT_VERSION}
    for (*_, ts, _), event in zip(rows, log, strict=True):
        assert ts.endswith("Z") and len(ts) == len("2026-01-01T00:00:00.000000Z")
        assert datetime.fromisoformat(ts) == event.ts


async def test_timestamps_are_stored_in_utc(db: SqliteDatabase, tmp_path: Path) -> None:
    from datetime import timedelta, timezone

    session = await SqliteSession.open(db, "tz")
    local = datetime(2026, 3, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    await session.append([UserMessageEvent(content=(TextPart(text="x"),), ts=local)])
    with raw(tmp_path / "sessions.db") as conn:
        assert conn.execute("SELECT ts FROM session_events").fetchall() == [("2026-03-01T10:00:00.000000Z",)]
    [(_, event)] = await session.events()
    assert isinstance(event, UserMessageEvent) and event.ts == local


async def test_sessions_in_one_file_are_isolated(db: SqliteDatabase, tmp_path: Path) -> None:
    a = await SqliteSession.open(db, "a")
    b = SqliteSession.open_without_migrate(db, "b")
    await a.append([say("a0"), say("a1")])
    await b.append([say("b0")])
    await a.append([say("a2")])
    async with await SqliteDatabase.open(tmp_path / "sessions.db") as other:
        b_elsewhere = SqliteSession.open_without_migrate(other, "b")
        await b_elsewhere.append([say("b1")])
    assert [(e.seq, t) for e, t in zip(await a.events(), texts(await a.events()), strict=True)] == [
        (0, "a0"),
        (1, "a1"),
        (2, "a2"),
    ]
    assert texts(await b.events()) == ["b0", "b1"]
    assert [e.seq for e in await b.events()] == [0, 1]
    assert await SqliteSession.open_without_migrate(db, "c").events() == []


# --- concurrency -----------------------------------------------------------------------------


async def test_twenty_concurrent_writers_on_separate_databases(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with await SqliteDatabase.open(path) as setup:
        await SqliteSession.migrate(setup)
    writers, appends = 20, 10

    async def writer(number: int) -> None:
        async with await SqliteDatabase.open(path) as db:
            session = SqliteSession.open_without_migrate(db, "shared")
            for i in range(appends):
                batch = [say(f"{number}:{i}:{j}") for j in range(1 + i % 3)]
                await session.append(batch)

    await asyncio.gather(*(writer(n) for n in range(writers)))
    async with await SqliteDatabase.open(path) as db:
        entries = await SqliteSession.open_without_migrate(db, "shared").events()
    expected = writers * sum(1 + i % 3 for i in range(appends))
    assert [e.seq for e in entries] == list(range(expected))  # no gap, no duplicate
    seen = texts(entries)
    assert len(set(seen)) == expected
    for number in range(writers):
        own = [t for t in seen if t.startswith(f"{number}:")]
        assert own == [f"{number}:{i}:{j}" for i in range(appends) for j in range(1 + i % 3)]


WRITER = """
import asyncio, sys
from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.sessions.sqlite import open_session

path, writer = sys.argv[1], sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()  # start together

async def main() -> None:
    async with await open_session("shared", path=path) as session:
        for i in range(50):
            await session.append([UserMessageEvent(content=(TextPart(text=f"{writer}:{i}"),))])
            await asyncio.sleep(0.001)

asyncio.run(main())
"""


async def test_many_processes_write_one_session(tmp_path: Path) -> None:
    path = str(tmp_path / "procs.db")  # fresh: the processes also race to create and migrate it
    procs = [await spawn(WRITER, path, str(n)) for n in range(4)]
    for proc in procs:
        assert await read_line(proc) == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
    for proc in procs:
        await finish(proc)

    async with await open_session("shared", path=path) as session:
        entries = await session.events()
    assert [e.seq for e in entries] == list(range(200))
    seen = texts(entries)
    for n in range(4):
        assert [t for t in seen if t.startswith(f"{n}:")] == [f"{n}:{i}" for i in range(50)]


LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


async def test_an_append_that_waits_out_busy_timeout_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    async with await SqliteDatabase.open(path, busy_timeout=0.2) as db:
        session = await SqliteSession.open(db, "s")
        await session.append([say("before")])

        locker = await spawn(LOCKER, str(path))
        assert await read_line(locker) == "locked"
        started = time.monotonic()
        with pytest.raises(SessionBackendError, match="database is locked") as caught:
            await session.append([say("lost"), say("lost too")])
        assert time.monotonic() - started >= 0.15  # it did wait for the lock
        assert isinstance(caught.value, SessionError)
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert texts(await session.events()) == ["before"]  # WAL: readers do not wait for the writer

        assert locker.stdin is not None
        locker.stdin.write(b"\n")
        await finish(locker)

        await session.append([say("after")])
        entries = await session.events()
        assert texts(entries) == ["before", "after"] and [e.seq for e in entries] == [0, 1]


async def test_the_event_loop_keeps_running_while_sqlite_waits(tmp_path: Path) -> None:
    path = tmp_path / "loop.db"
    async with await SqliteDatabase.open(path) as db:
        session = await SqliteSession.open(db, "s")
        beats: list[float] = []
        stop = asyncio.Event()

        async def heartbeat() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.001)
                beats.append(time.perf_counter())

        beat = asyncio.create_task(heartbeat())
        for i in range(200):
            await session.append([say(str(i))])
        await session.append([say(str(i)) for i in range(2000)])
        assert len(await session.events()) == 2200
        await session.snapshot()

        # Another program holds the write lock for 0.5 s: the append waits on the worker thread.
        release = threading.Event()
        locked = threading.Event()
        released: list[float] = []

        def hold_lock() -> None:
            with raw(path) as conn:
                conn.execute("BEGIN IMMEDIATE")
                locked.set()
                release.wait(0.5)
                released.append(time.perf_counter())
                conn.execute("ROLLBACK")

        holder = threading.Thread(target=hold_lock)
        holder.start()
        # Wait for the lock without blocking the loop: on a loaded machine the thread may take
        # longer than any fixed sleep to get it, and a blocking join here would be the test's
        # own stall of the loop, not SQLite's.
        assert await asyncio.to_thread(locked.wait, 10)
        waiting = time.perf_counter()
        await session.append([say("waited")])
        await asyncio.to_thread(holder.join)
        stop.set()
        await beat
    # The loop ran while the append waited for the lock: heartbeats fell between the append's
    # start and the lock's release. A loop blocked by the wait would have none there. (Counted,
    # not timed: a loaded machine stretches the gaps, it does not empty the window.)
    during = [t for t in beats if waiting < t < released[0]]
    assert len(during) >= 10, (len(during), released[0] - waiting)


async def test_inline_and_worker_paths_store_the_same_rows(tmp_path: Path) -> None:
    big = [say("x" * 1000) for _ in range(100)]  # 100 kB: past the inline limit, goes to the worker
    dumps: list[list[tuple[Any, ...]]] = []
    for inline in (True, False):
        path = tmp_path / f"inline-{inline}.db"
        async with await SqliteDatabase.open(path, inline=inline) as db:
            session = await SqliteSession.open(db, "s")
            await session.append([say("one")])
            await session.append(big)
            await session.append([say("two"), say("three")])
            assert len(await session.events()) == 103
            await session.append([say("four")])
            assert texts(await session.events(since=SequenceId(102))) == ["four"]
        with raw(path) as conn:
            rows = conn.execute("SELECT session_id, sequence, kind, payload FROM session_events").fetchall()
            dumps.append([(sid, seq, kind, json_text(payload)) for sid, seq, kind, payload in rows])
    assert dumps[0] == dumps[1]
    assert [row[1] for row in dumps[0]] == list(range(104))


def json_text(payload: str) -> str:
    """The payload without its timestamp, which differs between the two runs."""
    import json

    obj = json.loads(payload)
    obj.pop("ts")
    return json.dumps(obj, sort_keys=True)


async def test_inline_appends_keep_the_wal_file_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inline commits never checkpoint; the worker does, every few hundred commits, beside the
    # writer, so a burst grows the WAL until it passes the cap and one checkpoint holds the
    # writer to start it over. Without checkpoints the WAL grows by a page or more per commit
    # (about 20 MB for these 3,000). A small cap (256 frames, ~1 MB) here: the default is 16 MB.
    monkeypatch.setattr(sqlite_module, "_WAL_CAP_FRAMES", 256)
    path = tmp_path / "wal.db"
    async with await SqliteDatabase.open(path) as db:
        session = await SqliteSession.open(db, "s")
        for i in range(3000):
            await session.append([say(str(i))])
        assert len(await session.events()) == 3000
    # closing the last connection checkpoints and removes the WAL; measure before that:
    # reopen, write once more and look while it is open
    async with await SqliteDatabase.open(path) as db:
        session = SqliteSession.open_without_migrate(db, "s")
        for i in range(3000):
            await session.append([say(str(i))])
        size = (tmp_path / "wal.db-wal").stat().st_size
        assert texts(await session.events())[3000:] == [str(i) for i in range(3000)]
    assert size < 8_000_000, size


def count_worker_jobs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs that go to a database's worker thread from now on (the slow path)."""
    worker_jobs: list[str] = []
    run = SqliteDatabase._run  # pyright: ignore[reportPrivateUsage]

    async def counting(self: SqliteDatabase, fn: Any, *args: Any, **kwargs: Any) -> Any:
        worker_jobs.append(fn.__name__)
        return await run(self, fn, *args, **kwargs)

    monkeypatch.setattr(SqliteDatabase, "_run", counting)
    return worker_jobs


async def test_a_single_writer_does_not_wait_for_background_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkpoint fsyncs (milliseconds): below the WAL cap it runs beside the inline writer,
    # which never goes to the worker for it; past the cap one holds the writer, then the WAL
    # starts over.
    worker_jobs = count_worker_jobs(monkeypatch)
    async with await SqliteDatabase.open(tmp_path / "burst.db") as db:
        session = await SqliteSession.open(db, "s")
        for i in range(1024):  # 4 checkpoints, far below the cap
            await session.append([say(str(i))])
        assert worker_jobs.count("append_rows") == 0, worker_jobs
        monkeypatch.setattr(sqlite_module, "_WAL_CAP_FRAMES", 1)
        for i in range(1024, 1600):
            await session.append([say(str(i))])
        assert worker_jobs.count("append_rows") >= 1, worker_jobs  # the holding checkpoint's
        assert texts(await session.events()) == [str(i) for i in range(1600)]


async def test_an_append_queued_behind_a_waiting_one_never_overtakes_it(tmp_path: Path) -> None:
    path = tmp_path / "order.db"
    async with await SqliteDatabase.open(path, busy_timeout=10) as db:
        session = await SqliteSession.open(db, "s")
        with raw(path) as locker:
            locker.execute("BEGIN IMMEDIATE")
            first = asyncio.create_task(session.append([say("first")]))  # locked: waits on the worker
            await asyncio.sleep(0.1)
            locker.execute("ROLLBACK")
        # The lock is free now, but "first" is still queued (SQLite's busy handler sleeps
        # between retries): an inline write here would land before it.
        await session.append([say("second")])
        await first
        assert texts(await session.events()) == ["first", "second"]


async def test_a_long_tail_is_read_in_full(tmp_path: Path) -> None:
    async with await SqliteDatabase.open(tmp_path / "tail.db") as db:
        reader = await SqliteSession.open(db, "s")
        writer = SqliteSession.open_without_migrate(db, "s")
        await writer.append([say("0")])
        assert texts(await reader.events()) == ["0"]
        await writer.append([say(str(i)) for i in range(1, 1001)])  # more than one inline read takes
        assert texts(await reader.events()) == [str(i) for i in range(1001)]
        assert len((await reader.snapshot()).messages) == 1001


async def test_a_cancelled_append_that_has_not_started_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cancel.db"
    async with await SqliteDatabase.open(path, busy_timeout=10) as db:
        session = await SqliteSession.open(db, "s")
        with raw(path) as locker:
            locker.execute("BEGIN IMMEDIATE")
            first = asyncio.create_task(session.append([say("first")]))  # will wait for the lock
            second = asyncio.create_task(session.append([say("second")]))  # queued behind it
            await asyncio.sleep(0.1)
            second.cancel()
            first.cancel()  # already running on the worker: it completes
            locker.execute("ROLLBACK")
        for task in (first, second):
            with pytest.raises(asyncio.CancelledError):
                await task
        await session.append([say("third")])
        assert texts(await session.events()) == ["first", "third"]


# --- tolerant decoding -----------------------------------------------------------------------


ROW = "INSERT INTO session_events (session_id, sequence, kind, payload, ts, format) VALUES (?, ?, ?, ?, ?, ?)"


async def test_an_unknown_event_round_trips_verbatim(db: SqliteDatabase, tmp_path: Path) -> None:
    session = await SqliteSession.open(db, "from-the-future")
    payload = '{"type":"branch_switched","branch":"b2","ts":"2031-05-01T10:00:00Z","extra":{"ü":[1,2.5]}}'
    with raw(tmp_path / "sessions.db") as conn:  # a format-1 row: unknown types are kept
        conn.execute(ROW, ("from-the-future", 0, "branch_switched", payload, "2031-05-01T10:00:00Z", 1))
    await session.append([say("known")])
    [(seq, event), (seq2, known)] = await session.events()
    assert (seq, seq2) == (0, 1) and isinstance(known, UserMessageEvent)
    assert isinstance(event, UnknownEvent) and event.type == "branch_switched"
    assert event.data["branch"] == "b2" and event.ts == datetime(2031, 5, 1, 10, tzinfo=UTC)
    assert (await session.snapshot()).messages == project([known]).messages

    copy = SqliteSession.open_without_migrate(db, "copy")
    await copy.append([event])
    with raw(tmp_path / "sessions.db") as conn:
        row = conn.execute(
            "SELECT kind, payload, ts FROM session_events WHERE session_id = 'copy'"
        ).fetchone()
    assert row == ("branch_switched", payload, "2031-05-01T10:00:00Z")
    assert (await copy.events())[0].event == event


async def test_format_2_keeps_unknown_events_only_when_ignorable(db: SqliteDatabase, tmp_path: Path) -> None:
    session = await SqliteSession.open(db, "v2")
    await session.append([say("first")])
    kept = '{"type":"ui_note","ignorable":true,"text":"hi"}'
    with raw(tmp_path / "sessions.db") as conn:
        conn.execute(ROW, ("v2", 1, "ui_note", kept, "", 2))
    [_, (seq, note)] = await session.events()
    assert seq == 1 and note == UnknownEvent(type="ui_note", data=json.loads(kept), version=2)
    with raw(tmp_path / "sessions.db") as conn:
        conn.execute(ROW, ("v2", 2, "merged", '{"type":"merged","to_seq":0}', "", 2))
    for read in (session.events, session.snapshot, SqliteSession.open_without_migrate(db, "v2").events):
        with pytest.raises(
            UnreadableSessionEvent, match=r"event 2 of session 'v2' has type 'merged'"
        ) as info:
            await read()
        assert (info.value.seq, info.value.version, info.value.kind) == (2, 2, "merged")


async def test_a_newer_format_is_refused_naming_the_event(db: SqliteDatabase, tmp_path: Path) -> None:
    session = await SqliteSession.open(db, "v3")
    with raw(tmp_path / "sessions.db") as conn:
        conn.execute(ROW, ("v3", 0, "user_message", encode_event(say("hi")), "", 3))
    with pytest.raises(UnreadableSessionEvent, match="event 0 of session 'v3' is stored in format version 3"):
        await session.events()
    with pytest.raises(UnreadableSessionEvent, match="upgrade paigasus-helikon"):
        await session.records()


@pytest.mark.parametrize(
    "payload",
    [
        "this is not JSON at all",
        "",
        "[1, 2]",
        '{"type":"user_message","content":[],"ts":"2026-01-01T00:00:00Z"},{"type":"x"}',
        '{"type":"user_message","content":"not a tuple"}',
    ],
)
async def test_an_undecodable_payload_comes_back_as_an_unknown_event(
    db: SqliteDatabase, tmp_path: Path, payload: str
) -> None:
    session = await SqliteSession.open(db, "bad")
    await session.append([say("first")])
    with raw(tmp_path / "sessions.db") as conn:
        conn.execute(ROW, ("bad", 1, "weird", payload, "", 1))
    await session.append([say("last")])
    entries = await session.events()
    assert [e.seq for e in entries] == [0, 1, 2]
    assert texts([entries[0], entries[2]]) == ["first", "last"]
    assert isinstance(entries[1].event, UnknownEvent)
    assert [m.type for m in (await session.snapshot()).messages] == ["user", "user"]
    await session.append([entries[1].event])  # and it can be written back
    assert len(await session.events(since=SequenceId(2))) == 1


# --- lifecycle and arguments -----------------------------------------------------------------


async def test_use_after_close_is_a_clear_error(tmp_path: Path) -> None:
    db = await SqliteDatabase.open(tmp_path / "closed.db")
    session = await SqliteSession.open(db, "s")
    await db.aclose()
    await db.aclose()  # idempotent
    assert db.closed and "closed" in repr(db)
    for call in (session.append([say("x")]), session.events(), session.snapshot(), SqliteSession.migrate(db)):
        with pytest.raises(UserError, match="closed"):
            await call

    async with await SqliteDatabase.open(tmp_path / "closed.db") as db2:
        async with SqliteSession.open_without_migrate(db2, "s") as borrowed:
            await borrowed.append([say("x")])
        assert not db2.closed  # a session does not close a database it did not open
        with pytest.raises(UserError, match="closed"):
            await borrowed.events()
        assert texts(await SqliteSession.open_without_migrate(db2, "s").events()) == ["x"]
    assert db2.closed


async def test_open_session_owns_its_database(tmp_path: Path) -> None:
    path = tmp_path / "owned.db"
    async with await open_session("s", path=path, busy_timeout=5) as session:
        assert session.session_id == "s" and session.database.path == str(path)
        await session.append([say("hello")])
        async with await open_session("s", path=path) as again:
            assert texts(await again.events()) == ["hello"]
    assert session.database.closed
    with pytest.raises(UserError, match="closed"):
        await session.append([say("x")])


async def test_queued_work_finishes_before_close(tmp_path: Path) -> None:
    db = await SqliteDatabase.open(tmp_path / "drain.db")
    session = await SqliteSession.open(db, "s")
    pending = [asyncio.create_task(session.append([say(str(i))])) for i in range(20)]
    await asyncio.sleep(0)  # let them all queue
    await db.aclose()
    await asyncio.gather(*pending)
    async with await open_session("s", path=tmp_path / "drain.db") as again:
        assert len(await again.events()) == 20


def _worker_threads(path: Path) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"helikon-sqlite:{path}"]


async def no_worker_left(path: Path) -> bool:
    for _ in range(500):
        if not _worker_threads(path):
            return True
        await asyncio.sleep(0.01)
    return False


async def test_a_database_dropped_without_close_stops_its_thread(tmp_path: Path) -> None:
    path = tmp_path / "dropped.db"
    db = await SqliteDatabase.open(path)
    await SqliteSession.migrate(db)
    assert len(_worker_threads(path)) == 1
    del db
    gc.collect()
    assert await no_worker_left(path)


async def test_a_cancelled_open_leaves_no_thread_behind(tmp_path: Path) -> None:
    path = tmp_path / "slow.db"
    async with await SqliteDatabase.open(path, journal_mode="DELETE") as db:
        await SqliteSession.migrate(db)
    with raw(path) as locker:
        locker.execute("BEGIN EXCLUSIVE")  # switching to WAL must wait for this
        opening = asyncio.create_task(SqliteDatabase.open(path, busy_timeout=10))
        await asyncio.sleep(0.2)
        assert len(_worker_threads(path)) == 1
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        locker.execute("ROLLBACK")
    assert await no_worker_left(path)


async def test_settings_are_applied(tmp_path: Path) -> None:
    path = tmp_path / "settings.db"
    async with await SqliteDatabase.open(path, journal_mode="delete", synchronous="full") as db:
        session = await SqliteSession.open(db, "s")
        await session.append([say("x")])
    with raw(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    async with await SqliteDatabase.open(path) as db:  # back to WAL, the default
        assert texts(await SqliteSession.open_without_migrate(db, "s").events()) == ["x"]
    with raw(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_an_unopenable_path_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "x.db"
    with pytest.raises(SessionBackendError, match="missing-dir"):
        await SqliteDatabase.open(path)
    assert await no_worker_left(path)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"path": ":memory:"}, "path"),
        ({"path": ""}, "path"),
        ({"path": 42}, "path"),
        ({"busy_timeout": 0}, "busy_timeout"),
        ({"busy_timeout": -1.0}, "busy_timeout"),
        ({"busy_timeout": float("nan")}, "busy_timeout"),
        ({"busy_timeout": float("inf")}, "busy_timeout"),
        ({"busy_timeout": True}, "busy_timeout"),
        ({"busy_timeout": "5"}, "busy_timeout"),
        ({"journal_mode": "MEMORY"}, "journal_mode"),
        ({"journal_mode": "OFF"}, "journal_mode"),
        ({"journal_mode": "bogus"}, "journal_mode"),
        ({"journal_mode": None}, "journal_mode"),
        ({"synchronous": "sometimes"}, "synchronous"),
        ({"synchronous": 1}, "synchronous"),
        ({"inline": "yes"}, "inline"),
    ],
)
async def test_bad_database_arguments_name_the_argument(
    tmp_path: Path, kwargs: dict[str, Any], argument: str
) -> None:
    options: dict[str, Any] = {"path": tmp_path / "x.db", **kwargs}
    with pytest.raises(UserError, match=argument) as caught:
        await SqliteDatabase.open(**options)
    assert isinstance(caught.value, ValueError)
    if argument == "path":
        assert "file path" in str(caught.value)
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("session_id", ["", 42, None])
async def test_bad_session_ids_name_the_argument(db: SqliteDatabase, tmp_path: Path, session_id: Any) -> None:
    with pytest.raises(UserError, match="session_id"):
        SqliteSession.open_without_migrate(db, session_id)
    with pytest.raises(UserError, match="session_id"):
        await SqliteSession.open(db, session_id)
    with pytest.raises(UserError, match="session_id"):
        await open_session(session_id, path=tmp_path / "other.db")
    assert not (tmp_path / "other.db").exists()
    with pytest.raises(UserError, match="db"):
        SqliteSession.open_without_migrate("sessions.db", "s")  # type: ignore[arg-type]


async def test_open_session_rejects_memory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="path"):
        await open_session("s", path=":memory:")


# --- crash safety ----------------------------------------------------------------------------

CRASHER = """
import asyncio, sys
from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.sessions.sqlite import open_session

async def main() -> None:
    async with await open_session("crash", path=sys.argv[1]) as session:
        batch = 0
        while True:
            await session.append(
                [UserMessageEvent(content=(TextPart(text=f"{batch}:{i}"),)) for i in range(200)]
            )
            if batch == 0:
                print("committed", flush=True)
            batch += 1

asyncio.run(main())
"""


async def test_a_killed_writer_leaves_only_whole_batches(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    proc = await spawn(CRASHER, str(path))
    assert await read_line(proc) == "committed"
    await asyncio.sleep(0.5)
    proc.kill()  # SIGKILL: no cleanup of any kind
    await proc.wait()
    assert proc.returncode == -9

    async with await open_session("crash", path=path) as session:
        entries = await session.events()
        assert len(entries) >= 200 and len(entries) % 200 == 0
        assert [e.seq for e in entries] == list(range(len(entries)))
        assert texts(entries) == [f"{b}:{i}" for b in range(len(entries) // 200) for i in range(200)]
        await session.append([say("after the crash")])
        assert texts(await session.events(since=SequenceId(len(entries) - 1))) == ["after the crash"]


# --- listing -------------------------------------------------------------------------------------


async def test_list_sessions_pages_and_metadata_updates(db: SqliteDatabase) -> None:
    empty = await SqliteSession.open(db, "titled-before-any-event")
    await empty.set_metadata(title="Draft")
    for name in ("a", "b", "c"):
        await SqliteSession.open_without_migrate(db, name).append([say(name), say(name)])
    listed = await SqliteSession.list_sessions(db)
    assert [info.session_id for info in listed[:3]] == ["c", "b", "a"]  # the newest event first
    draft = next(info for info in listed if info.session_id == "titled-before-any-event")
    assert (draft.event_count, draft.title, draft.metadata) == (0, "Draft", {})
    a = SqliteSession.open_without_migrate(db, "a")
    await a.set_metadata(metadata={"k": [1]})
    await a.set_metadata(title="A")  # None leaves the other field as it is
    [info] = [i for i in await SqliteSession.list_sessions(db) if i.session_id == "a"]
    assert (info.title, info.metadata, info.event_count) == ("A", {"k": [1]}, 2)
    page = await SqliteSession.list_sessions(db, limit=2, offset=1)
    assert [i.session_id for i in page] == [i.session_id for i in listed[1:3]]
    with pytest.raises(UserError, match="limit must be a positive int"):
        await SqliteSession.list_sessions(db, limit=0)
    with pytest.raises(UserError, match="offset must be an int >= 0"):
        await SqliteSession.list_sessions(db, offset=-1)
    with pytest.raises(UserError, match="metadata must hold JSON values only"):
        await a.set_metadata(metadata={"x": {1, 2}})  # type: ignore[dict-item]


async def test_concurrent_writers_of_other_sessions_do_not_keep_appends_off_the_fast_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Work queued for one session holds back inline work of that session only: with one
    # guard for all, four writers always had an append in flight on the worker once the
    # first checkpoint sent them there, and never came back to the inline path.
    worker_jobs = count_worker_jobs(monkeypatch)
    async with await SqliteDatabase.open(tmp_path / "writers.db") as db:
        sessions = [await SqliteSession.open(db, f"w{k}") for k in range(4)]

        async def write(session: SqliteSession) -> None:
            for i in range(300):
                await session.append([say(str(i))])

        await asyncio.gather(*(write(s) for s in sessions))
        for session in sessions:
            assert texts(await session.events()) == [str(i) for i in range(300)]
    appends = worker_jobs.count("append_rows")
    # Of 1,200 appends, those around each checkpoint and those meeting the worker's write
    # lock go to the worker (about a third here); with one guard for all, nearly all did.
    assert appends < 700, appends
