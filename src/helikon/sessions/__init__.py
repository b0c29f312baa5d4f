"""Durable `Session` backends, one module per store (each behind its own extra).

- `helikon.sessions.sqlite.SqliteSession` (`pip install 'paigasus-helikon[sessions-sqlite]'`)
- `helikon.sessions.postgres.PostgresSession` (`pip install 'paigasus-helikon[sessions-postgres]'`)
- `helikon.sessions.redis.RedisSession` (`pip install 'paigasus-helikon[sessions-redis]'`)

`MemorySession` lives in core; `CompactingSession` wraps any of them. `open_session(url,
session_id)` opens any of them from a URL or a path, lazily: the `LazySession` it returns
connects on first use.
"""

from helikon.core._internal.moved import install as _install_moved

from ._moved import MOVED as _MOVED
from ._open import LazySession, open_session

__all__ = ["LazySession", "open_session"]

_install_moved(_MOVED)  # `helikon.sessions.lazy`, the old path of `_open`, still imports
