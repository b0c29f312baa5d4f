"""`LlmJudge`: a model grades the answer against a rubric, as a structured verdict.

The judge is an `LlmAgent` whose `output_type` is `Verdict` (a score in [0, 1] and a
reason): helikon's structured output asks the model for it, and sends it back once to fix
an answer that does not fit. A judge that still answers something else fails the turn
with the reason (never the eval).

Example:
    ```python
    import asyncio

    from helikon.evals import CaseOutcome, EvalCase, LlmJudge
    from helikon.testing import MockModel, text_turn

    judge = LlmJudge(
        MockModel.with_scripts([text_turn('{"score": 0.9, "reason": "polite and correct"}')]),
        rubric="The answer is polite and gives the right total.",
        threshold=0.7,
    )
    score = asyncio.run(judge.evaluate(EvalCase.of("total?", expected="4"), CaseOutcome(output="It is 4.")))
    assert score.outcome == "passed" and score.value == 0.9
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..core.agent import LlmAgent
from ..core.exceptions import RunError, UserError
from .score import CaseOutcome, Score

if TYPE_CHECKING:
    from ..core.model import Model
    from .dataset import EvalCase

JUDGE_INSTRUCTIONS = """You grade an AI assistant's answer against a rubric.
Read the question, the expected answer when one is given, and the assistant's answer.
Give a score from 0 (fails the rubric) to 1 (meets it fully), and a one-sentence reason.

Rubric:
{rubric}"""


class Verdict(BaseModel):
    """The judge's answer: how well the answer meets the rubric, and why."""

    score: float = Field(ge=0.0, le=1.0, description="0: fails the rubric; 1: meets it fully.")
    reason: str = Field(description="One sentence: why this score.")


class LlmJudge:
    """Grades a turn's answer with a model and a rubric; passes at `threshold` or above.

    Args:
        model: The judging model (a `Model` or a model string).
        rubric: What a good answer does.
        threshold: The score from which the turn passes (default 0.5).
        name: The column's name (default `llm_judge`): two judges need two names.

    Raises:
        UserError: An empty rubric, or a threshold outside [0, 1].
    """

    def __init__(
        self, model: Model | str, rubric: str, threshold: float = 0.5, *, name: str = "llm_judge"
    ) -> None:
        if not isinstance(rubric, str) or not rubric.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("LlmJudge(rubric=...): say what a good answer does")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise UserError(f"LlmJudge(threshold={threshold!r}): a number between 0 and 1")
        self.name = name
        self.rubric = rubric
        self.threshold = float(threshold)
        self._agent: LlmAgent[None, Verdict] = LlmAgent(
            name="judge",
            model=model,
            instructions=JUDGE_INSTRUCTIONS.format(rubric=rubric),
            output_type=Verdict,
        )

    async def evaluate(self, case: EvalCase, outcome: CaseOutcome) -> Score:
        """The judge's verdict on the answer; a judge that answers no verdict fails the turn, saying so."""
        parts = [f"Question:\n{case.input}"]
        if case.expected is not None:
            parts.append(f"Expected answer:\n{case.expected}")
        parts.append(f"The assistant's answer:\n{outcome.output}")
        try:
            result = await self._agent.run("\n\n".join(parts))
        except RunError as exc:
            return Score.failed(reason=f"the judge gave no verdict: {exc}")
        verdict = result.final_output
        if verdict.score >= self.threshold:
            return Score.passed(verdict.score, verdict.reason)
        return Score.failed(verdict.score, verdict.reason)


__all__ = ["JUDGE_INSTRUCTIONS", "LlmJudge", "Verdict"]
