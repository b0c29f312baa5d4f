"""The server's runs: each one's status and event log, one session's runs in line, cancel, approvals.

A run is created `queued`, becomes `running` once its session is free (runs on one
session go one at a time, in the order they came), and ends `succeeded`, `failed` or
`cancelled`, or stops `paused` until its pending calls are decided; deciding them makes
it `running` again. No word names two states: a person's pause is never "interrupted".

Every event the run streams goes to its `RunLog` (replay for reconnecting clients), also
when no one listens. A run whose stream ends without a terminal event gets a synthetic
`run_failed`, so every subscriber sees an end. Cancelling runs through the run's context
token: `interrupt` keeps what the turn had done (the core closes it as cancelled);
`rollback` then rewinds the session to where it was before the run, so the turn leaves
the active branch (nothing is deleted). Finished runs are kept `retention` seconds and at
most `max_runs` of them: past the count, the oldest finished run goes as another finishes;
`sweep()` (called by the server's sweeper) lets the ones past their age go.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncIterable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from ..core._internal.json_value import JsonValue
from ..core.agent import Agent
from ..core.approvals import ApprovalError, Approver, Decision
from ..core.cancel import CancellationToken
from ..core.events import AGENT_EVENT_ADAPTER, AgentError, AgentEvent, RunCompleted, RunFailed, RunPaused
from ..core.input import RunInput
from ..core.session import Session, TurnOpened
from ..core.session._run_ids import run_key, writer_gone
from ..core.session.branches import Branching
from ..core.session.crash_repair import open_turn
from ..runtime import AsyncioRunner
from .context import ContextProvider, ServerRequest
from .run_log import RunLog, Tally
from .server_runner import ServerRunner
from .sessions import SessionProvider

logger = logging.getLogger("helikon.server")

RunStatus = Literal["queued", "running", "paused", "succeeded", "failed", "cancelled"]
CancelAction = Literal["interrupt", "rollback"]
FINISHED: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
"""The statuses a run never leaves."""


@dataclass(eq=False, slots=True)
class ServerRun:
    """One run the server started: where it is, what it made, its events."""

    id: str
    agent: str
    session_id: str | None
    status: RunStatus = "queued"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    output: str | None = None
    error: dict[str, Any] | None = None
    pending: list[Any] = field(default_factory=lambda: [])
    usage: dict[str, Any] = field(default_factory=lambda: {})
    cancel_action: CancelAction | None = None
    resumes: int = 0
    log: RunLog = field(default_factory=RunLog)
    cancel: CancellationToken = field(default_factory=CancellationToken)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while the run is paused or finished: what `wait` and one-shot requests wait for."""
    task: asyncio.Task[None] | None = None

    @property
    def finished(self) -> bool:
        """Whether the run ended for good."""
        return self.status in FINISHED

    def to_json(self) -> dict[str, Any]:
        """The run as the API shows it."""
        return {
            "run_id": self.id,
            "agent": self.agent,
            "session_id": self.session_id,
            "status": self.status,
            "created": self.created,
            "updated": self.updated,
            "output": self.output,
            "error": self.error,
            "pending": self.pending,
            "usage": self.usage,
            "events": len(self.log),
            "cancel_action": self.cancel_action,
        }

    def _set(self, status: RunStatus) -> None:
        self.status = status
        self.updated = time.time()
        if status == "paused" or status in FINISHED:
            self.settled.set()
        else:
            self.settled.clear()


