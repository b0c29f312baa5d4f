"""Side-by-side session-backend benchmark: helikon's durable sessions vs. peer frameworks'.

Every contender stores the same conversation logs (helikon: ``UserMessageEvent``s;
openai-agents: ``{"role": "user", "content": ...}`` items; google-adk: user ``Event``s):

1. single-event append throughput (events/s) with 1, 4 and 16 concurrent writers, each
   appending single events to its own session id in the same store;
2. latency of a full read (``events()`` / ``get_items()`` / ``get_session()``) and of
   ``snapshot()`` at 1k, 10k and 100k events in one session (median of a few reads);
   helikon's session objects cache what they read, so its reads are measured cold (a new
   object per read: the main numbers) and warm (the same object again); helikon also: the
   cold ``snapshot()`` of a log compacted with a keep-recent window (a marker every ~500
   events), read through the session's projection checkpoint plus the tail;
3. end to end: loop_overhead.py's agent (one tool, a fake model that calls it once, then
   answers) run N times on ONE persisted conversation, vs. the same agent unpersisted:
   mean per-run time, persisted/unpersisted, and last-quarter/first-quarter growth.

Pairs (helikon vs. peer): sqlite vs. openai-agents ``SQLiteSession`` and google-adk
``SqliteSessionService`` (every SQLite file in WAL mode with ``synchronous=NORMAL``);
postgres vs. openai-agents ``SQLAlchemySession`` (``postgresql+asyncpg``); redis vs.
openai-agents ``RedisSession``. Servers are throwaway ``helikon.testing.servers`` processes
on 127.0.0.1, one per contender. Each contender runs in its own subprocess.

Run: ``bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/sessions.py``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import inspect
import json
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loop_overhead as lo

WRITERS = (1, 4, 16)
LEVELS = (1_000, 10_000, 100_000)
BATCH = 1_000  # events per bulk append when pre-populating
POPULATE_LIMIT_S = 60.0  # populating to 100k taking longer than this: "n/a (populate too slow)"
# The compacted log (helikon only): events appended in batches of COMPACT_EVERY through a
# keep-recent-window `CompactingSession`, whose threshold each batch passes, so it writes a
# `Compacted` marker every ~COMPACT_EVERY events and the projection stays about the window's
# size however long the log grows: the case a checkpoint makes O(tail).
COMPACT_EVERY = 500
COMPACT_THRESHOLD = 1_000  # tokens: a batch of 500 "message N" events is ~1,700
COMPACT_KEEP = 200  # tokens kept verbatim after each summary (~60 messages)
APP, USER = "bench", "u"

RunFn = Callable[[], Awaitable[str]]


@dataclass(frozen=True)
class Env:
    """Where a contender's store lives: a scratch directory and/or a server."""

    tmp: Path
    dsn: str = ""  # postgresql://...
    url: str = ""  # redis://...


class Log:
    """One session of one store, as the benchmark drives it."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def append_one(self, i: int) -> None:
        raise NotImplementedError

    async def append_many(self, start: int, n: int) -> None:
        raise NotImplementedError

    async def read(self) -> int:
        """Full read of the log; returns how many entries came back."""
        raise NotImplementedError

    async def snapshot(self) -> int:
        """What a runner loads before a run; returns how many messages came back."""
        return await self.read()


class Store:
    """One contender's store: opens sessions and builds the end-to-end runs."""

    caches = False
    """Whether a session object keeps what it has read (helikon's LogCache): its reads are
    then measured both cold (a new session object) and warm (the same object again)."""

    async def log(self, sid: str) -> Log:
        raise NotImplementedError

    async def e2e(self, sid: str, *, fresh: bool = False) -> tuple[RunFn, RunFn]:
        """(one persisted run on session ``sid``, one unpersisted run).

        ``fresh``: every persisted run gets a new session object (only when ``caches``).
        """
        raise NotImplementedError


def _captured(fn: Callable[..., Any], *names: str) -> Any:
    """A variable captured by a loop_overhead closure (reuses its agents unchanged)."""
    obj: Any = fn
    for name in names:
        obj = inspect.getclosurevars(obj).nonlocals[name]
    return obj


# ============================== HELIKON ==============================


