"""`TemporalRunner`: a `Runner` whose runs are Temporal workflows, durable across crashed workers.

`run()` starts the `helikon.AgentRun` workflow for the run on the configured task queue and
awaits its outcome; `run_streamed()` streams the run's events by tailing its session's log,
which the workflow's steps write (see `LogTail`). The session must be in a store the workers
reach too (a SQLite file, PostgreSQL, Redis): the run's conversation lives there, not in
Temporal's history. The workflow id derives from the session id (`helikon-<session id>`), so a
session has one durable run at a time, and whoever knows the session can address its run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError

from helikon.core import approvals
from helikon.core._internal.json_value import JsonValue
from helikon.core.approvals import ApprovalError, Approver, Decision, NothingToResume
from helikon.core.cancel import CancellationToken, cancelled_within
from helikon.core.events import AgentError, AgentEvent, RunCompleted, RunFailed, RunPaused
from helikon.core.exceptions import UserError
from helikon.core.input import RUNNER_CALL, RunInput, to_agent_input
from helikon.core.loop import TIMEOUT_REASON
from helikon.core.result import RunResult, RunStream
from helikon.core.session import Session, SharedLog, check_session

from .converter import with_converter
from .log_tail import LogTail
from .refs import DEFAULT_PAYLOAD_LIMIT, DecideAnswer, DecideRequest, RunRef, RunSpec, RunSummary
from .workflow import DECIDE_UPDATE, REASON_SIGNAL, STATUS_QUERY, WORKFLOW_NAME

if TYPE_CHECKING:
    from helikon.core.agent import Agent
    from helikon.core.context import RunConfig, RunContext
    from helikon.core.run.sink import EventSink

Ctx = TypeVar("Ctx")
T = TypeVar("T")

_CLOSED = frozenset(
    (
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    )
)
"""The history events that end a workflow's run."""

_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")

MAX_SEED_BYTES = 64 * 1024
"""The largest ctx seed a run carries (it goes into every step's input)."""


