"""`LogCache`: the part of a session's log a session object has already read and decoded.

A log is append-only and a sequence number is never reused, so what was read once stays
true: a durable session keeps the decoded entries and its projection, and each read
fetches only the entries appended after them (by any writer, in any process). Reads of a
long session then cost the tail, not the whole log.

A cache may also start from a projection checkpoint (`start_at`, see
`helikon.core.session.checkpoint`): it then holds the projection of events 0..`as_of_seq` without
their entries, and only the entries after them. `snapshot()` needs nothing more; a read
of `events()` reaching before them fetches the missing prefix once (`fill_prefix`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from . import ConversationSnapshot, Projection, SequenceId, SessionEntry, SessionEvent, event_step
from .checkpoint import copy_projection, restored_projection


class LogCache:
    """Decoded entries `base`..n-1 of one session, and the running projection of entries 0..m-1."""

    __slots__ = ("_base", "_entries", "_projection", "checkpoint_seq", "refolded", "stored_checkpoint")

    def __init__(self) -> None:
        self._base = 0  # the seq of `_entries[0]`: 0 unless started from a checkpoint
        self._entries: list[SessionEntry] = []
        self._projection = restored_projection()
        self.checkpoint_seq = -1
        """The `as_of_seq` of the newest checkpoint this object loaded or wrote (-1: none)."""
        self.refolded = False
        self.stored_checkpoint = -1
        """The `as_of_seq` of the newest checkpoint known to be stored (loaded, or written)."""
        """Set when a rewind made `snapshot` refold the whole log: a new checkpoint saves redoing it."""

    @property
    def last_seq(self) -> int:
        """The sequence number of the last cached entry (-1 when empty): fetch after it."""
        return self._base + len(self._entries) - 1

    @property
    def base(self) -> int:
        """The seq of the first cached entry: entries before it are in the projection only."""
        return self._base

    @property
    def projection(self) -> Projection:
        """The running projection (folded up to `folded`): what a checkpoint saves."""
        return self._projection

    @property
    def folded(self) -> int:
        """How many events the projection holds (after a `snapshot()`: all the cached ones)."""
        return self._projection.count

    def start_at(self, projection: Projection, as_of_seq: int) -> None:
        """Start an empty cache from a checkpoint's projection of events 0..`as_of_seq`."""
        if self._entries or self._projection.count:
            raise ValueError("start_at needs an empty cache")
        self._projection = projection
        self._base = as_of_seq + 1
        self.checkpoint_seq = self.stored_checkpoint = as_of_seq

    def extend(self, fetched: Sequence[SessionEntry]) -> bool:
        """Add freshly fetched entries; False if they do not continue the cache (then `clear`)."""
        entries = self._entries
        if not fetched:
            return True
        first, last = int(fetched[0].seq), int(fetched[-1].seq)
        nxt = self._base + len(entries)
        if first == nxt and last - first == len(fetched) - 1:
            entries.extend(fetched)  # the usual case: the stored order continues ours exactly
            return True
        for entry in fetched:
            seq = int(entry.seq)
            if seq < nxt:  # a concurrent read already added it
                continue
            if seq != nxt:
                return False
            entries.append(entry)
            nxt += 1
        return True

    def fill_prefix(self, fetched: Sequence[SessionEntry]) -> bool:
        """Add the entries before `base` (a read of the log from its start, up to `base - 1`).

        False (and nothing changed) when they are not exactly seqs 0..`base - 1`.
        """
        base = self._base
        if base == 0:
            return True
        prefix = [entry for entry in fetched if int(entry.seq) < base]
        if len(prefix) != base or any(int(entry.seq) != i for i, entry in enumerate(prefix)):
            return False
        self._entries[:0] = prefix
        self._base = 0
        return True

    def clear(self) -> None:
        """Forget everything (the store no longer matches what was read)."""
        self._base = 0
        self._entries = []
        self._projection = restored_projection()
        self.checkpoint_seq = self.stored_checkpoint = -1

    def after(self, since: SequenceId | None) -> list[SessionEntry] | None:
        """The cached entries after `since` (exclusive), or all of them; None if some are not cached."""
        start = 0 if since is None or since < 0 else since + 1
        if start < self._base:
            return None
        return self._entries[start - self._base :]

    def snapshot(self) -> ConversationSnapshot | None:
        """The projection of the cached log (folding only what was not folded before).

        None when a rewind reached behind the checkpoint this cache started from: the
        caller reads the prefix (`fill_prefix`) and asks again.
        """
        projection, entries, base = self._projection, self._entries, self._base
        for index in range(projection.count - base, len(entries)):  # lazily: a reader of events() never pays
            projection.add(event_step(entries[index].event))
        if projection.stale:
            if base:
                return None
            projection.refold([event_step(entry.event) for entry in entries])
            self.refolded = True
        return projection.snapshot()

    def folded_event(self) -> SessionEvent | None:
        """The last event the projection folded, if this cache holds it (else None)."""
        index = self._projection.count - 1 - self._base
        return self._entries[index].event if 0 <= index < len(self._entries) else None

    def __len__(self) -> int:
        """How many events the cache covers (entries and checkpointed prefix alike)."""
        return self._base + len(self._entries)


