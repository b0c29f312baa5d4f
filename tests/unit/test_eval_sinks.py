"""Trace sinks: a run recorded in SQLite or Parquet, read with sqlite3 and pyarrow, loaded, re-scored."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from eval_agents import adder, sums

from helikon import LlmAgent, UserError
from helikon.evals import (
    EvalCase,
    EvalDataset,
    EvalReport,
    EvalRun,
    ExactMatch,
    ParquetTraceSink,
    SqliteTraceSink,
    ToolUseTrajectory,
)
from helikon.testing import MockModel, text_turn

Sink = SqliteTraceSink | ParquetTraceSink


def make_sink(kind: str, tmp_path: Path) -> Sink:
    return SqliteTraceSink(tmp_path / "evals.db") if kind == "sqlite" else ParquetTraceSink(tmp_path / "runs")


def recorded(sink: Sink, dataset: EvalDataset, *, repeat: int = 1, evaluators: bool = True) -> EvalReport:
    builder = EvalRun.builder().dataset(dataset).agent_factory(adder).repeat(repeat).sink(sink)
    if evaluators:
        builder = builder.evaluator(ExactMatch()).evaluator(ToolUseTrajectory.in_order())
    return builder.build().run_sync()


def mixed() -> EvalDataset:
    """Three sums, a failing one (wrong expectation) and one whose agent cannot be built."""
    lines = [json.dumps(c) for c in (*(c.to_json() for c in sums(3)),)]
    lines.append(json.dumps({"id": "wrong", "input": "1+1", "expected": "3", "metadata": {"tag": "off"}}))
    lines.append(json.dumps({"id": "broken", "input": "one+two"}))
    return EvalDataset.from_jsonl_str("\n".join(lines), name="mixed")


@pytest.mark.parametrize("kind", ["sqlite", "parquet"])
def test_a_loaded_run_equals_the_run_that_was_recorded(kind: str, tmp_path: Path) -> None:
    sink = make_sink(kind, tmp_path)
    report = recorded(sink, mixed(), repeat=2)
    assert [c.outcome.value for c in report.cases] == ["passed", "passed", "passed", "failed", "failed"]
    loaded = asyncio.run(sink.load(report.run_id))
    assert loaded == report  # every turn's input, answer and tool calls rebuilt from its stored events
    assert loaded.cases[4].attempts[0][0].input == "one+two" and "raised" in (loaded.cases[4].error or "")
    assert asyncio.run(sink.runs()) == [report.run_id]


@pytest.mark.parametrize("kind", ["sqlite", "parquet"])
def test_rescoring_a_stored_run_equals_scoring_a_fresh_one(kind: str, tmp_path: Path) -> None:
    sink = make_sink(kind, tmp_path)
    report = recorded(sink, sums(4), evaluators=False)
    stricter = ToolUseTrajectory.exact(match="name_and_args")
    rescored = asyncio.run(asyncio.run(sink.load(report.run_id)).rescore([ExactMatch(), stricter]))
    fresh = (
        EvalRun.builder()
        .dataset(sums(4))
        .agent_factory(adder)
        .evaluator(ExactMatch())
        .evaluator(stricter)
        .build()
        .run_sync()
    )
    assert rescored.evaluators == fresh.evaluators
    assert [c.scores for c in rescored.cases] == [c.scores for c in fresh.cases]


@pytest.mark.parametrize("kind", ["sqlite", "parquet"])
def test_a_run_is_recorded_once_and_the_first_record_is_kept(kind: str, tmp_path: Path) -> None:
    sink = make_sink(kind, tmp_path)
    first = recorded(sink, sums(2))
    second = recorded(sink, sums(1))
    with pytest.raises(UserError, match="is already recorded"):
        asyncio.run(sink.record(first, {}))
    assert asyncio.run(sink.load(first.run_id)) == first
    assert asyncio.run(sink.runs()) == [first.run_id, second.run_id]
    with pytest.raises(UserError, match="no eval run 'nope'"):
        asyncio.run(sink.load("nope"))


def test_sqlite_tables_hold_canonical_events(tmp_path: Path) -> None:
    sink = SqliteTraceSink(tmp_path / "evals.db")
    recorded(sink, sums(3))
    with sqlite3.connect(tmp_path / "evals.db") as db:
        kinds = [
            row[0] for row in db.execute("SELECT type FROM eval_events WHERE case_index = 0 ORDER BY seq")
        ]
        assert kinds == ["user_message", "tool_called", "tool_returned", "assistant_message"]
        assert db.execute("SELECT count(*) FROM eval_cases").fetchone() == (3,)
        stored = json.loads(
            db.execute(
                "SELECT event FROM eval_events WHERE type = 'tool_called' AND case_index = 1"
            ).fetchone()[0]
        )
        assert stored["name"] == "add" and stored["args"] == {"a": 1, "b": 1}


def test_parquet_files_are_flat_and_read_with_pyarrow(tmp_path: Path) -> None:
    sink = ParquetTraceSink(tmp_path / "runs")
    report = recorded(sink, mixed())
    events_path, scores_path = sink.files(report.run_id)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(
        [events_path.name, scores_path.name]
    )
    events = pq.read_table(events_path)
    assert events.schema.field("event").type == pa.string() and events.schema.field("seq").type == pa.int32()
    first = [r for r in events.to_pylist() if r["case_id"] == "s0"]
    assert [r["type"] for r in first] == ["user_message", "tool_called", "tool_returned", "assistant_message"]
    assert json.loads(first[1]["event"])["args"] == {"a": 0, "b": 0}
    scores = pq.read_table(scores_path)
    assert all(not pa.types.is_nested(f.type) for f in scores.schema)  # flat: a dataframe reads it as is
    rows = {(r["case_id"], r["evaluator"]): r for r in scores.to_pylist()}
    wrong = rows[("wrong", "exact_match")]
    assert (wrong["outcome"], wrong["value"], json.loads(wrong["metadata"])) == (
        "failed",
        0.0,
        {"tag": "off"},
    )
    assert rows[("broken", None)]["error"]  # no evaluator scored it.startswith("building the case's agent")
    header = json.loads(scores.schema.metadata[b"helikon.eval_run"])
    assert header["dataset"] == "mixed" and header["evaluators"] == list(report.evaluators)


def test_a_parquet_turn_no_evaluator_scored_keeps_its_usage(tmp_path: Path) -> None:
    sink = ParquetTraceSink(tmp_path)
    report = recorded(sink, sums(2), evaluators=False)
    rows = pq.read_table(sink.files(report.run_id)[1]).to_pylist()
    assert [(r["case_id"], r["evaluator"], r["requests"]) for r in rows] == [("s0", None, 2), ("s1", None, 2)]
    assert asyncio.run(sink.load(report.run_id)) == report


def test_parquet_refuses_a_run_id_that_is_no_file_name(tmp_path: Path) -> None:
    sink = ParquetTraceSink(tmp_path / "runs")
    for bad in ("../escape", "a/b", ".hidden", ""):
        with pytest.raises(UserError, match="cannot name a file"):
            asyncio.run(sink.load(bad))
    assert not (tmp_path / "escape-scores.parquet").exists()


def test_parquet_says_which_file_is_missing_or_foreign(tmp_path: Path) -> None:
    sink = ParquetTraceSink(tmp_path)
    report = recorded(sink, sums(1))
    events_path, scores_path = sink.files(report.run_id)
    events_path.unlink()
    with pytest.raises(UserError, match=r"its events file .* is missing"):
        asyncio.run(sink.load(report.run_id))
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other-scores.parquet")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other-events.parquet")
    with pytest.raises(UserError, match="is not an eval run's scores file"):
        asyncio.run(sink.load("other"))
    assert scores_path.exists()


def test_a_multi_turn_case_round_trips_through_both_sinks(tmp_path: Path) -> None:
    case = EvalCase.from_json(
        {"id": "chat", "turns": [{"input": "hi", "expected": "Hello."}, {"input": "bye", "expected": "Bye."}]}
    )

    def agent_for(_: EvalCase) -> LlmAgent[None, str]:
        return LlmAgent(name="c", model=MockModel.with_scripts([text_turn("Hello."), text_turn("Bye!")]))

    for sink in (make_sink("sqlite", tmp_path), make_sink("parquet", tmp_path)):
        report = (
            EvalRun.builder()
            .dataset(EvalDataset((case,)))
            .agent_factory(agent_for)
            .evaluator(ExactMatch())
            .sink(sink)
            .build()
            .run_sync()
        )
        loaded = asyncio.run(sink.load(report.run_id))
        assert loaded == report
        assert [t.output for t in loaded.cases[0].attempts[0]] == ["Hello.", "Bye!"]
        assert loaded.cases[0].scores["exact_match"].value == 0.5
