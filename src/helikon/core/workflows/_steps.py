"""`StepsAgent`: the ordered step list `SequentialAgent` and `LoopAgent` share, and one step's run."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Self, TypeVar

from ..agent import Agent
from ..context import RunConfig, RunContext
from ..events import AgentEvent, AgentUpdated
from ..input import AgentInput
from ._base import WorkflowAgent
from ._merge import ChildRun, aclose, check_agent, check_key, subagent_stopped

Ctx = TypeVar("Ctx")


class StepsAgent(WorkflowAgent[Ctx]):
    """A workflow over an ordered list of `(state key, agent)` steps."""

    __slots__ = ("steps",)

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


async def run_step(
    run: ChildRun, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
) -> AsyncGenerator[AgentEvent]:
    """`AgentUpdated`, then the step's forwarded events; on success its text lands in `state[key]`."""
    yield AgentUpdated(agent=run.agent.name)
    events: AsyncIterator[AgentEvent] | None = None
    try:
        events = run.start(input, ctx, config)
        async for event in events:
            if run.absorb(event):
                yield event
    except Exception as exc:
        run.crashed(exc)
    finally:
        # Close now if our consumer went away mid-step: the step's own cleanup runs at once.
        if events is not None:
            await aclose(events)
    run.settle()
    await subagent_stopped(ctx, run.agent.name)
    if run.error is None:
        ctx.state.set(run.key, run.text)
