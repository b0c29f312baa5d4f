"""`helikon sessions list | show | export`: the conversations saved by the REPL and `run --session`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from ..core.exceptions import UserError
from .store import open_store, store_path

T = TypeVar("T")


def _with_store(agents: Path, store: Path | None, work: Callable[[Any], Awaitable[T]]) -> T:
    path = store_path(agents, store)
    if not path.exists():
        raise UserError(f"no sessions are saved yet ({path} does not exist)")

    async def go() -> T:
        db: Any = await open_store(path)
        try:
            return await work(db)
        finally:
            await db.aclose()

    return asyncio.run(go())


def list_sessions(agents: Path, store: Path | None) -> int:
    """One line per saved session: name, events, last update, title."""

    async def work(db: Any) -> list[Any]:
        from ..sessions.sqlite import SqliteSession

        return await SqliteSession.list_sessions(db, limit=1000)

    try:
        infos = _with_store(agents, store, work)
    except UserError as exc:
        print(str(exc), file=sys.stderr)
        return 0
    for info in infos:
        updated = info.updated.strftime("%Y-%m-%d %H:%M")
        print(f"{info.session_id}\t{info.event_count} events\t{updated}\t{info.title or ''}".rstrip())
    return 0


def show_session(agents: Path, store: Path | None, session: str) -> int:
    """The conversation: each message with who said it, and tool calls in brief."""
    from .transcript import transcript_lines

    events = _with_store(agents, store, lambda db: _events(db, session))
    for line in transcript_lines(events):
        print(line)
    return 0


def export_session(agents: Path, store: Path | None, session: str) -> int:
    """Every event, one canonical JSON object per line."""
    from ..core.session.codec import encode_event

    entries = _with_store(agents, store, lambda db: _events(db, session))
    for entry in entries:
        sys.stdout.write(encode_event(entry.event) + "\n")
    return 0


async def _events(db: Any, session: str) -> list[Any]:
    from ..sessions.sqlite import SqliteSession

    known = {info.session_id for info in await SqliteSession.list_sessions(db, limit=100_000)}
    if session not in known:
        raise UserError(f"no saved session {session!r} (see `helikon sessions list`)")
    return list(await (await SqliteSession.open(db, session)).events())


__all__ = ["export_session", "list_sessions", "show_session"]
