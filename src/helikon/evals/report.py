"""`EvalReport`: what an eval run found, case by case; saved as JSON, loaded back, shown as a table.

A case's result keeps every attempt (one per `repeat`) and every turn of it: the input, the
answer, the tool calls and each evaluator's score. Per evaluator, a case sums up its
attempts: the mean value, its standard deviation, how many attempts passed, and pass@k
(at least one of the k attempts passed). A case fails when its run failed or any
evaluator failed it; `passed()` is true when no case failed. Skips count toward neither
side, and are counted.

Example:
    ```python
    from helikon.evals import EvalReport

    report = EvalReport.from_json(EvalReport.empty("smoke").to_json())
    assert report.passed() and report.dataset == "smoke"
    ```
"""

from __future__ import annotations

import dataclasses
import io
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core._internal.extras import missing_extra
from ..core._internal.json_value import JsonObject
from ..core.events import TokenUsage
from ..core.exceptions import UserError
from .score import CaseOutcome, Score, ScoreOutcome, ToolCallRecord, score_turn

if TYPE_CHECKING:
    from .compare import Comparison
    from .score import Evaluator


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn of one attempt: what went in, what came out, and each evaluator's score."""

    input: str
    output: str
    tool_calls: tuple[ToolCallRecord, ...] = ()
    scores: dict[str, Score] = field(default_factory=lambda: {})
    error: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    latency_s: float = 0.0


@dataclass(frozen=True, slots=True)
class EvaluatorResult:
    """One evaluator's verdict on a case, over its turns and attempts.

    `value` is the mean of the attempts it scored, `stddev` their spread; `passes` of
    `runs` attempts passed (skipped ones are not runs); `pass_at_k` is 1 when any passed.
    """

    value: float
    outcome: ScoreOutcome
    reason: str = ""
    stddev: float = 0.0
    passes: int = 0
    runs: int = 0

    @property
    def pass_at_k(self) -> float:
        """1.0 when at least one of the k attempts passed, else 0.0."""
        return 1.0 if self.passes else 0.0

    @staticmethod
    def of(attempts: list[list[Score]]) -> EvaluatorResult:
        """The verdict from the scores of each attempt's turns."""
        per_attempt = [_attempt(turns) for turns in attempts]
        scored = [s for s in per_attempt if s.outcome is not ScoreOutcome.SKIPPED]
        if not scored:
            reason = next((s.reason for s in per_attempt if s.reason), "skipped")
            return EvaluatorResult(0.0, ScoreOutcome.SKIPPED, reason)
        values = [s.value for s in scored]
        failed = [s for s in scored if s.outcome is ScoreOutcome.FAILED]
        outcome = ScoreOutcome.FAILED if failed else ScoreOutcome.PASSED
        reason = failed[0].reason if failed else scored[-1].reason
        return EvaluatorResult(
            value=statistics.fmean(values),
            outcome=outcome,
            reason=reason,
            stddev=statistics.pstdev(values) if len(values) > 1 else 0.0,
            passes=len(scored) - len(failed),
            runs=len(scored),
        )


def _attempt(turns: list[Score]) -> Score:
    """One attempt's score from its turns': failed if any failed, skipped if all skipped."""
    scored = [s for s in turns if s.outcome is not ScoreOutcome.SKIPPED]
    if not scored:
        return turns[0] if turns else Score.skipped("no turn was scored")
    value = statistics.fmean(s.value for s in scored)
    failed = next((s for s in scored if s.outcome is ScoreOutcome.FAILED), None)
    return (
        Score.failed(value, failed.reason) if failed is not None else Score.passed(value, scored[-1].reason)
    )


