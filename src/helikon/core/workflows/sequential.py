"""`SequentialAgent`: sub-agents in order, each one's final text in `state[key]`, fail fast."""

from __future__ import annotations

from typing import TypeVar

from ._steps import StepsAgent

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


__all__ = ["SequentialAgent"]
