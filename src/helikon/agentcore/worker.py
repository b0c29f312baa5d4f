"""`WorkerLoop`: the agent's runs on an event loop of their own, in a thread of their own.

uvicorn's loop answers `/ping` and moves bytes; the runs, their sessions and their tools
live on this loop. A run that hogs its loop (a tool calling `time.sleep`, a long CPU step)
then slows other runs, never the health check AgentCore decides a container's life by,
since the two loops share no queue and no lock.

Example:
    ```python
    import asyncio

    from helikon.agentcore.worker import WorkerLoop

    async def numbers():
        for n in range(3):
            yield n

    async def main() -> None:
        worker = WorkerLoop()
        worker.start()
        try:
            assert await worker.call(asyncio.sleep(0, "done")) == "done"
            assert [n async for n in worker.stream(numbers)] == [0, 1, 2]
        finally:
            worker.stop()

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_END = object()


class WorkerLoop:
    """An asyncio loop in a daemon thread; `call` and `stream` reach it from another loop."""

    def __init__(self, name: str = "helikon-agentcore-runs") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        """Whether the loop runs (between `start` and `stop`)."""
        return self._thread is not None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The worker's loop (`start` first)."""
        if self._loop is None:
            raise RuntimeError("the worker loop is not started: call start() first")
        return self._loop

    def start(self) -> None:
        """Start the thread and its loop; returns once the loop runs (idempotent)."""
        if self._thread is not None:
            return
        ready = threading.Event()
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()

    def submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `work` on the worker loop from any thread; its future."""
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    async def call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the worker loop and await its result from the calling loop.

        Cancelling the caller cancels `work` too; shield what must finish.
        """
        return await asyncio.wrap_future(self.submit(work))

    async def stream(self, source: Callable[[], AsyncIterable[T]]) -> AsyncIterator[T]:
        """Iterate `source()` on the worker loop, its items handed to the calling loop in order.

        Leaving the iteration early cancels the worker side's iteration (not what feeds it).
        """
        here = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue()

        def hand(item: tuple[bool, Any]) -> None:
            if not here.is_closed():
                here.call_soon_threadsafe(queue.put_nowait, item)

        async def pump() -> None:
            try:
                async for item in source():
                    hand((True, item))
            except asyncio.CancelledError:
                raise  # the consumer left: no one reads the queue any more
            except BaseException as exc:
                hand((False, exc))
                return
            hand((False, _END))

        future = self.submit(pump())
        try:
            while True:
                ok, value = await queue.get()
                if ok:
                    yield value
                elif value is _END:
                    return
                else:
                    raise value
        finally:
            future.cancel()

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel what is left on the loop, stop it and join the thread."""
        if self._thread is None or self._loop is None:
            return
        loop = self._loop

        async def wind_down() -> None:
            tasks = [task for task in asyncio.all_tasks(loop) if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(wind_down(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            loop.close()
        self._thread = None
        self._loop = None


__all__ = ["WorkerLoop"]