class HelikonLog(Log):
    def __init__(self, session: Any) -> None:
        from helikon.core.items import TextPart
        from helikon.core.session import UserMessageEvent

        super().__init__(session)
        self._event = lambda i: UserMessageEvent(content=(TextPart(text=f"message {i}"),))

    async def append_one(self, i: int) -> None:
        await self.session.append([self._event(i)])

    async def append_many(self, start: int, n: int) -> None:
        await self.session.append([self._event(i) for i in range(start, start + n)])

    async def read(self) -> int:
        return len(await self.session.events())

    async def snapshot(self) -> int:
        return len((await self.session.snapshot()).messages)


class HelikonStore(Store):
    caches = True

    def __init__(self, open_session: Callable[[str], Any]) -> None:
        self.open_session = open_session

    async def log(self, sid: str) -> Log:
        session = self.open_session(sid)
        return HelikonLog(await session if inspect.isawaitable(session) else session)

    async def e2e(self, sid: str, *, fresh: bool = False) -> tuple[RunFn, RunFn]:
        from helikon import RunContext
        from helikon.runtime import AsyncioRunner

        bench = lo.build_helikon()
        agent = _captured(bench.run_once, "agent")
        ctx = RunContext.ephemeral(None).with_session((await self.log(sid)).session)
        runner: AsyncioRunner[None] = AsyncioRunner()

        async def persisted() -> str:
            run_ctx = ctx.with_session((await self.log(sid)).session) if fresh else ctx
            return str((await runner.run(agent, lo.PROMPT, run_ctx)).final_output)

        return persisted, bench.run_once


@contextlib.asynccontextmanager
async def helikon_sqlite(env: Env) -> AsyncIterator[Store]:
    from helikon.sessions.sqlite import SqliteDatabase, SqliteSession

    db = await SqliteDatabase.open(
        str(env.tmp / "helikon.db"), busy_timeout=30.0, synchronous="NORMAL", journal_mode="WAL"
    )
    await SqliteSession.migrate(db)
    try:
        yield HelikonStore(lambda sid: SqliteSession.open_without_migrate(db, sid))
    finally:
        await db.aclose()


@contextlib.asynccontextmanager
async def helikon_postgres(env: Env) -> AsyncIterator[Store]:
    import asyncpg

    from helikon.sessions.postgres import PostgresSession

    pool = await asyncpg.create_pool(env.dsn, min_size=1, max_size=16)
    await PostgresSession.migrate(pool)
    try:
        yield HelikonStore(lambda sid: PostgresSession.open_without_migrate(pool, sid))
    finally:
        await pool.close()


@contextlib.asynccontextmanager
async def helikon_redis(env: Env) -> AsyncIterator[Store]:
    import redis.asyncio as redis

    from helikon.sessions.redis import RedisSession

    client = redis.Redis.from_url(env.url)
    try:
        yield HelikonStore(lambda sid: RedisSession(client, sid))
    finally:
        await client.aclose()


# ============================ END HELIKON ============================


class OpenAILog(Log):
    async def append_one(self, i: int) -> None:
        await self.session.add_items([{"role": "user", "content": f"message {i}"}])

    async def append_many(self, start: int, n: int) -> None:
        items = [{"role": "user", "content": f"message {i}"} for i in range(start, start + n)]
        await self.session.add_items(items)

    async def read(self) -> int:
        return len(await self.session.get_items())


class OpenAIStore(Store):
    def __init__(self, open_session: Callable[[str], Any]) -> None:
        self.open_session = open_session

    async def log(self, sid: str) -> Log:
        return OpenAILog(self.open_session(sid))

    async def e2e(self, sid: str, *, fresh: bool = False) -> tuple[RunFn, RunFn]:
        from agents import Runner

        bench = lo.build_openai_agents()
        agent = _captured(bench.run_once, "agent")
        session = (await self.log(sid)).session

        async def persisted() -> str:
            return str((await Runner.run(agent, lo.PROMPT, session=session)).final_output)

        return persisted, bench.run_once


@contextlib.asynccontextmanager
async def openai_sqlite(env: Env) -> AsyncIterator[Store]:
    import sqlite3

    from agents.memory import SQLiteSession

    class NormalSyncSQLiteSession(SQLiteSession):
        """The SDK sets WAL itself; synchronous=NORMAL (default FULL) like every SQLite row."""

        @staticmethod
        def _configure_connection(conn: sqlite3.Connection) -> None:
            SQLiteSession._configure_connection(conn)
            conn.execute("PRAGMA synchronous=NORMAL")

    yield OpenAIStore(lambda sid: NormalSyncSQLiteSession(sid, db_path=env.tmp / "openai.db"))


