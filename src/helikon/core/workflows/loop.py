"""`LoopAgent`: sub-agents repeated in order until a tool escalates or the budget runs out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

from .._callbacks import CallbackRaised
from ..context import RunConfig, RunContext
from ..events import AgentError, AgentEvent, RunCompleted, RunFailed, RunStarted, TokenUsage
from ..exceptions import UserError
from ..input import AgentInput
from ._merge import DEFAULT_CONFIG, ChildRun, failed_child, hook_failed, preflight
from ._steps import StepsAgent, run_step

Ctx = TypeVar("Ctx")


class LoopAgent(StepsAgent[Ctx]):
    """Repeats its sub-agents, in order, up to `max_iterations` passes.

    A tool that calls `ctx.actions.escalate()` ends the loop with success once the
    sub-agent running it finishes: the check comes after each sub-agent, so an
    escalation mid-pass skips the rest of that pass. The escalation is consumed there
    (only the innermost enclosing loop stops). Exhausting the budget fails the run with
    `MaxIterationsExceeded` (`AgentError.limit` = `max_iterations`). Each sub-agent's final
    text goes to `state[key]`, as in `SequentialAgent`.

    Example:
        ```python
        from helikon import LlmAgent, LoopAgent, ToolContext, tool
        from helikon.testing import MockModel, text_turn, tool_call_turn

        @tool
        async def approve(ctx: ToolContext[None]) -> str:
            \"\"\"Accept the draft.\"\"\"
            ctx.actions.escalate()
            return "approved"

        drafter = LlmAgent(name="drafter", model=MockModel.with_scripts([text_turn("v1"), text_turn("v2")]))
        critic = LlmAgent(
            name="critic",
            model=MockModel.with_scripts(
                [text_turn("needs work"), tool_call_turn("approve"), text_turn("good")]
            ),
            tools=[approve],
        )
        refine = LoopAgent("draft-and-critique", "Iterate until approved.", 5).then(drafter).then(critic)
        result = refine.run_sync("Draft a budget memo.")
        assert result.final_output == "good"
        ```
    """

    __slots__ = ("max_iterations",)

    _kind = "LoopAgent"

    def __init__(self, name: str, description: str = "", max_iterations: int = 10) -> None:
        super().__init__(name, description)
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 1:
            raise UserError(f"LoopAgent(max_iterations={max_iterations!r}): must be a positive integer")
        self.max_iterations = max_iterations

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
        actions = ctx.actions
        total = TokenUsage()
        for _ in range(self.max_iterations):
            for key, agent in self.steps:
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
                if actions.escalated:
                    actions.reset()
                    yield RunCompleted(usage=total)
                    return
        error = AgentError(
            kind="max_iterations_exceeded",
            message=f"LoopAgent {self.name!r} ran {self.max_iterations} iteration(s) without an escalation",
            limit=self.max_iterations,
        )
        yield RunFailed(error=error, usage=total)


__all__ = ["LoopAgent"]
