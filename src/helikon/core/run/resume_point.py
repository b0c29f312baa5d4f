"""`ResumePoint`: where a paused run goes on from, as its session's log tells it.

Built by the session layer (`helikon.core.session.paused`) from the log and the decisions;
the driver (`driver.resume`) runs what was decided and continues the loop from there, as if
the run had never stopped.
"""

from __future__ import annotations

from typing import Literal

from .._internal.carrier import carrier
from .._internal.json_value import JsonValue
from ..items import Item, TextPart, ToolCall
from ..loop import NeedsApproval, ToolCallOutcome, ToolResults


@carrier
class Decided:
    """What was decided for one call of the paused turn.

    `run` it with `args`; `deny` it (`reason`); or, for an agent called as a tool whose run
    paused, `resume` that run (`sub`) with the decisions on its own calls.
    """

    kind: Literal["run", "deny", "resume"]
    args: JsonValue = None
    reason: str = ""
    sub: SubResume | None = None


@carrier
class SubResume:
    """A sub-agent's paused run (called as a tool), ready to go on: `point` is where, `agent` whose."""

    agent: str
    point: ResumePoint


@carrier
class ResumePoint:
    """A paused run, ready to go on.

    Attributes:
        state: The loop as it paused: the turn's calls, what is pending, the turn and usage.
        conversation: The run's conversation up to the turn's tool calls (their results not
            included: the resumed step adds every result in call order).
        done: The outcomes of the turn's calls that ran before the pause, by call id.
        decided: The decisions on the pending calls, by call id.
    """

    state: NeedsApproval
    conversation: tuple[Item, ...]
    done: dict[str, ToolCallOutcome]
    decided: dict[str, Decided]

    def denied(self, call: ToolCall) -> ToolCallOutcome:
        """The outcome of a call a person denied: the model reads why."""
        reason = self.decided[call.call_id].reason
        text = "Error: not run: a person denied the call" + (f": {reason}" if reason else ".")
        return ToolCallOutcome(
            call_id=call.call_id, name=call.name, content=(TextPart(text=text),), status="error"
        )

    def results(self, ran: dict[str, ToolCallOutcome]) -> ToolResults:
        """Every call's outcome in call order: run before the pause, denied, or `ran` now."""
        outcomes: list[ToolCallOutcome] = []
        for call in self.state.calls:
            call_id = call.call_id
            outcome = self.done.get(call_id) or ran.get(call_id)
            outcomes.append(outcome if outcome is not None else self.denied(call))
        return ToolResults(outcomes=tuple(outcomes))


__all__ = ["Decided", "ResumePoint", "SubResume"]
