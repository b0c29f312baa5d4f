"""`LogCache`: the part of a session's log a session object has already read and decoded.

A log is append-only and a sequence number is never reused, so what was read once stays
true: a durable session keeps the decoded entries and its projection, and each read
fetches only the entries appended after them (by any writer, in any process). Reads of a
long session then cost the tail, not the whole log.
"""

from __future__ import annotations

from collections.abc import Sequence

from .session import ConversationSnapshot, Projection, SequenceId, SessionEntry, event_step


class LogCache:
    """Decoded entries 0..n-1 of one session, and their running projection."""

    __slots__ = ("_entries", "_projection")

    def __init__(self) -> None:
        self._entries: list[SessionEntry] = []
        self._projection = Projection()

    @property
    def last_seq(self) -> int:
        """The sequence number of the last cached entry (-1 when empty): fetch after it."""
        return len(self._entries) - 1

    def extend(self, fetched: Sequence[SessionEntry]) -> bool:
        """Add freshly fetched entries; False if they do not continue the cache (then `clear`)."""
        entries = self._entries
        if not fetched:
            return True
        first, last = int(fetched[0].seq), int(fetched[-1].seq)
        if first == len(entries) and last - first == len(fetched) - 1:
            entries.extend(fetched)  # the usual case: the stored order continues ours exactly
            return True
        for entry in fetched:
            seq = int(entry.seq)
            if seq < len(entries):  # a concurrent read already added it
                continue
            if seq != len(entries):
                return False
            entries.append(entry)
        return True

    def clear(self) -> None:
        """Forget everything (the store no longer matches what was read)."""
        self._entries = []
        self._projection = Projection()

    def after(self, since: SequenceId | None) -> list[SessionEntry]:
        """The cached entries after `since` (exclusive), or all of them."""
        if since is None or since < 0:
            return list(self._entries)
        return self._entries[since + 1 :]

    def snapshot(self) -> ConversationSnapshot:
        """The projection of the cached log (folding only what was not folded before)."""
        projection, entries = self._projection, self._entries
        for index in range(projection.count, len(entries)):  # lazily: a reader of events() never pays
            projection.add(event_step(entries[index].event))
        return projection.snapshot()

    def __len__(self) -> int:
        return len(self._entries)
