"""The worker's steps as Temporal activities, each named `helikon.<step>`.

Each wraps a `WorkerSteps` method: it heartbeats while the step runs when the workflow
asked for heartbeats, and turns what can go wrong into what Temporal should do with it:
a result over the server's payload limit, an unknown agent or any other `UserError` fail
the step for good (retrying cannot help); a busy session or an unreachable store are
retried with the step's backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from helikon.core.approvals import ApprovalError
from helikon.core.exceptions import UserError

from .refs import (
    CheckAnswer,
    CheckTurn,
    CloseRun,
    DecideAnswer,
    DecideTurn,
    Guarded,
    GuardTurn,
    HandoffAnswer,
    HandoffTurn,
    ModelAnswer,
    ModelTurn,
    Opened,
    Resumed,
    ResumeTurn,
    RunRef,
    RunSpec,
    ToolAnswer,
    ToolTurn,
)
from .size import over_limit
from .worker_steps import WorkerSteps

T = TypeVar("T")

OPEN_RUN = "helikon.open_run"
CALL_MODEL = "helikon.call_model"
INVOKE_TOOL = "helikon.invoke_tool"
CLOSE_RUN = "helikon.close_run"
CHECK_OUTPUT = "helikon.check_output"
GUARD_OUTPUT = "helikon.guard_output"
HAND_OFF = "helikon.hand_off"
DECIDE = "helikon.decide"
RESUME_RUN = "helikon.resume_run"

FINAL_ERRORS = ("UserError", "PayloadsTooLarge", "PayloadSizeError", "StepTooLarge")
"""The failure types a step is never retried on (`PayloadSizeError`: temporalio before 1.31)."""


class StepActivities:
    """The activities of one worker, over its `WorkerSteps`."""

    __slots__ = ("steps",)

    def __init__(self, steps: WorkerSteps) -> None:
        self.steps = steps

    @activity.defn(name=OPEN_RUN)
    async def open_run(self, spec: RunSpec) -> Opened:
        """Open the run's turn in its session (`WorkerSteps.open_run`)."""
        return await _performed(self.steps.open_run(spec))

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, turn: ModelTurn) -> ModelAnswer:
        """One model turn (`WorkerSteps.call_model`); an answer too large for history fails it."""
        answer = await _performed(self.steps.call_model(turn))
        return _within_limit(answer, turn.run, f"the answer of the model call of turn {turn.turn}")

    @activity.defn(name=INVOKE_TOOL)
    async def invoke_tool(self, turn: ToolTurn) -> ToolAnswer:
        """One tool call (`WorkerSteps.invoke_tool`, told which attempt this is)."""
        answer = await _performed(self.steps.invoke_tool(turn, activity.info().attempt))
        return _within_limit(
            answer, turn.run, f"the outcome of tool {turn.call.name!r} (call {turn.call.call_id})"
        )

    @activity.defn(name=CHECK_OUTPUT)
    async def check_output(self, turn: CheckTurn) -> CheckAnswer:
        """The output validators (`WorkerSteps.check_output`)."""
        return await _performed(self.steps.check_output(turn))

    @activity.defn(name=GUARD_OUTPUT)
    async def guard_output(self, turn: GuardTurn) -> Guarded:
        """The output guardrails (`WorkerSteps.guard_output`)."""
        return await _performed(self.steps.guard_output(turn))

    @activity.defn(name=HAND_OFF)
    async def hand_off(self, turn: HandoffTurn) -> HandoffAnswer:
        """The handoff decision (`WorkerSteps.hand_off`)."""
        return await _performed(self.steps.hand_off(turn))  # pyright: ignore[reportReturnType]

    @activity.defn(name=DECIDE)
    async def decide(self, turn: DecideTurn) -> DecideAnswer:
        """Check and record decisions on the paused run (`WorkerSteps.decide`)."""
        return await _performed(self.steps.decide(turn))

    @activity.defn(name=RESUME_RUN)
    async def resume_run(self, turn: ResumeTurn) -> Resumed:
        """Open the turn that goes on with the paused run (`WorkerSteps.resume_run`)."""
        return await _performed(self.steps.resume_run(turn))

    @activity.defn(name=CLOSE_RUN)
    async def close_run(self, close: CloseRun) -> None:
        """Close the run's turn (`WorkerSteps.close_run`)."""
        await _performed(self.steps.close_run(close))

    def all(self) -> list[Any]:
        """The activities to register with a worker."""
        return [
            self.open_run,
            self.call_model,
            self.invoke_tool,
            self.check_output,
            self.guard_output,
            self.hand_off,
            self.decide,
            self.resume_run,
            self.close_run,
        ]


async def _performed(step: Awaitable[T]) -> T:
    """Run `step`, heartbeating meanwhile if asked; a `UserError` fails it for good."""
    interval = activity.info().heartbeat_timeout
    beating = None if not interval else asyncio.ensure_future(_heartbeat(interval.total_seconds() / 2))
    try:
        return await step
    except ApprovalError as exc:  # named by its class: the runner raises the same one
        raise ApplicationError(str(exc), exc.request_id, type=type(exc).__name__, non_retryable=True) from exc
    except UserError as exc:
        raise ApplicationError(str(exc), type="UserError", non_retryable=True) from exc
    finally:
        if beating is not None:
            beating.cancel()


async def _heartbeat(every: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(every)


def _within_limit(answer: T, run: RunRef, what: str) -> T:
    """`answer`, or a step failed for good when it is over the server's payload limit.

    Checked here, where the message can name the step: Temporal would refuse it anyway
    (`PayloadsTooLarge`), but retry it first under the default policy.
    """
    size = over_limit(answer, run.payload_limit)
    if size is None:
        return answer
    raise ApplicationError(
        f"{what} is {size} bytes, over the Temporal server's payload limit of {run.payload_limit} bytes: "
        "it cannot go into the workflow's history",
        type="StepTooLarge",
        non_retryable=True,
    )


__all__ = [
    "CALL_MODEL",
    "CHECK_OUTPUT",
    "CLOSE_RUN",
    "DECIDE",
    "FINAL_ERRORS",
    "GUARD_OUTPUT",
    "HAND_OFF",
    "INVOKE_TOOL",
    "OPEN_RUN",
    "RESUME_RUN",
    "StepActivities",
]
