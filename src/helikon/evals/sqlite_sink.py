"""`SqliteTraceSink`: eval runs recorded in one SQLite file (the standard library's `sqlite3`).

Three tables: `eval_runs` (a row per run), `eval_cases` (a row per case: its definition,
its outcome, each attempt's scores, usage and latency) and `eval_events` (every turn's
events in the canonical stored form of a session's events). A run is recorded once
complete, in dataset order, in one transaction. `load(run_id)` rebuilds its report from
those rows, each turn read back from its events (`turn_from_events`).

Example:
    ```python
    import asyncio
    import tempfile
    from pathlib import Path

    from helikon import LlmAgent
    from helikon.evals import EvalCase, EvalDataset, EvalRun, ExactMatch, SqliteTraceSink
    from helikon.testing import MockModel, text_turn

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            sink = SqliteTraceSink(Path(tmp) / "evals.db")
            data = EvalDataset((EvalCase.of("hi", id="greet", expected="Hello."),))

            def agent_for(case: EvalCase) -> LlmAgent:
                return LlmAgent(name="a", model=MockModel.with_scripts([text_turn("Hello.")]))

            report = await (
                EvalRun.builder()
                .dataset(data)
                .agent_factory(agent_for)
                .evaluator(ExactMatch())
                .sink(sink)
                .run()
            )
            stored = await sink.load(report.run_id)
            assert stored.cases[0].attempts[0][0].output == "Hello." and await sink.runs() == [report.run_id]

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from ..core.events import TokenUsage
from ..core.exceptions import UserError
from ..core.session import SessionEvent
from ..core.session.codec import decode_event, encode_event
from .report import CaseResult, EvalReport, EvaluatorResult, TurnResult
from .score import Score, ScoreOutcome
from .sinks import TurnEvents, turn_from_events

_SCHEMA = """
CREATE TABLE IF NOT EXISTS eval_runs (
    run_id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    created TEXT NOT NULL,
    evaluators TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    passed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS eval_cases (
    run_id TEXT NOT NULL REFERENCES eval_runs(run_id),
    case_index INTEGER NOT NULL,
    case_id TEXT NOT NULL,
    definition TEXT NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    scores TEXT NOT NULL,
    turns TEXT NOT NULL,
    PRIMARY KEY (run_id, case_index)
);
CREATE TABLE IF NOT EXISTS eval_events (
    run_id TEXT NOT NULL REFERENCES eval_runs(run_id),
    case_index INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (run_id, case_index, attempt, turn, seq)
);
"""


class SqliteTraceSink:
    """Records eval runs in the SQLite file at `path` (created if missing; see the module)."""

    __slots__ = ("path",)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    async def record(self, report: EvalReport, events: TurnEvents) -> None:
        """Write `report` and its turns' events, in one transaction."""
        await asyncio.to_thread(self._record, report, events)

    async def load(self, run_id: str) -> EvalReport:
        """The report of a recorded run, each turn rebuilt from its stored events.

        Raises:
            UserError: No run `run_id` is recorded here.
        """
        return await asyncio.to_thread(self._load, run_id)

    async def runs(self) -> list[str]:
        """The recorded runs' ids, oldest first."""
        return await asyncio.to_thread(self._runs)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path)
        connection.executescript(_SCHEMA)
        return connection

    def _record(self, report: EvalReport, events: TurnEvents) -> None:
        connection = self._connect()
        try:
            if connection.execute("SELECT 1 FROM eval_runs WHERE run_id = ?", (report.run_id,)).fetchone():
                raise UserError(
                    f"eval run {report.run_id!r} is already recorded in {str(self.path)!r};"
                    " a run is recorded once (rescore gives a report with a new run id)"
                )
            with connection:
                connection.execute(
                    "INSERT INTO eval_runs VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        report.run_id,
                        report.dataset,
                        report.created,
                        json.dumps(report.evaluators),
                        report.repeat,
                        int(report.passed()),
                    ),
                )
                connection.executemany(
                    "INSERT INTO eval_cases VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            report.run_id,
                            case.index,
                            case.case_id,
                            json.dumps({"case": case.case, "metadata": case.metadata}),
                            case.outcome.value,
                            case.error,
                            json.dumps({name: _result_json(r) for name, r in case.scores.items()}),
                            json.dumps([[_turn_json(t) for t in attempt] for attempt in case.attempts]),
                        )
                        for case in report.cases
                    ],
                )
                connection.executemany(
                    "INSERT INTO eval_events VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (report.run_id, case, attempt, turn, seq, event.type, encode_event(event))
                        for (case, attempt, turn), logged in sorted(events.items())
                        for seq, event in enumerate(logged)
                    ],
                )
        finally:
            connection.close()

    def _runs(self) -> list[str]:
        connection = self._connect()
        try:
            return [
                row[0] for row in connection.execute("SELECT run_id FROM eval_runs ORDER BY created, rowid")
            ]
        finally:
            connection.close()

    def _load(self, run_id: str) -> EvalReport:
        connection = self._connect()
        try:
            run = connection.execute(
                "SELECT dataset, created, evaluators, repeat FROM eval_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if run is None:
                raise UserError(f"no eval run {run_id!r} is recorded in {str(self.path)!r}")
            logged: dict[tuple[int, int, int], list[SessionEvent]] = {}
            for case, attempt, turn, event in connection.execute(
                "SELECT case_index, attempt, turn, event FROM eval_events WHERE run_id = ?"
                " ORDER BY case_index, attempt, turn, seq",
                (run_id,),
            ):
                logged.setdefault((case, attempt, turn), []).append(decode_event(event))
            cases = [
                _case(index, case_id, definition, scores, turns, logged)
                for index, case_id, definition, scores, turns in connection.execute(
                    "SELECT case_index, case_id, definition, scores, turns FROM eval_cases WHERE run_id = ?"
                    " ORDER BY case_index",
                    (run_id,),
                )
            ]
        finally:
            connection.close()
        dataset, created, evaluators, repeat = run
        return EvalReport(run_id, dataset, created, tuple(json.loads(evaluators)), repeat, tuple(cases))


def _result_json(result: EvaluatorResult) -> dict[str, Any]:
    return {
        "value": result.value,
        "outcome": result.outcome.value,
        "reason": result.reason,
        "stddev": result.stddev,
        "passes": result.passes,
        "runs": result.runs,
    }


def _turn_json(turn: TurnResult) -> dict[str, Any]:
    """What a turn's row keeps beside its events: the scores, the error, usage and time."""
    return {
        "scores": {name: [s.value, s.outcome.value, s.reason] for name, s in turn.scores.items()},
        "error": turn.error,
        "usage": [turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.requests],
        "latency_s": turn.latency_s,
    }


def _case(
    index: int,
    case_id: str,
    definition: str,
    scores: str,
    turns: str,
    logged: dict[tuple[int, int, int], list[SessionEvent]],
) -> CaseResult:
    defined = json.loads(definition)
    attempts = tuple(
        tuple(_turn(stored, logged.get((index, a, t), [])) for t, stored in enumerate(attempt))
        for a, attempt in enumerate(json.loads(turns))
    )
    results = {
        name: EvaluatorResult(
            value=r["value"],
            outcome=ScoreOutcome(r["outcome"]),
            reason=r["reason"],
            stddev=r["stddev"],
            passes=r["passes"],
            runs=r["runs"],
        )
        for name, r in json.loads(scores).items()
    }
    return CaseResult(index, case_id, attempts, results, defined["metadata"], defined["case"])


def _turn(stored: dict[str, Any], events: list[SessionEvent]) -> TurnResult:
    input_tokens, output_tokens, requests = stored["usage"]
    return turn_from_events(
        events,
        scores={name: Score(v, ScoreOutcome(o), r) for name, (v, o, r) in stored["scores"].items()},
        error=stored["error"],
        usage=TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens, requests=requests),
        latency_s=stored["latency_s"],
    )


__all__ = ["SqliteTraceSink"]
