"""`Health`: what `GET /ping` answers, and the API that keeps a container busy for background work.

AgentCore reaps a container whose `/ping` has said `Healthy` for its idle timeout, and keeps
one that says `HealthyBusy`. It reads `time_of_last_update` as *when the status last
changed*, so the stamp is set at start and moved **only when the status changes**:

- omitting it (or stamping at start only and never again) gets a container that turned
  busy reaped mid-turn, as if it had been idle all along;
- re-stamping it on every ping makes an idle container look fresh for ever, so sessions
  are never reaped and their containers leak.

The status is `HealthyBusy` while any invocation, stream or WebSocket turn is open, any
run is still going (also one whose client left: it is finishing its turn), and any
background work is registered with `busy()` or `spawn()`. `force()` pins a status (e.g. a
drain before a deploy). A ping reads one tuple, with no lock and no await, on the HTTP
loop, which never runs agent code (see `WorkerLoop`).

Example:
    ```python
    import asyncio

    from helikon.agentcore import Health

    async def main() -> None:
        health = Health()
        assert health.ping()["status"] == "Healthy"
        with health.busy():  # e.g. re-indexing after an invocation returned
            assert health.ping()["status"] == "HealthyBusy"
        task = health.spawn(asyncio.sleep(0.01))  # a tracked background task
        assert health.ping()["status"] == "HealthyBusy"
        await task
        assert health.ping()["status"] == "Healthy"

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Generator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any, TypeVar

T = TypeVar("T")


class PingStatus(StrEnum):
    """The two statuses AgentCore reads from `/ping`."""

    HEALTHY = "Healthy"
    HEALTHY_BUSY = "HealthyBusy"


class Health:
    """The container's ping status: busy while work is open; the stamp moves only on a change."""

    __slots__ = ("_clock", "_forced", "_lock", "_open", "_state")

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()  # writers only: runs and requests live on two threads
        self._open = 0
        self._forced: PingStatus | None = None
        self._state = (PingStatus.HEALTHY, int(clock()))
        """(status, when it last changed): replaced whole, so a ping reads it without the lock."""

    def ping(self) -> dict[str, Any]:
        """The body of `GET /ping`."""
        status, stamp = self._state
        return {"status": status.value, "time_of_last_update": stamp}

    @property
    def status(self) -> PingStatus:
        """The status now."""
        return self._state[0]

    @property
    def open(self) -> int:
        """How many pieces of work keep the container busy now."""
        return self._open

    def enter(self) -> None:
        """One more piece of work is open (pair with `leave`; `busy()` does both)."""
        with self._lock:
            self._open += 1
            self._settle()

    def leave(self) -> None:
        """A piece of work `enter` opened has ended."""
        with self._lock:
            self._open = max(self._open - 1, 0)
            self._settle()

    @contextmanager
    def busy(self) -> Generator[None]:
        """`HealthyBusy` for the block (sync or async code): background work the container must live for."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def spawn(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run `work` as a task on the running loop, `HealthyBusy` until it ends (keep the task)."""
        task = asyncio.get_running_loop().create_task(work)
        self.track(task)
        return task

    def track(self, future: asyncio.Future[Any]) -> None:
        """`HealthyBusy` until `future` is done (a task started elsewhere)."""
        self.enter()
        future.add_done_callback(lambda _: self.leave())

    def force(self, status: PingStatus | str | None) -> None:
        """Answer `status` whatever the work (None: back to counting), e.g. to drain before a deploy."""
        with self._lock:
            self._forced = None if status is None else PingStatus(status)
            self._settle()

    def _settle(self) -> None:
        """Set the status the work calls for; a change, and only a change, moves the stamp."""
        if self._forced is not None:
            status = self._forced
        else:
            status = PingStatus.HEALTHY_BUSY if self._open else PingStatus.HEALTHY
        if status is not self._state[0]:
            self._state = (status, int(self._clock()))


__all__ = ["Health", "PingStatus"]
