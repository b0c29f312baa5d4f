"""`Fanout`: children running concurrently as asyncio tasks, their events merged into one stream.

`Fanout.run` is the loop `ParallelAgent` and `GraphAgent` share. Each child runs in its own
task (a "pump") that folds the child's outcome into its `ChildRun` and appends the events
to forward to one queue; `run` reads the queue, so events arrive in the order they happened.
The queue is a deque with a single waiter: cheaper than `asyncio.Queue` on this hot path, and
only one reader ever waits.

What the children report to the run's observer (`RunObserver`: a runner recording the
run) is queued with their events and delivered as the reader reaches it, so the observer
hears of a child's request, tool starts or tool results right after that child's earlier events, as in
a run that streams them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from .._internal.callbacks import CallbackRaised
from ..context import RunConfig, RunContext
from ..events import AgentEvent, AgentUpdated, RequestSent, RunFailed, TokenUsage, ToolOutputItem
from ..input import AgentInput
from ..observer import RunObserver
from ._merge import ChildRun, cancelled, hook_failed, subagent_stopped

Starts = Sequence[tuple[ChildRun, AgentInput]]
"""Children to start, each with its input."""


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
    """The running children of one workflow run (`kind` `name`, for its errors)."""

    __slots__ = (
        "_child_ctx",
        "_config",
        "_ctx",
        "_items",
        "_kind",
        "_name",
        "_remove",
        "_tasks",
        "_waiter",
        "cancelled",
        "ended",
        "running",
        "usage",
    )

    def __init__(self, kind: str, name: str, ctx: RunContext[Any], config: RunConfig | None) -> None:
        self._kind, self._name = kind, name
        self._ctx = ctx
        observer = ctx.observer
        self._child_ctx = ctx if observer is None else ctx.with_observer(_Relay(self, observer))
        self._config = config
        self._items: deque[AgentEvent | ChildRun | _Report] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.running: dict[int, ChildRun] = {}
        """The children started and not yet reported finished, by index."""
        self.cancelled = False
        self.usage = TokenUsage()
        """The children's usage, summed as each one finishes."""
        self.ended = False
        """Whether `run` ended the workflow's run (its last event was the run's `RunFailed`)."""
        # The outer token wakes the reader at once: the children's own tokens (children of
        # this one) stop cooperative children, and `close` tears down the rest.
        self._remove = ctx.cancel.add_callback(self._on_cancel)

    async def run(self, first: Starts, finished: Callable[[ChildRun], Starts]) -> AsyncGenerator[AgentEvent]:
        """The children's events as they happen: `first` start at once, then what `finished(run)` names.

        `finished` is called as each child ends, after its `on_subagent_stop` hooks. Each start
        is announced with `AgentUpdated`. A cancelled outer run, or a hook that raises, ends the
        workflow's run (`ended`, its `RunFailed` the last event). Every child still running is
        stopped when this ends, however it ends.
        """
        try:
            for run, input in first:
                yield AgentUpdated(agent=run.agent.name)
                self.start(run, input)
            while self.running:
                item = await self.next()
                if item is None:
                    self.ended = True
                    error = cancelled(self._kind, self._name, [r.key for r in self.running.values()])
                    yield RunFailed(error=error, usage=self.usage)
                    return
                if not isinstance(item, ChildRun):
                    yield item
                    continue
                self.usage = self.usage + item.usage
                try:
                    await subagent_stopped(self._ctx, item.agent.name)
                except CallbackRaised as exc:  # the others stop as this ends
                    self.ended = True
                    yield hook_failed(exc, self.usage)
                    return
                for run, input in finished(item):
                    yield AgentUpdated(agent=run.agent.name)
                    self.start(run, input)
        finally:
            await self.close()

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
        async for event in run.forwarded(input, self._child_ctx, self._config):
            items.append(event)
            self._wake()
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
