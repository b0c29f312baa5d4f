"""`AsyncioRunner`: the session runner, driven from asyncio code with the options in your hands."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, TypeVar

from helikon.core.input import RUNNER_CALL, RunInput, to_agent_input
from helikon.core.result import RunResult, RunStream
from helikon.core.session.turn import OnBusy, SessionRunner, is_durable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from helikon.core.agent import Agent
    from helikon.core.approvals import Approver, Decision
    from helikon.core.context import RunConfig, RunContext

Ctx = TypeVar("Ctx")
T = TypeVar("T")


class AsyncioRunner(SessionRunner[Ctx]):
    """Runs agents on the current asyncio event loop, each run in a turn on its context's session.

    What a turn does (read the session, record and write the run, one run at a time per
    session, crash repair, `RunConfig.timeout`) is `helikon.core.session.turn.SessionRunner`'s,
    which `agent.run(q, session=s)` uses with the defaults; a runner of your own sets the
    options and keeps its own queue and what it remembers of each session.

    Args:
        persist_retry: How the writes left at the end of a run are retried (default: 4
            attempts in all, 0.25 s doubling to at most 2 s).
        strict: Fail a run whose events could not all be stored (kind `session_error`,
            cause `not_persisted`).
        on_busy: `"wait"` (the default) or `"fail"`, when the session is busy with another run.
        stale_turn_after: Seconds without a new event after which another writer's open
            turn is taken for crashed (and repaired) rather than waited for. Set it above
            your longest model or tool call when several processes run on one session.

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

    __slots__ = ()

    def run_streamed(
        self,
        agent: Agent[Ctx, T],
        input: RunInput,
        context: RunContext[Ctx],
        config: RunConfig | None = None,
        *,
        run_key: str | None = None,
    ) -> RunStream[T]:
        """Start a run and stream its events (`run_key`: see `SessionRunner.drive`)."""
        # Converted now, so the context-first runner.run(agent, ctx, input) fails at the call, saying how.
        new_input = to_agent_input(input, call=RUNNER_CALL)
        # The input it knows is the new turn only (the session holds the rest): no input=.
        drive = functools.partial(self.drive, agent, new_input, context, config, run_key=run_key)
        return RunStream(drive=drive, agent=agent)

    async def run(
        self, agent: Agent[Ctx, T], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunResult[T]:
        """Run to completion (raises `RunError` if the run fails); `final_output` as `agent.run` gives it."""
        return await self.run_streamed(agent, input, context, config).collect()

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
        """Decide the paused run on `context.session` and stream what follows (`SessionRunner.drive_resumed`).

        The stream raises the `ApprovalError` of a decision that fails its checks; it
        yields `ApprovalResolved` per decision recorded, then the run's events (the decided
        calls' results, the model's next turns) to its end, or `RunPaused` while some
        request still waits.
        """
        drive = functools.partial(
            self.drive_resumed, agent, context, dict(decisions or {}), deny_rest, by, config, run_key=run_key
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


__all__ = ["AsyncioRunner", "OnBusy", "is_durable"]
