"""`AgentRunWorkflow`: one agent run as a Temporal workflow, stepped by the `DurableDriver`.

The workflow owns the loop's state and nothing else; each step is an activity
(`helikon.open_run`, `helikon.call_model`, one `helikon.invoke_tool` per call,
`helikon.close_run`). Before a step is scheduled its input's encoded size is checked against
the server's payload limit: past it, Temporal would fail the workflow task and retry it
forever (the run would hang), so the run fails instead, naming the step. A step that fails
for good (its retries spent, a result too large, a `UserError`) fails the run the same way,
and the run's turn is still closed in the session.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as StepTimedOut
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from helikon.core.approvals import PendingApproval
    from helikon.core.events import AgentError
    from helikon.core.items import TextPart
    from helikon.core.loop import ToolCallOutcome, TransitionInput

    from .activities import (
        CALL_MODEL,
        CHECK_OUTPUT,
        CLOSE_RUN,
        DECIDE,
        FINAL_ERRORS,
        GUARD_OUTPUT,
        HAND_OFF,
        INVOKE_TOOL,
        OPEN_RUN,
        RESUME_RUN,
    )
    from .durable_driver import AgentShape, DurableDriver
    from .refs import (
        CheckAnswer,
        CheckTurn,
        CloseRun,
        DecideAnswer,
        DecideRequest,
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
        RunSpec,
        RunSummary,
        StepFailed,
        ToolAnswer,
        ToolTurn,
    )
    from .served import Served, StepOptions, served_for
    from .size import over_limit

WORKFLOW_NAME = "helikon.AgentRun"
REASON_SIGNAL = "helikon.cancel_reason"
DECIDE_UPDATE = "helikon.decide"
STATUS_QUERY = "helikon.status"
APPROVAL_ERRORS = (
    "NothingToResume",
    "UnknownApprovalRequest",
    "ApprovalDigestMismatch",
    "ApprovalAlreadyDecided",
    "ApprovalExpired",
    "ApprovalTargetMissing",
    "ApprovalToolChanged",
    "InvalidEditedArgs",
)
"""The `ApprovalError`s a decision step fails with: never retried, raised to the caller as they are."""

NOT_RETRIED_TEXT = (
    "This tool call's outcome is unknown: the worker running it stopped, and the tool is not run "
    "twice (max_attempts=1). It may or may not have taken effect; check before repeating it."
)


@workflow.defn(name=WORKFLOW_NAME)
class AgentRunWorkflow:
    """One run of a served agent on its session, from its input to its closed turn."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.spec: RunSpec | None = None
        self.status = RunSummary(outcome="running")
        self.ready = False  # every request of the pause is decided: the run goes on
        self.options = StepOptions()
        self.resumes = 0  # how often the run went on after a pause

    @workflow.signal(name=REASON_SIGNAL)
    def cancel_reason(self, reason: str) -> None:
        """Why the cancel that follows is made (a runner's timeout says `TIMEOUT_REASON`)."""
        self.reason = reason

    @workflow.query(name=STATUS_QUERY)
    def run_status(self) -> RunSummary:
        """How the run stands: `running`, `paused` (with what it spent), or how it ended."""
        return self.status

    @workflow.update(name=DECIDE_UPDATE)
    async def decide(self, request: DecideRequest) -> DecideAnswer:
        """Decide the paused run's requests (checked and recorded by the worker, as in process).

        Once every request is decided the run goes on, in a turn whose run id the answer names.
        """
        answer = await self.record_decisions(request)
        if answer.ready:
            self.ready = True
            assert self.spec is not None
            answer = replace(answer, next_run_id=f"{self.spec.run.run_id}.{self.resumes + 1}")
        return answer

    @decide.validator
    def _paused_only(self, request: DecideRequest) -> None:
        if self.status.outcome != "paused" or self.ready:
            raise ApplicationError(
                f"the session's durable run is {self.status.outcome if not self.ready else 'resuming'}, "
                "not paused: nothing waits for a decision",
                type="NothingToResume",
            )

    async def record_decisions(self, request: DecideRequest) -> DecideAnswer:
        """The `helikon.decide` step: the decisions checked against the log and recorded."""
        assert self.spec is not None
        try:
            return await workflow.execute_activity(
                DECIDE,
                DecideTurn(run=self.spec.run, request=request),
                result_type=DecideAnswer,
                **_step_options(self.options, self.options.step_timeout),
            )
        except ActivityError as exc:  # an ApprovalError: the update fails with it, nothing recorded
            cause = exc.cause
            if isinstance(cause, ApplicationError):
                raise ApplicationError(cause.message, *cause.details, type=cause.type) from exc
            raise

    @workflow.run
    async def run(self, spec: RunSpec) -> RunSummary:
        """Drive the run to its end; how it ended (its events are in the session)."""
        self.spec = spec
        served = _served(spec)
        self.options = served.options
        config = served.config
        if spec.run.max_turns is not None:
            config = replace(config, max_turns=spec.run.max_turns)

        def shape(name: str, depth: int) -> AgentShape:
            return AgentShape.of(served.agents[name], config, depth)  # a handoff target is served too

        port = _ActivityPort(spec, served.options, self)
        self.status = summary = await DurableDriver(spec, shape, port, config.parallel_tool_call_limit).run()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return summary


