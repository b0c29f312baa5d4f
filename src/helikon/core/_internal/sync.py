"""`run_sync`: runs to completion from synchronous code, on one event loop per thread.

Each thread that calls `run_sync` gets an event loop of its own, made on its first call and
kept for the next ones (pydantic-ai and openai-agents do the same). That is what lets a
session opened lazily by the first synchronous run (`open_session(...)` used with
`agent.run_sync(q, session=s)`) serve the second: database pools and connections belong to
the loop they were made on. Tasks a run leaves behind are cancelled when it returns, as
`asyncio.run` would; the loop is closed when its thread ends.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from ..exceptions import UserError

if TYPE_CHECKING:
    import asyncio

    from ..result import RunResult, RunStream

T = TypeVar("T")


class _ThreadLoop:
    """The thread's loop; closed when the thread ends (its thread-local storage is dropped)."""

    __slots__ = ("loop", "pid")

    def __init__(self) -> None:
        import asyncio  # here, not at the top: `import helikon` stays cheap (~25 ms of asyncio)

        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()

    def __del__(self) -> None:
        # A child forked from another thread drops this thread's storage too (Python runs in
        # it when a `preexec_fn` is given). Closing the loop there would unregister its
        # descriptors from the epoll instance it shares with this process, and this
        # process's loop would never wake again: only the process that made it closes it.
        if os.getpid() == self.pid and not self.loop.is_closed() and not self.loop.is_running():
            self.loop.close()


_local = threading.local()


def sync_loop() -> asyncio.AbstractEventLoop:
    """This thread's `run_sync` loop (made on first use)."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _local.holder = _ThreadLoop()
    return holder.loop


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on this thread's loop, from synchronous code.

    Inside a running loop that cannot work, so that is a `UserError` (the coroutine is
    closed unstarted: nothing is left half-begun).
    """
    import asyncio

    try:
        asyncio.get_running_loop()  # a running loop means we were called from async code
    except RuntimeError:
        pass
    else:
        coro.close()
        raise UserError(
            "run_sync() was called inside a running event loop; use `await agent.run(...)` instead"
        )
    loop = sync_loop()
    before = asyncio.all_tasks(loop)
    try:
        return loop.run_until_complete(coro)
    finally:
        _cancel_leftovers(loop, asyncio.all_tasks(loop) - before)


def _cancel_leftovers(loop: asyncio.AbstractEventLoop, tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel the tasks the call started and left running, and let them finish (as `asyncio.run`)."""
    import asyncio

    pending = [task for task in tasks if not task.done()]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def run_sync(start: Callable[[], RunStream[T]]) -> RunResult[T]:
    """Start the run `start` returns on this thread's loop and collect it."""

    async def collect() -> RunResult[T]:
        return await start().collect()

    return run_coroutine(collect())


__all__ = ["run_coroutine", "run_sync", "sync_loop"]
