"""`Fanout`: children running concurrently as asyncio tasks, their events merged into one stream.

Each child runs in its own task (a "pump") that folds the child's outcome into its
`ChildRun` and appends the events to forward to one queue; the workflow's generator
reads the queue, so events arrive in the order they happened. The queue is a deque
with a single waiter: cheaper than `asyncio.Queue` on this hot path, and only one
reader ever waits.

What the children report to the run's observer (`RunObserver`: a runner recording the
run) is queued with their events and delivered as the reader reaches it, so the observer
hears of a child's request, tool starts or tool results right after that child's earlier events, as in
a run that streams them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from ..context import RunConfig, RunContext
from ..events import AgentEvent, RequestSent, ToolOutputItem
from ..input import AgentInput
from ..observer import RunObserver
from ._merge import ChildRun, aclose


class _Report:
    """A child's report to the run's observer, waiting in the queue behind the child's events."""

    __slots__ = ("call_ids", "observer", "output", "sent")

    def __init__(
        self,
        observer: RunObserver,
        sent: RequestSent | None = None,
        call_ids: tuple[str, ...] = (),
        output: ToolOutputItem | None = None,
    ) -> None:
        self.observer = observer
        self.sent = sent
        self.call_ids = call_ids
        self.output = output

    async def deliver(self) -> None:
        if self.sent is not None:
            self.observer.request_sent(self.sent)
        elif self.output is not None:
            await self.observer.tool_returned(self.output)
        else:
            await self.observer.tools_starting(self.call_ids)


class _Relay:
    """The children's observer: queues their reports for the reader to deliver in order."""

    __slots__ = ("_fanout", "_observer")

    def __init__(self, fanout: Fanout, observer: RunObserver) -> None:
        self._fanout = fanout
        self._observer = observer

    def request_sent(self, sent: RequestSent) -> None:
        self._fanout.queue(_Report(self._observer, sent=sent))

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        # The child goes on: its calls are stored once the reader reaches this report.
        self._fanout.queue(_Report(self._observer, call_ids=call_ids))

    async def tool_returned(self, output: ToolOutputItem) -> None:
        self._fanout.queue(_Report(self._observer, output=output))


class Fanout:
    """The running children of one workflow run."""

    __slots__ = (
        "_config",
        "_ctx",
        "_items",
        "_remove",
        "_tasks",
        "_waiter",
        "cancelled",
        "running",
    )

    def __init__(self, ctx: RunContext[Any], config: RunConfig | None) -> None:
        observer = ctx.observer
        self._ctx = ctx if observer is None else ctx.with_observer(_Relay(self, observer))
        self._config = config
        self._items: deque[AgentEvent | ChildRun | _Report] = deque()
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

    def queue(self, report: _Report) -> None:
        """Queue a child's report to the observer behind the events it streamed before."""
        self._items.append(report)
        self._wake()

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
        """The next event to forward, a finished `ChildRun`, or None once the outer run is cancelled.

        The children's reports to the observer on the way are delivered.
        """
        items = self._items
        while True:
            while not items:
                if self.cancelled:
                    return None
                self._waiter = asyncio.get_running_loop().create_future()
                await self._waiter
                self._waiter = None
            if self.cancelled:
                return None
            item = items.popleft()
            if isinstance(item, _Report):
                await item.deliver()
                continue
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
