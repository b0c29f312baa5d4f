"""Evals: run a dataset of cases through an agent, score each with evaluators, report (`evals` extra).

- `EvalDataset` / `EvalCase`: cases from JSONL (one or several turns each).
- Evaluators: `ExactMatch`, `ToolUseTrajectory`, `JsonSchemaEvaluator`, `LlmJudge`, or your own.
- `EvalCase.from_session` and `MockModel.from_session`: a recorded conversation becomes a test.
- `SqliteTraceSink`, `ParquetTraceSink`: runs kept with their events; `EvalReport.rescore`, `compare`.
- `EvalRun.builder()`: which agent, how many at once, how many times; `run()` gives an `EvalReport`.
- `EvalReport`: JSON in and out, `passed()`, `summary()`, `render_table()`.

Example:
    ```python
    from helikon import LlmAgent, tool
    from helikon.evals import EvalDataset, EvalRun, ExactMatch, ToolUseTrajectory
    from helikon.testing import MockModel, text_turn, tool_call_turn

    @tool
    def weather(city: str) -> str:
        \"\"\"The weather in a city.\"\"\"
        return "sunny"

    line = '{"input": "Paris?", "expected": "Sunny.", "expected_tools": ["weather"]}'
    data = EvalDataset.from_jsonl_str(line)
    scripts = [tool_call_turn("weather", {"city": "Paris"}), text_turn("Sunny.")]

    def agent_for(case: object) -> LlmAgent:  # a fresh scripted model per case
        return LlmAgent(name="w", model=MockModel.with_scripts(scripts), tools=[weather])

    report = (
        EvalRun.builder()
        .dataset(data)
        .agent_factory(agent_for)
        .evaluator(ExactMatch())
        .evaluator(ToolUseTrajectory.exact())
        .build()
        .run_sync()
    )
    assert report.passed()
    ```
"""

from .compare import Change, ChangeKind, Comparison
from .dataset import DatasetError, EvalCase, EvalDataset, EvalTurn, ExpectedTool
from .evaluators import ExactMatch, JsonSchemaEvaluator
from .judge import LlmJudge, Verdict
from .parquet_sink import ParquetTraceSink
from .report import CaseResult, EvalReport, EvaluatorResult, EvaluatorSummary, TurnResult
from .run import AgentFactory, ContextFactory, EvalRun, EvalRunBuilder
from .score import CaseOutcome, Evaluator, Score, ScoreOutcome, ToolCallRecord
from .sinks import TraceSink, TurnEvents
from .sqlite_sink import SqliteTraceSink
from .trajectory import CallPredicate, MatchMode, Order, ToolUseTrajectory

__all__ = [
    "AgentFactory",
    "Change",
    "ChangeKind",
    "Comparison",
    "CallPredicate",
    "CaseOutcome",
    "CaseResult",
    "ContextFactory",
    "DatasetError",
    "EvalCase",
    "EvalDataset",
    "EvalReport",
    "EvalRun",
    "EvalRunBuilder",
    "EvalTurn",
    "EvaluatorResult",
    "EvaluatorSummary",
    "Evaluator",
    "ExactMatch",
    "ExpectedTool",
    "JsonSchemaEvaluator",
    "LlmJudge",
    "MatchMode",
    "Order",
    "ParquetTraceSink",
    "Score",
    "ScoreOutcome",
    "SqliteTraceSink",
    "ToolCallRecord",
    "ToolUseTrajectory",
    "TraceSink",
    "TurnEvents",
    "TurnResult",
    "Verdict",
]
