"""`RunLog`: a run's events, kept in order for replay, handed to live subscribers without waiting.

Every event a run streams is appended once, numbered from 0 (its `seq`, the SSE `id:`).
A subscriber asks for the events after a seq it has seen: it gets the ones already logged,
then the live ones, with no gap and no repeat, because registering and reading the backlog
happen in one step of the event loop. The run never waits for a subscriber: each has a
bounded backlog, and one that falls `limit` events behind is dropped (it sees `dropped`
and ends) instead of slowing the run or the others.

Example:
    ```python
    import asyncio

    from helikon.server.run_log import RunLog

    async def main() -> None:
        log = RunLog()
        log.append("run_started", b'{"type":"run_started"}')
        sub = log.subscribe(after=-1)
        log.append("run_completed", b'{"type":"run_completed"}')
        log.close()
        assert [entry.seq async for entry in sub] == [0, 1]

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One logged event: its place in the run, its type and its JSON."""

    seq: int
    type: str
    data: bytes


class Subscription:
    """The events after a seq, as an async iterator; ends when the run's log closes (or on `dropped`)."""

    __slots__ = ("_limit", "_live", "_log", "_replay", "_wake", "dropped", "idle")

    def __init__(self, log: RunLog, replay: list[LogEntry], limit: int, idle: float | None = None) -> None:
        self.idle = idle
        """Seconds to wait for an event before iteration raises `TimeoutError` (None: for ever)."""
        self._log = log
        self._replay = replay
        self._live: deque[LogEntry] = deque()
        self._limit = limit
        self._wake = asyncio.Event()
        self.dropped = False
        """True once this subscriber fell `limit` live events behind and was let go."""

    def _offer(self, entry: LogEntry) -> None:
        if len(self._live) >= self._limit:
            self.dropped = True
            self._live.clear()
            self._log._detach(self)
        else:
            self._live.append(entry)
        self._wake.set()

    def _closed(self) -> None:
        self._wake.set()

    def take(self) -> list[LogEntry]:
        """The entries ready now, in order (the replay first), without waiting; [] when none is."""
        ready, self._replay = self._replay, []
        if not self.dropped:
            ready.extend(self._live)
        self._live.clear()
        return ready

    @property
    def ended(self) -> bool:
        """True once nothing more will come: the log closed and everything was taken, or dropped."""
        return self.dropped or (self._log.closed and not self._live and not self._replay)

    async def wait(self, within: float | None = None) -> bool:
        """Wait until an entry is ready or the subscription ends (True), or `within` seconds pass (False)."""
        if self._replay or self._live or self.ended:
            return True
        self._wake.clear()
        if within is None:
            await self._wake.wait()
            return True
        try:  # a timer only while waiting: an entry at hand costs none
            async with asyncio.timeout(within):
                await self._wake.wait()
        except TimeoutError:
            return False
        return True

    def __aiter__(self) -> AsyncIterator[LogEntry]:
        return self._entries()

    async def _entries(self) -> AsyncIterator[LogEntry]:
        try:
            while True:
                for entry in self.take():
                    yield entry
                if self.ended:
                    return
                if not await self.wait(self.idle):
                    raise TimeoutError(f"no event for {self.idle} s")
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Stop receiving (the client went away)."""
        self._log._detach(self)


class Tally:
    """How many subscribers all the logs sharing it have: what a server-wide cap reads."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class RunLog:
    """A run's events in order, for replay and live subscribers (see the module)."""

    __slots__ = ("_entries", "_subscribers", "_tally", "closed")

    def __init__(self, tally: Tally | None = None) -> None:
        self._entries: list[LogEntry] = []
        self._subscribers: set[Subscription] = set()
        self._tally = tally if tally is not None else Tally()
        self.closed = False
        """True once the run ended: no event will follow."""

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def subscribers(self) -> int:
        """How many subscribers are attached now."""
        return len(self._subscribers)

    def append(self, type: str, data: bytes) -> LogEntry:
        """Log one event and offer it to every subscriber (never waits)."""
        entry = LogEntry(len(self._entries), type, data)
        self._entries.append(entry)
        for subscriber in tuple(self._subscribers):
            subscriber._offer(entry)
        return entry

    def close(self) -> None:
        """The run ended: subscribers drain what they have, then stop."""
        self.closed = True
        for subscriber in tuple(self._subscribers):
            subscriber._closed()
        self._tally.count -= len(self._subscribers)
        self._subscribers.clear()

    def reopen(self) -> None:
        """A paused run resumes: its log goes on from where it stopped."""
        self.closed = False

    def _detach(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)
            self._tally.count -= 1

    def entries(self, after: int = -1) -> list[LogEntry]:
        """The events logged after seq `after`."""
        return self._entries[max(after + 1, 0) :]

    def subscribe(self, after: int = -1, *, limit: int = 1024, idle: float | None = None) -> Subscription:
        """The events after seq `after`: the logged ones, then the live ones until the log closes.

        With `idle`, waiting longer than that for the next event raises `TimeoutError`.
        """
        subscription = Subscription(self, self.entries(after), max(limit, 1), idle)
        if not self.closed:
            self._subscribers.add(subscription)
            self._tally.count += 1
        return subscription


__all__ = ["LogEntry", "RunLog", "Subscription", "Tally"]
