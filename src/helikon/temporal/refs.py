"""What a durable run's workflow and its activities hand each other: references, never the conversation.

The anchors put the whole conversation in every model activity's input, so Temporal's
history grows with the square of the conversation until its payload limits stop the run.
Here the conversation stays in the session: a model step names the run, the turn and the
step (its worker reads the transcript from the session), a tool step carries its one call,
and a tool's result comes back as a digest of what was stored. What the workflow's
`transition` produced and the session still has to record (`pending`: the model's calls,
its answer) rides along with the next step, small.

Every carrier is versioned with the workflow (`RunSpec.version`); fields are only ever
added, with defaults, so old histories still replay.
"""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal, TypeAlias

from helikon.core._internal.adapter import BY_TYPE
from helikon.core._internal.carrier import carrier
from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.approvals import Approve, Deny, Edit, PendingApproval
from helikon.core.events import AgentError, AgentEvent, ApprovalResolved, TokenUsage
from helikon.core.items import Item, ToolCall
from helikon.core.loop import (
    ApplyingHandoff,
    Cancelled,
    CheckingOutput,
    Done,
    HandoffAccepted,
    HandoffInvalidArgs,
    HandoffRefused,
    ModelFailed,
    ModelResponse,
    OutputChecked,
    OutputRetry,
    ToolCallOutcome,
)
from helikon.core.run.resume_point import Decided, ResumePoint

DRIVER_VERSION = 1
"""The version of the driver's decisions a new run records (`RunSpec.version`)."""

DEFAULT_PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal's default limit on one payload (`limit.blobSize.error`): 2 MiB."""


@carrier
class RunRef:
    """Which run a step belongs to: the agent, its session, the run, what its context is made from."""

    agent: str
    session_id: str
    run_id: str
    max_turns: int | None = None
    """`RunConfig.max_turns` for this run (None: the worker's)."""
    ctx_seed: JsonValue = None
    """What the worker's seeded context factory builds the run's context from."""
    payload_limit: int = DEFAULT_PAYLOAD_LIMIT
    """The server's payload limit: a step's input or result past it fails the run, naming the step."""


@carrier
class RunSpec:
    """The workflow's input: the run, and its new input (recorded by the first step)."""

    run: RunRef
    input: tuple[Annotated[Item, BY_TYPE], ...] = ()
    version: int = DRIVER_VERSION


@carrier
class StepFailed:
    """A step's user code raised (a hook, an instructions function): the run fails with `error`."""

    type: Literal["step_failed"] = "step_failed"
    error: AgentError


@carrier
class ModelTurn:
    """Make the model call of `turn`; record `pending` first."""

    run: RunRef
    step: int
    turn: int
    structured: bool = False
    """Whether the call asks for the output type (the finalizing and repair turns)."""
    pending: tuple[Annotated[AgentEvent, BY_TYPE], ...] = ()
    usage: TokenUsage | None = None
    """The last model call's usage (for the assistant message it answered, if pending holds it)."""


ModelAnswer: TypeAlias = Annotated[ModelResponse | ModelFailed | Cancelled | StepFailed, BY_TYPE]
"""What a model step settles into."""


@carrier
class ToolTurn:
    """Run `call`, one of the calls of `batch` in `turn`; record `pending` (the calls) first."""

    run: RunRef
    step: int
    turn: int
    call: ToolCall
    batch: tuple[str, ...]
    """The call ids of the turn's batch (the session's `ToolsStarted` marker lists them)."""
    pending: tuple[Annotated[AgentEvent, BY_TYPE], ...] = ()
    usage: TokenUsage | None = None
    decided: Decided | None = None
    """For a call of a resumed run: how a person decided it (run with these arguments, ...)."""


@carrier
class ToolAnswer:
    """How a tool step ended: the outcome (its content a digest once stored), or the run's failure."""

    type: Literal["tool_answer"] = "tool_answer"
    outcome: ToolCallOutcome | None = None
    failed: StepFailed | None = None
    stored: bool = True
    """Whether the session has the outcome (a call whose worker died, not retried: it is recorded next)."""


