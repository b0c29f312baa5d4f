"""Every durable backend against the public session conformance suite, on real stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from helikon import Session, SessionInfo
from helikon.sessions import postgres, redis, sqlite
from helikon.testing import session_conformance as conformance

# Every check applies to every durable backend (all three take an opener, are crash-safe and list).
CHECKS = conformance.checks_for(
    conformance.ConformanceBackend(
        name="any",
        open=sqlite.open_session,  # type: ignore[arg-type]
        opener="x:y",
        crash_safe=True,
        list_sessions=sqlite.SqliteSession.list_sessions,
        damage_checkpoint=lambda sid, how: _no_damage(),
    )
)
# How each damage spoils a stored checkpoint (SQL: the SET clause of an UPDATE).
SQL_DAMAGE = {
    "beyond_the_log": "as_of_seq = as_of_seq + 1000000",
    "other_projector": "projector = 'some-other-projector'",
    "garbage": "state = '{not json'",
    "other_prefix": "fingerprint = 'ffffffffffffffffffffffffffffffffffffffff'",
}

# The same damages to a Redis checkpoint hash: (field, value); `as_of_seq` is incremented by it.
REDIS_DAMAGE = {
    "beyond_the_log": ("as_of_seq", "1000000"),
    "other_projector": ("projector", "some-other-projector"),
    "garbage": ("state", "{not json"),
    "other_prefix": ("fingerprint", "ffffffffffffffffffffffffffffffffffffffff"),
}


async def _no_damage() -> bool:
    return False


each_check = pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)


@each_check
async def test_sqlite_conforms(check: conformance.Check, tmp_path: Path) -> None:
    path = str(tmp_path / "sessions.db")

    async def open_sqlite(session_id: str) -> Session:
        return await sqlite.open_session(session_id, path=path)

    async def list_sqlite(*, limit: int, offset: int, filter: Any = None) -> list[SessionInfo]:
        async with await sqlite.SqliteDatabase.open(path) as db:
            await sqlite.SqliteSession.migrate(db)
            return await sqlite.SqliteSession.list_sessions(db, limit=limit, offset=offset, filter=filter)

    async def damage_sqlite(session_id: str, how: str) -> bool:
        async with await sqlite.SqliteDatabase.open(path) as db:
            query = f"UPDATE session_checkpoints SET {SQL_DAMAGE[how]} WHERE session_id = ?"
            return await db._run(lambda cur: cur.execute(query, (session_id,)).rowcount == 1)  # pyright: ignore[reportPrivateUsage]

    backend = conformance.ConformanceBackend(
        name="sqlite",
        damage_checkpoint=damage_sqlite,
        open=open_sqlite,
        list_sessions=list_sqlite,
        opener="helikon.sessions.sqlite:open_session",
        opener_kwargs={"path": path},
        crash_safe=True,
    )
    await check(backend)


@each_check
async def test_postgres_conforms(check: conformance.Check, postgres_dsn: str) -> None:
    async def open_postgres(session_id: str) -> Session:
        return await postgres.open_session(session_id, dsn=postgres_dsn, max_size=2)

    async def list_postgres(*, limit: int, offset: int, filter: Any = None) -> list[SessionInfo]:
        async with asyncpg.create_pool(postgres_dsn, min_size=1, max_size=1) as pool:
            await postgres.PostgresSession.migrate(pool)
            return await postgres.PostgresSession.list_sessions(
                pool, limit=limit, offset=offset, filter=filter
            )

    async def damage_postgres(session_id: str, how: str) -> bool:
        conn = await asyncpg.connect(postgres_dsn)
        try:
            query = f"UPDATE session_checkpoints SET {SQL_DAMAGE[how]} WHERE session_id = $1"
            return await conn.execute(query, session_id) == "UPDATE 1"
        finally:
            await conn.close()

    backend = conformance.ConformanceBackend(
        name="postgres",
        damage_checkpoint=damage_postgres,
        open=open_postgres,
        list_sessions=list_postgres,
        opener="helikon.sessions.postgres:open_session",
        opener_kwargs={"dsn": postgres_dsn, "max_size": 2},
        crash_safe=True,
    )
    await check(backend)


@each_check
async def test_redis_conforms(check: conformance.Check, redis_url: str) -> None:
    async def open_redis(session_id: str) -> Session:
        return await redis.open_session(session_id, url=redis_url)

    async def list_redis(*, limit: int, offset: int, filter: Any = None) -> list[SessionInfo]:
        client = aioredis.Redis.from_url(redis_url)
        try:
            return await redis.RedisSession.list_sessions(client, limit=limit, offset=offset, filter=filter)
        finally:
            await client.aclose()

    async def damage_redis(session_id: str, how: str) -> bool:
        client = aioredis.Redis.from_url(redis_url)
        try:
            key = redis.checkpoint_key(session_id)
            if not await client.exists(key):
                return False
            field, value = REDIS_DAMAGE[how]
            if field == "as_of_seq":
                await client.hincrby(key, field, int(value))
            else:
                await client.hset(key, field, value)
            return True
        finally:
            await client.aclose()

    backend = conformance.ConformanceBackend(
        name="redis",
        damage_checkpoint=damage_redis,
        open=open_redis,
        list_sessions=list_redis,
        opener="helikon.sessions.redis:open_session",
        opener_kwargs={"url": redis_url},
        crash_safe=True,  # a Lua script runs whole: a killed client cannot tear an append
    )
    await check(backend)
