"""`run_sync`: one run to completion from synchronous code, shared by every agent's `run_sync`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .exceptions import UserError

if TYPE_CHECKING:
    from .result import RunResult, RunStream


def run_sync(start: Callable[[], RunStream]) -> RunResult[str]:
    """Start the run `start` returns on a new event loop and collect it.

    Inside a running loop `asyncio.run` cannot work, so that is a `UserError` raised before
    the run is started (nothing is left half-begun).
    """
    import asyncio  # here, not at the top: `import helikon` stays cheap (~25 ms of asyncio)

    try:
        asyncio.get_running_loop()  # a running loop means we were called from async code
    except RuntimeError:
        pass
    else:
        raise UserError(
            "run_sync() was called inside a running event loop; use `await agent.run(...)` instead"
        )
    return asyncio.run(start().collect())
