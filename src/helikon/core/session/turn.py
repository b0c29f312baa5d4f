"""A run's turn on a session: read the session before the run, record the run into it, close it.

`SessionRunner.drive` wraps a run (any `Agent`) in its turn: it waits for the session (one
run at a time per session; another writer's open turn waited for, or repaired once it is
stale), puts the session's history in front of the input, records the run's events with a
`SessionRecorder` as they pass to the caller's sink, and writes them to the session: on a
durable session as they settle, between `TurnOpened`/`TurnClosed` markers; otherwise once,
after the run. `RunConfig.timeout` cancels the run when it expires.

`agent.run(q, session=s)` goes through this thread's `default_session_runner()`;
`helikon.runtime.AsyncioRunner` is the same runner with its options in the caller's hands.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from ..approvals import ApprovalError, Approver, Decision, NothingToResume, UnknownApprovalRequest
from ..cancel import CancellationToken, cancelled_within
from ..context import RunConfig, RunContext
from ..conversation_check import ConversationCheck
from ..events import (
    AgentError,
    AgentEvent,
    PersistFailed,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunStarted,
)
from ..exceptions import SessionConflict, UserError
from ..input import AgentInput
from ..items import Item
from ..loop import TIMEOUT_REASON
from ..retry import RetryPolicy
from ..run.sink import drive_agent
from . import (
    ApprovalPending,
    RequestHeader,
    SequenceId,
    Session,
    SessionEntry,
    SharedLog,
    ToolReturned,
    TurnClosed,
    TurnOpened,
    check_session,
)
from ._recording import RecordingSink, RunRecording
from ._run_ids import new_run_id, writer_gone
from ._writer import RunWriter, TurnOutcome
from .crash_repair import close_interrupted_turn
from .interrupted import continue_point, read_interrupted
from .paused import read_paused
from .recorder import SessionRecorder
from .resume import Go, plan_resume, record_decisions, resumed_run

if TYPE_CHECKING:
    from ..agent import Agent
    from ..run.sink import EventSink

Ctx = TypeVar("Ctx")

logger = logging.getLogger("helikon.runtime")

OnBusy = Literal["wait", "fail"]
"""What a run does when its session is busy with another run: wait its turn, or fail at once."""

_DEFAULT_PERSIST_RETRY = RetryPolicy(
    max_attempts=4, base_delay=0.25, multiplier=2.0, max_delay=2.0, jitter=0.5
)
_MAX_CLAIMS = 16
"""How often a run re-reads a session that another writer keeps appending to before it gives up."""


class SessionRunner(Generic[Ctx]):
    """Runs agents in turns on their sessions: the session lifecycle around each run.

    Before the run it reads `context.session.snapshot()` and puts that history in front of
    the input (a read failure fails the run), first closing a turn a crashed writer left
    open (`helikon.core.session.crash_repair`); during the run it records the events with a
    `SessionRecorder` and appends them to the session: on a durable session
    (`RunConfig.durable`) as they settle, before every model call and before tools start,
    between `TurnOpened`/`TurnClosed` markers; otherwise once, after the run.
    `RunConfig.timeout` cancels the run when it expires. An agent whose stream raises (a
    custom `Agent`) fails the run with a `RunFailed` event, and its turn is closed as failed.

    One run at a time per session: runs on the same session through one runner queue
    behind each other (the session is known by its store and id, so two objects for one
    stored session share the queue). A durable run's writes are checked with
    `expected_seq`. Another runner's or process's open turn is waited for, unless its
    writer is gone (its process on this machine has exited: run ids name their writer) or
    the turn has been silent for `stale_turn_after` seconds: then it is taken for crashed
    and repaired. With `on_busy="fail"` a run on a busy session fails
    at once instead (kind `session_error`, cause `busy`). Turns never interleave: a run that
    finds another writer's turn in the middle of its own stops writing (see `PersistFailed`).

    Writes are retried: a failed one during the run at the next write, what is left at the
    end with `persist_retry`'s backoff. What still cannot be stored is reported by a
    `PersistFailed` event before the terminal one (`RunResult.persisted` is then False),
    and kept: this runner writes it before its next run on the session, so that run does
    not take the turn for interrupted. With `strict=True` such a run fails instead (kind
    `session_error`, cause `not_persisted`: `collect` raises `RunError`).

    The recorded events include request records: a `RequestHeader` (provider, model,
    settings, system prompt, tool schemas) ahead of a model call whenever it differs from
    the session's latest one, and each assistant message's usage (see
    `helikon.core.session.request_log`). To find the latest header without reading the whole log
    every run, the runner remembers, per session, how far it has read, and reads only the
    events after that (the first run on a session reads its log once).

    Its options are `helikon.runtime.AsyncioRunner`'s (see there, with an example).
    """

    __slots__ = (
        "_headers",
        "_held",
        "_running",
        "_turns",
        "on_busy",
        "persist_retry",
        "stale_turn_after",
        "strict",
    )

    def __init__(
        self,
        *,
        persist_retry: RetryPolicy | None = None,
        strict: bool = False,
        on_busy: OnBusy = "wait",
        stale_turn_after: float = 30.0,
    ) -> None:
        if on_busy not in ("wait", "fail"):
            raise UserError(f"AsyncioRunner(on_busy={on_busy!r}): must be 'wait' or 'fail'")
        stale: object = stale_turn_after
        if isinstance(stale, bool) or not isinstance(stale, int | float) or stale < 0:
            raise UserError(f"AsyncioRunner(stale_turn_after={stale!r}): must be a number of seconds >= 0")
        self.persist_retry = persist_retry or _DEFAULT_PERSIST_RETRY
        self.strict = strict
        self.on_busy: OnBusy = on_busy
        self.stale_turn_after = float(stale_turn_after)
        self._headers: dict[object, _HeaderState] = {}
        self._turns: dict[object, _Turns] = {}  # per session: the queue of this runner's runs on it
        self._held: dict[object, RunWriter] = {}  # per session: a past run's events not stored yet
        self._running: set[str] = set()  # the run ids of this runner's runs in flight

    async def drive(
        self,
        agent: Agent[Ctx, Any],
        input: AgentInput,
        context: RunContext[Ctx],
        config: RunConfig | None,
        sink: EventSink,
        run_key: str | None = None,
    ) -> None:
        """Run `agent` on `input` in a turn on `context.session`, writing its events to `sink`.

        The terminal event comes once the run is stored (whoever sees the end of a run may
        rely on the session's log), after a `PersistFailed` if some of it could not be. A
        session whose last run is paused for approval takes no new run: it fails with kind
        `session_paused` (`RunIsPaused`) until the paused run is resumed. `run_key` begins
        the turn's run id (`new_run_id`): a host names its runs, and finds them in the log.
        """
        config = _config_of(agent, config)
        run_ctx, timer = _timed(context, config.timeout)  # from the start: waiting for the session counts too
        claim = self._claim(agent, input, run_ctx, config)
        claim.run_id = new_run_id(run_key)

        def go(history: tuple[Item, ...]) -> Go:
            return lambda ctx, recording: drive_agent(agent, input.prepend(history), ctx, config, recording)

        try:
            await self._turn(claim, run_ctx, sink, functools.partial(self._prepare, claim, go))
        finally:
            if timer is not None:
                timer.cancel()

    async def drive_resumed(
        self,
        agent: Agent[Ctx, Any],
        context: RunContext[Ctx],
        decisions: Mapping[str, Decision],
        deny_rest: bool,
        by: Approver,
        config: RunConfig | None,
        sink: EventSink,
        run_key: str | None = None,
    ) -> None:
        """Record `decisions` on `context.session`'s paused run; once all are decided, go on with it.

        The decisions are checked against the log first (see `helikon.core.session.resume`):
        one that fails raises its `ApprovalError`, and nothing is recorded or run. Then they
        are recorded (`ApprovalDecided`, streamed as `ApprovalResolved`); while some request
        still waits, the stream ends with `RunPaused` listing it. Once none does, the run
        goes on in a new turn (`TurnOpened(resumes=...)`): the decided calls run (the calls
        that ran before the pause are not run again), and the loop continues to its end.
        """
        config = _config_of(agent, config)
        run_ctx, timer = _timed(context, config.timeout)
        claim = self._claim(agent, AgentInput((), ()), run_ctx, config)
        claim.run_id = new_run_id(run_key)
        prepare = functools.partial(self._prepare_resume, claim, agent, decisions, deny_rest, by, config)
        try:
            await self._turn(claim, run_ctx, sink, prepare)
        finally:
            if timer is not None:
                timer.cancel()

    def _claim(
        self, agent: Agent[Any, Any], input: AgentInput, ctx: RunContext[Any], config: RunConfig
    ) -> _Claim:
        session = check_session(ctx.session)  # the runner reads what it declares
        durable = config.durable if config.durable is not None else session.durable
        return _Claim(session, durable=durable, agent=agent.name, input=input, cancel=ctx.cancel)

    async def _turn(
        self,
        claim: _Claim,
        run_ctx: RunContext[Ctx],
        sink: EventSink,
        prepare: Callable[[], Awaitable[_Ready | AgentError | tuple[AgentEvent, ...]]],
    ) -> None:
        """Take the run's turn on the session (`prepare` reads and claims it), run it, store it."""
        key, durable, run_id = claim.key, claim.durable, claim.run_id
        turns = self._enter(key)
        try:
            ready = await self._queue(turns, claim.cancel)
            if ready is None:
                try:
                    ready = await prepare()
                except BaseException:
                    turns.lock.release()
                    raise
                if not isinstance(ready, _Ready):
                    turns.lock.release()
            if isinstance(ready, AgentError):
                await sink.put(RunStarted(agent=claim.agent))
                await sink.put(RunFailed(error=ready))
                return
            if not isinstance(ready, _Ready):  # the events of a turn that need not run
                for event in ready:
                    await sink.put(event)
                return
            recorder, writer = ready.recorder, ready.writer
            known = self._headers.get(key)  # (None only if a crowd of sessions pushed it out)
            check = known.check if known is not None else ConversationCheck()  # the session's, across runs
            run_ctx = run_ctx._in_turn(RunRecording(recorder, writer, durable), check)  # pyright: ignore[reportPrivateUsage]
            recording = RecordingSink(sink, recorder, writer if durable else None, claim.agent)
            settled = False
            self._running.add(run_id)
            try:
                try:
                    await ready.go(run_ctx, recording)
                except Exception as exc:
                    # An LlmAgent's run ends in RunFailed; another agent's may raise. The run
                    # fails all the same, as an event, and its turn is closed as failed.
                    recording.raised(exc)
                self._running.discard(run_id)
                settled = True
                report = await self._persist(key, writer, recorder, durable, recording.outcome)
                if report is not None:
                    await sink.put(report)
                if recording.terminal is not None:
                    await sink.put(self._strict(recording.terminal, report, recording.final_text))
            finally:
                self._running.discard(run_id)
                if not settled:  # the consumer left, or the run was cancelled: store what there is
                    await self._persist(key, writer, recorder, durable, recording.outcome)
                turns.lock.release()
        finally:
            self._leave(key, turns)

    def _enter(self, key: object) -> _Turns:
        """The session's queue in this runner, with this run counted among its users."""
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = _Turns()
        turns.users += 1
        return turns

    def _leave(self, key: object, turns: _Turns) -> None:
        """The run is done with the session's queue; the last one out drops it."""
        turns.users -= 1
        if not turns.users and self._turns.get(key) is turns:
            del self._turns[key]

    async def _queue(self, turns: _Turns, cancel: CancellationToken) -> AgentError | None:
        """Wait for this runner's earlier runs on the session to finish (or fail, per `on_busy`)."""
        lock = turns.lock
        if turns.users == 1:  # no other run of this runner holds or waits for the session
            await lock.acquire()
            return None
        if self.on_busy == "fail":
            return _busy("another run of this runner is in progress on this session")
        acquiring = asyncio.ensure_future(lock.acquire())
        cancelled = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait((acquiring, cancelled), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            cancelled.cancel()
            acquiring.cancel()
            if acquiring.done() and not acquiring.cancelled():
                lock.release()
            raise
        cancelled.cancel()
        if acquiring.done():
            return None  # the run sees a cancel that came meanwhile by itself
        acquiring.cancel()
        return _cancelled(cancel)

    async def _prepare(self, claim: _Claim, go: Callable[[tuple[Item, ...]], Go]) -> _Ready | AgentError:
        """Read the session and claim the run's turn in it: the recorder, the writer, and the run.

        First what an earlier run of this runner could not store; then a turn left open is
        waited for (another writer's, still going) or repaired (a crashed one's); a durable
        run then writes its first events with `expected_seq`, so that a writer that came in
        between is seen (and the session read again) rather than interleaved with. `go`
        makes the run, given the session's history.
        """
        session, run_id = claim.session, claim.run_id
        try:
            failure = await self._write_held_first(claim)
            if failure is not None:
                return failure
            for _ in range(_MAX_CLAIMS):
                state = await self._wait_for_open_turn(claim, await self._look(claim))
                if isinstance(state, AgentError):
                    return state
                if state.waiting:
                    return _paused(state)
                snapshot = await session.snapshot()
                turn = TurnOpened(run_id=run_id, agent=claim.agent) if claim.durable else None
                recorder = SessionRecorder(claim.input.messages, last_header=state.header, turn=turn)
                writer = await self._claimed(claim, recorder, state.seq)
                if writer is None:
                    continue  # another writer appended since the look: read again
                return _Ready(recorder, writer, go(snapshot.messages))
        except Exception as exc:
            return _unreadable(exc)
        return _busy(f"other writers kept appending to the session ({_MAX_CLAIMS} tries to start the run)")

    async def _prepare_resume(
        self,
        claim: _Claim,
        agent: Agent[Any, Any],
        decisions: Mapping[str, Decision],
        deny_rest: bool,
        by: Approver,
        config: RunConfig,
    ) -> _Ready | AgentError | tuple[AgentEvent, ...]:
        """Check and record the decisions on the session's paused run; claim its next turn once all are in.

        Raises the `ApprovalError` (or `UserError`) of a decision that fails its checks,
        before anything is written. The decisions are written with `expected_seq`: another
        writer in between (another resume) makes it read the log and check them again.
        """
        session = claim.session
        try:
            failure = await self._write_held_first(claim)
            if failure is not None:
                return failure
            for _ in range(_MAX_CLAIMS):
                state = await self._wait_for_open_turn(claim, await self._look(claim), repair=False)
                if isinstance(state, AgentError):
                    return state
                entries = await session.events()
                if state.open_turn is not None:  # its writer died mid-turn: go on with its run
                    ready = await self._continue(claim, agent, state, entries, decisions, config)
                    if ready is None:
                        continue
                    return ready
                plan = plan_resume(read_paused(entries), agent, decisions, deny_rest=deny_rest, by=by)
                end = int(entries[-1].seq)
                if plan.new:
                    if not await record_decisions(session, plan.new, end):
                        continue
                    end += len(plan.new)
                if not plan.ready:
                    return (*plan.resolved, RunPaused(pending=plan.still_open(), usage=plan.paused.usage))
                snapshot = await session.snapshot()
                resumes = plan.paused.run_id or None
                turn = (
                    TurnOpened(run_id=claim.run_id, agent=plan.agent.name, resumes=resumes)
                    if claim.durable
                    else None
                )
                recorder = SessionRecorder((), last_header=state.header, turn=turn)
                writer = await self._claimed(claim, recorder, SequenceId(end))
                if writer is None:
                    continue
                go = resumed_run(plan.agent, plan.depth, plan.resolved, plan.point(snapshot.messages), config)
                return _Ready(recorder, writer, go)
        except (ApprovalError, UserError):
            raise
        except Exception as exc:
            return _unreadable(exc)
        return _busy(f"other writers kept appending to the session ({_MAX_CLAIMS} tries to resume the run)")

    async def _continue(
        self,
        claim: _Claim,
        agent: Agent[Any, Any],
        state: _HeaderState,
        entries: list[SessionEntry],
        decisions: Mapping[str, Decision],
        config: RunConfig,
    ) -> _Ready | None:
        """Claim the turn that goes on with a run whose process died (None: another writer came first).

        Its open turn is closed as interrupted, and a new one continues it
        (`TurnOpened(resumes=...)`): see `helikon.core.session.interrupted`.
        """
        session, open_turn = claim.session, state.open_turn
        assert open_turn is not None
        if decisions:
            first = next(iter(decisions))
            raise UnknownApprovalRequest(
                f"the session's run was interrupted (its process stopped), not paused: it waits on no "
                f"request {first!r}; resume it without decisions",
                first,
            )
        opened = next(entry for entry in entries if entry.seq == open_turn[0])
        run = read_interrupted(entries, opened)
        if run is None:
            raise NothingToResume(
                "the session's interrupted run had given its answer: nothing to go on with (a new run "
                "closes its turn)"
            )
        plan = continue_point(run, agent, (await session.snapshot()).messages)
        end = int(entries[-1].seq)
        closed = TurnClosed(run_id=run.run_id, outcome="interrupted")
        try:
            await session.append([closed], ids=[f"helikon-continue-{run.run_id}"], expected_seq=end)
        except SessionConflict:
            return None
        turn = (
            TurnOpened(run_id=claim.run_id, agent=plan.agent.name, resumes=run.run_id)
            if claim.durable
            else None
        )
        recorder = SessionRecorder((), last_header=state.header, turn=turn)
        writer = await self._claimed(claim, recorder, SequenceId(end + 1))
        if writer is None:
            return None
        return _Ready(recorder, writer, resumed_run(plan.agent, plan.depth, (), plan.point, config))

    async def _write_held_first(self, claim: _Claim) -> AgentError | None:
        """Store what an earlier run of this runner on the session could not; an error if it still cannot."""
        key = claim.key
        held = self._held.pop(key, None)
        if held is None or await self._write_held(held):
            return None
        self._held[key] = held
        return AgentError(
            kind="session_error",
            cause="not_persisted",
            message=(
                f"the previous run's {len(held.unsaved)} event(s) on this session are still not "
                f"stored ({held.error}); the run did not start, so that they keep their place"
            ),
        )

    async def _claimed(
        self, claim: _Claim, recorder: SessionRecorder, end: SequenceId | None
    ) -> RunWriter | None:
        """The run's writer; a durable run's first events written (None: the log moved past `end`)."""
        session, run_id = claim.session, claim.run_id
        if not claim.durable:
            return RunWriter(session, run_id)
        writer = RunWriter(session, run_id, end=-1 if end is None else int(end))
        try:
            await writer.claim(recorder.take())
        except SessionConflict:
            return None
        return writer

    async def _wait_for_open_turn(
        self, claim: _Claim, state: _HeaderState, *, repair: bool = True
    ) -> _HeaderState | AgentError:
        """The session once its last turn is closed: waited for while live, repaired once stale.

        With `repair=False` a stale turn is left open: the state says which (a resume goes
        on with its run).
        """
        session, cancel = claim.session, claim.cancel
        delay = 0.05
        while state.open_turn is not None and state.open_turn[1] not in self._running:
            seq, run_id = state.open_turn
            if (writer_gone(run_id) or not self._recent(state)) and not repair:
                return state
            if writer_gone(run_id) or not self._recent(state):
                # The last turn was never closed: its writer died mid-run. Close it first, so
                # the conversation this run continues is one providers accept.
                await close_interrupted_turn(session, since=SequenceId(seq - 1))
            elif self.on_busy == "fail":
                return _busy(
                    f"run {run_id} (another runner or process) has its turn open since seq {seq}; "
                    f"AsyncioRunner(on_busy='wait') waits for it, and a turn silent for "
                    f"stale_turn_after={self.stale_turn_after:g} s is taken for crashed and repaired"
                )
            elif await cancelled_within(cancel, delay):
                return _cancelled(cancel)
            else:
                delay = min(delay * 2, 1.0)
            state = await self._look(claim)
        return state

    def _recent(self, state: _HeaderState) -> bool:
        """Whether the session's open turn was written to recently enough to be a live run's."""
        stamp = state.last_ts
        if stamp is None or not self.stale_turn_after:
            return False
        return (datetime.now(UTC) - stamp).total_seconds() < self.stale_turn_after

    async def _write_held(self, held: RunWriter) -> bool:
        """Write what an earlier run could not store; whether the way is clear for the next run."""
        count = len(held.unsaved)
        if await held.flush() or await held.settle(self.persist_retry):
            logger.info("stored the %d event(s) run %s could not store", count, held.run_id)
            return True
        if held.taken_over is not None:  # they can never be written now: said, and let go
            logger.warning("dropped run %s's unsaved events: %s", held.run_id, held.taken_over)
            return True
        return False

    async def _persist(
        self, key: object, writer: RunWriter, recorder: SessionRecorder, durable: bool, outcome: TurnOutcome
    ) -> PersistFailed | None:
        """Write the rest of the run (retrying with backoff); what could not be stored, if anything."""
        events = recorder.drain()
        if durable:
            await writer.close(events, "refused" if recorder.refused else outcome)
        else:
            await writer.write(events)
        if await writer.settle(self.persist_retry):
            return None
        held = writer.taken_over is None
        if held:
            if key not in self._held and len(self._held) >= _MAX_SESSIONS:
                oldest = next(iter(self._held))
                dropped = self._held.pop(oldest)
                logger.warning("dropped run %s's unsaved events: too many sessions held", dropped.run_id)
            self._held[key] = writer
        unsaved = writer.unsaved
        logger.warning(
            "run %s: %d event(s) not stored in the session (%s)%s",
            writer.run_id,
            len(unsaved),
            writer.error,
            "; kept for the next run on it" if held else "",
        )
        return PersistFailed(unsaved=unsaved, error=writer.error or "", held=held)

    def _strict(
        self,
        terminal: RunCompleted | RunFailed | RunPaused,
        report: PersistFailed | None,
        final_text: str | None,
    ) -> RunCompleted | RunFailed | RunPaused:
        if not self.strict or report is None or type(terminal) is not RunCompleted:
            return terminal
        error = AgentError(
            kind="session_error",
            cause="not_persisted",
            message=(
                f"the run completed, but {len(report.unsaved)} of its events are not stored in the "
                f"session ({report.error})"
            ),
            final_text=final_text,
        )
        return RunFailed(error=error, usage=terminal.usage)

    async def _look(self, claim: _Claim) -> _HeaderState:
        """What the runner knows of `session`: its latest `RequestHeader`, and a turn left open.

        Brought up to date by reading only the events after the last look.
        """
        session, key, owner = claim.session, claim.key, claim.owner
        state = self._headers.get(key)
        if state is None or state.session is not owner:
            state = _HeaderState(owner)
            if len(self._headers) >= _MAX_SESSIONS:
                del self._headers[next(iter(self._headers))]  # the longest-known session
            self._headers[key] = state
        entries = await session.events(state.seq)
        if entries:
            for entry in entries:
                event = entry.event
                if type(event) is RequestHeader:
                    state.header = event
                elif isinstance(event, TurnOpened):
                    state.open_turn = (int(entry.seq), event.run_id)
                elif isinstance(event, TurnClosed) and state.open_turn and state.open_turn[1] == event.run_id:
                    state.open_turn = None
                elif type(event) is ApprovalPending:
                    state.waiting[event.run_call] = event.request_id
                elif type(event) is ToolReturned and state.waiting:
                    state.waiting.pop(event.call_id, None)
            state.seq = entries[-1].seq
            stamp: object = getattr(entries[-1].event, "ts", None)
            state.last_ts = stamp if isinstance(stamp, datetime) else None
        return state


_local = threading.local()  # this thread's session runner: its locks belong to this thread's loops


def default_session_runner() -> SessionRunner[Any]:
    """This thread's session runner: what `agent.run(q, session=s)` runs through.

    One per thread, so that the runs of a thread on one session queue behind each other
    (and its event-loop locks never cross threads). Its state is bounded: a session's queue
    is dropped when idle, and what it remembers per session is capped.
    """
    runner = cast("SessionRunner[Any] | None", getattr(_local, "runner", None))
    if runner is None:
        runner = _local.runner = SessionRunner[Any]()
    return runner


def on_session(context: RunContext[Ctx], session: Session) -> RunContext[Ctx]:
    """`context` for a run the caller gave `session=`: on that session, and a run of its own.

    A recorder on the context (the caller is inside another run, e.g. a tool of it) belongs
    to that run's session: it is dropped, so this run is recorded on `session`.
    """
    context = context.with_session(session)
    return context if context.observer is None else context.with_observer(None)


def needs_turn(context: RunContext[Any], session_given: bool) -> bool:
    """Whether a run on `context` goes in a turn on its session (`SessionRunner.drive`).

    Yes when the caller gave a session (`on_session` made the context), or the context's
    session is durable (a store that outlives the process must never be silently left
    unwritten); no when the run is recorded already (the context has a recorder: a run
    nested in a recorded one writes into that run's turn).
    """
    return (session_given or context.session_is_durable) and context.observer is None


def in_turn(
    agent: Agent[Ctx, Any], input: AgentInput, context: RunContext[Ctx], config: RunConfig | None
) -> functools.partial[Any]:
    """The run of `agent` in a turn on `context.session` by this thread's runner, waiting for a sink."""
    return functools.partial(default_session_runner().drive, agent, input, context, config)


def is_durable(session: Session) -> bool:
    """Whether runs on `session` persist as they go by default (`RunConfig.durable=None`): what it declares.

    Raises:
        UserError: `session` does not declare `durable` and `supports_ids` (see `check_session`).
    """
    return check_session(session).durable


def _config_of(agent: Agent[Any, Any], config: RunConfig | None) -> RunConfig:
    """The run's config: the one given, else the agent's `run_config`, else the defaults."""
    if config is not None:
        return config
    default: object = getattr(agent, "run_config", None)
    return default if isinstance(default, RunConfig) else RunConfig()


def _timed(
    context: RunContext[Ctx], timeout: float | None
) -> tuple[RunContext[Ctx], asyncio.TimerHandle | None]:
    """The run's context, with a token that `timeout` cancels (and the timer), if there is one."""
    if timeout is None:
        return context, None
    token = context.cancel.child_token()
    timer = asyncio.get_running_loop().call_later(timeout, token.cancel, TIMEOUT_REASON)
    return context.with_cancel(token), timer


class _Ready:
    """A claimed turn: the recorder and writer of its run, and the run."""

    __slots__ = ("go", "recorder", "writer")

    def __init__(self, recorder: SessionRecorder, writer: RunWriter, go: Go) -> None:
        self.recorder = recorder
        self.writer = writer
        self.go = go


def _paused(state: _HeaderState) -> AgentError:
    requests = sorted(set(state.waiting.values()))
    return AgentError(
        kind="session_paused",
        message=(
            f"the session's last run is paused: {len(state.waiting)} tool call(s) wait for a person's "
            f"decision (requests {', '.join(requests)}); resume it first with agent.resume(session, "
            "decisions={request_id: Approve() | Deny(reason) | Edit(args)}), or deny_rest=True to deny "
            "what is left"
        ),
    )


def _unreadable(exc: Exception) -> AgentError:
    return AgentError(
        kind="session_error",
        message=f"could not read the session before the run: {type(exc).__name__}: {exc}",
    )


def _busy(why: str) -> AgentError:
    return AgentError(kind="session_error", cause="busy", message=f"the session is busy: {why}")


def _cancelled(cancel: CancellationToken) -> AgentError:
    """The error of a run cancelled (or timed out) before it started, as the loop words it."""
    if cancel.reason == TIMEOUT_REASON:
        return AgentError(kind="timeout", message="the run timed out")
    return AgentError(
        kind="cancelled", message=f"the run was cancelled ({cancel.reason or 'no reason given'})"
    )


def _identity(session: Session) -> tuple[object, object]:
    """The key a runner knows `session` by, and the object that key stands for.

    A server opens a new session object per request: the objects of one stored log declare
    it (`SharedLog`), so they share what the runner knows of it and its queue; any other
    session is known by the object itself.
    """
    if isinstance(session, SharedLog):
        store, session_id = session.log_key
        return (id(store), session_id), store
    return id(session), session


_MAX_SESSIONS = 64
"""How many sessions a runner remembers the latest header of, and holds unsaved events for."""


class _Claim:
    """One run's claim on a session: what the runner needs to take its turn there."""

    __slots__ = ("agent", "cancel", "durable", "input", "key", "owner", "run_id", "session")

    def __init__(
        self, session: Session, *, durable: bool, agent: str, input: AgentInput, cancel: CancellationToken
    ) -> None:
        self.session = session
        self.key, self.owner = _identity(session)  # the session as the runner knows it (see _identity)
        self.durable = durable  # written as the run goes, between turn markers
        self.run_id = ""  # named by `drive` (`new_run_id`)
        self.agent = agent
        self.input = input  # the new turn
        self.cancel = cancel  # the run's token (a timeout's child, when there is one)


class _Turns:
    """One session's queue in a runner: the lock its runs take in turn, and how many use it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class _HeaderState:
    """What a runner knows of one session: its latest request header, up to which seq, a turn left open."""

    __slots__ = ("check", "header", "last_ts", "open_turn", "seq", "session", "waiting")

    def __init__(self, session: object) -> None:
        self.session = session  # the session object, or the store its objects share
        self.seq: SequenceId | None = None
        self.header: RequestHeader | None = None
        self.open_turn: tuple[int, str] | None = None  # (seq, run id) of a TurnOpened not yet closed
        self.last_ts: datetime | None = None  # the time of the latest event read
        self.waiting: dict[str, str] = {}  # call id -> request id: a paused run's calls without a result
        # The session's conversation as last checked: its runs look at their new turns only.
        self.check = ConversationCheck()


__all__ = [
    "OnBusy",
    "SessionRunner",
    "default_session_runner",
    "in_turn",
    "is_durable",
    "needs_turn",
    "on_session",
]
