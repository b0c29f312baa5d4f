"""`AsyncioRunner`: the default runner. Session in, events out, session appended, timeout enforced."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Generic, TypeVar

from helikon.core.agent import Agent, RunInput, to_agent_input
from helikon.core.context import RunConfig, RunContext
from helikon.core.events import AgentError, AgentEvent, RunFailed, RunStarted
from helikon.core.loop import TIMEOUT_REASON
from helikon.core.recorder import SessionRecorder
from helikon.core.result import RunResult, RunStream

Ctx = TypeVar("Ctx")

logger = logging.getLogger("helikon.runtime")


class AsyncioRunner(Generic[Ctx]):
    """Runs agents on the current asyncio event loop, with the session lifecycle around each run.

    Before the run it reads `context.session.snapshot()` and puts that history in front of
    the input (a read failure fails the run); during the run it records the events with a
    `SessionRecorder`; after it, it appends them to the session (best effort: a failed
    append is logged, never raised). `RunConfig.timeout` cancels the run when it expires.

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
            assert len(await session.events()) == 4

        asyncio.run(main())
        ```
    """

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
        except Exception as exc:
            error = AgentError(
                kind="session_error",
                message=f"could not read the session before the run: {type(exc).__name__}: {exc}",
            )
            yield RunStarted(agent=agent.name)
            yield RunFailed(error=error)
            return
        recorder = SessionRecorder(new_input.messages)
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
