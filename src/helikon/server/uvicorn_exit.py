"""`StoppingServer`: a uvicorn server that says when it is asked to stop, before it waits for open responses.

On SIGINT or SIGTERM uvicorn stops accepting connections, then waits for every response
in progress to end. An SSE stream, or a one-shot request waiting for its run, ends when its
run does: a server with a run still going (a tool that hangs, a slow model) would wait for
that run. `on_exit` is told first, so the server can cancel its runs: their turns are
written, their streams end with their terminal events, and uvicorn goes on stopping.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FrameType

import uvicorn


class StoppingServer(uvicorn.Server):
    """`uvicorn.Server` that calls `on_exit` once, on the first request to stop (see the module)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], object]) -> None:
        super().__init__(config)
        self._on_exit: Callable[[], object] | None = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The signal handler: stop as uvicorn does, and tell `on_exit` (the first time)."""
        super().handle_exit(sig, frame)
        self.stopping()

    def stopping(self) -> None:
        """Tell `on_exit` that the server stops (once); for a stop that comes without a signal."""
        on_exit, self._on_exit = self._on_exit, None
        if on_exit is not None:
            on_exit()


__all__ = ["StoppingServer"]
