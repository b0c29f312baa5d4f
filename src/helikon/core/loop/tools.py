"""The tool part of the loop's vocabulary: how one call ended, and a turn's results.

`ToolResults` is the `TransitionInput` that answers `ExecuteTools`: one `ToolCallOutcome`
per call, in call order. `helikon.core.loop` re-exports every name; `transition` there
turns the outcomes into `ToolResult` items and `ToolOutputItem` events.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._internal.carrier import carrier
from .._internal.json_value import JsonObject
from ..approvals import PendingApproval
from ..events import SubRun, TokenUsage
from ..items import ContentPart, ToolResult

ToolStatus: TypeAlias = Literal["ok", "error", "invalid_args", "denied", "retry", "fatal", "pending"]
"""`retry`: the tool raised `ModelRetry`; `fatal`: the call fails the run (a `fail_run` timeout);
`pending`: the call waits for people's decisions (`pending` says which), the run pauses."""

TOOL_DENIED_PREFIX = "Error: the tool refused the call: "
"""What the model reads before the reason of a tool's `ToolError.Denied`."""


@carrier
class ToolCallOutcome:
    """How one tool call ended."""

    call_id: str
    name: str
    content: tuple[ContentPart, ...]
    status: ToolStatus = "ok"
    max_retries: int = 1
    """How often in the run the model may be sent back to correct this tool (`invalid_args`, `retry`)."""
    metadata: JsonObject | None = None
    """The tool's `ToolOutput.metadata` (what a UI shows; the model never sees it)."""
    usage: TokenUsage | None = None
    """What the call spent on models (`ToolContext.add_usage`, e.g. an agent-tool): the run adds it."""
    pending: tuple[PendingApproval, ...] = ()
    """For a `pending` call: the approvals it waits for (several: a sub-agent's calls)."""
    sub_runs: tuple[SubRun, ...] = ()
    """For a call of a sub-agent that paused: its run (and those it nests), to resume them."""

    def to_result(self) -> ToolResult:
        """The `ToolResult` item the model sees."""
        return ToolResult(
            call_id=self.call_id, content=self.content, is_error=self.status != "ok", name=self.name
        )


@carrier
class ToolResults:
    """Every tool call of a turn has ended (outcomes in call order)."""

    type: Literal["tool_results"] = "tool_results"
    outcomes: tuple[ToolCallOutcome, ...]


__all__ = ["TOOL_DENIED_PREFIX", "ToolCallOutcome", "ToolResults", "ToolStatus"]
