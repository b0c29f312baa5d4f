"""Trace sinks: where a finished eval run is recorded for later (`EvalRunBuilder.sink`).

A sink receives the report and each turn's events, in the canonical stored form of a
session's events (`helikon.core.session.codec`). Two ship: `SqliteTraceSink` (one SQLite
file, any number of runs) and `ParquetTraceSink` (two Parquet files per run, for pandas,
DuckDB or Polars). Both load a run back with each turn's answer and tool calls read from
its events, so a stored run can be scored again with other evaluators
(`EvalReport.rescore`) without running anything. `turn_from_events` is that reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..core.events import TokenUsage
from ..core.items import TextPart
from ..core.session import AssistantMessageEvent, SessionEvent, ToolCalled, ToolReturned, UserMessageEvent
from .report import EvalReport, TurnResult
from .score import Score, ToolCallRecord

TurnEvents = Mapping[tuple[int, int, int], Sequence[SessionEvent]]
"""Each turn's events, by (case index, attempt, turn)."""


@runtime_checkable
class TraceSink(Protocol):
    """Records a finished eval run: its report, and each turn's events as a session logs them."""

    async def record(self, report: EvalReport, events: TurnEvents) -> None:
        """Keep `report` and `events` (called once, when the run is complete)."""
        ...


def turn_from_events(
    events: Sequence[SessionEvent],
    *,
    scores: dict[str, Score],
    error: str | None,
    usage: TokenUsage,
    latency_s: float,
) -> TurnResult:
    """A turn rebuilt from its logged events: its input, last answer, and tool calls with their results."""
    text = next((_text(e.content) for e in events if isinstance(e, UserMessageEvent)), "")
    answers = [_text(e.content) for e in events if isinstance(e, AssistantMessageEvent)]
    results = {e.call_id: e for e in events if isinstance(e, ToolReturned)}
    calls = tuple(
        ToolCallRecord(
            e.name,
            e.args,
            _text(results[e.call_id].content) if e.call_id in results else "",
            results[e.call_id].is_error if e.call_id in results else False,
            e.call_id,
        )
        for e in events
        if isinstance(e, ToolCalled)
    )
    return TurnResult(
        input=text,
        output=answers[-1] if answers else "",
        tool_calls=calls,
        scores=scores,
        error=error,
        usage=usage,
        latency_s=latency_s,
    )


def _text(content: Sequence[Any]) -> str:
    return "".join(p.text for p in content if isinstance(p, TextPart))


__all__ = ["TraceSink", "TurnEvents", "turn_from_events"]
