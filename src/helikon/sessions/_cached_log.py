"""The reads the server-backed sessions share: a cached log, checkpoints, and the tail.

`PostgresSession` and `RedisSession` differ in how they fetch entries and store
checkpoints; how a session object reads through its `LogCache` is the same for both, and
lives here once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from helikon.core.exceptions import UserError
from helikon.core.session import ConversationSnapshot, SequenceId, SessionEntry
from helikon.core.session._log_cache import WARM, LogCache, start_warm
from helikon.core.session.checkpoint import CHECKPOINT_EVERY


class CachedLogSession(ABC):
    """`events` and `snapshot` over a `LogCache`, for a backend that can fetch after a seq."""

    __slots__ = ()

    _closed: bool
    _log: LogCache
    _stale_checkpoint: bool
    _session_id: str

    @property
    @abstractmethod
    def _store(self) -> object:
        """The shared store behind this object (its pool or client): what `WARM` keys sessions by."""

    @abstractmethod
    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        """The stored entries after seq `after`, decoded; `action` names the call in errors."""

    @abstractmethod
    async def _start_from_checkpoint(self) -> None:
        """Start the empty cache from the session's checkpoint, if one is usable."""

    @abstractmethod
    async def _write_checkpoint(self) -> None:
        """Store the cache's projection as the session's checkpoint (best effort)."""

    def _check_open(self) -> None:
        if self._closed:
            raise UserError(f"{self!r} is closed: open a new session")

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The log after `since` (exclusive), in order, each event with its sequence number."""
        self._check_open()
        if since is not None and since >= 0 and len(self._log) == 0:
            # An object that has read nothing fetches only what is asked for (the cache holds
            # a prefix from seq 0, so these entries stay out of it): O(tail) for a server
            # that opens a session object per request.
            return await self._fetch(int(since), "events")
        await self._refresh("events")
        cached = self._log.after(since)
        if cached is None:  # started from a checkpoint: read the prefix it stands for, once
            await self._read_prefix("events")
            cached = self._log.after(since) or []
        return cached

    async def _read_prefix(self, action: str) -> None:
        """Fetch the entries a checkpoint stood for (the cache then holds the whole log)."""
        if not self._log.fill_prefix(await self._fetch(-1, action)):
            self._log.clear()
            self._log.extend(await self._fetch(-1, action))

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log: a checkpoint plus the events after it.

        A session object that has read nothing yet starts from the session's checkpoint (if
        it is usable, see `helikon.core.session.checkpoint`); later calls fold only new events. Once
        `CHECKPOINT_EVERY` events were folded past the checkpoint, it writes a newer one.
        """
        self._check_open()
        log = self._log
        if not len(log) and not await self._start_warm():
            await self._start_from_checkpoint()
        await self._refresh("snapshot")
        snapshot = log.snapshot()
        if snapshot is None:  # a rewind reached behind the checkpoint: fold the whole log
            await self._read_prefix("snapshot")
            snapshot = log.snapshot() or ConversationSnapshot()
        if log.folded - 1 - log.checkpoint_seq >= CHECKPOINT_EVERY or self._stale_checkpoint or log.refolded:
            log.refolded = False
            await self._write_checkpoint()
        WARM.remember(self._store, self._session_id, log)
        return snapshot

    async def _start_warm(self) -> bool:
        """Continue the projection another object of this session built in this process, if it holds."""
        warm = WARM.recall(self._store, self._session_id)
        if warm is None:
            return False
        if start_warm(self._log, warm, await self._fetch(warm.as_of_seq - 1, "snapshot")):
            return True
        WARM.forget(self._store, self._session_id)
        self._log.clear()
        return False

    async def _refresh(self, action: str) -> None:
        """Fetch and decode what was appended after what this object has already read."""
        if not self._log.extend(await self._fetch(self._log.last_seq, action)):
            self._log.clear()  # the store no longer continues what we read
            self._log.extend(await self._fetch(-1, action))
            self._stale_checkpoint = True


__all__ = ["CachedLogSession"]