@contextlib.asynccontextmanager
async def openai_postgres(env: Env) -> AsyncIterator[Store]:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    url = env.dsn.replace("postgresql://", "postgresql+asyncpg://", 1)
    engine = create_async_engine(url, pool_size=16, max_overflow=0)
    await SQLAlchemySession("init", engine=engine, create_tables=True).get_items()  # creates the tables
    try:
        yield OpenAIStore(lambda sid: SQLAlchemySession(sid, engine=engine))
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def openai_redis(env: Env) -> AsyncIterator[Store]:
    import redis.asyncio as redis
    from agents.extensions.memory.redis_session import RedisSession

    client = redis.Redis.from_url(env.url)
    try:
        yield OpenAIStore(lambda sid: RedisSession(sid, redis_client=client))
    finally:
        await client.aclose()


class AdkLog(Log):
    def __init__(self, service: Any, session: Any) -> None:
        from google.adk.events import Event
        from google.genai import types

        super().__init__(session)
        self.service = service

        def event(i: int) -> Any:
            content = types.Content(role="user", parts=[types.Part(text=f"message {i}")])
            return Event(author="user", invocation_id=f"inv-{i}", content=content)

        self._event = event

    async def append_one(self, i: int) -> None:
        await self.service.append_event(self.session, self._event(i))

    async def append_many(self, start: int, n: int) -> None:  # no batch API: one event at a time
        for i in range(start, start + n):
            await self.append_one(i)

    async def read(self) -> int:
        got = await self.service.get_session(app_name=APP, user_id=USER, session_id=self.session.id)
        return len(got.events)


class AdkStore(Store):
    def __init__(self, service: Any) -> None:
        self.service = service

    async def log(self, sid: str) -> Log:
        session = await self.service.create_session(app_name=APP, user_id=USER, session_id=sid)
        return AdkLog(self.service, session)

    async def e2e(self, sid: str, *, fresh: bool = False) -> tuple[RunFn, RunFn]:
        from google.adk.runners import Runner
        from google.genai import types

        bench = lo.build_google_adk()  # its own run: InMemorySessionService, fresh session per run
        agent = _captured(bench.run_once, "run", "runner").agent
        runner = Runner(app_name=APP, agent=agent, session_service=self.service)
        await self.service.create_session(app_name=APP, user_id=USER, session_id=sid)

        async def persisted() -> str:
            message = types.Content(role="user", parts=[types.Part(text=lo.PROMPT)])
            text = ""
            async for event in runner.run_async(user_id=USER, session_id=sid, new_message=message):
                if event.is_final_response() and event.content and event.content.parts:
                    text = "".join(p.text or "" for p in event.content.parts)
            return text

        return persisted, bench.run_once


@contextlib.asynccontextmanager
async def adk_sqlite(env: Env) -> AsyncIterator[Store]:
    import sqlite3

    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    class NormalSyncSqliteSessionService(SqliteSessionService):
        """ADK opens a connection per call: synchronous=NORMAL on each (WAL is set on the file)."""

        @contextlib.asynccontextmanager
        async def _get_db_connection(self) -> AsyncIterator[Any]:
            async with super()._get_db_connection() as db:
                await db.execute("PRAGMA synchronous=NORMAL")
                yield db

    path = env.tmp / "adk.db"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")  # persistent: every later connection is in WAL
    yield AdkStore(NormalSyncSqliteSessionService(str(path)))


@dataclass(frozen=True)
class Contender:
    name: str
    group: str  # the helikon backend it is compared with (and the server it needs): sqlite | postgres | redis
    dists: tuple[str, ...]
    open: Callable[[Env], contextlib.AbstractAsyncContextManager[Store]]


