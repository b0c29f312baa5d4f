"""A new session object continues the projection an earlier object of the same session built in
this process (`helikon.core.session._log_cache.WARM`), and does not trust it once the log was replaced."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from session_helpers import say

from helikon.core.session import Session, _log_cache, project
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession, counter_key, ids_key, stream_key
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
from helikon.testing._compaction_checks import check_compaction_keeps_tool_turns_whole
from helikon.testing.servers import PostgresServer, RedisServer
from helikon.testing.session_conformance import ConformanceBackend

Opener = Callable[[str], Awaitable[Session]]


Wipe = Callable[[str], Awaitable[None]]


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def backend(
    request: pytest.FixtureRequest, postgres_server: PostgresServer, redis_server: RedisServer, tmp_path: Path
) -> AsyncIterator[tuple[Opener, Wipe]]:
    """Opens sessions of one store, and wipes a session's log behind helikon's back."""
    if request.param == "sqlite":
        async with await SqliteDatabase.open(tmp_path / "warm.db") as db:
            await SqliteSession.migrate(db)

            async def open_sq(sid: str) -> Session:
                return SqliteSession.open_without_migrate(db, sid)

            async def wipe_sq(sid: str) -> None:
                def wipe(cur: Any) -> None:
                    for table in ("session_events", "session_checkpoints"):
                        cur.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,))

                await db._run(wipe)  # pyright: ignore[reportPrivateUsage]

            yield open_sq, wipe_sq
        return
    if request.param == "postgres":
        async with asyncpg.create_pool(postgres_server.dsn, min_size=1, max_size=4) as pool:
            await PostgresSession.migrate(pool)

            async def open_pg(sid: str) -> Session:
                return PostgresSession.open_without_migrate(pool, sid)

            async def wipe_pg(sid: str) -> None:
                for table in ("session_events", "session_checkpoints"):
                    await pool.execute(f"DELETE FROM {table} WHERE session_id = $1", sid)

            yield open_pg, wipe_pg
        return
    client = aioredis.Redis.from_url(redis_server.url)

    async def open_rd(sid: str) -> Session:
        return RedisSession(client, sid)

    async def wipe_rd(sid: str) -> None:
        keys = await client.keys(f"helikon:session:{sid}:*")  # pyright: ignore[reportUnknownMemberType]
        assert {stream_key(sid).encode(), counter_key(sid).encode()} <= set(keys)
        await client.delete(*keys, ids_key(sid))

    try:
        yield open_rd, wipe_rd
    finally:
        await client.aclose()


async def test_a_new_object_continues_the_projection_built_before_it(
    backend: tuple[Opener, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    open_, _ = backend
    sid = f"warm-{uuid.uuid4().hex[:8]}"
    first = await open_(sid)
    await first.append([say(f"m{i}") for i in range(300)])
    assert len((await first.snapshot()).messages) == 300
    await first.append([say("after")])

    def no_checkpoint(*args: object) -> None:
        raise AssertionError("a warm start decodes no checkpoint")

    for module in ("helikon.sessions.sqlite", "helikon.sessions.postgres", "helikon.sessions.redis"):
        monkeypatch.setattr(f"{module}.load", no_checkpoint)
    second = await open_(sid)
    snapshot = await second.snapshot()
    assert snapshot == project([e.event for e in await second.events()])
    assert snapshot.messages[-1].text == "after"  # type: ignore[union-attr]


async def test_a_replaced_log_is_read_again_not_continued(backend: tuple[Opener, Any]) -> None:
    open_, wipe = backend
    sid = f"replaced-{uuid.uuid4().hex[:8]}"
    first = await open_(sid)
    await first.append([say(f"old {i}") for i in range(10)])
    await first.snapshot()
    await wipe(sid)  # the session is deleted and its id reused: a different log
    second = await open_(sid)
    await second.append([say(f"new {i}") for i in range(12)])
    third = await open_(sid)
    said = [m.text for m in (await third.snapshot()).messages]  # type: ignore[union-attr]
    assert said == [f"new {i}" for i in range(12)]
    store = getattr(third, "database", None) or getattr(third, "pool", None) or getattr(third, "client", None)
    warm = _log_cache.WARM.recall(store, sid)
    assert warm is not None and warm.as_of_seq == 11


async def test_random_compacted_logs_read_alike_on_every_path(
    backend: tuple[Opener, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Markers inside tool turns: the same object, a warm new object and a cold one all read `project`."""
    open_, _ = backend
    taken = {"warm": 0, "checkpoint": 0}

    def spy(module: str, name: str, path: str) -> None:
        real = getattr(importlib.import_module(module), name)

        def counted(*args: Any) -> Any:
            out = real(*args)
            taken[path] += out is not None and out is not False
            return out

        monkeypatch.setattr(f"{module}.{name}", counted)

    spy("helikon.sessions._base", "start_warm", "warm")  # every stored backend starts warm there
    for module in ("helikon.sessions.sqlite", "helikon.sessions.postgres", "helikon.sessions.redis"):
        spy(module, "load", "checkpoint")
    await check_compaction_keeps_tool_turns_whole(ConformanceBackend(name="shared store", open=open_))
    assert taken["warm"] and taken["checkpoint"], taken  # both fast paths were read through