@carrier
class Opened:
    """How a run's start went: `refused` holds the events of a run its hooks or input guardrails refused."""

    refused: tuple[Annotated[AgentEvent, BY_TYPE], ...] = ()
    failed: StepFailed | None = None


@carrier
class CheckTurn:
    """Run the agent's output validators on `state`'s output (`CheckOutput`)."""

    run: RunRef
    step: int
    state: CheckingOutput


CheckAnswer: TypeAlias = Annotated[OutputChecked | OutputRetry | StepFailed, BY_TYPE]
"""What the output validators settle into."""


@carrier
class GuardTurn:
    """Run the agent's output guardrails on `state`'s final answer."""

    run: RunRef
    step: int
    state: Done


@carrier
class Guarded:
    """The output guardrails' verdict: the events that fail the run (none: it completes)."""

    events: tuple[Annotated[AgentEvent, BY_TYPE], ...] = ()
    failed: StepFailed | None = None


@carrier
class HandoffTurn:
    """Decide the transfer `state` names (its transcript left out: the session has it)."""

    run: RunRef
    step: int
    state: ApplyingHandoff


HandoffAnswer: TypeAlias = Annotated[
    HandoffAccepted | HandoffRefused | HandoffInvalidArgs | StepFailed, BY_TYPE
]
"""What a handoff decision settles into."""


@carrier
class DecideRequest:
    """The `helikon.decide` update: decisions on the paused run's requests, by request id."""

    decisions: dict[str, Approve | Deny | Edit] = field(default_factory=lambda: {})
    deny_rest: bool = False
    by: str | JsonObject | None = None
    """Who decided (an `Approver`)."""


@carrier
class DecideTurn:
    """Check and record `request` on the session's paused run (the run's own agent judges the path)."""

    run: RunRef
    request: DecideRequest


@carrier
class DecideAnswer:
    """What a decision did: the decisions recorded, whether the run goes on, what still waits."""

    resolved: tuple[ApprovalResolved, ...] = ()
    ready: bool = False
    still_open: tuple[PendingApproval, ...] = ()
    next_run_id: str = ""
    """The run id of the turn that goes on (once `ready`): its events in the session carry it."""


@carrier
class ResumeTurn:
    """Open the turn that goes on with the paused run, every request decided, as run `run_id`."""

    run: RunRef
    run_id: str
    step: int


@carrier
class Resumed:
    """Where the paused run goes on from (its conversation left out: the session has it)."""

    point: ResumePoint
    agent: str
    depth: int = 0
    failed: StepFailed | None = None


@carrier
class CloseRun:
    """Record `pending` and close the run's turn with `outcome`."""

    run: RunRef
    step: int
    outcome: str
    pending: tuple[Annotated[AgentEvent, BY_TYPE], ...] = ()
    usage: TokenUsage | None = None
    started: bool = True
    """False for a run refused at its start: its `on_run_complete` hooks do not fire."""


@carrier
class RunSummary:
    """The workflow's result: how the run ended (its events are in the session)."""

    outcome: str
    usage: TokenUsage = TokenUsage()
    error: AgentError | None = None


__all__ = [
    "DEFAULT_PAYLOAD_LIMIT",
    "DRIVER_VERSION",
    "CheckAnswer",
    "CheckTurn",
    "CloseRun",
    "DecideAnswer",
    "DecideRequest",
    "DecideTurn",
    "GuardTurn",
    "Guarded",
    "HandoffAnswer",
    "HandoffTurn",
    "ModelAnswer",
    "ModelTurn",
    "Opened",
    "ResumeTurn",
    "Resumed",
    "RunRef",
    "RunSpec",
    "RunSummary",
    "StepFailed",
    "ToolAnswer",
    "ToolTurn",
]
