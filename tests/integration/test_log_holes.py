"""A hole in a stored log (an event deleted behind helikon's back) is refused by name, in every backend.

Reads that fold the log (`events()`, `snapshot()`) once stopped silently at the hole on
SQLite, PostgreSQL and Redis while `records()` read past it: a run then saw a conversation
cut short without a word. Now they raise `MissingSessionEvents` naming the missing seq,
through a new session object (cold), one that had read the log before the deletion (warm),
and a read from a seq before the hole; `records()` still lists every stored row.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from session_helpers import say

from helikon.core.exceptions import MissingSessionEvents
from helikon.core.session import SequenceId
from helikon.core.session._log_cache import WARM
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession, stream_key
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession

pytestmark = pytest.mark.integration

HOLE = 2  # five events, seq 2 deleted


@dataclass
class Store:
    """A backend under test: how to open a session, and how another program deletes one of its events."""

    open: Callable[[str], Any]
    delete: Callable[[str, int], Awaitable[None]]
    name: str = ""


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    path = tmp_path / "sessions.db"
    async with await SqliteDatabase.open(path) as db:
        await SqliteSession.migrate(db)

        async def delete(session_id: str, seq: int) -> None:
            with closing(sqlite3.connect(path, isolation_level=None, timeout=10)) as conn:
                conn.execute(
                    "DELETE FROM session_events WHERE session_id = ? AND sequence = ?", (session_id, seq)
                )

        yield Store(lambda sid: SqliteSession.open_without_migrate(db, sid), delete)


@pytest.fixture
async def postgres_store(postgres_pool: asyncpg.Pool) -> Store:
    await PostgresSession.migrate(postgres_pool)

    async def delete(session_id: str, seq: int) -> None:
        await postgres_pool.execute(  # pyright: ignore[reportUnknownMemberType]
            "DELETE FROM session_events WHERE session_id = $1 AND sequence = $2", session_id, seq
        )

    return Store(lambda sid: PostgresSession.open_without_migrate(postgres_pool, sid), delete)


@pytest.fixture
async def redis_store(redis_client: aioredis.Redis) -> Store:
    async def delete(session_id: str, seq: int) -> None:
        await redis_client.xdel(stream_key(session_id), f"{seq}-1")  # pyright: ignore[reportUnknownMemberType]

    return Store(lambda sid: RedisSession(redis_client, sid), delete)


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def store(request: pytest.FixtureRequest) -> Store:
    return dataclasses.replace(request.getfixturevalue(f"{request.param}_store"), name=request.param)


_counter = iter(range(10**9))


async def holed_session(store: Store) -> tuple[str, Any]:
    """A session of five events whose seq 2 was deleted, and an object that read it before the deletion."""
    sid = f"hole-{store.name}-{next(_counter)}"
    warm = store.open(sid)
    await warm.append([say(f"m{n}") for n in range(5)])
    assert len((await warm.snapshot()).messages) == 5
    await store.delete(sid, HOLE)
    await warm.append([say("m5")])  # the warm object now reads a tail that continues what it read
    return sid, warm


def _names_the_hole(error: pytest.ExceptionInfo[MissingSessionEvents]) -> None:
    assert error.value.seq == HOLE and error.value.next_seq == HOLE + 1
    assert f"no event at seq {HOLE}" in str(error.value)


async def test_a_new_session_object_refuses_to_read_past_the_hole(store: Store) -> None:
    sid, _ = await holed_session(store)
    # As in a new process: no projection of the session kept in memory. (One built before
    # the deletion, like a checkpoint, stands for the events it folded, and still holds.)
    WARM.clear()
    with pytest.raises(MissingSessionEvents) as events_error:
        await store.open(sid).events()
    _names_the_hole(events_error)
    with pytest.raises(MissingSessionEvents) as snapshot_error:
        await store.open(sid).snapshot()
    _names_the_hole(snapshot_error)
    with pytest.raises(MissingSessionEvents) as since_error:
        await store.open(sid).events(SequenceId(0))
    _names_the_hole(since_error)
    # After the hole, a read has nothing to fold across: the rows are there as they are.
    assert [int(e.seq) for e in await store.open(sid).events(SequenceId(HOLE + 1))] == [4, 5]
    # records() reads every row still stored, for an export or an audit.
    assert [int(r.seq) for r in await store.open(sid).records()] == [0, 1, 3, 4, 5]


async def test_an_object_that_read_the_log_before_the_hole_keeps_what_it_read(store: Store) -> None:
    # What it decoded before the deletion is still the log as it was written: it reads on
    # from there, and says nothing is missing until a read needs the deleted event again.
    _, warm = await holed_session(store)
    assert [int(e.seq) for e in await warm.events()] == [0, 1, 2, 3, 4, 5]
    assert len((await warm.snapshot()).messages) == 6
