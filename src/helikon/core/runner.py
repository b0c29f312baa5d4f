"""The `Runner` protocol: where a run executes (the durability seam)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RunConfig, RunContext
    from .input import RunInput
    from .result import RunResult, RunStream

Ctx = TypeVar("Ctx")


@runtime_checkable
class Runner(Protocol[Ctx]):
    """Drives an agent to a result, owning what a bare `agent.run` does not.

    A runner loads the session before the run, records and persists the run's events,
    and enforces `RunConfig.timeout`. `helikon.runtime.AsyncioRunner` is the default.
    """

    def run_streamed(
        self, agent: Agent[Ctx], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunStream:
        """Start a run and stream its events."""
        ...

    async def run(
        self, agent: Agent[Ctx], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunResult[str]:
        """Run to completion (raises `RunError` if the run fails)."""
        ...


__all__ = ["Runner"]
