"""`WorkflowAgent`: what the deterministic workflow agents share (name, description, run)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, Generic, Never, TypeVar

from .._internal.sync import run_sync
from ..context import RunConfig, RunContext
from ..events import AgentEvent
from ..exceptions import UserError
from ..input import AgentInput, RunInput, to_agent_input
from ..result import RunResult, RunStream
from ..run.sink import forward
from ..run.tracing import RunTrace, tracing_possible, within
from ..session.turn import in_turn, needs_turn, on_session
from ..usage import metered
from ._merge import check_description, check_name

if TYPE_CHECKING:
    from ..run.sink import EventSink
    from ..session import Session

Ctx = TypeVar("Ctx")


class WorkflowAgent(ABC, Generic[Ctx]):
    """Base of the workflow agents: an `Agent` whose topology is fixed in code.

    Subclasses implement `_events`, the run's event stream.
    """

    __slots__ = ("description", "name")

    _kind = "workflow"

    def __init__(self, name: str, description: str = "") -> None:
        owner = type(self).__name__
        self.name = check_name(owner, name)
        self.description = check_description(owner, description)

    def run(
        self,
        input: RunInput,
        *misplaced: Never,  # run(ctx, input), context first: an error that shows the right call
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
        session: Session | None = None,
    ) -> RunStream:
        """Start a run: iterate the stream for events, or await it for a `RunResult`.

        `config` (when given) is passed on to every child run; its `max_agent_depth`
        bounds the nesting, and its `usage_limits` cap the children's spending together.
        Children share `context.state`, each under `context.child()`. `session` (or a
        durable session on the context) is read and written as `LlmAgent.run` says, once
        for the whole workflow: its children do not write it again.
        """
        if config is not None and not isinstance(config, RunConfig):
            raise UserError(f"{type(self).__name__}.run(config={config!r}): expected a RunConfig")
        ctx: RunContext[Any] = context if context is not None else RunContext.ephemeral(None)
        if session is not None:
            ctx = on_session(ctx, session)
        given = to_agent_input(input, *misplaced)
        if needs_turn(ctx, session is not None):
            return RunStream(drive=in_turn(self, given, ctx, config), agent=self)
        return RunStream(self._stream(given, ctx, config), agent=self, input=given)

    def drive(
        self, input: AgentInput, context: RunContext[Ctx], config: RunConfig | None, sink: EventSink
    ) -> Coroutine[Any, Any, None]:
        """The run itself, its events written to `sink`: what a runner (and `run`) calls.

        No session is read or written here (`run` puts the run in a turn on its session).
        """
        return forward(self._stream(input, context, config), sink)

    def _stream(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        """The run's events: the children under one meter and (when traced) one span."""
        if config is not None and config.usage_limits is not None:
            ctx, _meter = metered(ctx, config.usage_limits)  # the children count into one meter
        if tracing_possible():
            return self._traced(input, ctx, config)
        return self._events(input, ctx, config)

    async def _traced(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncGenerator[AgentEvent, None]:
        """`_events` in an `invoke_agent` span that the children's spans nest under."""
        trace = RunTrace.start(ctx, self.name)
        if trace is None:  # sampled out
            async for event in self._events(input, ctx, config):
                yield event
            return
        async for event in within(trace, self._events(input, ctx.with_trace_parent(trace.run_span), config)):
            yield event

    def run_sync(
        self,
        input: RunInput,
        *misplaced: Never,
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
        session: Session | None = None,
    ) -> RunResult[str]:
        """`run` to completion from synchronous code (on the thread's loop; not inside a running one)."""
        return run_sync(lambda: self.run(input, *misplaced, context=context, config=config, session=session))

    @abstractmethod
    def _events(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        """The run's event stream: one outer RunStarted, the children's events, one terminal event."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