@dataclass(frozen=True)
class TemporalRunnerConfig:
    """Where and how a `TemporalRunner` starts its runs.

    Args:
        task_queue: The task queue its workers poll (`TemporalAgentWorker`'s).
        execution_timeout: The longest a run may take, waiting included.
        payload_limit: The server's payload limit (`limit.blobSize.error`, 2 MiB by default).
        poll_interval: Seconds between status queries while a paused run's workflow records the pause.
        ctx_seed: See `with_ctx_seed`.
    """

    task_queue: str = "helikon"
    execution_timeout: timedelta = timedelta(days=7)
    payload_limit: int = DEFAULT_PAYLOAD_LIMIT
    poll_interval: float = 0.02
    ctx_seed: JsonValue = field(default=None)

    def with_ctx_seed(self, seed: JsonValue) -> TemporalRunnerConfig:
        """Carry `seed` (small JSON) to the worker's context factory, which makes each step's context of it.

        Raises:
            UserError: `seed` is not JSON, or over `MAX_SEED_BYTES` (it goes into every step's input).
        """
        try:
            size = len(json.dumps(seed, allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"with_ctx_seed: the seed must be plain JSON (it crosses processes): {exc}"
            ) from exc
        if size > MAX_SEED_BYTES:
            raise UserError(
                f"with_ctx_seed: the seed is {size} bytes, over {MAX_SEED_BYTES}: "
                "pass an id the worker looks up instead"
            )
        return replace(self, ctx_seed=seed)


class TemporalRunner:
    """Runs agents as durable Temporal workflows, served by `TemporalAgentWorker`s.

    Example:
        ```python
        from helikon.temporal import TemporalRunner, TemporalRunnerConfig

        config = TemporalRunnerConfig(task_queue="assistants").with_ctx_seed({"user": "u-42"})
        assert config.ctx_seed == {"user": "u-42"}
        # runner = TemporalRunner(await Client.connect("localhost:7233"), config)
        # result = await runner.run(agent, "Hi", RunContext.ephemeral(None).with_session(session))
        ```
    """

    __slots__ = ("client", "config")

    def __init__(self, client: Client, config: TemporalRunnerConfig | None = None) -> None:
        self.client = with_converter(client)
        self.config = config or TemporalRunnerConfig()

    def run_streamed(
        self,
        agent: Agent[Ctx, T],
        input: RunInput,
        context: RunContext[Ctx],
        config: RunConfig | None = None,
        *,
        run_key: str | None = None,
    ) -> RunStream[T]:
        """Start a run and stream its settled events (read from the session as they are stored).

        `run_key` (`[A-Za-z0-9_-]`) begins the turn's run id: a host names its runs, and finds
        them in the log by it (the agent server does).
        """
        if run_key is not None and not _KEY.fullmatch(run_key):
            raise UserError(f"a run key is 1 to 64 letters, digits, '_' or '-', not {run_key!r}")
        new_input = to_agent_input(input, call=RUNNER_CALL)
        session, session_id = _durable_session(context.session)
        max_turns = config.max_turns if config is not None else None
        ref = RunRef(
            agent=agent.name,
            session_id=session_id,
            run_id=f"{run_key or uuid.uuid4().hex[:16]}.temporal",
            max_turns=max_turns,
            ctx_seed=self.config.ctx_seed,
            payload_limit=self.config.payload_limit,
        )
        spec = RunSpec(run=ref, input=new_input.messages)
        timeout = config.timeout if config is not None else None
        drive = functools.partial(self._drive, spec, session, _Stop(context.cancel, timeout))
        return RunStream(drive=drive, agent=agent)

    async def run(
        self, agent: Agent[Ctx, T], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunResult[T]:
        """Run to completion (raises `RunError` if the run fails); `final_output` as `agent.run` gives it."""
        return await self.run_streamed(agent, input, context, config).collect()

    def workflow_id(self, session_id: str) -> str:
        """The id of the workflow of `session_id`'s durable run."""
        return f"helikon-{session_id}"

    async def _drive(self, spec: RunSpec, session: Session, stop: _Stop, sink: EventSink) -> None:
        entries = await session.events()
        tail = LogTail(spec.run.run_id, entries[-1].seq if entries else None)
        try:
            handle = await self.client.start_workflow(
                WORKFLOW_NAME,
                spec,
                id=self.workflow_id(spec.run.session_id),
                task_queue=self.config.task_queue,
                execution_timeout=self.config.execution_timeout,
                result_type=RunSummary,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        except WorkflowAlreadyStartedError:
            message = (
                f"session {spec.run.session_id} has a durable run in progress; one run at a time per session"
            )
            await _failed(sink, spec, AgentError(kind="session_error", message=message, cause="busy"))
            return
        await self._stream(handle, session, tail, sink, stop)

    def resume_streamed(
        self,
        agent: Agent[Ctx, T],
        context: RunContext[Ctx],
        decisions: Mapping[str, Decision] | None = None,
        *,
        deny_rest: bool = False,
        by: Approver = None,
        config: RunConfig | None = None,
        run_key: str | None = None,
    ) -> RunStream[T]:
        """Decide the session's paused durable run, and stream what follows (the `helikon.decide` update).

        The turn that goes on is named after the run's first (`run_key` is taken for the
        agent server's sake, whose runs keep their id across a resume).

        The decisions are checked and recorded by a worker exactly as an in-process resume
        checks them: one that fails raises its `ApprovalError`, and nothing is recorded. The
        stream yields `ApprovalResolved` per decision recorded, then, once every request is
        decided, the run's events as it goes on (in its workflow) to its end, or `RunPaused`
        while some request still waits.
        """
        session, session_id = _durable_session(context.session)
        request = DecideRequest(decisions=dict(decisions or {}), deny_rest=deny_rest, by=by)
        timeout = config.timeout if config is not None else None
        drive = functools.partial(
            self._drive_resume, session, session_id, request, _Stop(context.cancel, timeout)
        )
        return RunStream(drive=drive, agent=agent)

    async def resume(
        self,
        agent: Agent[Ctx, T],
        context: RunContext[Ctx],
        decisions: Mapping[str, Decision] | None = None,
        *,
        deny_rest: bool = False,
        by: Approver = None,
        config: RunConfig | None = None,
    ) -> RunResult[T]:
        """`resume_streamed`, collected: the finished run, or `status == "paused"` while a request waits."""
        stream = self.resume_streamed(agent, context, decisions, deny_rest=deny_rest, by=by, config=config)
        return await stream.collect()

    async def _drive_resume(
        self, session: Session, session_id: str, request: DecideRequest, stop: _Stop, sink: EventSink
    ) -> None:
        handle = self.client.get_workflow_handle(self.workflow_id(session_id), result_type=RunSummary)
        entries = await session.events()
        try:
            answer = await handle.execute_update(DECIDE_UPDATE, request, result_type=DecideAnswer)  # pyright: ignore[reportUnknownMemberType]
        except WorkflowUpdateFailedError as exc:
            raise _approval_error(exc) from exc
        except RPCError as exc:
            raise NothingToResume(
                f"session {session_id} has no durable run waiting for decisions ({exc.message})"
            ) from exc
        for event in answer.resolved:
            await sink.put(event)
        if not answer.ready:
            status = await handle.query(STATUS_QUERY, result_type=RunSummary)
            await sink.put(RunPaused(pending=answer.still_open, usage=status.usage))
            return
        tail = LogTail(answer.next_run_id, entries[-1].seq if entries else None)
        await self._stream(handle, session, tail, sink, stop)

    async def _stream(
        self,
        handle: WorkflowHandle[Any, RunSummary],
        session: Session,
        tail: LogTail,
        sink: EventSink,
        stop: _Stop,
    ) -> None:
        """Pass the run's events on as the log grows; the terminal one once its turn closes.

        The log is read when the workflow's history moves (a step completed, having written
        its events first), not on a timer: a long poll on the history wakes the stream, so an
        idle run costs no reads. The consumer leaving does not stop the run (it is durable: its
        log keeps growing); the context's token or `RunConfig.timeout` does. A run that paused
        ends its stream with `RunPaused` while its workflow waits for the decisions.
        """
        stopping = asyncio.ensure_future(stop.watch(handle))
        try:
            async for event in handle.fetch_history_events(wait_new_event=True):
                for settled in tail.read(await session.events(tail.seq)):
                    await sink.put(settled)
                if tail.closed == "paused" or event.event_type in _CLOSED:
                    break
        finally:
            stopping.cancel()
        for settled in tail.read(await session.events(tail.seq)):
            await sink.put(settled)
        if tail.closed == "paused":  # the workflow waits for decisions
            await sink.put(await self._paused(handle, tail))
            return
        result = asyncio.ensure_future(handle.result())
        await asyncio.wait((result,))
        await sink.put(_terminal(tail, result))

    async def _paused(self, handle: WorkflowHandle[Any, RunSummary], tail: LogTail) -> RunPaused:
        """The `RunPaused` of a run whose turn closed paused (its usage once the workflow says it paused)."""
        while True:
            status = await handle.query(STATUS_QUERY, result_type=RunSummary)
            if status.outcome == "paused":
                return RunPaused(pending=tuple(p.pending() for p in tail.pending), usage=status.usage)
            await asyncio.sleep(self.config.poll_interval)


class _Stop:
    """When a run is to stop: its context's token fired, or its `RunConfig.timeout` passed."""

    __slots__ = ("deadline", "token")

    def __init__(self, token: CancellationToken, timeout: float | None) -> None:
        self.token = token
        self.deadline = None if timeout is None else time.monotonic() + timeout

    async def watch(self, handle: WorkflowHandle[Any, RunSummary]) -> None:
        """Once the run is to stop, cancel its workflow, saying why (the stream cancels the watch)."""
        left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        await cancelled_within(self.token, left) if left is not None else await self.token.wait()
        reason = self.token.reason if self.token.is_cancelled() else TIMEOUT_REASON
        if reason is not None:
            await handle.signal(REASON_SIGNAL, reason)
        await handle.cancel()


def _approval_error(exc: WorkflowUpdateFailedError) -> Exception:
    """The `ApprovalError` (or `UserError`) a worker refused a decision with, as in-process raises it."""
    cause = exc.cause
    if not isinstance(cause, ApplicationError):
        return NothingToResume(f"the decision was not taken: {cause or exc}")
    kind: Any = getattr(approvals, cause.type or "", None)
    request_id = str(cause.details[0]) if cause.details else ""
    if isinstance(kind, type) and issubclass(kind, ApprovalError):
        return kind(cause.message, request_id)
    return UserError(cause.message)


def _terminal(tail: LogTail, result: asyncio.Future[RunSummary]) -> AgentEvent:
    """The run's terminal event, from how its workflow ended."""
    try:
        summary = result.result()
    except WorkflowFailureError as exc:
        message = f"the durable run's workflow failed: {exc.cause}"
        return RunFailed(error=AgentError(kind="other", message=message, cause="workflow"))
    if summary.outcome == "completed":
        return RunCompleted(usage=summary.usage)
    if summary.outcome == "paused":
        return RunPaused(pending=tuple(p.pending() for p in tail.pending), usage=summary.usage)
    error = summary.error or AgentError(kind="other", message=f"the run ended {summary.outcome}")
    return RunFailed(error=error, usage=summary.usage)


async def _failed(sink: EventSink, spec: RunSpec, error: AgentError) -> None:
    from helikon.core.events import RunStarted

    await sink.put(RunStarted(agent=spec.run.agent))
    await sink.put(RunFailed(error=error))


def _durable_session(session: object) -> tuple[Session, str]:
    """The run's session and its id; a `UserError` when the workers could not reach it."""
    if session is None:
        raise UserError(
            "TemporalRunner: the run needs a session (RunContext.with_session(...)): its log is the run"
        )
    checked = check_session(session)
    if not checked.durable or not isinstance(checked, SharedLog):
        raise UserError(
            f"TemporalRunner: the run's session ({type(session).__name__}) is in this process only; a "
            "durable run's session must be in a store its workers and its client all reach (a SQLite "
            "file, PostgreSQL, Redis: open_session('sqlite:///runs.db', id))"
        )
    return checked, str(checked.log_key[1])


__all__ = ["MAX_SEED_BYTES", "TemporalRunner", "TemporalRunnerConfig"]
