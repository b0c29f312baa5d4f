"""`open_session(url, session_id)`: a session from a URL or a path, in one synchronous call.

It returns at once, without IO: the `LazySession` connects on first use, in the event loop
that uses it (database pools and connections belong to the loop they were made on), so the
same handle serves `await agent.run(...)` and successive `agent.run_sync(...)` calls (those
share one loop per thread). `async with` or `aclose()` closes what it opened; `close()` does
so from synchronous code.

| URL | backend |
| --- | --- |
| `sqlite:///relative.db`, `sqlite:////abs/path.db`, a bare path | `SqliteSession` (a database of its own) |
| `postgresql://...`, `postgres://...` | `PostgresSession` (a small pool of its own) |
| `redis://...`, `rediss://...` | `RedisSession` (a client of its own) |
| `memory://` | `MemorySession` (kept in this handle only) |
"""

from __future__ import annotations

import asyncio
import importlib
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, cast

from helikon.core._internal.json_value import JsonValue
from helikon.core._internal.sync import run_coroutine
from helikon.core.exceptions import UserError
from helikon.core.session import (
    ConversationSnapshot,
    SequenceId,
    Session,
    SessionEntry,
    SessionEvent,
    SessionMetadata,
    SessionRecord,
)
from helikon.core.session.branches import Branching

# scheme -> (module, what it needs installed, the options its opener takes)
_BACKENDS: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "sqlite": ("helikon.sessions.sqlite", "sessions-sqlite", ("busy_timeout",)),
    "postgresql": ("helikon.sessions.postgres", "sessions-postgres", ("max_size",)),
    "postgres": ("helikon.sessions.postgres", "sessions-postgres", ("max_size",)),
    "redis": ("helikon.sessions.redis", "sessions-redis", ()),
    "rediss": ("helikon.sessions.redis", "sessions-redis", ()),
    "memory": ("helikon.core.session.memory", "", ()),
}
_SCHEMES = (
    "sqlite:///<path>, postgresql://, postgres://, redis://, rediss://, memory:// (or a bare file path)"
)


class _Location:
    """What the handles on one stored log share as their store, for a runner's `log_key`.

    Each handle opens connections of its own; this object only says "the same store", so two
    `open_session` calls on one URL and id share a runner's queue of turns.
    """

    __slots__ = ("__weakref__", "name")

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<store {self.name}>"


# Weak: an entry lives as long as a handle uses it, so nothing here outgrows the open handles.
_LOCATIONS: weakref.WeakValueDictionary[str, _Location] = weakref.WeakValueDictionary()


def _location(name: str) -> _Location:
    found = _LOCATIONS.get(name)
    if found is None:
        found = _LOCATIONS[name] = _Location(name)
    return found


