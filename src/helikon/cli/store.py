"""Where the command line keeps conversations: a SQLite file beside the sidecar by default."""

from __future__ import annotations

import os
from pathlib import Path

STORE_ENV = "HELIKON_SESSIONS"
"""A variable naming the sessions database, instead of `.helikon/sessions.db` beside the sidecar."""


def store_path(sidecar: Path, store: Path | None) -> Path:
    """The sessions database: `--store`, else `$HELIKON_SESSIONS`, else `.helikon/sessions.db` there."""
    if store is not None:
        return store.absolute()
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV]).absolute()
    return sidecar.absolute().parent / ".helikon" / "sessions.db"


async def open_store(path: Path) -> object:
    """The `SqliteDatabase` at `path` (its directory made if missing)."""
    from ..sessions.sqlite import SqliteDatabase

    path.parent.mkdir(parents=True, exist_ok=True)
    return await SqliteDatabase.open(path)


__all__ = ["STORE_ENV", "open_store", "store_path"]
