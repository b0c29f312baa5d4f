"""`LoopAgent`: sub-agents repeated in order until a tool escalates or the budget runs out."""

from __future__ import annotations

from typing import TypeVar

from ..events import AgentError, RunFailed, TokenUsage
from ..exceptions import UserError
from ._steps import StepsAgent

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
    _escalates = True

    def __init__(self, name: str, description: str = "", max_iterations: int = 10) -> None:
        super().__init__(name, description)
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 1:
            raise UserError(f"LoopAgent(max_iterations={max_iterations!r}): must be a positive integer")
        self.max_iterations = max_iterations

    def _passes(self) -> int:
        return self.max_iterations

    def _exhausted(self, usage: TokenUsage) -> RunFailed:
        error = AgentError(
            kind="max_iterations_exceeded",
            message=f"LoopAgent {self.name!r} ran {self.max_iterations} iteration(s) without an escalation",
            limit=self.max_iterations,
        )
        return RunFailed(error=error, usage=usage)


__all__ = ["LoopAgent"]