class LazySession(Branching):
    """A session `open_session` made: it opens its backend's session on first use.

    It is a `Session` (and has the backend's `records`, `set_metadata`, `metadata`,
    `rewind`, `branches`, `fork`); `durable` is the backend's. Two handles on one URL and
    session id are one log to a runner (`log_key`). A handle serves one event loop at a
    time; once that loop is closed, the next use opens the backend again on the new one.
    """

    supports_ids = True
    durable: bool

    __slots__ = ("_closed", "_inner", "_key", "_loop", "_open", "_opening", "_session_id", "_url", "durable")

    def __init__(
        self,
        url: str,
        session_id: str,
        opener: Callable[[], Awaitable[Any]],
        *,
        durable: bool,
        store: str | None,
    ) -> None:
        """Use `open_session`."""
        self._url = url
        self._session_id = session_id
        self._open = opener
        self.durable = durable
        self._key = _location(store) if store is not None else _Location(url)  # memory: its own
        self._inner: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Future[None] | None = None
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open" if self._inner is not None else "not yet opened"
        return f"LazySession({self._url!r}, {self._session_id!r}, {state})"

    @property
    def session_id(self) -> str:
        """The id of the log this handle reads and writes."""
        return self._session_id

    @property
    def log_key(self) -> tuple[object, str]:
        """The store (one object per URL while handles on it live) and the session id (`SharedLog`)."""
        return self._key, self._session_id

    async def _session(self) -> Any:
        """The backend's session, opened in the running loop if it is not yet."""
        if self._closed:
            raise UserError(f"{self!r} is closed: call open_session(...) again")
        loop = asyncio.get_running_loop()
        if self._inner is not None and self._loop is loop:
            return self._inner
        if self._opening is not None and self._loop is loop:
            await asyncio.shield(self._opening)  # another task of this loop is opening it
            return self._inner
        if self._loop is not None and self._loop is not loop:
            if not self._loop.is_closed():
                raise UserError(
                    f"{self!r} is in use by another event loop: a handle serves one loop at a time; "
                    "call open_session(...) once per loop (or per thread)"
                )
            # Its loop is gone, and the connections that belonged to it: open anew on this one.
            self._inner = None
        self._loop, self._opening = loop, loop.create_future()
        try:
            self._inner = await self._open()
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                self._opening.cancel()
            else:
                self._opening.set_exception(exc)
                self._opening.exception()  # retrieved: a waiter re-raises it, no one else is told
            self._opening = self._loop = None
            raise
        self._opening.set_result(None)
        return self._inner

    # --- the Session protocol, and the backend's extras ----------------------------------------

    async def append(
        self,
        events: Sequence[SessionEvent],
        *,
        ids: Sequence[str] | None = None,
        expected_seq: int | None = None,
    ) -> None:
        """See `Session.append`."""
        session = await self._session()
        await session.append(events, ids=ids, expected_seq=expected_seq)

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """See `Session.events`."""
        return await (await self._session()).events(since)

    async def snapshot(self) -> ConversationSnapshot:
        """See `Session.snapshot`."""
        return await (await self._session()).snapshot()

    async def records(self, since: SequenceId | None = None) -> list[SessionRecord]:
        """The log with its whole envelope (see `SessionRecord`)."""
        return await (await self._session()).records(since)

    async def set_metadata(
        self,
        *,
        title: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        expected_version: int | None = None,
    ) -> None:
        """See `StoredSession.set_metadata` (compare-and-set with `expected_version`)."""
        session = await self._session()
        await session.set_metadata(title=title, metadata=metadata, expected_version=expected_version)

    async def metadata(self) -> SessionMetadata:
        """The session's title, metadata and their version (see `SessionMetadata`)."""
        return await (await self._session()).metadata()

    async def _sibling(self, session_id: str) -> Self:
        return cast("Self", open_session(self._url, session_id))

    # --- lifecycle -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close what this handle opened (the backend's session and its store). Idempotent."""
        self._closed = True
        inner, loop = self._inner, self._loop
        self._inner = self._loop = None
        if inner is None or loop is None:
            return
        aclose = getattr(inner, "aclose", None)
        if aclose is None or loop.is_closed():
            return  # memory; or its loop is gone, and its connections with it
        if loop is asyncio.get_running_loop():
            await aclose()
            return
        raise UserError(f"{self!r} was opened on another event loop: close it there")

    def close(self) -> None:
        """`aclose`, from synchronous code (a script's end, after `agent.run_sync(...)` calls).

        Raises:
            UserError: Called inside a running event loop: `await session.aclose()` there.
        """
        if self._inner is None:
            self._closed = True
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            run_coroutine(self.aclose())
            return
        raise UserError(
            f"close() was called inside a running event loop: `await session.aclose()` there ({self!r})"
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def open_session(url: str | os.PathLike[str], session_id: str, **options: Any) -> LazySession:
    """The session `session_id` in the store at `url`, opened on first use (see the module).

    Synchronous and free of IO: the backend's extra is checked now, the connection is made
    by the first call that reads or writes (and the schema migrated then, as the backend's
    own `open_session` does).

    Args:
        url: `sqlite:///relative.db`, `sqlite:////abs/path.db`, a bare file path,
            `postgresql://...` (or `postgres://`), `redis://...` (or `rediss://`), or `memory://`.
        session_id: The log to open.
        **options: Passed to the backend's opener: `busy_timeout` (SQLite), `max_size`
            (PostgreSQL's pool).

    Raises:
        UserError: An unknown scheme (the message lists them), a backend whose extra is not
            installed (it names the extra), an option the backend does not take, or a bad
            `session_id`.

    Example:
        ```python
        import asyncio

        from helikon import CustomEvent
        from helikon.sessions import open_session

        async def main() -> None:
            async with open_session("memory://", "user-42") as session:
                await session.append([CustomEvent(kind="signed_in", data={"plan": "pro"})])
                [(seq, event)] = await session.events()
                assert seq == 0 and event.kind == "signed_in"

        asyncio.run(main())
        ```
    """
    if not isinstance(session_id, str) or not session_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"session_id must be a non-empty string, not {session_id!r}")
    url, scheme, rest = _parse(url)
    module_name, extra, allowed = _BACKENDS[scheme]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        takes = ", ".join(allowed) or "no options"
        raise UserError(f"open_session({scheme}://...) takes {takes}, not {', '.join(unknown)}")
    try:
        module: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(
            f"{scheme}:// sessions need the {extra!r} extra: pip install 'paigasus-helikon[{extra}]' ({exc})"
        ) from exc
    if scheme == "memory":
        memory = module.MemorySession(session_id=session_id)

        async def open_memory() -> Session:
            return memory

        return LazySession(url, session_id, open_memory, durable=False, store=None)
    if scheme == "sqlite":
        path = rest[1:]

        async def open_sqlite() -> Session:
            return await module.open_session(session_id, path=path, **options)

        return LazySession(
            url, session_id, open_sqlite, durable=True, store=f"sqlite:{os.path.abspath(path)}"
        )
    if scheme in ("postgresql", "postgres"):

        async def open_postgres() -> Session:
            return await module.open_session(session_id, dsn=url, **options)

        return LazySession(url, session_id, open_postgres, durable=True, store=url)

    async def open_redis() -> Session:
        return await module.open_session(session_id, url=url)

    return LazySession(url, session_id, open_redis, durable=True, store=url)


def _parse(url: object) -> tuple[str, str, str]:
    """`url` checked and split: (the URL as text, its known scheme, what follows `scheme://`)."""
    if isinstance(url, os.PathLike):
        url = os.fspath(cast("os.PathLike[str]", url))
    if not isinstance(url, str) or not url:
        raise UserError(f"url must be a session URL or a file path ({_SCHEMES}), not {url!r}")
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "sqlite", "/" + url  # a bare path: a SQLite file
    scheme = scheme.lower()
    if scheme not in _BACKENDS:
        raise UserError(f"unknown session URL scheme {scheme + '://'!r} in {url!r}: use one of {_SCHEMES}")
    if scheme == "memory" and rest:
        raise UserError(f"memory:// takes nothing after the scheme, not {url!r}")
    if scheme == "sqlite" and (not rest.startswith("/") or rest == "/"):
        raise UserError(
            "a SQLite URL is sqlite:///relative.db or sqlite:////abs/path.db (three slashes, then "
            f"the path), not {url!r}"
        )
    return url, scheme, rest


__all__ = ["LazySession", "open_session"]
