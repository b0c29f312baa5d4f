"""`AsyncioRunner`: the default runner. Session in, events out, session appended, timeout enforced."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, Generic, Literal, TypeVar

from helikon.core.agent import Agent, RunInput, to_agent_input
from helikon.core.compaction import accepts_ids
from helikon.core.context import RunConfig, RunContext
from helikon.core.crash_repair import close_interrupted_turn
from helikon.core.events import (
    AgentError,
    AgentEvent,
    RequestSent,
    RunCompleted,
    RunFailed,
    RunStarted,
    ToolsStarting,
    TurnStarted,
)
from helikon.core.loop import TIMEOUT_REASON
from helikon.core.recorder import SessionRecorder
from helikon.core.result import RunResult, RunStream
from helikon.core.session import (
    RequestHeader,
    Rewound,
    SequenceId,
    Session,
    SessionEvent,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
)

Ctx = TypeVar("Ctx")

logger = logging.getLogger("helikon.runtime")


class AsyncioRunner(Generic[Ctx]):
    """Runs agents on the current asyncio event loop, with the session lifecycle around each run.

    Before the run it reads `context.session.snapshot()` and puts that history in front of
    the input (a read failure fails the run), first closing a turn a crashed writer left
    open (`helikon.core.crash_repair`); during the run it records the events with a
    `SessionRecorder` and appends them to the session: on a durable session
    (`RunConfig.durable`) as they settle, before every model call and before tools start,
    between `TurnOpened`/`TurnClosed` markers; otherwise once, after the run. Appends are best
    effort: a failure is logged, never raised. `RunConfig.timeout` cancels the run when it
    expires. An agent whose stream raises (a custom `Agent`) fails the run with a
    `RunFailed` event, and its turn is closed as failed.

    The recorded events include request records: a `RequestHeader` (provider, model,
    settings, system prompt, tool schemas) ahead of a model call whenever it differs from
    the session's latest one, and each assistant message's usage (see
    `helikon.core.request_log`). To find the latest header without reading the whole log
    every run, the runner remembers, per session, how far it has read, and reads only the
    events after that (the first run on a session reads its log once).

    Example:
        ```python
        import asyncio

        from helikon import LlmAgent, MemorySession, RunContext
        from helikon.runtime import AsyncioRunner
        from helikon.testing import MockModel, text_turn

        agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("one"), text_turn("two")]))
        session = MemorySession()
        ctx = RunContext.ephemeral(None).with_session(session)

        async def main() -> None:
            runner = AsyncioRunner()
            await runner.run(agent, "first", ctx)
            await runner.run(agent, "second", ctx)   # the model sees the first exchange too
            # two exchanges and one request header (the agent did not change in between)
            assert len(await session.events()) == 5

        asyncio.run(main())
        ```
    """

    __slots__ = ("_configs", "_headers", "_running")

    def __init__(self) -> None:
        self._headers: dict[object, _HeaderState] = {}
        self._running: set[str] = set()  # the run ids of this runner's runs in flight
        self._configs: tuple[RunConfig, RunConfig] | None = None  # the last config, and it recording

    def run_streamed(
        self, agent: Agent[Ctx], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunStream:
        """Start a run and stream its events."""
        return RunStream(self._events(agent, input, context, config))

    async def run(
        self, agent: Agent[Ctx], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunResult[str]:
        """Run to completion (raises `RunError` if the run fails)."""
        return await self.run_streamed(agent, input, context, config).collect()

    async def _events(
        self, agent: Agent[Ctx], input: RunInput, context: RunContext[Ctx], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        if config is None:
            default: object = getattr(agent, "run_config", None)
            config = default if isinstance(default, RunConfig) else RunConfig()
        new_input = to_agent_input(input)
        session = context.session
        durable = config.durable if config.durable is not None else is_durable(session)
        run_id = uuid.uuid4().hex
        try:
            state = await self._look(session)
            if state.open_turn is not None and state.open_turn[1] not in self._running:
                # The last turn was never closed: its writer died mid-run. Close it first, so
                # the conversation this run continues is one providers accept.
                await close_interrupted_turn(session, since=SequenceId(state.open_turn[0] - 1))
                state = await self._look(session)
            snapshot = await session.snapshot()
        except Exception as exc:
            error = AgentError(
                kind="session_error",
                message=f"could not read the session before the run: {type(exc).__name__}: {exc}",
            )
            yield RunStarted(agent=agent.name)
            yield RunFailed(error=error)
            return
        turn = TurnOpened(run_id=run_id, agent=agent.name) if durable else None
        recorder = SessionRecorder(new_input.messages, last_header=state.header, turn=turn)
        writer = _RunWriter(session, run_id) if durable else None
        config = self._recording(config, durable)
        run_ctx: RunContext[Any] = context
        timer: asyncio.TimerHandle | None = None
        if config.timeout is not None:
            token = context.cancel.child_token()
            run_ctx = context.with_cancel(token)
            timer = asyncio.get_running_loop().call_later(config.timeout, token.cancel, TIMEOUT_REASON)
        outcome: TurnOutcome = "cancelled"  # unless a terminal event says otherwise
        ended = False  # whether the terminal event came
        self._running.add(run_id)
        try:
            async for event in agent.run(
                new_input.prepend(snapshot.messages), context=run_ctx, config=config
            ):
                recorder.observe(event)
                if isinstance(event, ToolsStarting):  # the runner asked for it; its caller did not
                    if writer is not None:  # the calls, then (once they are stored) the marker
                        await writer.write(recorder.take())
                        await writer.write([ToolsStarted(call_ids=event.call_ids)])
                    continue
                if writer is not None and type(event) is TurnStarted:
                    await writer.write(recorder.take())  # a model call is next: what settled first
                elif isinstance(event, RunCompleted):
                    outcome, ended = "completed", True
                elif isinstance(event, RunFailed):
                    outcome, ended = ("cancelled" if event.error.kind == "cancelled" else "failed"), True
                if type(event) is not RequestSent:  # the runner asked for it; its caller did not
                    yield event
        except Exception as exc:
            # An LlmAgent's stream ends in RunFailed; another agent's may raise. The run
            # fails all the same, as an event, and its turn is closed as failed.
            message = f"the run of agent {agent.name!r} raised {type(exc).__name__}: {exc}"
            if ended:  # after its terminal event: the outcome stands
                logger.warning("%s after its terminal event", message)
            else:
                failure = RunFailed(error=AgentError(kind="other", message=message))
                recorder.observe(failure)
                outcome = "failed"
                yield failure
        finally:
            self._running.discard(run_id)
            if timer is not None:
                timer.cancel()
            events = recorder.drain()
            if writer is None:
                try:
                    await session.append(events)
                except Exception:
                    logger.warning(
                        "could not append %d event(s) to the session after the run",
                        len(events),
                        exc_info=True,
                    )
            else:
                await writer.close(events, "refused" if recorder.refused else outcome)

    def _recording(self, config: RunConfig, durable: bool) -> RunConfig:
        """`config` recording requests, and tool starts for a durable run (the copy is kept)."""
        if config.record_requests and config.record_tool_starts == durable:
            return config
        cached = self._configs
        if cached is not None and cached[0] is config and cached[1].record_tool_starts == durable:
            return cached[1]
        recording = replace(config, record_requests=True, record_tool_starts=durable)
        self._configs = (config, recording)
        return recording

    async def _look(self, session: Session) -> _HeaderState:
        """What the runner knows of `session`: its latest `RequestHeader`, and a turn left open.

        Brought up to date by reading only the events after the last look.
        """
        # A server opens a new session object per request: known by its store and id, the
        # session is read from where the last look stopped (`events(since)` on a fresh object
        # fetches only that tail), not from the start.
        store = _store_of(session)
        session_id = getattr(session, "session_id", None)
        key: object = (id(store), session_id) if store is not None and session_id is not None else id(session)
        state = self._headers.get(key)
        owner = store if store is not None and session_id is not None else session
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
            state.seq = entries[-1].seq
        return state


def is_durable(session: Session) -> bool:
    """Whether runs on `session` persist as they go by default (`RunConfig.durable=None`).

    A session says so with a `durable` attribute; otherwise one backed by a shared store
    (SQLite, PostgreSQL, Redis: a `database`, `pool` or `client`) is, and a wrapper (such as
    `CompactingSession`) is what its `inner` session is.
    """
    declared = getattr(session, "durable", None)
    if isinstance(declared, bool):
        return declared
    if _store_of(session) is not None:
        return True
    inner = getattr(session, "inner", None)
    return inner is not None and inner is not session and is_durable(inner)


TurnOutcome = Literal["completed", "failed", "cancelled", "refused", "interrupted"]


class _RunWriter:
    """Appends a durable run's events as they settle, each batch with ids derived from the run.

    A failed write is logged and its batch kept, to be retried as it was (same events, same
    ids) before the next one: the ids make the retry a no-op if the failed write went
    through after all.
    """

    __slots__ = ("_count", "_ids", "_pending", "_run_id", "_session", "_written")

    def __init__(self, session: Session, run_id: str) -> None:
        self._session = session
        self._run_id = run_id
        self._pending: list[tuple[list[SessionEvent], list[str]]] = []  # batches not yet stored
        self._count = 0
        self._written = 0  # events stored so far
        self._ids = accepts_ids(session)

    async def write(self, events: list[SessionEvent]) -> None:
        if events:
            start, self._count = self._count, self._count + len(events)
            self._pending.append((events, [f"{self._run_id}-{n}" for n in range(start, self._count)]))
        while self._pending:
            batch, ids = self._pending[0]
            try:
                if self._ids:
                    await self._session.append(batch, ids=ids)
                else:
                    await self._session.append(batch)
            except Exception:
                count = len(batch)
                logger.warning(
                    "could not append %d event(s) to the session during the run", count, exc_info=True
                )
                return
            del self._pending[0]
            self._written += len(batch)

    async def close(self, events: list[SessionEvent], outcome: TurnOutcome) -> None:
        """Write the rest and the `TurnClosed`; a refused run's written events are rewound away."""
        if outcome == "refused":
            if not self._written:
                self._pending.clear()  # nothing of it is stored: it leaves no trace
                return
            events = [*events, *await self._rewind_marker()]
        await self.write([*events, TurnClosed(run_id=self._run_id, outcome=outcome)])

    async def _rewind_marker(self) -> list[SessionEvent]:
        # The refused input is already in the log: a rewind to just before the turn takes it
        # out of the conversation (the log keeps it, for the audit).
        try:
            entries = await self._session.events()
        except Exception:
            logger.warning("could not read the session to take back a refused input", exc_info=True)
            return []
        for entry in entries:
            if type(entry.event) is TurnOpened and entry.event.run_id == self._run_id:  # pyright: ignore[reportAttributeAccessIssue]
                return [Rewound(to_seq=int(entry.seq) - 1)]
        return []


def _store_of(session: Session) -> object | None:
    """The shared store behind a durable session object (its database, pool or client), if any."""
    for name in ("database", "pool", "client"):
        store = getattr(session, name, None)
        if store is not None:
            return store
    return None


_MAX_SESSIONS = 64
"""How many sessions a runner remembers the latest header of (each costs a reference)."""


class _HeaderState:
    """What a runner knows of one session's request headers: the latest, and up to which seq."""

    __slots__ = ("header", "open_turn", "seq", "session")

    def __init__(self, session: object) -> None:
        self.session = session  # the session object, or the store its objects share
        self.seq: SequenceId | None = None
        self.header: RequestHeader | None = None
        self.open_turn: tuple[int, str] | None = None  # (seq, run id) of a TurnOpened not yet closed
