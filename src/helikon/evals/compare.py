"""`Comparison`: what changed between two eval runs, case by case and evaluator by evaluator.

Example:
    ```python
    from helikon.evals import EvalReport

    report = EvalReport.empty("smoke")
    assert report.compare(report).exit_code() == 0
    ```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .score import ScoreOutcome

if TYPE_CHECKING:
    from .report import CaseResult, EvalReport, EvaluatorResult

ChangeKind = Literal["regressed", "improved", "changed", "added", "removed"]


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: a case's evaluator (empty: the case itself) went from `before` to `after`."""

    case_id: str
    evaluator: str
    kind: ChangeKind
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class Comparison:
    """The differences between a run and its baseline, in the run's case order.

    `regressed`: something that passed fails now; `improved`: the other way; `changed`: the
    same outcome with another score, or a skip that is not one any more (or the reverse);
    `added` / `removed`: a case in one run only.
    """

    changes: tuple[Change, ...]

    def of(self, kind: ChangeKind) -> tuple[Change, ...]:
        """The changes of one kind."""
        return tuple(c for c in self.changes if c.kind == kind)

    def exit_code(self) -> int:
        """For CI: 1 when something regressed, else 0."""
        return 1 if self.of("regressed") else 0

    def render(self) -> str:
        """The changes as lines of text (`no changes` when there are none)."""
        if not self.changes:
            return "no changes"
        lines = [
            f"{c.kind:9} {c.case_id}{' ' + c.evaluator if c.evaluator else ''}: {c.before} -> {c.after}"
            for c in self.changes
        ]
        counts = ", ".join(
            f"{len(self.of(k))} {k}" for k in ("regressed", "improved", "changed", "added", "removed")
        )
        return "\n".join([*lines, counts])


def compare(report: EvalReport, baseline: EvalReport) -> Comparison:
    """What changed from `baseline` to `report`."""
    before = {c.case_id: c for c in baseline.cases}
    changes: list[Change] = []
    for case in report.cases:
        old = before.pop(case.case_id, None)
        if old is None:
            changes.append(Change(case.case_id, "", "added", "-", case.outcome.value))
            continue
        changes += _case_changes(old, case)
    changes += [Change(c.case_id, "", "removed", c.outcome.value, "-") for c in before.values()]
    return Comparison(tuple(changes))


def _case_changes(old: CaseResult, new: CaseResult) -> list[Change]:
    changes: list[Change] = []
    if (old.error is None) != (new.error is None):
        kind: ChangeKind = "regressed" if new.error is not None else "improved"
        changes.append(Change(new.case_id, "", kind, old.error or "ran", new.error or "ran"))
    for name in dict.fromkeys([*old.scores, *new.scores]):
        was, now = old.scores.get(name), new.scores.get(name)
        change = _score_change(was, now)
        if change is not None:
            changes.append(Change(new.case_id, name, change, _shown(was), _shown(now)))
    return changes


def _score_change(was: EvaluatorResult | None, now: EvaluatorResult | None) -> ChangeKind | None:
    if was is None or now is None:
        return "changed"
    passed, failed = ScoreOutcome.PASSED, ScoreOutcome.FAILED
    if was.outcome is passed and now.outcome is failed:
        return "regressed"
    if was.outcome is failed and now.outcome is passed:
        return "improved"
    if was.outcome is not now.outcome or abs(was.value - now.value) > 1e-9:
        return "changed"
    return None


def _shown(result: EvaluatorResult | None) -> str:
    if result is None:
        return "-"
    if result.outcome is ScoreOutcome.SKIPPED:
        return "skipped"
    return f"{result.outcome.value} {result.value:.2f}"


__all__ = ["Change", "ChangeKind", "Comparison", "compare"]
