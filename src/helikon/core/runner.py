"""The `Runner` protocol: the durability seam.

A runner drives an agent's run in a turn on its context's session: read before the run,
written during it. `helikon.runtime.AsyncioRunner` is the one helikon ships;
`agent.run(q, session=s)` uses the same session runner (`helikon.core.session.turn`) with
its defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from ._internal.peer_hints import RUNNER_RUN, RUNNER_RUN_STREAMED, PeerHints, protocol_stub

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RunConfig, RunContext
    from .input import RunInput
    from .result import RunResult, RunStream

Ctx = TypeVar("Ctx")
T = TypeVar("T")


@runtime_checkable
class Runner(Protocol[Ctx], metaclass=PeerHints):
    """Drives an agent to a result, owning what a bare `agent.run` does not.

    A runner loads the session before the run, records and persists the run's events,
    and enforces `RunConfig.timeout`. `helikon.runtime.AsyncioRunner` is the default.
    """

    @protocol_stub(RUNNER_RUN_STREAMED)
    def run_streamed(
        self, agent: Agent[Ctx, T], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunStream[T]:
        """Start a run and stream its events."""
        ...

    @protocol_stub(RUNNER_RUN)
    async def run(
        self, agent: Agent[Ctx, T], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunResult[T]:
        """Run to completion (raises `RunError` if the run fails); `final_output` as `agent.run` gives it."""
        ...


__all__ = ["Runner"]
