"""`ToolUseTrajectory`: did the run call the tools the case expects, in the way it asks?

Two choices make a trajectory evaluator:

- **The order**: `exact()` (the same calls, in the same order, nothing more), `in_order()`
  (the expected calls appear in that order; others may come between), `any_order()` (the
  expected calls all appear, in any order; others may come too).
- **What makes a call match an expected one**: `name_only`; `name_and_args` (the same
  arguments); `name_and_required_args` (the arguments the case names have those values;
  others may be there, the default when a case gives arguments); `predicate`, your function
  of (the expected call, the call made).

The score is the F1 of the match: how many calls match, over the calls made (precision)
and over the calls expected (recall), so a near miss gets partial credit; it passes when
the order's criterion holds. A turn without `expected_tools` is skipped.

Example:
    ```python
    import asyncio

    from helikon.evals import CaseOutcome, EvalCase, ToolCallRecord, ToolUseTrajectory

    case = EvalCase.of("refund 7", expected_tools=["lookup", "refund"])
    made = CaseOutcome(tool_calls=(ToolCallRecord("refund", {"order": 7}),))
    score = asyncio.run(ToolUseTrajectory.in_order().evaluate(case, made))
    assert score.outcome == "failed" and round(score.value, 2) == 0.67  # 1 of 1 made, 1 of 2 expected
    ```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

from ..core.exceptions import UserError
from .score import CaseOutcome, Score, ToolCallRecord

if TYPE_CHECKING:
    from .dataset import EvalCase, ExpectedTool

Order: TypeAlias = Literal["exact", "in_order", "any_order"]
MatchMode: TypeAlias = Literal["name_only", "name_and_args", "name_and_required_args", "predicate"]
CallPredicate: TypeAlias = Callable[["ExpectedTool", ToolCallRecord], bool]
"""`match="predicate"`: whether a call made matches an expected one."""

_MODES = ("name_only", "name_and_args", "name_and_required_args", "predicate")


class ToolUseTrajectory:
    """Scores a turn's tool calls against its `expected_tools` (see the module).

    Build it with `exact()`, `in_order()` or `any_order()`.

    Raises:
        UserError: An unknown match mode, or `predicate` without a function (or one without it).
    """

    __slots__ = ("match", "order", "predicate")

    def __init__(
        self, order: Order, *, match: MatchMode = "name_only", predicate: CallPredicate | None = None
    ) -> None:
        if order not in ("exact", "in_order", "any_order"):
            raise UserError(f"ToolUseTrajectory(order={order!r}): 'exact', 'in_order' or 'any_order'")
        if match not in _MODES:
            raise UserError(f"ToolUseTrajectory(match={match!r}): one of {', '.join(_MODES)}")
        if (match == "predicate") != (predicate is not None):
            raise UserError("ToolUseTrajectory: match='predicate' takes a predicate=, and only it does")
        self.order: Order = order
        self.match: MatchMode = match
        self.predicate = predicate

    @staticmethod
    def exact(*, match: MatchMode = "name_only", predicate: CallPredicate | None = None) -> ToolUseTrajectory:
        """The same calls in the same order, and no other."""
        return ToolUseTrajectory("exact", match=match, predicate=predicate)

    @staticmethod
    def in_order(
        *, match: MatchMode = "name_only", predicate: CallPredicate | None = None
    ) -> ToolUseTrajectory:
        """The expected calls in that order; other calls may come between."""
        return ToolUseTrajectory("in_order", match=match, predicate=predicate)

    @staticmethod
    def any_order(
        *, match: MatchMode = "name_only", predicate: CallPredicate | None = None
    ) -> ToolUseTrajectory:
        """The expected calls, in any order; other calls may come too."""
        return ToolUseTrajectory("any_order", match=match, predicate=predicate)

    @property
    def name(self) -> str:
        """`tool_trajectory[<order>]`, with the match mode when it is not `name_only`."""
        return (
            f"tool_trajectory[{self.order}]"
            if self.match == "name_only"
            else f"tool_trajectory[{self.order},{self.match}]"
        )

    async def evaluate(self, case: EvalCase, outcome: CaseOutcome) -> Score:
        """The F1 of the calls made against the expected ones; passed when the order's criterion holds."""
        expected = case.expected_tools
        if expected is None:
            return Score.skipped("the case names no expected tool calls")
        made = outcome.tool_calls
        if self.order == "any_order":
            matched = _matching(expected, made, self.matches)
        else:
            matched = _in_order(expected, made, self.matches)
        value = _f1(matched, len(expected), len(made))
        # every expected call is matched (and, for `exact`, no other call was made)
        holds = matched == len(expected) and (self.order != "exact" or len(made) == len(expected))
        names = ", ".join(c.name for c in made) or "none"
        if holds:
            return Score.passed(value, f"called: {names}")
        want = ", ".join(e.name for e in expected) or "none"
        return Score.failed(value, f"expected {self.order.replace('_', ' ')}: {want}; called: {names}")

    def matches(self, expected: ExpectedTool, made: ToolCallRecord) -> bool:
        """Whether the call `made` matches `expected`, by this evaluator's match mode."""
        if self.match == "predicate":
            assert self.predicate is not None
            return bool(self.predicate(expected, made))
        if expected.name != made.name:
            return False
        if expected.args is None or self.match == "name_only":
            return True
        args = made.args if isinstance(made.args, dict) else {}
        if self.match == "name_and_args":
            return args == expected.args
        return all(key in args and args[key] == value for key, value in expected.args.items())


Match: TypeAlias = Callable[["ExpectedTool", ToolCallRecord], bool]


def _in_order(expected: Sequence[ExpectedTool], made: Sequence[ToolCallRecord], match: Match) -> int:
    """How many expected calls match calls made, in order: the longest common subsequence."""
    previous = [0] * (len(made) + 1)
    for want in expected:
        row = [0] * (len(made) + 1)
        for j, call in enumerate(made, start=1):
            row[j] = previous[j - 1] + 1 if match(want, call) else max(previous[j], row[j - 1])
        previous = row
    return previous[-1]


def _matching(expected: Sequence[ExpectedTool], made: Sequence[ToolCallRecord], match: Match) -> int:
    """How many expected calls match distinct calls made, in any order: a maximum matching."""
    owner: dict[int, int] = {}  # call made -> the expected call it serves

    def place(i: int, seen: set[int]) -> bool:
        for j, call in enumerate(made):
            if j in seen or not match(expected[i], call):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    return sum(place(i, set()) for i in range(len(expected)))


def _f1(matched: int, expected: int, made: int) -> float:
    """The F1 of `matched` calls over the `made` ones (precision) and the `expected` ones (recall)."""
    if expected == 0 and made == 0:
        return 1.0
    if matched == 0:
        return 0.0
    precision, recall = matched / made, matched / expected
    return 2 * precision * recall / (precision + recall)


__all__ = ["CallPredicate", "MatchMode", "Order", "ToolUseTrajectory"]