def _served(spec: RunSpec) -> Served:
    queue = workflow.info().task_queue
    served = served_for(queue, spec.run.agent)
    if served is None:
        raise ApplicationError(
            f"no worker in this process serves agent {spec.run.agent!r} on task queue {queue!r}",
            type="UserError",
            non_retryable=True,
        )
    return served


class _ActivityPort:
    """The driver's steps as activities, each checked for size before it is scheduled."""

    __slots__ = ("limit", "options", "spec", "workflow")

    def __init__(self, spec: RunSpec, options: StepOptions, run: AgentRunWorkflow) -> None:
        self.spec = spec
        self.options = options
        self.limit = spec.run.payload_limit
        self.workflow = run

    def cancel_reason(self) -> str | None:
        return self.workflow.reason

    def paused(self, summary: RunSummary) -> None:
        self.workflow.status = summary

    async def wait_for_decisions(self, pending: tuple[PendingApproval, ...]) -> None:
        run = self.workflow
        while not run.ready:
            due = [p.expires for p in pending if p.expires is not None and p.on_expire == "deny"]
            timeout = None if not due else max(0.0, min(due) - workflow.now().timestamp())
            try:
                await workflow.wait_condition(lambda: run.ready, timeout=timeout)
            except TimeoutError:  # a durable timer: the expired requests are denied by their expiry
                if (await run.record_decisions(DecideRequest())).ready:
                    run.ready = True
                else:
                    pending = tuple(p for p in pending if not p.expired(workflow.now().timestamp()))
        run.ready = False
        run.resumes += 1
        run.status = RunSummary(outcome="running", usage=run.status.usage)

    async def resume_run(self, turn: ResumeTurn) -> Resumed:
        try:
            return await workflow.execute_activity(
                RESUME_RUN,
                turn,
                result_type=Resumed,
                activity_id=f"{turn.step}:resume",
                **self._options(self.options.step_timeout, busy=True),
            )
        except ActivityError as exc:  # the log changed under the paused run: it cannot go on
            raise ApplicationError(_step_failed("the resume", exc).error.message, non_retryable=True) from exc

    async def open_run(self, spec: RunSpec) -> Opened:
        too_big = self._too_big(spec, "the run's input")
        if too_big is not None:
            raise ApplicationError(too_big.error.message, type="StepTooLarge", non_retryable=True)
        try:
            return await workflow.execute_activity(
                OPEN_RUN,
                spec,
                result_type=Opened,
                activity_id="open",
                **self._options(self.options.step_timeout, busy=True),
            )
        except ActivityError as exc:  # nothing was written: the workflow fails, saying why
            raise ApplicationError(
                _step_failed("the run's start", exc).error.message, non_retryable=True
            ) from exc

    async def call_model(self, turn: ModelTurn) -> TransitionInput | StepFailed:
        what = f"the model call of turn {turn.turn}"
        timeout = self.options.model_timeout
        return await self._step(CALL_MODEL, turn, ModelAnswer, what, timeout, f"{turn.step}:model")

    async def invoke_tool(self, turn: ToolTurn) -> ToolAnswer:
        what = f"tool {turn.call.name!r} (call {turn.call.call_id})"
        too_big = self._too_big(turn, what)
        if too_big is not None:
            return ToolAnswer(failed=too_big)
        attempts = self.options.tool_attempts.get(turn.call.name, self.options.max_attempts)
        options = self._options(self.options.tool_timeout)
        options["retry_policy"] = replace(options["retry_policy"], maximum_attempts=attempts)
        try:
            return await workflow.execute_activity(
                INVOKE_TOOL,
                turn,
                result_type=ToolAnswer,
                activity_id=f"{turn.step}:tool:{turn.call.call_id}",
                **options,
            )
        except ActivityError as exc:
            if attempts == 1 and isinstance(exc.cause, StepTimedOut):  # its worker died: not run again
                unknown = ToolCallOutcome(
                    call_id=turn.call.call_id,
                    name=turn.call.name,
                    content=(TextPart(text=NOT_RETRIED_TEXT),),
                    status="error",
                )
                return ToolAnswer(outcome=unknown, stored=False)
            return ToolAnswer(failed=_step_failed(what, exc))

    async def check_output(self, turn: CheckTurn) -> TransitionInput | StepFailed:
        timeout, activity_id = self.options.step_timeout, f"{turn.step}:check_output"
        return await self._step(
            CHECK_OUTPUT, turn, CheckAnswer, "the output validators", timeout, activity_id
        )

    async def hand_off(self, turn: HandoffTurn) -> TransitionInput | StepFailed:
        what = f"the handoff to {turn.state.target!r}"
        timeout, activity_id = self.options.step_timeout, f"{turn.step}:hand_off"
        return await self._step(HAND_OFF, turn, HandoffAnswer, what, timeout, activity_id)

    async def guard_output(self, turn: GuardTurn) -> Guarded:
        timeout, activity_id = self.options.step_timeout, f"{turn.step}:guard"
        answer = await self._step(GUARD_OUTPUT, turn, Guarded, "the output guardrails", timeout, activity_id)
        return Guarded(failed=answer) if isinstance(answer, StepFailed) else answer

    async def _step(
        self, name: str, arg: object, result_type: object, what: str, limit: timedelta, activity_id: str
    ) -> Any:
        """Schedule step `name` with `arg` (checked for size first); its answer, or how it failed."""
        too_big = self._too_big(arg, what)
        if too_big is not None:
            return too_big
        try:
            return await workflow.execute_activity(
                name,
                arg,
                result_type=result_type,  # pyright: ignore[reportArgumentType]
                activity_id=activity_id,
                **self._options(limit),
            )
        except ActivityError as exc:
            return _step_failed(what, exc)

    async def close_run(self, close: CloseRun) -> None:
        too_big = self._too_big(close, "the run's last events")
        if too_big is not None:  # its answer: stored without what did not fit, saying why
            close = CloseRun(
                run=close.run, step=close.step, outcome="failed", usage=close.usage, started=close.started
            )
        await workflow.execute_activity(
            CLOSE_RUN, close, activity_id=f"{close.step}:close", **self._options(self.options.step_timeout)
        )

    def _too_big(self, value: object, what: str) -> StepFailed | None:
        size = over_limit(value, self.limit)
        if size is None:
            return None
        message = (
            f"the input of {what} is {size} bytes, over the Temporal server's payload limit of "
            f"{self.limit} bytes: the run fails rather than wait for a step that cannot be scheduled"
        )
        return StepFailed(error=AgentError(kind="other", message=message, cause="payload_too_large"))

    def _options(self, timeout: timedelta, *, busy: bool = False) -> dict[str, Any]:
        return _step_options(self.options, timeout, busy=busy)


