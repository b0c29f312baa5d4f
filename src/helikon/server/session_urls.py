"""`session_provider(url)`: a `SessionProvider` named by a URL, for servers configured from the environment.

- `memory` — in this process's memory (lost when it stops);
- `sqlite:///absolute/path.db`, `sqlite://relative/path.db` — a SQLite file;
- `postgresql://user:password@host:5432/db` (or `postgres://`) — PostgreSQL through an
  asyncpg pool (the `sessions-postgres` extra);
- `redis://host:6379/0` (or `rediss://`) — Redis (the `sessions-redis` extra).

The pool or client is opened at the first session, on the loop that asks for it (a
container's entry point has no loop yet when it reads its configuration), and closed by
`aclose()`, which the servers call when they stop.

Example:
    ```python
    from helikon.server import SqliteSessionProvider, session_provider

    provider = session_provider("sqlite:///tmp/sessions.db")
    assert isinstance(provider, SqliteSessionProvider) and provider.path == "/tmp/sessions.db"
    ```
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from ..core.exceptions import UserError
from ..core.session import Session, SessionInfo
from .sessions import (
    InMemorySessionProvider,
    PostgresSessionProvider,
    RedisSessionProvider,
    SessionProvider,
    SqliteSessionProvider,
)

SCHEMES = ("memory", "sqlite", "postgresql", "postgres", "redis", "rediss")


def session_provider(url: str) -> SessionProvider:
    """The provider `url` names (see the module).

    Raises:
        UserError: The URL names no backend helikon has, or no SQLite path.
    """
    scheme = urlsplit(url).scheme if "://" in url else url
    if scheme == "memory":
        return InMemorySessionProvider()
    if scheme == "sqlite":
        path = url.split("://", 1)[1]
        if not path or path == "/":
            raise UserError(f"session URL {url!r}: name the file, e.g. sqlite:///var/data/sessions.db")
        return SqliteSessionProvider(path)
    if scheme in ("postgresql", "postgres"):
        return _Opened(url, _postgres)
    if scheme in ("redis", "rediss"):
        return _Opened(url, _redis)
    shown = url.split("@")[-1]  # never echo a password
    raise UserError(
        f"session URL {shown!r}: the scheme must be one of {', '.join(SCHEMES)} "
        "(e.g. postgresql://user:password@host:5432/db)"
    )


class _Opened:
    """A PostgreSQL or Redis provider whose pool or client is opened at the first session."""

    def __init__(self, url: str, open: Any) -> None:
        self._url = url
        self._open = open
        self._provider: SessionProvider | None = None
        self._close: Any = None
        self._lock = asyncio.Lock()

    async def _ready(self) -> SessionProvider:
        async with self._lock:
            provider = self._provider
            if provider is None:
                provider, self._close = await self._open(self._url)
                self._provider = provider
            return provider

    async def session(self, session_id: str) -> Session:
        """The session `session_id` (opening the pool or client the first time)."""
        return await (await self._ready()).session(session_id)

    async def list_sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """The sessions, most recently updated first."""
        return await (await self._ready()).list_sessions(limit=limit, offset=offset)

    async def aclose(self) -> None:
        """Close the pool or client, if it was opened."""
        close, self._close, self._provider = self._close, None, None
        if close is not None:
            await close()


async def _postgres(url: str) -> tuple[SessionProvider, Any]:
    from ..sessions.postgres import asyncpg  # the extra's check, with its message

    pool: Any = await asyncpg.create_pool(url, min_size=1, max_size=10)  # pyright: ignore[reportUnknownMemberType]
    return PostgresSessionProvider(pool), pool.close


async def _redis(url: str) -> tuple[SessionProvider, Any]:
    from ..sessions.redis import aioredis  # the extra's check, with its message

    client: Any = aioredis.Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]
    return RedisSessionProvider(client), client.aclose


__all__ = ["SCHEMES", "session_provider"]