class WarmProjection:
    """A projection this process built, as of `as_of_seq` (its event: `last_event`); its owner folds on."""

    __slots__ = ("as_of_seq", "checkpoint_seq", "last_event", "projection", "store")

    def __init__(
        self, store: object, projection: Projection, last_event: SessionEvent, checkpoint_seq: int
    ) -> None:
        self.store = store
        self.projection = projection
        self.as_of_seq = projection.count - 1
        self.last_event = last_event
        self.checkpoint_seq = checkpoint_seq


class WarmProjections:
    """The latest projection of recently read sessions, by store and session id, in this process.

    A server opens a new session object per request; without this, each one decodes the
    session's checkpoint (the whole conversation) before it folds the tail. With it, a new
    object copies the projection an earlier object of the same session built (a list copy),
    checks that the store still holds the event it folded last (the log was not replaced),
    and fetches and folds only what was appended since. Bounded: the least recently used
    sessions are forgotten.

    Remembering costs O(1): it keeps a reference to the live projection (and the event it
    folded last), and the copy is made by the object that recalls it. A projection its owner
    folded further since (without remembering it again) is not recalled.
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = 64) -> None:
        self._entries: OrderedDict[tuple[int, str], WarmProjection] = OrderedDict()
        self._size = size

    def remember(self, store: object, session_id: str, log: LogCache) -> None:
        """Keep `log`'s projection for later objects (call after a snapshot: it is up to date)."""
        projection = log.projection
        key = (id(store), session_id)
        known = self._entries.get(key)
        if (
            known is not None
            and known.store is store
            and known.as_of_seq == projection.count - 1
            and known.checkpoint_seq == log.stored_checkpoint
        ):
            self._entries.move_to_end(key)
            return
        last = log.folded_event()
        if last is None or projection.stale:
            return
        self._entries[key] = WarmProjection(store, projection, last, log.stored_checkpoint)
        self._entries.move_to_end(key)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def recall(self, store: object, session_id: str) -> WarmProjection | None:
        """The kept projection of the session, if any (its caller validates it against the store)."""
        known = self._entries.get((id(store), session_id))
        if known is None or known.store is not store:
            return None
        projection = known.projection
        if projection.stale or projection.count - 1 != known.as_of_seq:
            return None  # its owner moved on (and will remember again after its snapshot)
        return known

    def forget(self, store: object, session_id: str) -> None:
        """Drop the session's kept projection (it no longer matches the store)."""
        self._entries.pop((id(store), session_id), None)

    def clear(self) -> None:
        """Forget every kept projection."""
        self._entries.clear()


WARM = WarmProjections()
"""The process's kept projections (see `WarmProjections`)."""


def start_warm(log: LogCache, warm: WarmProjection, fetched: Sequence[SessionEntry]) -> bool:
    """Start an empty `log` from `warm` and the entries fetched from `warm.as_of_seq` on.

    False (and `log` untouched) when the first entry is not the event `warm` folded last.
    """
    if not fetched or int(fetched[0].seq) != warm.as_of_seq or fetched[0].event != warm.last_event:
        return False
    log.start_at(copy_projection(warm.projection), warm.as_of_seq)
    # Not a stored checkpoint: the next one is written once the tail past the stored one is long.
    log.checkpoint_seq = log.stored_checkpoint = warm.checkpoint_seq
    return log.extend(fetched[1:])
