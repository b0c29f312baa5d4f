"""The `Runner` protocol (the durability seam), and the runner a run on a session goes through.

`agent.run(q, session=s)`, and any run whose session is durable, goes through a runner so
that the session is read before the run and written during it (see `Runner`). Which one:
this thread's default runner, made on first use by the factory the facade installs
(`helikon.runtime.AsyncioRunner()`: core never imports a sibling package, so the facade
registers it as `import helikon` runs, as it does the provider model strings).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

from ._peer_hints import RUNNER_RUN, RUNNER_RUN_STREAMED, PeerHints, protocol_stub
from .exceptions import UserError

if TYPE_CHECKING:
    from .agent import Agent
    from .context import RunConfig, RunContext
    from .input import RunInput
    from .result import RunResult, RunStream
    from .session import Session

Ctx = TypeVar("Ctx")
T = TypeVar("T")


@runtime_checkable
class Runner(Protocol[Ctx], metaclass=PeerHints):
    """Drives an agent to a result, owning what a bare `agent.run` does not.

    A runner loads the session before the run, records and persists the run's events,
    and enforces `RunConfig.timeout`. `helikon.runtime.AsyncioRunner` is the default.
    """

    @protocol_stub(RUNNER_RUN_STREAMED)
    def run_streamed(
        self, agent: Agent[Ctx, T], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunStream[T]:
        """Start a run and stream its events."""
        ...

    @protocol_stub(RUNNER_RUN)
    async def run(
        self, agent: Agent[Ctx, T], input: RunInput, context: RunContext[Ctx], config: RunConfig | None = None
    ) -> RunResult[T]:
        """Run to completion (raises `RunError` if the run fails); `final_output` as `agent.run` gives it."""
        ...


class _Installed:
    """The factory of default runners, installed once by the facade."""

    __slots__ = ("factory",)

    def __init__(self) -> None:
        self.factory: Callable[[], Runner[Any]] | None = None


_installed = _Installed()

_local = threading.local()  # this thread's default runner: its locks belong to this thread's loops


def install_default_runner(factory: Callable[[], Runner[Any]]) -> None:
    """Make `factory` what builds each thread's default runner (the facade calls this once)."""
    _installed.factory = factory


def default_runner() -> Runner[Any]:
    """This thread's default runner: what `agent.run(q, session=s)` runs through.

    One per thread, so that the runs of a thread on one session queue behind each other
    (and its event-loop locks never cross threads). Its state is bounded: a session's queue
    is dropped when idle, and what it remembers per session is capped.
    """
    runner = cast("Runner[Any] | None", getattr(_local, "runner", None))
    if runner is None:
        factory = _installed.factory
        if factory is None:  # only when helikon.core is loaded without the helikon package
            raise UserError(
                "no default runner is installed; run through one explicitly: "
                "`await AsyncioRunner().run(agent, input, context)` (helikon.runtime)"
            )
        runner = _local.runner = factory()
    return runner


def on_session(context: RunContext[Ctx], session: Session) -> RunContext[Ctx]:
    """`context` for a run the caller gave `session=`: on that session, and a run of its own.

    A runner's observer on the context (the caller is inside another run, e.g. a tool of
    it) belongs to that run's session: it is dropped, so this run is recorded on `session`.
    """
    context = context.with_session(session)
    return context if context.observer is None else context.with_observer(None)


def needs_runner(context: RunContext[Any], session_given: bool) -> bool:
    """Whether a bare run on `context` must go through a runner to keep its session.

    Yes when the caller gave a session (`on_session` made the context), or the context's
    session is durable (a store that outlives the process must never be silently left
    unwritten); no when a runner is driving already (the context has its observer: a
    runner's own run, or a nested one).
    """
    durable = getattr(context.session, "durable", False) is True  # a session that declares no flags is not
    return (session_given or durable) and context.observer is None


__all__ = ["Runner", "default_runner", "install_default_runner", "needs_runner", "on_session"]
