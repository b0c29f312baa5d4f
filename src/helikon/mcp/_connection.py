"""One live MCP session, held open by one background task.

The SDK's transports and `ClientSession` are anyio context managers that must be entered
and exited by the same task. A `Connection` enters them in a task of its own and parks
it until `close()` (from any task) or the transport ends, so the handle that owns it can
be used and closed from anywhere on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from helikon.core._internal.extras import missing_extra

from .errors import Connect, McpError

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

__all__ = ["Connection", "TransportFactory", "client_session", "describe"]

TransportFactory = Callable[[], AbstractAsyncContextManager[Any]]
"""A callable returning an async context manager that yields the SDK's (read, write[, ...]) streams."""

# How long `close()` waits for a live session's holder task to wind down (the stdio shutdown is
# bounded by its own timeouts, a few seconds at worst) before it cancels it.
_CLOSE_WAIT = 10.0


class Connection:
    """A `ClientSession` after `initialize`, alive until `close()` or its transport ends."""

    __slots__ = ("_closing", "_ready", "_task", "closed", "initialize_result", "session")

    def __init__(self) -> None:
        self.session: Any = None
        self.initialize_result: Any = None
        self.closed = False  # the transport ended, or close() was called
        self._closing = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # `handshake()` may have stopped waiting (a timeout): its failure is retrieved here, not logged.
        self._ready.add_done_callback(_retrieve)
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def start(cls, factory: TransportFactory, session_options: dict[str, Any], label: str) -> Connection:
        """Start the transport and `initialize` in a task of their own; `handshake()` waits for them."""
        connection = cls()
        connection._task = asyncio.create_task(
            connection._hold(factory, session_options), name=f"mcp {label}"
        )
        return connection

    async def handshake(self, wait: float | None, label: str) -> None:
        """Wait for `initialize`; `McpError.Connect` (or `.Spawn`) if it fails, times out or is closed."""
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), wait)
        except TimeoutError:
            await self.close()
            raise Connect(f"{label}: no answer to `initialize` within {wait:g}s") from None
        except Exception as exc:
            closed_here = self._closing.is_set()
            await self.close()
            if closed_here:
                raise Connect(f"{label}: closed during the `initialize` handshake") from None
            leaf = _leaf(exc)
            if isinstance(leaf, McpError):
                raise leaf from None
            hint = (
                " (the server closed the connection: did it exit? its stderr says why)"
                if "Connection closed" in str(leaf)
                else ""
            )
            raise Connect(f"{label}: the MCP handshake failed: {describe(leaf)}{hint}") from exc
        except BaseException:
            await self.close()
            raise

    async def _hold(self, factory: TransportFactory, session_options: dict[str, Any]) -> None:
        try:
            async with factory() as streams:
                read_stream, write_stream = streams[0], streams[1]
                async with client_session()(read_stream, write_stream, **session_options) as session:
                    self.initialize_result = await session.initialize()
                    self.session = session
                    self._ready.set_result(None)
                    await self._closing.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(
                    exc if isinstance(exc, Exception) else Connect("the connection was cancelled")
                )
            if not isinstance(exc, Exception):
                raise
        finally:
            self.closed = True
            if not self._ready.done():
                self._ready.set_exception(Connect("the transport closed before the handshake finished"))

    def mark_dropped(self) -> None:
        """The transport is gone (a request saw the connection close): wind the holder down."""
        self.closed = True
        self._closing.set()

    async def close(self) -> None:
        """End the session and its transport (a stdio child is stopped); safe to call twice.

        A live session winds down gracefully (for up to `_CLOSE_WAIT`); a handshake still in
        progress is cancelled at once: the server has not answered, so there is no session to
        end, and a hung one would only make the caller wait longer than the timeout it set.
        """
        self.closed = True
        self._closing.set()
        task = self._task
        if task is None or task.done():
            return
        if task is asyncio.current_task():
            return
        if self._ready.done():
            done, _ = await asyncio.wait({task}, timeout=_CLOSE_WAIT)
            if done:
                return
        task.cancel()
        # The transport's own shutdown is bounded (and shielded): wait for it, not for the server.
        await asyncio.wait({task})

    def on_this_loop(self) -> bool:
        """Whether the running event loop is the one this connection lives on."""
        task = self._task
        return task is not None and task.get_loop() is asyncio.get_running_loop()

    def loop_running(self) -> bool:
        """Whether the loop this connection lives on still runs (it can still close gracefully)."""
        task = self._task
        if task is None:
            return False
        loop = task.get_loop()
        return not loop.is_closed() and loop.is_running()

    def abandon(self) -> None:
        """Close without waiting (from a finalizer: any thread, possibly with the loop gone)."""
        task = self._task
        if task is None or task.done():
            return
        loop = task.get_loop()
        if loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._closing.set)


def client_session() -> type[ClientSession]:
    """The SDK's `ClientSession` (mcp_types, anyio and httpx2 come with it), or what to install.

    Imported on the first connect, before its timeout starts: it takes a second or more, which
    `import helikon.mcp` does not pay.
    """
    try:
        from mcp.client.session import ClientSession
    except ImportError as exc:
        raise missing_extra("connecting to an MCP server needs the official MCP SDK", "mcp") from exc
    return ClientSession


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup):
        group: BaseExceptionGroup[BaseException] = exc  # pyright: ignore[reportUnknownVariableType]
        exc = group.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """An exception as one readable line, looking inside exception groups."""
    exc = _leaf(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
