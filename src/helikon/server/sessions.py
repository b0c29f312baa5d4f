"""Where the server's sessions live: `SessionProvider`, in memory by default, SQLite ready to use.

A request names its session with `X-Session-Id`; the provider gives the `Session` of that
id (created empty the first time) and lists the sessions it holds for `GET /sessions`. A
request without the header runs on a fresh in-memory session that is never stored. Every
helikon backend has one: in memory (the default), SQLite, PostgreSQL and Redis; a store of
your own needs the same two methods.

Example:
    ```python
    import asyncio

    from helikon.server import InMemorySessionProvider

    async def main() -> None:
        sessions = InMemorySessionProvider()
        first = await sessions.session("ticket-7")
        assert await sessions.session("ticket-7") is first

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

from ..core.exceptions import UserError
from ..core.session import Session, SessionInfo
from ..core.session.memory import MemoryStore


@runtime_checkable
class SessionProvider(Protocol):
    """Maps a session id to its `Session`, and lists the sessions it holds."""

    async def session(self, session_id: str) -> Session:
        """The session `session_id` (created empty the first time)."""
        ...

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """The sessions, most recently updated first."""
        ...


class InMemorySessionProvider:
    """Sessions in this process's memory (a `MemoryStore`): gone when the server stops.

    At most `max_sessions` are kept (any client can name a new one with `X-Session-Id`):
    past that, the session used least recently is forgotten first.
    """

    __slots__ = ("_store", "_used", "max_sessions")

    def __init__(self, max_sessions: int = 10_000) -> None:
        if max_sessions < 1:
            raise UserError(f"InMemorySessionProvider: max_sessions must be at least 1, not {max_sessions}")
        self.max_sessions = max_sessions
        self._store = MemoryStore()
        self._used: OrderedDict[str, None] = OrderedDict()  # session ids, least recently used first

    async def session(self, session_id: str) -> Session:
        """The in-memory session `session_id` (now the most recently used)."""
        session = await self._store.open(session_id)
        self._used[session_id] = None
        self._used.move_to_end(session_id)
        if len(self._store) != len(self._used):  # a fork made sessions: they count as just used
            for known in self._store.session_ids():
                self._used.setdefault(known)
        while len(self._used) > self.max_sessions:
            oldest, _ = self._used.popitem(last=False)
            self._store.forget(oldest)
        return session

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """The sessions with events or metadata, most recently updated first."""
        return await self._store.list_sessions(limit=limit, offset=offset)


class SqliteSessionProvider:
    """Sessions in the SQLite file at `path` (the `sessions-sqlite` extra), opened on first use.

    Durable: a restarted server finds its sessions, and the runs a killed server left
    open are marked orphaned at startup.
    """

    __slots__ = ("_db", "_lock", "path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._db: object = None
        self._lock = asyncio.Lock()

    async def _database(self) -> object:
        from ..sessions.sqlite import SqliteDatabase, SqliteSession

        async with self._lock:
            if self._db is None:
                db = await SqliteDatabase.open(self.path)
                await SqliteSession.migrate(db)
                self._db = db
            return self._db

    async def session(self, session_id: str) -> Session:
        """The SQLite session `session_id`."""
        from ..sessions.sqlite import SqliteDatabase, SqliteSession

        db = await self._database()
        assert isinstance(db, SqliteDatabase)
        return SqliteSession.open_without_migrate(db, session_id)

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """The sessions in the file, most recently updated first."""
        from ..sessions.sqlite import SqliteDatabase, SqliteSession

        db = await self._database()
        assert isinstance(db, SqliteDatabase)
        return await SqliteSession.list_sessions(db, limit=limit, offset=offset)

    async def aclose(self) -> None:
        """Close the database (the server does it when it stops)."""
        from ..sessions.sqlite import SqliteDatabase

        db, self._db = self._db, None
        if isinstance(db, SqliteDatabase):
            await db.aclose()


class PostgresSessionProvider:
    """Sessions in PostgreSQL on your asyncpg `pool` (the `sessions-postgres` extra); migrated on first use.

    The pool is yours: the server does not close it.
    """

    __slots__ = ("_lock", "_migrated", "pool")

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self._migrated = False
        self._lock = asyncio.Lock()

    async def _migrate(self) -> None:
        from ..sessions.postgres import PostgresSession

        async with self._lock:
            if not self._migrated:
                await PostgresSession.migrate(self.pool)
                self._migrated = True

    async def session(self, session_id: str) -> Session:
        """The PostgreSQL session `session_id`."""
        from ..sessions.postgres import PostgresSession

        await self._migrate()
        return PostgresSession.open_without_migrate(self.pool, session_id)

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """The sessions in the database, most recently updated first."""
        from ..sessions.postgres import PostgresSession

        await self._migrate()  # a fresh database has no tables yet
        return await PostgresSession.list_sessions(self.pool, limit=limit, offset=offset)


class RedisSessionProvider:
    """Sessions in Redis on your `redis.asyncio` `client` (the `sessions-redis` extra).

    The client is yours: the server does not close it.
    """

    __slots__ = ("client",)

    def __init__(self, client: Any) -> None:
        self.client = client

    async def session(self, session_id: str) -> Session:
        """The Redis session `session_id`."""
        from ..sessions.redis import RedisSession

        return RedisSession(self.client, session_id)

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """The sessions on the server, most recently updated first."""
        from ..sessions.redis import RedisSession

        return await RedisSession.list_sessions(self.client, limit=limit, offset=offset)


__all__ = [
    "InMemorySessionProvider",
    "PostgresSessionProvider",
    "RedisSessionProvider",
    "SessionProvider",
    "SqliteSessionProvider",
]
