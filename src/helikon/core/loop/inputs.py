"""What the driver feeds into `transition`: the `TransitionInput` variants.

The tools' (`ToolResults`) and the output checks' (`OutputChecked`, `OutputRetry`) are in
`tools` and `output`.

`helikon.core.loop` re-exports every name.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._internal.carrier import carrier
from ..events import TokenUsage
from ..items import Item
from ..model import FinishReason
from .output import OutputChecked, OutputRetry
from .tools import ToolResults


@carrier
class Start:
    """Seed the loop with the run's input messages."""

    type: Literal["start"] = "start"
    messages: tuple[Item, ...]


@carrier
class ModelResponse:
    """One model turn, aggregated."""

    type: Literal["model_response"] = "model_response"
    items: tuple[Item, ...]
    usage: TokenUsage = TokenUsage()
    finish_reason: FinishReason = "stop"


@carrier
class ModelFailed:
    """The model call raised a `ModelError`."""

    type: Literal["model_failed"] = "model_failed"
    kind: str
    message: str


@carrier
class Continue:
    """Go on from the state the loop is in: a run taken over after its process died.

    Taken in `CallingModel`: the model is called again with the conversation the run had
    (`TurnStarted`, then `CallModel`), as if nothing had happened in between.
    """

    type: Literal["continue"] = "continue"


@carrier
class Cancelled:
    """The run's cancellation token fired (`reason == TIMEOUT_REASON` for a runner timeout)."""

    type: Literal["cancelled"] = "cancelled"
    reason: str | None = None


@carrier
class HandoffAccepted:
    """The handoff may go ahead (the depth allows it, no hook refused it)."""

    type: Literal["handoff_accepted"] = "handoff_accepted"


@carrier
class HandoffRefused:
    """A hook refused the handoff: the model is told why and the agent goes on."""

    type: Literal["handoff_refused"] = "handoff_refused"
    reason: str


@carrier
class HandoffInvalidArgs:
    """The transfer call's arguments do not fit the handoff's `input_type`: the model may fix them once."""

    type: Literal["handoff_invalid_args"] = "handoff_invalid_args"
    errors: tuple[str, ...]


HandoffDecision: TypeAlias = HandoffAccepted | HandoffRefused | HandoffInvalidArgs
"""How the driver answers `ApplyHandoff`."""


TransitionInput: TypeAlias = (
    Start
    | ModelResponse
    | ModelFailed
    | Continue
    | ToolResults
    | Cancelled
    | HandoffAccepted
    | HandoffRefused
    | HandoffInvalidArgs
    | OutputChecked
    | OutputRetry
)
"""What the driver feeds into `transition`."""


__all__ = [
    "Cancelled",
    "Continue",
    "HandoffAccepted",
    "HandoffDecision",
    "HandoffInvalidArgs",
    "HandoffRefused",
    "ModelFailed",
    "ModelResponse",
    "Start",
    "TransitionInput",
]