@dataclass(frozen=True, slots=True)
class CaseResult:
    """A case's result: each attempt's turns, and each evaluator's verdict."""

    index: int
    case_id: str
    attempts: tuple[tuple[TurnResult, ...], ...]
    scores: dict[str, EvaluatorResult]
    metadata: JsonObject = field(default_factory=lambda: {})
    case: JsonObject = field(default_factory=lambda: {})
    """The case as its dataset line (`EvalCase.to_json`): what `EvalReport.rescore` scores against."""

    @property
    def error(self) -> str | None:
        """The first run failure among the attempts, if any."""
        return next((t.error for a in self.attempts for t in a if t.error), None)

    @property
    def outcome(self) -> ScoreOutcome:
        """Failed when a run failed or an evaluator failed the case; skipped when every evaluator skipped."""
        if self.error is not None or any(s.outcome is ScoreOutcome.FAILED for s in self.scores.values()):
            return ScoreOutcome.FAILED
        if self.scores and all(s.outcome is ScoreOutcome.SKIPPED for s in self.scores.values()):
            return ScoreOutcome.SKIPPED
        return ScoreOutcome.PASSED

    @property
    def usage(self) -> TokenUsage:
        """The tokens every attempt spent."""
        return sum((t.usage for a in self.attempts for t in a), TokenUsage())

    @property
    def latency_s(self) -> float:
        """An attempt's mean wall time (its turns together)."""
        totals = [sum(t.latency_s for t in attempt) for attempt in self.attempts]
        return statistics.fmean(totals) if totals else 0.0


@dataclass(frozen=True, slots=True)
class EvaluatorSummary:
    """One evaluator over the whole run: the mean of the cases it scored, and the counts."""

    mean: float
    passed: int
    failed: int
    skipped: int


@dataclass(frozen=True, slots=True)
class EvalReport:
    """An eval run's results, in dataset order (see the module)."""

    run_id: str
    dataset: str
    created: str
    evaluators: tuple[str, ...]
    repeat: int
    cases: tuple[CaseResult, ...]

    @staticmethod
    def empty(dataset: str = "dataset") -> EvalReport:
        """A report with no cases (what a run of an empty dataset gives)."""
        return EvalReport(new_run_id(), dataset, _now(), (), 1, ())

    def passed(self) -> bool:
        """Whether no case failed (a run that failed, or an evaluator that failed it)."""
        return all(case.outcome is not ScoreOutcome.FAILED for case in self.cases)

    def summary(self) -> dict[str, EvaluatorSummary]:
        """Per evaluator: the mean value over the cases it scored, and how many passed, failed, skipped."""
        out: dict[str, EvaluatorSummary] = {}
        for name in self.evaluators:
            results = [c.scores[name] for c in self.cases if name in c.scores]
            scored = [r for r in results if r.outcome is not ScoreOutcome.SKIPPED]
            out[name] = EvaluatorSummary(
                mean=statistics.fmean(r.value for r in scored) if scored else 0.0,
                passed=sum(r.outcome is ScoreOutcome.PASSED for r in results),
                failed=sum(r.outcome is ScoreOutcome.FAILED for r in results),
                skipped=len(results) - len(scored),
            )
        return out

    async def rescore(self, evaluators: Sequence[Evaluator]) -> EvalReport:
        """The report scored again by `evaluators`, from what the runs made: nothing is run again.

        Each turn's answer and tool calls (as the report, or a trace sink, kept them) go to
        the evaluators with the case they came from. Their columns replace columns of the
        same name and add the others; a turn whose run failed fails again, saying so.
        """
        names = [e.name for e in evaluators]
        if len(set(names)) != len(names):
            raise UserError(f"EvalReport.rescore: two evaluators share a name ({', '.join(names)})")
        cases = [await _rescored(result, evaluators) for result in self.cases]
        columns = (*(n for n in self.evaluators if n not in names), *names)
        return dataclasses.replace(self, run_id=new_run_id(), evaluators=columns, cases=tuple(cases))

    def compare(self, baseline: EvalReport) -> Comparison:
        """What changed from `baseline`, case by case and evaluator by evaluator (see `Comparison`)."""
        from .compare import compare

        return compare(self, baseline)

    def to_json(self) -> str:
        """The report as JSON text (`from_json` reads it back)."""
        return _adapter().dump_json(self, indent=2).decode()

    @staticmethod
    def from_json(text: str | bytes) -> EvalReport:
        """A report from `to_json`'s text."""
        return _adapter().validate_json(text)

    def save(self, path: str | Path) -> Path:
        """Write the report as JSON to `path`; the path."""
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @staticmethod
    def load(path: str | Path) -> EvalReport:
        """A report `save` wrote."""
        return EvalReport.from_json(Path(path).read_bytes())

    def to_html(self, baseline: EvalReport | None = None) -> str:
        """The report as one self-contained HTML page: the table, each case's turns and tool calls.

        With `baseline`, each case shows what changed since it, and its answer and tool
        calls beside the baseline's. Built for large runs: the table draws only the rows in
        view, and a case's details are decompressed when it is opened.
        """
        from .html_report import render_html

        return render_html(self, baseline)

    def save_html(self, path: str | Path, baseline: EvalReport | None = None) -> Path:
        """Write `to_html(baseline)` to `path`; the path."""
        path = Path(path)
        path.write_text(self.to_html(baseline), encoding="utf-8")
        return path

    def render_table(self, *, width: int = 120) -> str:
        """The report as a table for a terminal: a row per case, a column per evaluator, then the summary.

        Needs the `evals` extra (rich).
        """
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError as exc:
            raise missing_extra("EvalReport.render_table needs rich", "evals") from exc
        table = Table(title=f"{self.dataset}: {len(self.cases)} case(s), run {self.run_id}")
        table.add_column("case")
        for name in self.evaluators:
            table.add_column(name, justify="right")
        for title in ("result", "tokens", "seconds", "why"):
            table.add_column(title, justify="right" if title in ("tokens", "seconds") else "left")
        with_metadata = any(case.metadata for case in self.cases)
        if with_metadata:
            table.add_column("metadata")
        for case in self.cases:
            cells = [_cell(case.scores.get(name)) for name in self.evaluators]
            why = case.error or next(
                (s.reason for s in case.scores.values() if s.outcome is not ScoreOutcome.PASSED and s.reason),
                "",
            )
            table.add_row(
                case.case_id,
                *cells,
                case.outcome.value,
                str(case.usage.total_tokens),
                f"{case.latency_s:.2f}",
                why,
                *([_metadata(case.metadata)] if with_metadata else []),
            )
        console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
        console.print(table)
        for name, stats in self.summary().items():
            counts = f"{stats.passed} passed, {stats.failed} failed, {stats.skipped} skipped"
            console.print(f"{name}: mean {stats.mean:.2f}, {counts}")
        console.print("PASSED" if self.passed() else "FAILED")
        return console.export_text()


