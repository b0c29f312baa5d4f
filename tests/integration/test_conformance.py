"""Every durable backend against the public session conformance suite, on real stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from helikon import Session
from helikon.sessions import postgres, redis, sqlite
from helikon.testing import session_conformance as conformance

# Every check applies to every durable backend (all three take an opener and are crash-safe).
CHECKS = conformance.checks_for(
    conformance.ConformanceBackend(name="any", open=sqlite.open_session, opener="x:y", crash_safe=True)  # type: ignore[arg-type]
)
each_check = pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)


@each_check
async def test_sqlite_conforms(check: conformance.Check, tmp_path: Path) -> None:
    path = str(tmp_path / "sessions.db")

    async def open_sqlite(session_id: str) -> Session:
        return await sqlite.open_session(session_id, path=path)

    backend = conformance.ConformanceBackend(
        name="sqlite",
        open=open_sqlite,
        opener="helikon.sessions.sqlite:open_session",
        opener_kwargs={"path": path},
        crash_safe=True,
    )
    await check(backend)


@each_check
async def test_postgres_conforms(check: conformance.Check, postgres_dsn: str) -> None:
    async def open_postgres(session_id: str) -> Session:
        return await postgres.open_session(session_id, dsn=postgres_dsn, max_size=2)

    backend = conformance.ConformanceBackend(
        name="postgres",
        open=open_postgres,
        opener="helikon.sessions.postgres:open_session",
        opener_kwargs={"dsn": postgres_dsn, "max_size": 2},
        crash_safe=True,
    )
    await check(backend)


@each_check
async def test_redis_conforms(check: conformance.Check, redis_url: str) -> None:
    async def open_redis(session_id: str) -> Session:
        return await redis.open_session(session_id, url=redis_url)

    backend = conformance.ConformanceBackend(
        name="redis",
        open=open_redis,
        opener="helikon.sessions.redis:open_session",
        opener_kwargs={"url": redis_url},
        crash_safe=True,  # a Lua script runs whole: a killed client cannot tear an append
    )
    await check(backend)
