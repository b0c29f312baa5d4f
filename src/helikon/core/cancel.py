"""`CancellationToken`: cooperative cancellation shared by a run, its model and tool calls.

Example:
    ```python
    from helikon.core.cancel import CancellationToken

    token = CancellationToken()
    child = token.child_token()
    token.cancel("user pressed stop")
    assert child.is_cancelled() and child.reason == "user pressed stop"
    ```
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from .exceptions import UserError

if TYPE_CHECKING:
    import asyncio


class CancellationToken:
    """A one-way switch: once cancelled it stays cancelled, and so do its children.

    Call `cancel` from the event loop's thread (from another thread, use
    `loop.call_soon_threadsafe(token.cancel)`).
    """

    __slots__ = ("__weakref__", "_callbacks", "_cancelled", "_children", "_reason", "_waiters")

    def __init__(self) -> None:
        self._cancelled = False
        self._reason: str | None = None
        self._callbacks: list[Callable[[], None]] | None = None
        self._waiters: list[asyncio.Future[None]] | None = None
        self._children: weakref.WeakSet[CancellationToken] | None = None

    def __repr__(self) -> str:
        state = f"cancelled: {self._reason!r}" if self._cancelled else "active"
        return f"CancellationToken({state})"

    def __call__(self) -> NoReturn:
        """`ctx.cancel()`, called as a method: an error saying what to write instead.

        Not an alias (as `ctx.state()` is): a bare `ctx.cancel()` reads as "cancel the run",
        and must not silently do nothing.
        """
        raise UserError(
            "ctx.cancel is the run's CancellationToken (a property, no parentheses): "
            "ctx.cancel.cancel() cancels the run, ctx.cancel.is_cancelled() checks it"
        )

    def is_cancelled(self) -> bool:
        """Whether `cancel` has been called on this token or an ancestor."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The reason given to `cancel`, if any."""
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        """Cancel this token and every child. Later calls do nothing."""
        if self._cancelled:
            return
        self._cancelled = True
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, None
        waiters, self._waiters = self._waiters, None
        children, self._children = self._children, None
        # Run every callback, wake every waiter and cancel every child even if a callback
        # raises: a faulty callback must not leave a `wait()` hanging. The first error is
        # raised afterwards.
        first_error: Exception | None = None
        for callback in callbacks or ():
            try:
                callback()
            except Exception as exc:
                first_error = first_error or exc
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)
        for child in list(children or ()):
            try:
                child.cancel(reason)
            except Exception as exc:
                first_error = first_error or exc
        if first_error is not None:
            raise first_error

    async def wait(self) -> None:
        """Return once the token is cancelled."""
        if self._cancelled:
            return
        import asyncio  # here, not at import: `import helikon` stays free of asyncio

        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            waiters = self._pending()
            if waiter in waiters:
                waiters.remove(waiter)

    def _pending(self) -> list[asyncio.Future[None]]:
        return self._waiters or []

    def child_token(self) -> CancellationToken:
        """A token cancelled with this one, that can also be cancelled on its own."""
        child = CancellationToken()
        if self._cancelled:
            child.cancel(self._reason)
            return child
        if self._children is None:
            self._children = weakref.WeakSet()
        self._children.add(child)
        return child

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (synchronously, once) when the token is cancelled.

        Returns a function that removes the callback. If the token is already
        cancelled the callback runs at once.
        """
        if self._cancelled:
            callback()
            return _noop
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

        def remove() -> None:
            callbacks = self._callbacks
            if callbacks is not None and callback in callbacks:
                callbacks.remove(callback)

        return remove


def _noop() -> None:
    return None


async def cancelled_within(cancel: CancellationToken, seconds: float) -> bool:
    """Sleep `seconds`, returning early (True) if `cancel` fires first."""
    import asyncio  # here, not at the top: `import helikon` loads this module, not asyncio

    if seconds <= 0:
        return cancel.is_cancelled()
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait((waiter,), timeout=seconds)
    finally:
        waiter.cancel()
    return bool(done)


__all__ = ["CancellationToken", "cancelled_within"]