def _step_options(options: StepOptions, timeout: timedelta, *, busy: bool = False) -> dict[str, Any]:
    """The activity options of a step (`busy`: it may wait for the session, retried quickly)."""
    retry = RetryPolicy(
        initial_interval=timedelta(milliseconds=100 if busy else 500),
        maximum_interval=timedelta(seconds=2 if busy else 30),
        maximum_attempts=options.max_attempts,
        non_retryable_error_types=[*FINAL_ERRORS, *APPROVAL_ERRORS],
    )
    return {
        "start_to_close_timeout": timeout,
        "heartbeat_timeout": options.heartbeat_timeout,
        "retry_policy": retry,
        # A cancelled step is waited for: a tool still running would store its result
        # after the run's turn is closed.
        "cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }


def _step_failed(what: str, exc: ActivityError) -> StepFailed:
    """A step that failed for good, as the error its run fails with."""
    cause = exc.cause
    detail = str(cause) if cause is not None else str(exc)
    kind = getattr(cause, "type", None) or type(cause).__name__
    message = f"{what} failed: {detail}"
    return StepFailed(error=AgentError(kind="other", message=message, cause=str(kind)))


__all__ = [
    "APPROVAL_ERRORS",
    "DECIDE_UPDATE",
    "REASON_SIGNAL",
    "STATUS_QUERY",
    "WORKFLOW_NAME",
    "AgentRunWorkflow",
]