class RunConflict(Exception):
    """A request that does not fit the run's or the session's state (HTTP 409)."""

    def __init__(self, message: str, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class _Lane:
    """One session's runs, one at a time, in the order they came (asyncio's lock is FIFO).

    `runs` holds the lane's queued and running runs; an idle lane is let go.
    """

    __slots__ = ("lock", "runs")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.runs: list[ServerRun] = []


@dataclass(frozen=True, slots=True)
class Retention:
    """How long finished runs are kept, and how many at most."""

    seconds: float = 3600.0
    max_runs: int = 1000


class Runs:
    """Every run of the server, its lanes per session, and what starts, cancels and resumes them."""

    def __init__(
        self,
        agents: Mapping[str, Agent[Any, Any]],
        sessions: Callable[[str | None], Any],
        contexts: ContextProvider[Any],
        retention: Retention,
        runner: ServerRunner | None = None,
    ) -> None:
        self._agents = agents
        self._sessions = sessions
        self._contexts = contexts
        self._retention = retention
        self._runner: ServerRunner = runner if runner is not None else AsyncioRunner[Any]()
        self._runs: OrderedDict[str, ServerRun] = OrderedDict()
        self._finished: deque[str] = deque()  # finished runs' ids, in the order they finished
        self._lanes: dict[str, _Lane] = {}
        self._heads: dict[str, int] = {}  # each running run's session head before it: where rollback goes
        self.subscribers = Tally()
        """How many clients follow a run's events now, over all runs."""

    def get(self, run_id: str) -> ServerRun | None:
        """The run `run_id`, if the server still keeps it."""
        return self._runs.get(run_id)

    def of_session(self, session_id: str) -> list[ServerRun]:
        """The kept runs of a session, oldest first."""
        return [run for run in self._runs.values() if run.session_id == session_id]

    def all(self) -> list[ServerRun]:
        """Every kept run, oldest first."""
        return list(self._runs.values())

    async def start(
        self,
        agent: str,
        input: RunInput,
        request: ServerRequest,
        strategy: Literal["enqueue", "reject", "interrupt", "rollback"] = "enqueue",
    ) -> ServerRun:
        """Create the run and start it in the background (see the module for `strategy`)."""
        lane = self._lanes.get(request.session_id) if request.session_id is not None else None
        busy = [run for run in lane.runs if run.status in ("queued", "running")] if lane is not None else []
        if busy and strategy == "reject":
            raise RunConflict(f"session {request.session_id!r} is busy with run {busy[-1].id}", busy[-1].id)
        if busy and strategy in ("interrupt", "rollback"):
            for run in busy:
                await self.cancel(run, "interrupt" if strategy == "interrupt" else "rollback")
        run = ServerRun(uuid.uuid4().hex, agent, request.session_id, log=RunLog(self.subscribers))
        self._runs[run.id] = run
        if request.session_id is not None:
            lane = self._lanes.setdefault(request.session_id, _Lane())
            lane.runs.append(run)
        run.task = asyncio.get_running_loop().create_task(self._drive(run, input, request))
        return run

    async def resume(
        self,
        run: ServerRun,
        decisions: Mapping[str, Decision],
        request: ServerRequest,
        *,
        deny_rest: bool = False,
    ) -> None:
        """Decide a paused run's requests and go on with it; returns once the decisions are recorded.

        Raises:
            RunConflict: The run is not paused.
            ApprovalError: A decision failed its checks (nothing was recorded).
        """
        if run.status != "paused":
            raise RunConflict(f"run {run.id} is {run.status}, not paused: there is nothing to decide")
        recorded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        run._set("running")
        run.log.reopen()
        run.task = asyncio.get_running_loop().create_task(
            self._drive(run, None, request, decisions=(dict(decisions), deny_rest), recorded=recorded)
        )
        await recorded

    async def resume_session(
        self,
        agent: str,
        decisions: Mapping[str, Decision],
        request: ServerRequest,
        *,
        deny_rest: bool = False,
    ) -> ServerRun:
        """Decide the run `request`'s session holds paused, kept here or not (the pause is in the log).

        A new `ServerRun` carries what follows; returns once the decisions are recorded.

        Raises:
            ApprovalError: Nothing is paused on the session, or a decision failed its checks.
        """
        run = ServerRun(uuid.uuid4().hex, agent, request.session_id, log=RunLog(self.subscribers))
        run._set("paused")
        self._runs[run.id] = run
        try:
            await self.resume(run, decisions, request, deny_rest=deny_rest)
        except BaseException:
            self._runs.pop(run.id, None)
            raise
        return run

    async def cancel(self, run: ServerRun, action: CancelAction) -> ServerRun:
        """Cancel `run` (idempotent): wait for it to end, rewind its turn for `rollback`; the run."""
        if run.finished:
            return run
        if run.status == "paused":
            if action == "interrupt":
                raise RunConflict(
                    f"run {run.id} is paused: cancel it with action=rollback, or deny its calls (approvals)"
                )
            run.cancel_action = action
            await self._rollback(run)
            self._finish(run, "cancelled", None)
            return run
        run.cancel_action = run.cancel_action or action
        run.cancel.cancel(f"cancelled through the server ({action})")
        if run.task is not None:
            await asyncio.shield(run.settled.wait())
        return run

    async def recover(self, sessions: SessionProvider, limit: int = 1000) -> list[ServerRun]:
        """Find the runs a stopped server left open in its sessions' logs: each is `failed`, cause `orphaned`.

        Reads the `limit` most recently updated sessions. A turn still open whose writer is
        gone (`writer_gone`) belongs to a server process that died; its run, under the id the
        server gave it, answers `failed` with a terminal `run_failed` on its stream. The log is
        left as it is: the next run on the session repairs the turn, or `agent.resume`
        continues it.
        """
        found: list[ServerRun] = []
        for info in await sessions.list_sessions(limit=limit):
            session = await sessions.session(info.session_id)
            opened = open_turn(await session.events())
            if (
                opened is None
                or not isinstance(opened.event, TurnOpened)
                or not writer_gone(opened.event.run_id)
            ):
                continue
            run_id = run_key(opened.event.run_id).split("-", 1)[0]
            if run_id in self._runs:
                continue
            run = ServerRun(run_id, opened.event.agent or "", info.session_id, log=RunLog(self.subscribers))
            self._runs[run.id] = run
            message = "the server running it stopped before it ended (its turn is left open in the session)"
            event = RunFailed(error=AgentError(kind="other", message=message, cause="orphaned"))
            run.log.append(event.type, AGENT_EVENT_ADAPTER.dump_json(event))
            self._finish(run, "failed", event.error)
            found.append(run)
        return found

    def sweep(self, now: float | None = None) -> int:
        """Let finished runs older than the retention, or beyond its count, go; how many went."""
        now = time.time() if now is None else now
        finished = [run for run in self._runs.values() if run.finished]
        excess = max(len(self._runs) - self._retention.max_runs, 0)
        gone = 0
        for run in finished:
            if excess > 0 or now - run.updated > self._retention.seconds:
                self._forget(run)
                excess -= 1
                gone += 1
        if gone:
            self._finished = deque(run_id for run_id in self._finished if run_id in self._runs)
        return gone

    async def aclose(self) -> None:
        """Cancel what still runs (the server is stopping) and wait for it to be written."""
        running = [run for run in self._runs.values() if run.status in ("queued", "running")]
        for run in running:
            run.cancel_action = "interrupt"
            run.cancel.cancel("the server is stopping")
        tasks = [run.task for run in running if run.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _forget(self, run: ServerRun) -> None:
        self._runs.pop(run.id, None)

    def _leave_lane(self, run: ServerRun) -> None:
        """`run` no longer waits or runs: out of its lane, and the lane let go once idle."""
        lane = self._lanes.get(run.session_id) if run.session_id is not None else None
        if lane is not None and run in lane.runs:
            lane.runs.remove(run)
            if not lane.runs and not lane.lock.locked():
                del self._lanes[run.session_id]  # type: ignore[arg-type]

    async def _drive(
        self,
        run: ServerRun,
        input: RunInput | None,
        request: ServerRequest,
        *,
        decisions: tuple[dict[str, Decision], bool] | None = None,
        recorded: asyncio.Future[None] | None = None,
    ) -> None:
        lane = None
        if run.session_id is not None:  # a resumed run takes its place in line again
            lane = self._lanes.setdefault(run.session_id, _Lane())
            if run not in lane.runs:
                lane.runs.append(run)
        try:
            if lane is not None:
                async with lane.lock:
                    await self._run(run, input, request, decisions, recorded)
            else:
                await self._run(run, input, request, decisions, recorded)
        except asyncio.CancelledError:
            self._end_without_terminal(run, "cancelled", "the server stopped the run")
            raise
        except ApprovalError as exc:
            if recorded is not None and not recorded.done():
                recorded.set_exception(exc)
            run.log.close()
            run._set("paused")
        except Exception as exc:  # the run could not start or its stream broke: every subscriber sees an end
            if recorded is not None and not recorded.done():
                recorded.set_exception(exc)
            # Its text stays in the server's log: an exception may carry what no client should read.
            logger.error("run %s ended without a terminal event", run.id, exc_info=exc)
            started = len(run.log) > 0
            message = "the run's stream broke off" if started else "the run could not start"
            self._end_without_terminal(
                run,
                "failed",
                f"{message}; the server's log has the details",
                None if started else "not_started",
            )
        else:
            if recorded is not None and not recorded.done():
                recorded.set_result(None)
            if not run.settled.is_set():
                self._end_without_terminal(run, "failed", "the run's stream ended without a terminal event")
        finally:
            self._leave_lane(run)
            if run.task is asyncio.current_task():
                run.task = None  # a kept run keeps its result, not the finished task and its coroutine

    async def _run(
        self,
        run: ServerRun,
        input: RunInput | None,
        request: ServerRequest,
        decisions: tuple[dict[str, Decision], bool] | None,
        recorded: asyncio.Future[None] | None,
    ) -> None:
        if run.cancel.is_cancelled():  # cancelled while it waited for its session
            self._end_without_terminal(run, "cancelled", "the run was cancelled before it started")
            return
        agent = self._agents[run.agent]
        session: Session = await self._sessions(run.session_id)
        if decisions is None:
            run._set("running")
            self._heads[run.id] = await _active_head(session)
        context = await self._contexts.build(request, session, run.cancel)
        # The turn's run id begins with the server's: after a crash, the log names the run.
        if decisions is None:
            assert input is not None
            stream = self._runner.run_streamed(agent, input, context, run_key=run.id)
        else:
            chosen, deny_rest = decisions
            run.resumes += 1
            stream = self._runner.resume_streamed(
                agent,
                context,
                chosen,
                deny_rest=deny_rest,
                by=_approver(request.identity),
                run_key=f"{run.id}-{run.resumes}",
            )
        await self._pump(run, stream, recorded)
        if run.status == "cancelled" and run.cancel_action == "rollback":
            await self._rollback(run, session)

    async def _pump(
        self, run: ServerRun, stream: AsyncIterable[AgentEvent], recorded: asyncio.Future[None] | None
    ) -> None:
        async for event in stream:
            if recorded is not None and not recorded.done():
                recorded.set_result(None)  # the stream only yields once every decision passed its checks
            run.log.append(event.type, AGENT_EVENT_ADAPTER.dump_json(event))
            if isinstance(event, RunCompleted):
                run.usage = _usage(event.usage)
                run.output = event.output if event.output is not None else run.output
                self._finish(run, "succeeded", None)
            elif isinstance(event, RunFailed):
                run.usage = _usage(event.usage)
                cancelled = event.error.kind == "cancelled"
                self._finish(run, "cancelled" if cancelled else "failed", event.error)
            elif isinstance(event, RunPaused):
                run.usage = _usage(event.usage)
                run.pending = [_json(p) for p in event.pending]
                run.log.close()
                run._set("paused")
            elif event.type == "message_output":
                run.output = event.item.text  # type: ignore[union-attr]

    async def _rollback(self, run: ServerRun, session: Session | None = None) -> None:
        """Rewind the session to where it was before the run (nothing is deleted)."""
        head = self._heads.pop(run.id, None)
        if head is None or run.session_id is None:
            return
        if session is None:
            session = await self._sessions(run.session_id)
        if not isinstance(session, Branching):
            raise RunConflict(f"run {run.id}: its session cannot be rewound (it has no branches)")
        if await _active_head(session) != head:
            await session.rewind(head)

    def _finish(self, run: ServerRun, status: RunStatus, error: AgentError | None) -> None:
        run.error = None if error is None else _json(error)
        run.pending = [] if status != "paused" else run.pending
        run.log.close()
        run._set(status)
        if status != "cancelled" or run.cancel_action != "rollback":
            self._heads.pop(run.id, None)
        # The count holds at once, not at the next sweep: a busy server would keep a minute of runs.
        self._finished.append(run.id)
        while len(self._runs) > self._retention.max_runs and self._finished:
            self._runs.pop(self._finished.popleft(), None)

    def _end_without_terminal(
        self, run: ServerRun, status: RunStatus, message: str, cause: str | None = None
    ) -> None:
        """A run that ended with no terminal event: a synthetic `run_failed`, so subscribers see an end."""
        if run.settled.is_set() and run.status != "running":
            return
        kind = "cancelled" if status == "cancelled" else "other"
        error = AgentError(kind=kind, message=message, cause=cause)
        event = RunFailed(error=error)
        run.log.append(event.type, AGENT_EVENT_ADAPTER.dump_json(event))
        self._finish(run, status, error)


async def _active_head(session: Session) -> int:
    """The last seq on the session's active branch (-1: empty, or a session without branches)."""
    if not isinstance(session, Branching):
        return -1
    return next((branch.head_seq for branch in await session.branches() if branch.active), -1)


def _approver(identity: JsonValue) -> Approver:
    """Who decided, as an approval records it: the auth layer's identity (a number becomes text)."""
    if identity is None or isinstance(identity, str | dict):
        return identity
    return json.dumps(identity)


def _usage(usage: Any) -> dict[str, Any]:
    return _json(usage)


def _json(value: Any) -> Any:
    """A carrier as JSON-ready Python (dicts, lists, strings, numbers)."""
    return to_jsonable_python(value)


__all__ = ["FINISHED", "CancelAction", "Retention", "RunStatus", "Runs", "ServerRun"]
