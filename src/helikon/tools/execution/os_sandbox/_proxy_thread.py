"""An `EgressProxy` on an event loop of its own, in a daemon thread, for a backend to own.

A backend is used from whatever loop calls it (`run_sync` makes one per thread), so the
proxy that serves its commands cannot live on any of them: it gets a loop and a thread of
its own, started with the backend and stopped by its `close()`.
"""

from __future__ import annotations

import asyncio
import socket
import threading

from helikon.tools.egress.policy import EgressPolicy
from helikon.tools.egress.proxy import EgressProxy

_WAIT = 10.0


class ProxyThread:
    """Serve `policy` on `listener` until `close()`."""

    __slots__ = ("_loop", "_thread", "proxy")

    def __init__(self, policy: EgressPolicy, listener: socket.socket) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="helikon-egress-proxy", daemon=True
        )
        self._thread.start()
        self.proxy = EgressProxy(policy, sock=listener)
        try:
            asyncio.run_coroutine_threadsafe(self.proxy.start(), self._loop).result(_WAIT)
        except BaseException:
            listener.close()
            self._stop()
            raise

    def close(self) -> None:
        """Close every tunnel, stop listening, stop the thread (idempotent)."""
        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self.proxy.close(), self._loop).result(_WAIT)
        self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_WAIT)
        self._loop.close()