async def _rescored(result: CaseResult, evaluators: Sequence[Evaluator]) -> CaseResult:
    """`result` scored again by `evaluators`, from its turns' answers and tool calls."""
    from .dataset import EvalCase

    if not result.case:
        raise UserError(
            f"EvalReport.rescore: case {result.case_id!r} does not say what it was (its case is not kept)"
        )
    case = EvalCase.from_json(result.case)
    attempts: list[tuple[TurnResult, ...]] = []
    for attempt in result.attempts:
        turns: list[TurnResult] = []
        for index, turn in enumerate(attempt):
            outcome = CaseOutcome(
                output=turn.output,
                tool_calls=turn.tool_calls,
                error=turn.error,
                usage=turn.usage,
                latency_s=turn.latency_s,
            )
            scores = await score_turn(evaluators, case.turn_case(index), outcome)
            turns.append(dataclasses.replace(turn, scores={**turn.scores, **scores}))
        attempts.append(tuple(turns))
    scores = dict(result.scores)
    for evaluator in evaluators:
        name = evaluator.name
        scores[name] = EvaluatorResult.of(
            [[t.scores[name] for t in turns if name in t.scores] for turns in attempts]
        )
    return dataclasses.replace(result, attempts=tuple(attempts), scores=scores)


def _metadata(metadata: JsonObject) -> str:
    """A case's metadata in a cell: `key=value`, values as JSON unless they are strings."""
    import json

    return " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in metadata.items())


def _cell(result: EvaluatorResult | None) -> str:
    if result is None:
        return "-"
    if result.outcome is ScoreOutcome.SKIPPED:
        return "skip"
    cell = f"{result.value:.2f}"
    if result.runs > 1:
        cell += f" ±{result.stddev:.2f} ({result.passes}/{result.runs})"
    return cell if result.outcome is ScoreOutcome.PASSED else f"✗ {cell}"


def new_run_id() -> str:
    """A fresh eval run id: its UTC time, then random hex."""
    import uuid

    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


_report_adapter: Any = None


def _adapter() -> Any:
    global _report_adapter
    if _report_adapter is None:
        from pydantic import TypeAdapter

        _report_adapter = TypeAdapter(EvalReport)
    return _report_adapter


__all__ = ["CaseResult", "EvalReport", "EvaluatorResult", "EvaluatorSummary", "TurnResult", "new_run_id"]
