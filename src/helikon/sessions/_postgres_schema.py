"""The migrations `PostgresSession.migrate` applies, in order (see `helikon.sessions.postgres`).

Each is (version, statement); a version once released never changes, and a new schema is a
new version appended here. Kept apart from `postgres.py` (the session and its queries).
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE IF NOT EXISTS session_events (
            session_id TEXT NOT NULL,
            sequence BIGINT NOT NULL,
            kind TEXT NOT NULL,
            payload JSONB NOT NULL,
            ts TIMESTAMPTZ,
            format INT NOT NULL,
            PRIMARY KEY (session_id, sequence)
        )
        """,
    ),
    # Format 2: a writer-chosen id per event (NULL in earlier rows, which read with an id
    # derived from session and seq) and a summary row per session, filled from the existing
    # rows. No stored event is rewritten.
    (
        2,
        """
        ALTER TABLE session_events ADD COLUMN IF NOT EXISTS event_id TEXT;
        CREATE UNIQUE INDEX IF NOT EXISTS session_events_event_id
            ON session_events (session_id, event_id) WHERE event_id IS NOT NULL;
        CREATE TABLE IF NOT EXISTS helikon_sessions (
            session_id TEXT PRIMARY KEY,
            created TIMESTAMPTZ NOT NULL,
            updated TIMESTAMPTZ NOT NULL,
            event_count BIGINT NOT NULL,
            title TEXT,
            metadata JSONB NOT NULL DEFAULT '{}'
        );
        INSERT INTO helikon_sessions (session_id, created, updated, event_count)
            SELECT session_id, COALESCE(MIN(ts), now()), COALESCE(MAX(ts), now()), MAX(sequence) + 1
            FROM session_events GROUP BY session_id
        ON CONFLICT (session_id) DO NOTHING;
        """,
    ),
    # A projection checkpoint per session (`helikon.core.session.checkpoint`), so a cold snapshot reads
    # it and the tail instead of the whole log. Starts empty (readers fill it in); no event is
    # touched. `state` is TEXT, not JSONB: it is only ever read back whole, and JSONB would
    # parse and re-render a whole conversation on every write.
    (
        3,
        """
        CREATE TABLE IF NOT EXISTS session_checkpoints (
            session_id TEXT PRIMARY KEY,
            as_of_seq BIGINT NOT NULL,
            projector TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL,
            written TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    # `json`, not `jsonb`: it stores the text the codec wrote, byte for byte. `jsonb` keeps a
    # parsed value and changed what it was given: numbers lost their exponent (1e308 read back
    # as an int of 309 digits, 1e20 as 100000000000000000000), `\u0000` was refused, keys were
    # reordered. Each stored row's text stays what `payload::text` (and `metadata::text`) read
    # before; the ALTER copies the table once, under its lock.
    (
        4,
        """
        ALTER TABLE session_events ALTER COLUMN payload TYPE JSON USING payload::json;
        ALTER TABLE helikon_sessions ALTER COLUMN metadata TYPE JSON USING metadata::json;
        """,
    ),
    # A version per session's metadata, counting the `set_metadata` calls: what compare-and-set
    # (`expected_version`) checks. Existing sessions start at 0; a constant default rewrites no row.
    (
        5,
        """
        ALTER TABLE helikon_sessions ADD COLUMN IF NOT EXISTS metadata_version BIGINT NOT NULL DEFAULT 0;
        """,
    ),
)
"""Each schema version and the statement that brings the tables to it from the one before."""

__all__ = ["MIGRATIONS"]