CONTENDERS: dict[str, Contender] = {
    c.name: c
    for c in (
        Contender("helikon-sqlite", "sqlite", ("paigasus-helikon",), helikon_sqlite),
        Contender("openai-agents-sqlite", "sqlite", ("openai-agents",), openai_sqlite),
        Contender("google-adk-sqlite", "sqlite", ("google-adk", "aiosqlite"), adk_sqlite),
        Contender("helikon-postgres", "postgres", ("paigasus-helikon", "asyncpg"), helikon_postgres),
        Contender("openai-agents-postgres", "postgres", ("openai-agents", "sqlalchemy"), openai_postgres),
        Contender("helikon-redis", "redis", ("paigasus-helikon", "redis"), helikon_redis),
        Contender("openai-agents-redis", "redis", ("openai-agents", "redis"), openai_redis),
    )
}


# --------------------------------------------------------------------------- measuring


def _note(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


async def append_throughput(store: Store, writers: int, total: int, tag: str) -> float:
    """Events/s with ``writers`` tasks, each appending single events to its own session."""
    logs = [await store.log(f"{tag}-{writers}-{k}") for k in range(writers)]
    for log in logs:  # creates each session (row, key, ...) before the clock starts
        await log.append_one(0)
    per = max(1, total // writers)

    async def worker(log: Log) -> None:
        for i in range(1, per + 1):
            await log.append_one(i)

    gc.collect()
    t0 = time.perf_counter()
    await asyncio.gather(*(worker(log) for log in logs))
    return writers * per / (time.perf_counter() - t0)


async def calibrate_total(store: Store, args: argparse.Namespace) -> int:
    """Appends per point: as many as fit in ``--budget`` s at one writer, at most ``--appends``."""
    log = await store.log("calibrate")
    await log.append_one(0)
    n, t0 = 0, time.perf_counter()
    while n < 20 or (time.perf_counter() - t0 < 0.3 and n < 500):
        n += 1
        await log.append_one(n)
    per_append = (time.perf_counter() - t0) / n
    fits = int(args.budget / per_append)
    return max(48, min(args.appends, fits)) // 48 * 48  # divisible by every writer count


async def median_s(fn: Callable[[], Awaitable[int]], reads: int, expect: int) -> float:
    samples = []
    for _ in range(reads):
        gc.collect()
        t0 = time.perf_counter()
        got = await fn()
        samples.append(time.perf_counter() - t0)
        if got != expect:
            raise AssertionError(f"read {got} entries, expected {expect}")
    return statistics.median(samples)


async def read_latency(store: Store, args: argparse.Namespace, result: dict[str, Any]) -> None:
    log = await store.log("reads")
    have = 0

    async def cold_read() -> int:  # a new session object (built without IO) fetches everything
        return await (await store.log("reads")).read()

    async def cold_snapshot() -> int:
        return await (await store.log("reads")).snapshot()

    reads = [("read_s", log.read), ("snapshot_s", log.snapshot)]
    if store.caches:
        reads = [("read_s", cold_read), ("snapshot_s", cold_snapshot)]
        reads += [("read_warm_s", log.read), ("snapshot_warm_s", log.snapshot)]

    for level in args.levels:
        t0 = time.perf_counter()
        limit = POPULATE_LIMIT_S if level == LEVELS[-1] else float("inf")  # only 100k may be skipped
        while have < level and time.perf_counter() - t0 <= limit:
            n = min(BATCH, level - have)
            await log.append_many(have, n)
            have += n
        result["populate_s"][str(level)] = time.perf_counter() - t0
        if have < level:
            _note(f"populate to {level:,} too slow (> {limit:.0f} s): n/a")
            result["read_s"][str(level)] = result["snapshot_s"][str(level)] = None
            break
        for kind, fn in reads:
            result[kind][str(level)] = await median_s(fn, args.reads, level)
        if store.caches:
            result["decode_s"][str(level)] = await median_s(await decode_alone(log), args.reads, level)
        _note(f"{level:,} events: read {result['read_s'][str(level)] * 1000:.1f} ms")


async def decode_alone(log: Log) -> Callable[[], Awaitable[int]]:
    """A cold helikon read with the IO taken away: the whole log's stored payloads, joined as
    the backends fetch them, decoded into typed events and wrapped as entries (the floor
    under any cold read of typed events, whatever the database)."""
    from helikon.core.session.codec import decode_joined, encode_event, new_entry

    entries = await log.session.events()
    text, count = ",".join(encode_event(entry.event) for entry in entries), len(entries)

    async def decode() -> int:
        events = decode_joined(text, count) or []
        return len(list(map(new_entry, zip(range(count), events, strict=True))))

    return decode


async def compacted_snapshots(store: Store, args: argparse.Namespace, result: dict[str, Any]) -> None:
    """Cold snapshots (a NEW session object each) of a long log compacted with a keep-recent window.

    The writer snapshots after each batch, as a runner does before each run, so the
    session's checkpoint is kept as current as in use; the cold reads then load the
    checkpoint and fold the tail after it.
    """
    from helikon.core.items import TextPart
    from helikon.core.session import UserMessageEvent
    from helikon.core.session.compaction import CompactingSession
    from helikon.testing import FunctionModel, text_turn

    log = await store.log("compacted")
    model = FunctionModel(lambda request: text_turn(f"summary of {len(request.messages)} messages"))
    writer = CompactingSession(
        log.session, model, threshold=COMPACT_THRESHOLD, keep_recent_tokens=COMPACT_KEEP, summary_role="user"
    )
    have = 0

    async def cold() -> int:
        return await (await store.log("compacted")).snapshot()

    for level in args.levels:
        t0 = time.perf_counter()
        limit = POPULATE_LIMIT_S if level == LEVELS[-1] else float("inf")
        while have < level and time.perf_counter() - t0 <= limit:
            n = min(COMPACT_EVERY, level - have)
            await writer.append(
                [UserMessageEvent(content=(TextPart(text=f"message {i}"),)) for i in range(have, have + n)]
            )
            have = len(await log.session.events())  # the batch and the marker, if one was written
            await log.snapshot()  # what a runner does before each run: keeps the checkpoint current
        if have < level:
            _note(f"compacted populate to {level:,} too slow (> {limit:.0f} s): n/a")
            result["snapshot_compacted_s"][str(level)] = None
            break
        expect = await log.snapshot()
        result["snapshot_compacted_s"][str(level)] = await median_s(cold, args.reads, expect)
        result["compacted_messages"][str(level)] = expect
        result["compactions"][str(level)] = writer.compactions
        _note(
            f"compacted {have:,} events ({writer.compactions} markers, {expect} messages): cold snapshot "
            f"{result['snapshot_compacted_s'][str(level)] * 1000:.2f} ms"
        )


async def end_to_end(store: Store, args: argparse.Namespace) -> dict[str, Any]:
    warm_persisted, _ = await store.e2e("e2e-warmup")
    persisted, unpersisted = await store.e2e("e2e")
    for fn in (warm_persisted, unpersisted):
        for _ in range(3):
            if (text := await fn()) != lo.EXPECTED:
                raise AssertionError(f"run returned {text!r}, expected {lo.EXPECTED!r}")

    async def per_run(fn: RunFn) -> list[float]:
        gc.collect()
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            text = await fn()
            times.append(time.perf_counter() - t0)
            if text != lo.EXPECTED:
                raise AssertionError(f"run returned {text!r}")
        return times

    def summary(times: list[float], prefix: str) -> dict[str, float]:
        quarter = max(1, len(times) // 4)
        return {
            f"{prefix}_s": statistics.fmean(times),
            f"{prefix}_first_q_s": statistics.fmean(times[:quarter]),
            f"{prefix}_last_q_s": statistics.fmean(times[-quarter:]),
        }

    out = {"unpersisted_s": statistics.fmean(await per_run(unpersisted)), "runs": args.runs}
    out |= summary(await per_run(persisted), "persisted")
    if store.caches:  # a new session object per run: nothing read before is reused
        fresh, _ = await store.e2e("e2e-fresh", fresh=True)
        out |= summary(await per_run(fresh), "fresh")
    return out


async def measure(c: Contender, env: Env, args: argparse.Namespace) -> dict[str, Any]:
    """All three phases; a phase that fails is recorded in ``errors`` and the others still run."""
    result: dict[str, Any] = {"append": {}, "populate_s": {}, "errors": []}
    result |= {k: {} for k in ("read_s", "snapshot_s", "read_warm_s", "snapshot_warm_s", "decode_s")}
    result |= {k: {} for k in ("snapshot_compacted_s", "compacted_messages", "compactions")}

    async def appends(store: Store) -> None:
        total = result["appends_per_point"] = await calibrate_total(store, args)
        for w in WRITERS:
            result["append"][str(w)] = await append_throughput(store, w, total, "append")
            _note(f"append @{w}: {result['append'][str(w)]:,.0f} events/s")

    async def e2e(store: Store) -> None:
        result["e2e"] = await end_to_end(store, args)
        _note(f"e2e: {result['e2e']['persisted_s'] * 1000:.2f} ms/run persisted")

    async with c.open(env) as store:
        phases: list[Callable[[Store], Awaitable[None]]] = [appends, lambda s: read_latency(s, args, result)]
        if store.caches:
            phases.append(lambda s: compacted_snapshots(s, args, result))
        for phase in [*phases, e2e]:
            try:
                await phase(store)
            except Exception as exc:
                _note(f"FAILED: {exc!r}")
                traceback.print_exc()
                result["errors"].append(repr(exc))
    return result


async def run_child_async(c: Contender, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="helikon-bench-") as tmp:
        if c.group == "sqlite":
            return await measure(c, Env(Path(tmp)), args)
        from helikon.testing.servers import PostgresServer, RedisServer

        if c.group == "postgres":
            async with PostgresServer() as pg:
                return await measure(c, Env(Path(tmp), dsn=pg.dsn), args)
        async with RedisServer() as rd:
            return await measure(c, Env(Path(tmp), url=rd.url), args)


def run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    c = CONTENDERS[name]
    out: dict[str, Any] = {"name": name, "group": c.group}
    try:
        out["versions"] = {d: metadata.version(d) for d in c.dists}
    except metadata.PackageNotFoundError as exc:
        return out | {"skipped": f"not installed: {exc}"}
    try:
        out |= asyncio.run(run_child_async(c, args))
    except Exception as exc:  # not installed, no server binaries, ...
        traceback.print_exc()
        return out | {"skipped": f"failed: {exc!r}"}
    return out


# --------------------------------------------------------------------------- reporting


def _get(r: dict[str, Any], *keys: str) -> Any:
    """``r[k1][k2]...`` or None when any level is missing (a failed phase)."""
    for key in keys:
        if not isinstance(r, dict) or key not in r:
            return None
        r = r[key]
    return r


def _ms(s: float | None) -> str:
    if s is None:
        return "n/a"
    return f"{s * 1e6:,.0f} µs" if s < 0.01 else f"{s * 1000:,.1f} ms"


def _rate(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None or den == 0 else num / den


def _ok(got: float | None, need: float) -> str:
    return "(n/a)" if got is None else ("MET" if got >= need else "NOT MET")


def _k(level: str) -> str:
    return f"{int(level) // 1000}k"


def _read_table(done: list[dict[str, Any]], levels: list[str], suffix: str) -> str:
    headers = ["contender"] + [f"read {_k(n)}" for n in levels] + [f"snapshot {_k(n)}" for n in levels]
    rows = [
        [r["name"], *(_ms(_get(r, f"{kind}{suffix}", n)) for kind in ("read", "snapshot") for n in levels)]
        for r in done
    ]
    return lo._table(headers, rows)


def _compacted_lines(done: list[dict[str, Any]], levels: list[str]) -> list[str]:
    """The cold snapshots of a compacted log, for the contenders that measured them."""
    compacted = [r for r in done if r.get("snapshot_compacted_s")]
    if not compacted:
        return []
    headers = ["contender", *(f"snapshot {_k(n)}" for n in levels), f"{_k(levels[-1])}/1k", "messages"]
    rows: list[list[str]] = []
    for r in compacted:
        times = [_get(r, "snapshot_compacted_s", n) for n in levels]
        counts = "/".join(str(_get(r, "compacted_messages", n)) for n in levels)
        rows.append([r["name"], *(_ms(t) for t in times), _x(_ratio(times[-1], times[0])), counts])
    return [
        "\nhelikon, cold snapshot (a NEW session object) of a log compacted with a keep-recent"
        f" window (a marker every ~{COMPACT_EVERY} events): the checkpoint plus the tail:",
        lo._table(headers, rows),
    ]


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    done = [r for r in results if "append" in r]
    lines: list[str] = []
    levels = [str(n) for n in args.levels]
    if done:
        headers = ["contender", *(f"ev/s @{w}" for w in WRITERS)]
        rows = [[r["name"], *(_rate(_get(r, "append", str(w))) for w in WRITERS)] for r in done]
        lines += ["Single-event append throughput (events/s, higher is better), 1/4/16 writers:"]
        lines += [lo._table(headers, rows), ""]
        lines += ["Full read and snapshot latency (median, lower is better); helikon: a NEW session"]
        lines += [
            "object per read (cold: fetches and decodes the whole log):",
            _read_table(done, levels, "_s"),
        ]
        slow = [
            r["name"] for r in done for n in levels if n in r["populate_s"] and _get(r, "read_s", n) is None
        ]
        if slow:
            lines.append(f"n/a for {', '.join(sorted(set(slow)))}: populate too slow (> 60 s to that size)")
        if args.quick:
            lines.append("(--quick: the 100k-event reads are skipped)")
        warm = [r for r in done if r.get("read_warm_s")]
        if warm:
            lines += [
                "\nhelikon, the SAME session object read again (warm: its cache fetches only the tail):"
            ]
            lines.append(_read_table(warm, levels, "_warm_s"))
        lines += _compacted_lines(done, levels)
        headers = ["contender", "unpersisted", "persisted", "pers/unpers", "first 1/4", "last 1/4", "growth"]
        headers += ["new obj/run", "growth"]
        rows = []
        for r in done:
            e = r.get("e2e") or {}
            p, f = e.get("persisted_s"), e.get("fresh_s")
            rows.append(
                [r["name"], _ms(e.get("unpersisted_s")), _ms(p), _x(_ratio(p, e.get("unpersisted_s")))]
            )
            rows[-1] += [_ms(e.get("persisted_first_q_s")), _ms(e.get("persisted_last_q_s"))]
            rows[-1].append(_x(_ratio(e.get("persisted_last_q_s"), e.get("persisted_first_q_s"))))
            rows[-1] += [_ms(f), _x(_ratio(e.get("fresh_last_q_s"), e.get("fresh_first_q_s")))]
        lines += [f"\nEnd to end, mean time per run over {args.runs} runs on ONE conversation (one session"]
        lines += ["object; helikon also with a new session object per run):", lo._table(headers, rows)]
    by_name = {r["name"]: r for r in done}
    pairs = [
        (h, p)
        for h in by_name
        if h.startswith("helikon")
        for p in by_name
        if not p.startswith("helikon") and CONTENDERS[p].group == CONTENDERS[h].group
    ]
    if pairs:
        headers = ["helikon vs peer", *(f"append @{w}" for w in WRITERS)]
        headers += [f"read {_k(n)}" for n in levels] + [f"snapshot {_k(n)}" for n in levels]
        headers += ["e2e persisted", "e2e new obj"]
        rows = []
        for h, p in pairs:
            hr, pr = by_name[h], by_name[p]
            peer_e2e = _get(pr, "e2e", "persisted_s")
            ratios = [_ratio(_get(hr, "append", str(w)), _get(pr, "append", str(w))) for w in WRITERS]
            ratios += [_ratio(_get(pr, "read_s", n), _get(hr, "read_s", n)) for n in levels]
            ratios += [_ratio(_get(pr, "snapshot_s", n), _get(hr, "snapshot_s", n)) for n in levels]
            ratios += [
                _ratio(peer_e2e, _get(hr, "e2e", "persisted_s")),
                _ratio(peer_e2e, _get(hr, "e2e", "fresh_s")),
            ]
            rows.append([f"{h} vs {p}", *(_x(v) for v in ratios)])
        lines += [
            "\nx peer: how many times better helikon is than the peer (>1 = helikon better; append:",
            "helikon / peer events/s; reads (helikon cold) and e2e: peer time / helikon time):",
            lo._table(headers, rows),
            "\nTargets:",
        ]
        for h, p in pairs:
            hr, pr = by_name[h], by_name[p]
            need = 5.0 if (h, p) == ("helikon-sqlite", "openai-agents-sqlite") else 2.0
            got = _ratio(_get(hr, "append", "1"), _get(pr, "append", "1"))
            lines.append(f"  {h} vs {p}: single-writer append >= {need:g}x: {_x(got)} {_ok(got, need)}")
            got = _ratio(_get(pr, "read_s", "10000"), _get(hr, "read_s", "10000"))
            lines.append(f"  {h} vs {p}: full read @10k (cold) <= 1/2 of peer's: {_x(got)} {_ok(got, 2.0)}")
            floor, peer_read = _get(hr, "decode_s", "10000"), _get(pr, "read_s", "10000")
            if floor is not None and peer_read is not None:
                lines.append(
                    f"    (decoding alone, no IO: {_ms(floor)} = {floor / peer_read:.2f} of the peer's whole"
                    f" read; the target leaves {_ms(peer_read / 2)} for fetch and decode together)"
                )
            if p.startswith("openai-agents"):
                for key, what in (("persisted_s", "one session object"), ("fresh_s", "new object per run")):
                    got = _ratio(_get(pr, "e2e", "persisted_s"), _get(hr, "e2e", key))
                    lines.append(
                        f"  {h} vs {p}: persisted run ({what}) <= 1/5 of peer's: {_x(got)} {_ok(got, 5.0)}"
                    )
    helikon = [r for r in done if r["name"].startswith("helikon")]
    if helikon:
        lines.append("\nTargets (O(tail) snapshots, helikon alone):")
        top = levels[-1]
        for r in helikon:
            got = _ratio(_get(r, "snapshot_compacted_s", top), _get(r, "snapshot_compacted_s", "1000"))
            ok = "(n/a)" if got is None else ("MET" if got <= 2.0 else "NOT MET")
            lines.append(f"  {r['name']}: compacted cold snapshot {_k(top)} / 1k <= 2x: {_x(got)} {ok}")
            got = _ratio(_get(r, "e2e", "fresh_last_q_s"), _get(r, "e2e", "fresh_first_q_s"))
            ok = "(n/a)" if got is None else ("MET" if got <= 1.2 else "NOT MET")
            lines.append(f"  {r['name']}: new obj/run growth (last 1/4 / first 1/4) <= 1.2x: {_x(got)} {ok}")
    lines += [f"\nskipped {r['name']}: {r['skipped']}" for r in results if "skipped" in r]
    lines += [f"\n{r['name']} errors: {'; '.join(r['errors'])}" for r in done if r.get("errors")]
    versions = {k: v for r in results for k, v in r.get("versions", {}).items()}
    lines.append("\nversions: " + ", ".join(f"{k}=={v}" for k, v in sorted(versions.items())))
    appends = ", ".join(f"{r['name']}={r.get('appends_per_point', 'n/a')}" for r in done)
    lines.append(f"python {sys.version.split()[0]}; appends per throughput point: {appends}")
    return "\n".join(lines)


def run_parent(args: argparse.Namespace) -> list[dict[str, Any]]:
    names = args.only or list(CONTENDERS)
    passthrough = [f"--{k}={getattr(args, k)}" for k in ("budget", "appends", "reads", "runs")]
    passthrough += ["--quick"] if args.quick else []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out_path = Path(tmp) / f"{name}.json"
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--only", name, "--child-out", str(out_path), *passthrough]
            proc = subprocess.run(cmd, env=lo._clean_env(), check=False)
            if proc.returncode != 0 or not out_path.exists():
                results.append({"name": name, "skipped": f"child process failed (exit {proc.returncode})"})
                continue
            result = json.loads(out_path.read_text())
            if "skipped" in result:
                print(f"  note: skipping {name}: {result['skipped']}", file=sys.stderr)
            results.append(result)
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--only", action="append", choices=list(CONTENDERS), help="measure only NAME (repeatable)")
    p.add_argument("--quick", action="store_true", help="small N, no 100k reads: a smoke run")
    p.add_argument("--json", type=Path, help="also write all results to this JSON file")
    p.add_argument("--budget", type=float, help="seconds per append point at 1 writer (default 4; quick .5)")
    p.add_argument("--appends", type=int, help="max appends per throughput point (default 4800; quick 480)")
    p.add_argument("--reads", type=int, help="reads per latency point, median kept (default 5; quick 3)")
    p.add_argument("--runs", type=int, help="end-to-end runs on one conversation (default 200; quick 40)")
    p.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    defaults = {"budget": (4.0, 0.5), "appends": (4800, 480), "reads": (5, 3), "runs": (200, 40)}
    for key, (full, quick) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    args.levels = LEVELS[:2] if args.quick else LEVELS
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_out is not None:  # child: one contender, results to a file
        args.child_out.write_text(json.dumps(run_child(args.only[0], args)))
        return 0
    results = run_parent(args)
    print(report(results, args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
