"""`SequentialAgent`: sub-agents in order, each one's final text in `state[key]`, fail fast."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

from .._callbacks import CallbackRaised
from ..context import RunConfig, RunContext
from ..events import AgentEvent, RunCompleted, RunFailed, RunStarted, TokenUsage
from ..input import AgentInput
from ._merge import DEFAULT_CONFIG, ChildRun, failed_child, hook_failed, preflight
from ._steps import StepsAgent, run_step

Ctx = TypeVar("Ctx")


class SequentialAgent(StepsAgent[Ctx]):
    """Runs sub-agents one after another on the same input; the first failure ends the run.

    After each step its final text is written to `context.state[key]` (the key defaults to
    the step's name), so a later step can read it, e.g. from dynamic instructions. The
    final output is the last step's; `RunCompleted.usage` sums every step.

    Example:
        ```python
        from helikon import LlmAgent, SequentialAgent
        from helikon.testing import MockModel, text_turn

        researcher = LlmAgent(name="researcher", model=MockModel.with_scripts([text_turn("notes")]))
        writer = LlmAgent(
            name="writer",
            model=MockModel.with_scripts([text_turn("a brief")]),
            instructions=lambda ctx: f"Write a brief from: {ctx.state.get('researcher')}",
        )
        pipeline = SequentialAgent("research-then-write", "Research, then draft.")
        pipeline.then(researcher).then(writer)
        assert pipeline.run_sync("Topic: budgets").final_output == "a brief"
        ```
    """

    __slots__ = ()

    _kind = "SequentialAgent"

    async def _events(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        yield RunStarted(agent=self.name)
        error = preflight(self._kind, self.name, ctx, config or DEFAULT_CONFIG, empty=not self.steps)
        if error is not None:
            yield RunFailed(error=error)
            return
        total = TokenUsage()
        for key, agent in self.steps:
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
        yield RunCompleted(usage=total)


__all__ = ["SequentialAgent"]
