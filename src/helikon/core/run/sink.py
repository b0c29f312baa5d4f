"""Event sinks: where a run's driver writes its events, one at a time, in order.

The driver is one coroutine that writes each event to a sink (`await sink.put(event)`). What
the sink is decides how the run is read, with no second loop:

- `Collected` keeps the events in a list: what `await agent.run(...)` and `run_sync` read.
- `streamed(drive)` turns the driver into the async iterator `async for` reads: its sink
  suspends the driver at each event and hands the event to the reader, so the reader's code
  runs between two events exactly as it would between two `yield`s of an async generator
  (and a cancel made there is seen when the driver resumes).
- Filters (a session recording the run, a handoff forwarding its target's events) are sinks
  that pass the events on to another sink.

Why `streamed` drives the coroutine by hand rather than through a queue and a second task:
the run stays in the reader's task (its context variables, its cancellation), and each event
costs one suspension, not a task switch.
"""

from __future__ import annotations

import types
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from ..agent import Agent
    from ..context import RunConfig, RunContext
    from ..events import AgentEvent
    from ..input import AgentInput


class EventSink(Protocol):
    """Where a run's events go: `put` each one, in order, and await it before going on."""

    def put(self, event: AgentEvent) -> Awaitable[None]:
        """Take `event`; the driver resumes once this returns (a streamed reader has handled it)."""
        ...


Drive = Callable[[EventSink], Coroutine[Any, Any, None]]
"""A run waiting to be driven: called with a sink, it writes the run's events to it."""


class Collected:
    """A sink that keeps every event, for a caller that wants the result, not the stream."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def put(self, event: AgentEvent) -> None:
        """Keep `event`."""
        self.events.append(event)


class _Done:
    """An awaitable that is already done: what a filter's `put` gives for an event it drops."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield


DONE = _Done()


@types.coroutine
def _emit(event: AgentEvent) -> Generator[Any, None, None]:
    """Suspend the driver, handing `event` to the reader.

    It goes up as a 1-tuple: what the driver hands the event loop (futures, bare yields) is
    never a tuple, so `streamed` tells the two apart by type alone.
    """
    yield (event,)


class _Streamed:
    """The sink of a streamed run (see `streamed`): its `put` suspends the driver at each event."""

    __slots__ = ()

    put = staticmethod(_emit)


_STREAMED = _Streamed()
_ENDED = object()


@types.coroutine
def _through_the_loop(driver: Coroutine[Any, Any, None], waiting: Any) -> Generator[Any, Any, Any]:
    """Pass what `driver` waits on (`waiting`) to the event loop, then run it to its next event.

    Returns that event (in the 1-tuple `_emit` yields), or `_ENDED`. What the driver awaits (futures, bare
    yields) goes to the loop as it would from the reader's own code, and what the loop sends
    or throws back (a cancel of the reader's task) goes to the driver.
    """
    out: Any = waiting
    while True:
        try:
            value, error = (yield out), None
        except BaseException as exc:  # a cancel of the reader's task: the driver's to handle
            value, error = None, exc
        try:
            out = driver.send(value) if error is None else driver.throw(error)
        except StopIteration:
            return _ENDED
        if type(out) is tuple:
            return cast("tuple[AgentEvent]", out)


@types.coroutine
def _close(driver: Coroutine[Any, Any, None]) -> Generator[Any, Any, None]:
    """Close `driver` as `aclose` closes an async generator: its cleanup may await, not emit.

    An event it emits meanwhile (nothing reads it any more) is dropped.
    """
    value: Any = None
    error: BaseException | None = GeneratorExit()
    while True:
        try:
            out = driver.send(value) if error is None else driver.throw(error)
        except (StopIteration, GeneratorExit):
            return
        if type(out) is tuple:
            value, error = None, None
            continue
        try:
            value, error = (yield out), None
        except BaseException as exc:
            value, error = None, exc


async def streamed(drive: Drive) -> AsyncGenerator[AgentEvent]:
    """The events `drive` writes, as an async iterator: each handed over as it is written.

    An async generator, so that a reader who leaves early (`break`, an exception) has the
    run closed as any abandoned async generator is: its cleanup runs (a session stores what
    there is).
    """
    driver = drive(_STREAMED)
    ended = False  # the driver finished: nothing to close
    try:
        while True:
            try:
                out = driver.send(None)  # the driver runs in this frame until it emits or waits
            except StopIteration:
                ended = True
                return
            except BaseException:
                ended = True  # the driver raised: it is finished
                raise
            if type(out) is not tuple:
                try:
                    out = await _through_the_loop(driver, out)
                except BaseException:
                    ended = True
                    raise
            if out is _ENDED:
                ended = True
                return
            yield out[0]
    finally:
        if not ended:
            await _close(driver)


async def forward(events: AsyncIterator[AgentEvent], sink: EventSink) -> None:
    """Write every event of `events` to `sink`: a run that only has a stream (a custom `Agent`)."""
    try:
        async for event in events:
            await sink.put(event)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def drive_agent(
    agent: Agent[Any], input: AgentInput, ctx: RunContext[Any], config: RunConfig | None, sink: EventSink
) -> Coroutine[Any, Any, None]:
    """Run `agent` on `input`, its events written to `sink`: how one run drives another.

    helikon's agents write to the sink directly (`drive`); any other `Agent` is run through
    its `run` and its stream forwarded.
    """
    own: object = getattr(agent, "drive", None)
    if callable(own):
        return cast("Coroutine[Any, Any, None]", own(input, ctx, config, sink))
    return forward(agent.run(input, context=ctx, config=config).__aiter__(), sink)


__all__ = ["DONE", "Collected", "Drive", "EventSink", "drive_agent", "forward", "streamed"]
