"""`AsyncioRunner`: the default runner. Session in, events out, session appended, timeout enforced."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, Generic, TypeVar

from helikon.core.agent import Agent, RunInput, to_agent_input
from helikon.core.context import RunConfig, RunContext
from helikon.core.events import AgentError, AgentEvent, RequestSent, RunFailed, RunStarted
from helikon.core.loop import TIMEOUT_REASON
from helikon.core.recorder import SessionRecorder
from helikon.core.result import RunResult, RunStream
from helikon.core.session import RequestHeader, SequenceId, Session

Ctx = TypeVar("Ctx")

logger = logging.getLogger("helikon.runtime")


class AsyncioRunner(Generic[Ctx]):
    """Runs agents on the current asyncio event loop, with the session lifecycle around each run.

    Before the run it reads `context.session.snapshot()` and puts that history in front of
    the input (a read failure fails the run); during the run it records the events with a
    `SessionRecorder`; after it, it appends them to the session (best effort: a failed
    append is logged, never raised). `RunConfig.timeout` cancels the run when it expires.

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

    __slots__ = ("_configs", "_headers")

    def __init__(self) -> None:
        self._headers: dict[object, _HeaderState] = {}
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
        try:
            snapshot = await session.snapshot()
            last_header = await self._last_header(session)
        except Exception as exc:
            error = AgentError(
                kind="session_error",
                message=f"could not read the session before the run: {type(exc).__name__}: {exc}",
            )
            yield RunStarted(agent=agent.name)
            yield RunFailed(error=error)
            return
        recorder = SessionRecorder(new_input.messages, last_header=last_header)
        config = self._recording(config)
        run_ctx: RunContext[Any] = context
        timer: asyncio.TimerHandle | None = None
        if config.timeout is not None:
            token = context.cancel.child_token()
            run_ctx = context.with_cancel(token)
            timer = asyncio.get_running_loop().call_later(config.timeout, token.cancel, TIMEOUT_REASON)
        try:
            async for event in agent.run(
                new_input.prepend(snapshot.messages), context=run_ctx, config=config
            ):
                recorder.observe(event)
                if type(event) is not RequestSent:  # the runner asked for it; its caller did not
                    yield event
        finally:
            if timer is not None:
                timer.cancel()
            events = recorder.drain()
            try:
                await session.append(events)
            except Exception:
                logger.warning(
                    "could not append %d event(s) to the session after the run", len(events), exc_info=True
                )

    def _recording(self, config: RunConfig) -> RunConfig:
        """`config` with `record_requests` on (the copy is kept: most runs reuse one config)."""
        if config.record_requests:
            return config
        cached = self._configs
        if cached is not None and cached[0] is config:
            return cached[1]
        recording = replace(config, record_requests=True)
        self._configs = (config, recording)
        return recording

    async def _last_header(self, session: Session) -> RequestHeader | None:
        """The session's latest `RequestHeader`, reading only the events after the last look."""
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
                if type(entry.event) is RequestHeader:
                    state.header = entry.event
            state.seq = entries[-1].seq
        return state.header


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

    __slots__ = ("header", "seq", "session")

    def __init__(self, session: object) -> None:
        self.session = session  # the session object, or the store its objects share
        self.seq: SequenceId | None = None
        self.header: RequestHeader | None = None
