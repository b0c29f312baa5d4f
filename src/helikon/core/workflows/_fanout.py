"""`Fanout`: children running concurrently as asyncio tasks, their events merged into one stream.

Each child runs in its own task (a "pump") that folds the child's outcome into its
`ChildRun` and appends the events to forward to one queue; the workflow's generator
reads the queue, so events arrive in the order they happened. The queue is a deque
with a single waiter: cheaper than `asyncio.Queue` on this hot path, and only one
reader ever waits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from ..context import RunConfig, RunContext
from ..events import AgentEvent
from ..input import AgentInput
from ._merge import ChildRun, aclose


class Fanout:
    """The running children of one workflow run."""

    __slots__ = ("_config", "_ctx", "_items", "_remove", "_tasks", "_waiter", "cancelled", "running")

    def __init__(self, ctx: RunContext[Any], config: RunConfig | None) -> None:
        self._ctx = ctx
        self._config = config
        self._items: deque[AgentEvent | ChildRun] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.running: dict[int, ChildRun] = {}
        """The children started and not yet reported finished, by index."""
        self.cancelled = False
        # The outer token wakes the reader at once: the children's own tokens (children of
        # this one) stop cooperative children, and `close` tears down the rest.
        self._remove = ctx.cancel.add_callback(self._on_cancel)

    def _on_cancel(self) -> None:
        self.cancelled = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def start(self, run: ChildRun, input: AgentInput) -> None:
        """Run `run`'s child on `input` in a new task."""
        self.running[run.index] = run
        self._tasks.append(asyncio.get_running_loop().create_task(self._pump(run, input)))

    async def _pump(self, run: ChildRun, input: AgentInput) -> None:
        items = self._items
        events = None
        try:
            events = run.start(input, self._ctx, self._config)
            async for event in events:
                if run.absorb(event):
                    items.append(event)
                    self._wake()
        except Exception as exc:
            run.crashed(exc)
        finally:
            if events is not None:
                await aclose(events)
        run.settle()
        items.append(run)
        self._wake()

    async def next(self) -> AgentEvent | ChildRun | None:
        """The next event to forward, a finished `ChildRun`, or None once the outer run is cancelled."""
        items = self._items
        while not items:
            if self.cancelled:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None
        if self.cancelled:
            return None
        item = items.popleft()
        if type(item) is ChildRun:
            del self.running[item.index]
        return item

    async def close(self) -> None:
        """Stop listening to the token; cancel and await every child still running (no orphans)."""
        self._remove()
        pending = [t for t in self._tasks if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
