"""`ServerRunner`: what the agent server runs its agents with.

The server starts a run with `run_streamed` and goes on with a paused one with
`resume_streamed`, passing its own run id as `run_key` (the turn's run id begins with it, so
the session's log names the server's run). `helikon.runtime.AsyncioRunner` (the default) runs
them in the server's process; `helikon.temporal.TemporalRunner` as durable Temporal workflows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..core.agent import Agent
    from ..core.approvals import Approver, Decision
    from ..core.context import RunConfig, RunContext
    from ..core.input import RunInput
    from ..core.result import RunStream


class ServerRunner(Protocol):
    """Starts and resumes the server's runs, each one's events as a stream."""

    def run_streamed(
        self,
        agent: Agent[Any, Any],
        input: RunInput,
        context: RunContext[Any],
        config: RunConfig | None = None,
        *,
        run_key: str | None = None,
    ) -> RunStream[Any]:
        """Start a run of `agent` on `input`, its turn's run id beginning with `run_key`."""
        ...

    def resume_streamed(
        self,
        agent: Agent[Any, Any],
        context: RunContext[Any],
        decisions: Mapping[str, Decision] | None = None,
        *,
        deny_rest: bool = False,
        by: Approver = None,
        config: RunConfig | None = None,
        run_key: str | None = None,
    ) -> RunStream[Any]:
        """Decide the paused run on `context.session`, and go on with it once all is decided."""
        ...


__all__ = ["ServerRunner"]
