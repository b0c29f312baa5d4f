"""The loop's actions (what `transition` asks the driver to do next) and a step's outcome.

`helikon.core.loop` re-exports every name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias

from .._internal.carrier import carrier
from ..events import AgentEvent
from ..items import Item, ToolCall
from ..model import ModelRequest

if TYPE_CHECKING:
    from . import LoopState


@carrier
class CallModel:
    """Call the model with `request`; feed back `ModelResponse` or `ModelFailed`."""

    type: Literal["call_model"] = "call_model"
    request: ModelRequest


@carrier
class ExecuteTools:
    """Run `calls` concurrently; feed back `ToolResults`."""

    type: Literal["execute_tools"] = "execute_tools"
    calls: tuple[ToolCall, ...]


@carrier
class ApplyHandoff:
    """Decide the handoff `ApplyingHandoff` names; feed back a `HandoffDecision`.

    Once accepted, the state is `HandedOff` and the driver runs the target.
    """

    type: Literal["apply_handoff"] = "apply_handoff"


@carrier
class CheckOutput:
    """Run the output validators on `CheckingOutput.output`; feed back `OutputChecked` or `OutputRetry`."""

    type: Literal["check_output"] = "check_output"


@carrier
class Terminate:
    """The state is terminal: stop driving."""

    type: Literal["terminate"] = "terminate"


NextAction: TypeAlias = CallModel | ExecuteTools | ApplyHandoff | CheckOutput | Terminate


@carrier(kw_only=False)
class TransitionOutcome:
    """One step's result."""

    next_state: LoopState
    events: tuple[AgentEvent, ...]
    next_action: NextAction
    conversation_appends: tuple[Item, ...] = ()


__all__ = [
    "ApplyHandoff",
    "CallModel",
    "CheckOutput",
    "ExecuteTools",
    "NextAction",
    "Terminate",
    "TransitionOutcome",
]
