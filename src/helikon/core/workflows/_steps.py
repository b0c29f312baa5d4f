"""`StepsAgent`: the ordered step list `SequentialAgent` and `LoopAgent` share, and the loop that runs it."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, Self, TypeVar

from .._internal.callbacks import CallbackRaised
from ..agent import Agent
from ..context import RunConfig, RunContext
from ..events import AgentEvent, AgentUpdated, RunCompleted, RunFailed, RunStarted, TokenUsage
from ..input import AgentInput
from ._base import WorkflowAgent
from ._merge import (
    DEFAULT_CONFIG,
    ChildRun,
    check_agent,
    check_key,
    failed_child,
    hook_failed,
    preflight,
    subagent_stopped,
)

Ctx = TypeVar("Ctx")


class StepsAgent(WorkflowAgent[Ctx]):
    """A workflow over an ordered list of `(state key, agent)` steps, run in passes.

    The first failure ends the run. A subclass says how many passes (`_passes`), whether a
    step's escalation ends the run with success (`_escalates`), and how a run that ran every
    pass ends (`_exhausted`).
    """

    __slots__ = ("steps",)

    _escalates = False
    """Whether a tool's `ctx.actions.escalate()` ends the run once its step finishes."""

    def __init__(self, name: str, description: str = "") -> None:
        super().__init__(name, description)
        self.steps: list[tuple[str, Agent[Ctx]]] = []
        """The `(state key, agent)` steps, in order."""

    def then(self, agent: Agent[Ctx]) -> Self:
        """Append a step whose final text goes to `state[agent.name]`."""
        agent = check_agent(f"{self._kind}({self.name!r}).then", agent)
        self.steps.append((agent.name, agent))
        return self

    def then_keyed(self, key: str, agent: Agent[Ctx]) -> Self:
        """Append a step whose final text goes to `state[key]` (for steps that share a name)."""
        where = f"{self._kind}({self.name!r}).then_keyed"
        self.steps.append((check_key(where, key), check_agent(where, agent)))
        return self

    def _passes(self) -> int:
        """How many times the steps run, each time in order."""
        return 1

    def _exhausted(self, usage: TokenUsage) -> RunCompleted | RunFailed:
        """The terminal event of a run that ran every pass."""
        return RunCompleted(usage=usage)

    async def _events(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        yield RunStarted(agent=self.name)
        error = preflight(self._kind, self.name, ctx, config or DEFAULT_CONFIG, empty=not self.steps)
        if error is not None:
            yield RunFailed(error=error)
            return
        # `ctx.child()` shares the actions handle, so an escalation from any depth below
        # (a tool of a step, or of a step's own sub-agent) lands here.
        actions = ctx.actions if self._escalates else None
        total = TokenUsage()
        for _ in range(self._passes()):
            for key, agent in self.steps:
                if actions is not None:
                    actions.reset()
                run = ChildRun(agent, key)
                step = run_step(run, input, ctx, config)
                try:
                    async for event in step:
                        yield event
                except CallbackRaised as exc:  # its on_subagent_stop hook raised
                    yield hook_failed(exc, total + run.usage)
                    return
                finally:
                    await step.aclose()
                total = total + run.usage
                if run.error is not None:
                    yield RunFailed(error=failed_child(self._kind, self.name, "step", run), usage=total)
                    return
                if actions is not None and actions.escalated:
                    actions.reset()  # consumed here: only the innermost enclosing loop stops
                    yield RunCompleted(usage=total)
                    return
        yield self._exhausted(total)


async def run_step(
    run: ChildRun, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
) -> AsyncGenerator[AgentEvent]:
    """`AgentUpdated`, then the step's forwarded events; on success its text lands in `state[key]`."""
    yield AgentUpdated(agent=run.agent.name)
    # Closed at once if our consumer goes away mid-step: the step's own cleanup runs then.
    async with aclosing(run.forwarded(input, ctx, config)) as events:
        async for event in events:
            yield event
    await subagent_stopped(ctx, run.agent.name)
    if run.error is None:
        ctx.state.set(run.key, run.text)
