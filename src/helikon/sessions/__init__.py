"""Durable `Session` backends, one module per store (each behind its own extra).

- `helikon.sessions.sqlite.SqliteSession` (`pip install 'paigasus-helikon[sessions-sqlite]'`)
- `helikon.sessions.postgres.PostgresSession` (`pip install 'paigasus-helikon[sessions-postgres]'`)
- `helikon.sessions.redis.RedisSession` (`pip install 'paigasus-helikon[sessions-redis]'`)

`MemorySession` lives in core; `CompactingSession` wraps any of them.
"""
