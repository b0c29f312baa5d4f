"""`ResumePoint`: where a stopped run goes on from, as its session's log tells it.

A run stops in two ways a later process can go on from: it paused for approval (the
decisions are in), or its process died mid-turn. The session layer builds the point from
the log (`helikon.core.session.resume`, `helikon.core.session.interrupted`); the driver
(`driver.resume`) settles the turn's calls as decided and continues the loop from there,
as if the run had never stopped.
"""

from __future__ import annotations

from typing import Literal

from .._internal.carrier import carrier
from .._internal.json_value import JsonValue
from ..items import Item, TextPart, ToolCall
from ..loop import CallingModel, ExecutingTools, NeedsApproval, ToolCallOutcome, ToolResults


@carrier
class Decided:
    """How one call of the turn is settled as the run goes on.

    `run`: a person approved it, run it with `args` (asked nothing again); `call`: it never
    started, run it as any call (every check applies); `deny`: a person said no (`reason`);
    `unknown`: it started before the process died and never returned, so it is not run
    again (the model reads `reason`, crash repair's "outcome unknown" text); `resume`: an
    agent called as a tool whose run paused goes on with it (`sub`).
    """

    kind: Literal["run", "call", "deny", "unknown", "resume"]
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
    """A stopped run, ready to go on.

    Attributes:
        state: The loop as it stopped: paused for approval (`NeedsApproval`), in a tool turn
            (`ExecutingTools`), or before a model call (`CallingModel`).
        conversation: The run's conversation up to the turn's tool calls (their results not
            included: the resumed step adds every result in call order).
        done: The outcomes of the turn's calls that the log has, by call id.
        decided: How each other call of the turn is settled, by call id.
        checks_input: The run's own input, when it stopped before its first model answer:
            the input guardrails and the run-start hooks see it again, as they would have.
    """

    state: NeedsApproval | ExecutingTools | CallingModel
    conversation: tuple[Item, ...]
    done: dict[str, ToolCallOutcome]
    decided: dict[str, Decided]
    checks_input: tuple[Item, ...] = ()

    def settled(self, call: ToolCall) -> ToolCallOutcome:
        """The outcome of a call not run as the run goes on: denied, or of unknown outcome."""
        decided = self.decided[call.call_id]
        reason = decided.reason
        if decided.kind == "unknown":
            text = reason
        else:
            text = "Error: not run: a person denied the call" + (f": {reason}" if reason else ".")
        return ToolCallOutcome(
            call_id=call.call_id, name=call.name, content=(TextPart(text=text),), status="error"
        )

    def results(self, ran: dict[str, ToolCallOutcome]) -> ToolResults:
        """Every call's outcome in call order: logged before, settled as decided, or `ran` now."""
        outcomes: list[ToolCallOutcome] = []
        for call in self.state.calls if not isinstance(self.state, CallingModel) else ():
            call_id = call.call_id
            outcome = self.done.get(call_id) or ran.get(call_id)
            outcomes.append(outcome if outcome is not None else self.settled(call))
        return ToolResults(outcomes=tuple(outcomes))


__all__ = ["Decided", "ResumePoint", "SubResume"]
