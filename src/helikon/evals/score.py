"""What an evaluator is handed and what it answers: `CaseOutcome`, `Score`, the `Evaluator` protocol.

An evaluator scores one turn of a case: `await evaluator.evaluate(case, outcome)` returns
a `Score`, a value in [0, 1] with an outcome. `SKIPPED` is not a failure: an evaluator
whose case lacks what it needs (no `expected`, no `expected_tools`) skips, always saying
why, and skips count toward neither side of a summary.

Example:
    ```python
    import asyncio

    from helikon.evals import CaseOutcome, EvalCase, ExactMatch, ScoreOutcome

    case = EvalCase.of("2+2?", expected="4")
    score = asyncio.run(ExactMatch().evaluate(case, CaseOutcome(output="4")))
    assert score.outcome is ScoreOutcome.PASSED and score.value == 1.0
    ```
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..core._internal.json_value import JsonValue
from ..core.events import TokenUsage
from ..core.exceptions import UserError

if TYPE_CHECKING:
    from ..core.session import SessionEvent
    from .dataset import EvalCase


class ScoreOutcome(enum.StrEnum):
    """How a score counts: passed, failed, or skipped (it counts toward neither)."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class Score:
    """An evaluator's answer for one turn: `value` in [0, 1], the outcome, and why.

    Build one with `Score.passed(...)`, `Score.failed(...)` or `Score.skipped(reason)`; a
    skip must say why.
    """

    value: float
    outcome: ScoreOutcome
    reason: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise UserError(f"Score(value={self.value!r}): a score is between 0 and 1")
        if self.outcome is ScoreOutcome.SKIPPED and not self.reason:
            raise UserError("Score.skipped(reason): a skip must say why")

    @staticmethod
    def passed(value: float = 1.0, reason: str = "") -> Score:
        """A pass (full marks unless `value` says less)."""
        return Score(value, ScoreOutcome.PASSED, reason)

    @staticmethod
    def failed(value: float = 0.0, reason: str = "") -> Score:
        """A failure, saying why (`value`: partial credit)."""
        return Score(value, ScoreOutcome.FAILED, reason)

    @staticmethod
    def skipped(reason: str) -> Score:
        """A skip: it counts toward neither side, and says why."""
        return Score(0.0, ScoreOutcome.SKIPPED, reason)


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call a run made: the name, the arguments, what it returned and whether that was an error."""

    name: str
    args: JsonValue
    result: str = ""
    is_error: bool = False
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """What a run made of one turn: its final text, its structured output, its tool calls, its cost.

    `output` is the final answer's text (empty when the run failed); `value` the validated
    `output_type` value when the agent has one (else the text); `error` why the run
    failed, if it did (then the evaluators are not asked: the case fails).
    """

    output: str = ""
    value: object = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    error: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    latency_s: float = 0.0
    events: tuple[SessionEvent, ...] = ()
    """The turn's events as a session logs them (kept when a trace sink records the run)."""

    def output_json(self) -> JsonValue:
        """The output as JSON: the structured value, else the text parsed.

        Raises:
            ValueError: The text is not JSON.
        """
        value = self.value
        if value is not None and not isinstance(value, str):
            dump = getattr(value, "model_dump", None)
            return dump(mode="json") if callable(dump) else value  # type: ignore[return-value]
        return json.loads(self.output)


@runtime_checkable
class Evaluator(Protocol):
    """Scores one turn of a case. `name` names its column in the report."""

    @property
    def name(self) -> str:
        """The evaluator's column in the report."""
        ...

    async def evaluate(self, case: EvalCase, outcome: CaseOutcome) -> Score:
        """The score of `outcome` (what the run made of `case`'s turn)."""
        ...


async def score_turn(
    evaluators: Sequence[Evaluator], case: EvalCase, outcome: CaseOutcome
) -> dict[str, Score]:
    """Each evaluator's score of one turn, by name.

    A turn whose run failed fails for every evaluator, saying so; an evaluator that raises
    (or answers something else than a `Score`) fails the turn with what it raised.
    """
    if outcome.error is not None:
        failed = Score.failed(reason=f"the run failed: {outcome.error}")
        return {e.name: failed for e in evaluators}
    scores: dict[str, Score] = {}
    for evaluator in evaluators:
        try:
            score = await evaluator.evaluate(case, outcome)
            if not isinstance(score, Score):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(f"it returned {score!r}, not a Score")
        except Exception as exc:
            score = Score.failed(reason=f"the evaluator raised {type(exc).__name__}: {exc}")
        scores[evaluator.name] = score
    return scores


__all__ = ["CaseOutcome", "Evaluator", "Score", "ScoreOutcome", "ToolCallRecord", "score_turn"]
