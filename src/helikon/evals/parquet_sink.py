"""`ParquetTraceSink`: each eval run as two flat Parquet files, for pandas, DuckDB or Polars.

In the sink's directory, a run `<run_id>` is:

- `<run_id>-events.parquet`: a row per logged event (`run_id`, `case_index`, `case_id`,
  `attempt`, `turn`, `seq`, `type`, and `event`, the canonical stored JSON of a session's
  event, `helikon.core.session.codec`).
- `<run_id>-scores.parquet`: a row per turn and evaluator (`evaluator`, `value`,
  `outcome`, `reason`), with the turn's `error`, tokens and `latency_s`, and the case's
  definition (`case`, its dataset line as JSON) and `metadata` (JSON). A turn no evaluator
  scored has one row whose evaluator is null, so its usage is kept. The run's dataset,
  time, evaluators and repeat count are the file's key-value metadata `helikon.eval_run`.

Each file is written beside its final name and renamed into place, the scores file last:
a run is listed once both are whole, and a crash mid-write leaves no half run. Needs the
`evals-parquet` extra (pyarrow).

Example:
    ```python
    import asyncio
    import tempfile

    import pyarrow.parquet as pq

    from helikon import LlmAgent
    from helikon.evals import EvalCase, EvalDataset, EvalRun, ExactMatch, ParquetTraceSink
    from helikon.testing import MockModel, text_turn

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            sink = ParquetTraceSink(tmp)
            data = EvalDataset((EvalCase.of("hi", id="greet", expected="Hello."),))

            def agent_for(case: EvalCase) -> LlmAgent:
                return LlmAgent(name="a", model=MockModel.with_scripts([text_turn("Hello.")]))

            report = await (
                EvalRun.builder().dataset(data).agent_factory(agent_for).evaluator(ExactMatch()).sink(sink).run()
            )
            scores = pq.read_table(f"{tmp}/{report.run_id}-scores.parquet").to_pylist()
            assert [(r["case_id"], r["evaluator"], r["outcome"]) for r in scores] == [
                ("greet", "exact_match", "passed")
            ]
            assert (await sink.load(report.run_id)).cases[0].attempts[0][0].output == "Hello."

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core._internal.extras import missing_extra
from ..core.events import TokenUsage
from ..core.exceptions import UserError
from ..core.session import SessionEvent
from ..core.session.codec import decode_event, encode_event
from .report import CaseResult, EvalReport, EvaluatorResult, TurnResult
from .score import Score, ScoreOutcome
from .sinks import TurnEvents, turn_from_events

_RUN_KEY = b"helikon.eval_run"
_EVENT_ORDER = ("case_index", "attempt", "turn", "seq")
# A run id names files: letters, digits, dot, dash and underscore, not starting with a dot.
_RUN_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


class ParquetTraceSink:
    """Records eval runs as Parquet files in the directory `path` (created if missing; see the module)."""

    __slots__ = ("path",)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def files(self, run_id: str) -> tuple[Path, Path]:
        """The run's events file and scores file."""
        _check_run_id(run_id)
        return self.path / f"{run_id}-events.parquet", self.path / f"{run_id}-scores.parquet"

    async def record(self, report: EvalReport, events: TurnEvents) -> None:
        """Write the run's two files (refused if the run is already recorded here)."""
        await asyncio.to_thread(self._record, report, events)

    async def load(self, run_id: str) -> EvalReport:
        """The report of a recorded run, each turn rebuilt from its stored events.

        Raises:
            UserError: No run `run_id` is recorded here, or its events file is missing.
        """
        return await asyncio.to_thread(self._load, run_id)

    async def runs(self) -> list[str]:
        """The recorded runs' ids, oldest first."""
        return await asyncio.to_thread(self._runs)

    def _record(self, report: EvalReport, events: TurnEvents) -> None:
        pa, pq = _pyarrow()
        events_path, scores_path = self.files(report.run_id)
        if events_path.exists() or scores_path.exists():
            raise UserError(
                f"eval run {report.run_id!r} is already recorded in {str(self.path)!r};"
                " a run is recorded once (rescore gives a report with a new run id)"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        ids = {case.index: case.case_id for case in report.cases}
        event_rows = [
            {
                "run_id": report.run_id,
                "case_index": case,
                "case_id": ids.get(case, ""),
                "attempt": attempt,
                "turn": turn,
                "seq": seq,
                "type": event.type,
                "event": encode_event(event),
            }
            for (case, attempt, turn), logged in sorted(events.items())
            for seq, event in enumerate(logged)
        ]
        run = {
            "dataset": report.dataset,
            "created": report.created,
            "evaluators": list(report.evaluators),
            "repeat": report.repeat,
        }
        _write(pq, pa.Table.from_pylist(event_rows, schema=_events_schema(pa)), events_path)
        scores = pa.Table.from_pylist(list(_score_rows(report)), schema=_scores_schema(pa))
        _write(pq, scores.replace_schema_metadata({_RUN_KEY: json.dumps(run).encode()}), scores_path)

    def _runs(self) -> list[str]:
        _, pq = _pyarrow()
        found: list[tuple[str, str]] = []
        for path in self.path.glob("*-scores.parquet"):
            run_id = path.name.removesuffix("-scores.parquet")
            found.append((_run_header(pq.read_schema(path)).get("created", ""), run_id))
        return [run_id for _, run_id in sorted(found)]

    def _load(self, run_id: str) -> EvalReport:
        _, pq = _pyarrow()
        events_path, scores_path = self.files(run_id)
        if not scores_path.exists():
            raise UserError(f"no eval run {run_id!r} is recorded in {str(self.path)!r}")
        if not events_path.exists():
            raise UserError(f"eval run {run_id!r}: its events file {str(events_path)!r} is missing")
        scores = pq.read_table(scores_path)
        run = _run_header(scores.schema)
        if not run:
            raise UserError(
                f"{str(scores_path)!r} is not an eval run's scores file: it has no {_RUN_KEY.decode()!r}"
            )
        logged: dict[tuple[int, int, int], list[SessionEvent]] = {}
        for row in (
            pq.read_table(events_path).sort_by([(key, "ascending") for key in _EVENT_ORDER]).to_pylist()
        ):
            logged.setdefault((row["case_index"], row["attempt"], row["turn"]), []).append(
                decode_event(row["event"])
            )
        evaluators = tuple(run["evaluators"])
        cases = [_case(rows, logged, evaluators) for rows in _by_case(scores.to_pylist())]
        return EvalReport(run_id, run["dataset"], run["created"], evaluators, run["repeat"], tuple(cases))


def _score_rows(report: EvalReport) -> Iterator[dict[str, Any]]:
    for case in report.cases:
        shared = {
            "run_id": report.run_id,
            "case_index": case.index,
            "case_id": case.case_id,
            "case": json.dumps(case.case),
            "metadata": json.dumps(case.metadata),
        }
        for a, attempt in enumerate(case.attempts):
            for t, turn in enumerate(attempt):
                row = {
                    **shared,
                    "attempt": a,
                    "turn": t,
                    "error": turn.error,
                    "input_tokens": turn.usage.input_tokens,
                    "output_tokens": turn.usage.output_tokens,
                    "requests": turn.usage.requests,
                    "latency_s": turn.latency_s,
                }
                if not turn.scores:
                    yield {**row, "evaluator": None, "value": None, "outcome": None, "reason": None}
                for name, score in turn.scores.items():
                    yield {
                        **row,
                        "evaluator": name,
                        "value": score.value,
                        "outcome": score.outcome.value,
                        "reason": score.reason,
                    }


def _by_case(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The rows grouped by case, in case order."""
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["case_index"], []).append(row)
    for index in sorted(grouped):
        yield grouped[index]


def _case(
    rows: list[dict[str, Any]],
    logged: dict[tuple[int, int, int], list[SessionEvent]],
    evaluators: tuple[str, ...],
) -> CaseResult:
    first = rows[0]
    index = first["case_index"]
    turn_rows: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for row in rows:
        turn_rows.setdefault((row["attempt"], row["turn"]), []).append(row)
    attempts: list[list[TurnResult]] = []
    for (a, t), its in sorted(turn_rows.items()):
        if a == len(attempts):
            attempts.append([])
        attempts[a].append(_turn(its, logged.get((index, a, t), [])))
    scores = {
        name: EvaluatorResult.of([[t.scores[name] for t in turns if name in t.scores] for turns in attempts])
        for name in evaluators
    }
    turns = tuple(tuple(attempt) for attempt in attempts)
    return CaseResult(
        index, first["case_id"], turns, scores, json.loads(first["metadata"]), json.loads(first["case"])
    )


def _turn(rows: list[dict[str, Any]], events: list[SessionEvent]) -> TurnResult:
    first = rows[0]
    return turn_from_events(
        events,
        scores={
            r["evaluator"]: Score(r["value"], ScoreOutcome(r["outcome"]), r["reason"])
            for r in rows
            if r["evaluator"] is not None
        },
        error=first["error"],
        usage=TokenUsage(
            input_tokens=first["input_tokens"],
            output_tokens=first["output_tokens"],
            requests=first["requests"],
        ),
        latency_s=first["latency_s"],
    )


def _turn_columns(pa: Any) -> list[tuple[str, Any]]:
    """The columns both files start with: which run, case, attempt and turn a row is of."""
    return [
        ("run_id", pa.string()),
        ("case_index", pa.int32()),
        ("case_id", pa.string()),
        ("attempt", pa.int32()),
        ("turn", pa.int32()),
    ]


def _events_schema(pa: Any) -> Any:
    return pa.schema(
        [
            *_turn_columns(pa),
            ("seq", pa.int32()),
            ("type", pa.string()),
            ("event", pa.string()),
        ]
    )


def _scores_schema(pa: Any) -> Any:
    return pa.schema(
        [
            *_turn_columns(pa),
            ("evaluator", pa.string()),
            ("value", pa.float64()),
            ("outcome", pa.string()),
            ("reason", pa.string()),
            ("error", pa.string()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
            ("requests", pa.int64()),
            ("latency_s", pa.float64()),
            ("case", pa.string()),
            ("metadata", pa.string()),
        ]
    )


def _write(pq: Any, table: Any, path: Path) -> None:
    """Write `table` beside `path`, then rename it into place: a reader never sees half a file."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        pq.write_table(table, partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _run_header(schema: Any) -> dict[str, Any]:
    """The run's dataset, time, evaluators and repeat count, from the scores file's metadata."""
    metadata: dict[bytes, bytes] = schema.metadata or {}
    header: dict[str, Any] = json.loads(metadata.get(_RUN_KEY, b"{}"))
    return header


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID.fullmatch(run_id):
        raise UserError(
            f"eval run id {run_id!r} cannot name a file: use letters, digits, '.', '-' and '_',"
            " not starting with '.'"
        )


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow  # pyright: ignore[reportMissingTypeStubs]
        import pyarrow.parquet  # pyright: ignore[reportMissingTypeStubs]
    except ImportError as exc:
        raise missing_extra("ParquetTraceSink needs pyarrow", "evals-parquet") from exc
    return pyarrow, pyarrow.parquet


__all__ = ["ParquetTraceSink"]
