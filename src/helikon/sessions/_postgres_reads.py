"""How `PostgresSession` reads a log's events: comma-joined aggregate rows, or row by row.

An aggregate row (the payloads as one comma-joined text, with their count, first and last
seq and lowest and highest format) is one value to fetch and decode instead of a row per
event. What is left is mostly the server's jsonb-to-text conversion, one backend's work per
query. So a read takes at most `SPLIT_MIN` events in its first query, and when the log goes
on (that query also returns the last seq), asks for the rest in two halves at once, on two
connections: the server converts them in parallel while the client decodes the first part.
Reads take no lock; see `read_entries` for why they still show one state of the log.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from helikon.core.codec import FORMAT_VERSION, decode_events, decode_joined, gc_paused, upgrade_all
from helikon.core.session import SessionEntry, SessionEvent, UnknownEvent

# payload::text: jsonb's text form (keys reordered, spaces added).
SELECT_ROWS = """
SELECT sequence, payload::text, format FROM session_events
WHERE session_id = $1 AND sequence > $2 ORDER BY sequence
"""
# The rows after $2 up to $3, joined, and the log's last seq (an index lookup) to say whether
# more follow.
SELECT_JOINED = """
SELECT count(*), min(sequence), max(sequence), min(format), max(format),
       string_agg(payload::text, ',' ORDER BY sequence),
       (SELECT max(sequence) FROM session_events WHERE session_id = $1)
FROM session_events WHERE session_id = $1 AND sequence > $2 AND sequence <= $3
"""

SPLIT_MIN = 2000
"""The most events a read's first query fetches; the rest come in two halves at once."""

_END = (1 << 63) - 1  # no upper bound on the sequence

# What `SessionEntry(seq, event)` does, but all in C: twice as fast for a 10k-event read.
new_entry: Callable[[tuple[int, SessionEvent]], SessionEntry] = functools.partial(
    tuple.__new__,  # pyright: ignore[reportUnknownMemberType]
    SessionEntry,
)


class Db(Protocol):
    """The part of asyncpg's (untyped) pool the reads use."""

    async def fetch(self, query: str, *args: object) -> list[Sequence[Any]]: ...
    async def fetchrow(self, query: str, *args: object) -> Sequence[Any]: ...


async def read_entries(db: Db, session_id: str, after: int) -> list[SessionEntry]:
    """The events after seq `after`, decoded in one pass when the aggregate rows allow.

    The halves come from snapshots later than the first query's, which saw the log reach
    its last seq. Appends are gap-free and commit in seq order, and stored events never
    change, so when each part holds exactly the seqs asked for (the last half starting right
    after the others), together they are the log as the last half's snapshot shows it,
    never half an append. Anything else is read again in one query.
    """
    top = after + SPLIT_MIN
    head = await db.fetchrow(SELECT_JOINED, session_id, after, top)
    parts: list[Sequence[Any]] = [head]
    head_events = None
    if head[6] is not None and head[6] > top:  # the log goes on
        split = await _with_halves(db, session_id, head, after, top)
        if split is None:  # rows went missing under us
            parts = [await db.fetchrow(SELECT_JOINED, session_id, after, _END)]
        else:
            parts, head_events = split
    entries = _entries(session_id, parts, head_events)
    if entries is not None:
        return entries
    # A damaged payload, a gap or mixed formats: row by row, each with its own format.
    rows = await db.fetch(SELECT_ROWS, session_id, after)
    seqs = [row[0] for row in rows]
    events = upgrade_all(session_id, seqs, [row[2] for row in rows], decode_events([r[1] for r in rows]))
    return list(map(new_entry, zip(seqs, events, strict=True)))


async def _with_halves(
    db: Db, session_id: str, head: Sequence[Any], after: int, top: int
) -> tuple[list[Sequence[Any]], list[SessionEvent] | None] | None:
    """The head and the rest of the log in two halves, and the head decoded meanwhile."""
    middle = top + (head[6] - top) // 2
    halves = [
        asyncio.ensure_future(db.fetchrow(SELECT_JOINED, session_id, low, high))
        for low, high in ((top, middle), (middle, _END))
    ]
    try:
        await asyncio.sleep(0)  # both send their query before the head is decoded
        head_events = decode_joined(head[5], head[0])
        first, second = await asyncio.gather(*halves)
    finally:
        for half in halves:  # after a failure or a cancellation, no query is left running
            half.cancel()
        await asyncio.gather(*halves, return_exceptions=True)
    found = (head[0], head[2], first[0], first[2], second[1])
    if found != (top - after, top, middle - top, middle, middle + 1):
        return None
    return [head, first, second], head_events


def _entries(
    session_id: str, parts: list[Sequence[Any]], head_events: list[SessionEvent] | None = None
) -> list[SessionEntry] | None:
    """The entries the aggregate rows hold, or None when they must be read row by row."""
    count = sum(part[0] for part in parts)
    if not count:
        return []
    first, last = parts[0][1], parts[-1][2]
    if last - first + 1 != count:
        return None  # a gap: only the rows say which seqs are there
    low, high = min(part[3] for part in parts), max(part[4] for part in parts)
    with gc_paused(count):  # held over the decoding and the entries' wrapping
        events: list[SessionEvent] = []
        for index, part in enumerate(parts):
            decoded = head_events if index == 0 and head_events is not None else None
            decoded = decoded if decoded is not None else decode_joined(part[5], part[0])
            if decoded is None:
                return None
            events += decoded
        # Mixed formats (an old log appended to since) matter only for unknown events.
        if low != high and (high > FORMAT_VERSION or UnknownEvent in set(map(type, events))):
            return None
        seqs = range(first, first + count)
        events = upgrade_all(session_id, seqs, high, events)
        return list(map(new_entry, zip(seqs, events, strict=True)))


__all__ = ["SELECT_JOINED", "SELECT_ROWS", "SPLIT_MIN", "Db", "new_entry", "read_entries"]
