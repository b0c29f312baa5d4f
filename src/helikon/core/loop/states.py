"""The loop's phases: the `LoopState` variants (the output phases are in `output`).

`helikon.core.loop` re-exports every name.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._internal.carrier import carrier
from ..approvals import PendingApproval
from ..events import TokenUsage
from ..items import Item, ToolCall
from .output import CheckingOutput, Done, Failed, Finalizing, RepairingOutput


@carrier
class CallingModel:
    """About to call (or calling) the model for `turn`."""

    type: Literal["calling_model"] = "calling_model"
    turn: int
    usage: TokenUsage = TokenUsage()
    args_retried: tuple[str, ...] = ()
    """Tools the model was sent back to correct (invalid arguments, `ModelRetry`): a name per correction."""
    output_retried: int = 0
    """How often the final output was sent back so far (see `TransitionCtx.output_retries`)."""


@carrier
class ExecutingTools:
    """The model asked for `calls` in `turn`; they run concurrently."""

    type: Literal["executing_tools"] = "executing_tools"
    calls: tuple[ToolCall, ...]
    turn: int
    usage: TokenUsage = TokenUsage()
    args_retried: tuple[str, ...] = ()
    output_retried: int = 0


@carrier
class ApplyingHandoff:
    """The model asked to transfer to `target`: waiting for the handoff to be accepted or refused."""

    type: Literal["applying_handoff"] = "applying_handoff"
    target: str
    call_id: str
    transcript: tuple[Item, ...]
    usage: TokenUsage = TokenUsage()
    calls: tuple[ToolCall, ...] = ()
    """Every tool call of the turn (each gets a result either way)."""
    turn: int = 0
    args_retried: tuple[str, ...] = ()
    turn_start: int = 0
    """Where the turn that hands off starts in `transcript` (what came before is history)."""
    output_retried: int = 0


@carrier
class HandedOff:
    """Control passed to `target`, which continues from `transcript`; this loop is over."""

    type: Literal["handed_off"] = "handed_off"
    target: str
    transcript: tuple[Item, ...]
    usage: TokenUsage = TokenUsage()
    tool_name: str = ""
    """The transfer tool the model called (which of the agent's handoffs this is)."""
    turn_start: int = 0
    """Where the turn that handed off starts in `transcript`."""


@carrier
class Compacting:
    """Reserved: compacting history mid-run (not driven yet)."""

    type: Literal["compacting"] = "compacting"
    turn: int
    usage: TokenUsage = TokenUsage()


@carrier
class NeedsApproval:
    """The run paused: the calls of `turn` wait for decisions on `pending` (see `helikon.core.approvals`).

    `calls` is every call of the turn; the ones not pending have their results. A resumed
    run feeds the outcomes of all of them (`ToolResults`) and goes on as after any tool turn.
    """

    type: Literal["needs_approval"] = "needs_approval"
    calls: tuple[ToolCall, ...]
    pending: tuple[PendingApproval, ...]
    turn: int
    usage: TokenUsage = TokenUsage()
    args_retried: tuple[str, ...] = ()
    output_retried: int = 0


LoopState: TypeAlias = (
    CallingModel
    | ExecutingTools
    | ApplyingHandoff
    | Finalizing
    | RepairingOutput
    | CheckingOutput
    | Compacting
    | NeedsApproval
    | HandedOff
    | Done
    | Failed
)
"""The loop's phase."""


__all__ = [
    "ApplyingHandoff",
    "CallingModel",
    "Compacting",
    "ExecutingTools",
    "HandedOff",
    "LoopState",
    "NeedsApproval",
]
