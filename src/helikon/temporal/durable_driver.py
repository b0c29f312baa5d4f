"""`DurableDriver`: the agent loop stepped for a durable engine, with no engine in it.

It drives `helikon.core.loop.transition` exactly as the in-process driver does, and hands
each side effect to a `StepPort`: one model step per model turn, one tool step per tool
call (started together, at most `parallel_limit` at a time), a first step that opens the
run's turn in the session and a last one that closes it. The Temporal workflow's port makes
each step an activity; a test's port calls the worker's step functions directly, so the
driver is tested without Temporal.

What the driver keeps is what `transition` reads: the loop state and its own copy of the
conversation, in which a stored tool result is only its digest. The events `transition`
emits that the session records (the model's calls and answer, a handoff, a pause) wait in
`pending` and go with the next step, whose worker records them before doing its own work:
the session ends up with the very events an in-process durable run writes.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from helikon.core.events import (
    AgentError,
    AgentEvent,
    GuardrailTriggered,
    HandoffItem,
    MessageOutput,
    RepairStarted,
    RunCompleted,
    RunFailed,
    RunPaused,
    TokenUsage,
    ToolCallItem,
    ToolOutputItem,
)
from helikon.core.items import Item, ToolCall
from helikon.core.loop import (
    CallModel,
    Cancelled,
    Done,
    ExecuteTools,
    Failed,
    Finalizing,
    LoopState,
    ModelResponse,
    NextAction,
    RepairingOutput,
    Start,
    Terminate,
    ToolCallOutcome,
    ToolResults,
    TransitionCtx,
    TransitionInput,
    initial_state,
    transition,
)

from .refs import CloseRun, ModelTurn, RunSpec, RunSummary, StepFailed, ToolAnswer, ToolTurn

_RECORDED = (
    MessageOutput,
    ToolCallItem,
    ToolOutputItem,
    RepairStarted,
    HandoffItem,
    GuardrailTriggered,
    RunPaused,
)
"""The events a `SessionRecorder` turns into session events; the rest are the stream's only."""

_TERMINAL = (RunCompleted, RunFailed, RunPaused)

CANCELLED_REASON = "the workflow was cancelled"


class StepPort(Protocol):
    """Where the driver's steps are performed (a Temporal workflow schedules them as activities)."""

    async def open_run(self, spec: RunSpec) -> None:
        """Open the run's turn in its session and record its input."""
        ...

    async def call_model(self, turn: ModelTurn) -> TransitionInput | StepFailed:
        """Record `turn.pending`, make the model call; what it settles into."""
        ...

    async def invoke_tool(self, turn: ToolTurn) -> ToolAnswer:
        """Record `turn.pending` and the batch's start, run the call, record its result."""
        ...

    async def close_run(self, close: CloseRun) -> None:
        """Record `close.pending` and close the run's turn."""
        ...

    def cancel_reason(self) -> str | None:
        """Why the run was cancelled, if the canceller said (`TIMEOUT_REASON`: its timeout)."""
        ...


class DurableDriver:
    """Steps one run's loop from its input to its end, performing each step through `port`.

    Example:
        ```python
        from helikon.temporal.durable_driver import DurableDriver

        assert DurableDriver.__doc__
        ```
    """

    __slots__ = (
        "_conversation",
        "_pending",
        "_port",
        "_recorded",
        "_spec",
        "_step",
        "_tctx",
        "_usage",
        "limit",
    )

    def __init__(
        self, spec: RunSpec, tctx: TransitionCtx, port: StepPort, parallel_limit: int | None
    ) -> None:
        self._spec = spec
        self._tctx = tctx
        self._port = port
        self.limit = parallel_limit
        self._conversation: list[Item] = []
        self._pending: list[AgentEvent] = []
        self._recorded: set[str] = set()  # calls whose results a tool step stored
        self._step = 0
        self._usage: TokenUsage | None = None  # the last model call's

    async def run(self) -> RunSummary:
        """Drive the run to its end; how it ended."""
        state = initial_state(self._tctx)
        next_input: TransitionInput | None = Start(messages=self._spec.input)
        try:
            await self._port.open_run(self._spec)
        except asyncio.CancelledError:  # cancelled before it began: it ends so, closed if it opened
            next_input = Cancelled(reason=self._port.cancel_reason() or CANCELLED_REASON)
        terminal: AgentEvent | None = None
        while next_input is not None:
            outcome = transition(state, next_input, self._tctx, self._conversation)
            self._conversation.extend(outcome.conversation_appends)
            state = outcome.next_state
            for event in outcome.events:
                self._note(event)
                if isinstance(event, _TERMINAL):
                    terminal = event
            performed = await self._perform(outcome.next_action, state)
            if isinstance(performed, AgentError):  # user code raised: the run fails, as in-process
                state = Failed(error=performed, usage=_usage(state))
                terminal = RunFailed(error=performed, usage=state.usage)
                performed = None
            next_input = performed
        return await self._close(state, terminal)

    def _note(self, event: AgentEvent) -> None:
        """Keep what the session records for the next step (a result a tool step stored, it has)."""
        if not isinstance(event, _RECORDED):
            return
        if type(event) is ToolOutputItem and event.item.call_id in self._recorded:
            return
        self._pending.append(event)

    def _take(self) -> tuple[AgentEvent, ...]:
        pending, self._pending = tuple(self._pending), []
        return pending

    async def _perform(self, action: NextAction, state: LoopState) -> TransitionInput | AgentError | None:
        """Do what `action` asks; the next input, the error that fails the run, or None: the end."""
        try:
            if isinstance(action, CallModel):
                return await self._model(state)
            if isinstance(action, ExecuteTools):
                return await self._tools(action.calls, getattr(state, "turn", 0))
        except asyncio.CancelledError:  # the step is over (its cancel completed): the run ends cancelled
            return Cancelled(reason=self._port.cancel_reason() or CANCELLED_REASON)
        if isinstance(action, Terminate):
            return None
        return AgentError(kind="other", message=f"the durable runner cannot perform {action.type} yet")

    async def _model(self, state: LoopState) -> TransitionInput | AgentError:
        self._step += 1
        turn = ModelTurn(
            run=self._spec.run,
            step=self._step,
            turn=getattr(state, "turn", 0),
            structured=isinstance(state, Finalizing | RepairingOutput),
            pending=self._take(),
            usage=self._usage,
        )
        answer = await self._port.call_model(turn)
        if isinstance(answer, StepFailed):
            return answer.error
        if isinstance(answer, ModelResponse):
            self._usage = answer.usage
        return answer

    async def _tools(self, calls: tuple[ToolCall, ...], turn: int) -> TransitionInput | AgentError:
        self._step += 1
        pending, batch = self._take(), tuple(call.call_id for call in calls)
        gate = asyncio.Semaphore(self.limit) if self.limit is not None and self.limit < len(calls) else None

        async def one(call: ToolCall) -> ToolAnswer:
            tool_turn = ToolTurn(
                run=self._spec.run,
                step=self._step,
                turn=turn,
                call=call,
                batch=batch,
                pending=pending,
                usage=self._usage,
            )
            if gate is None:
                return await self._port.invoke_tool(tool_turn)
            async with gate:
                return await self._port.invoke_tool(tool_turn)

        answers = await asyncio.gather(*(one(call) for call in calls))
        outcomes: list[ToolCallOutcome] = []
        for answer in answers:
            if answer.failed is not None:  # the calls left without a result are closed as interrupted
                return answer.failed.error
            assert answer.outcome is not None
            outcomes.append(answer.outcome)
            self._recorded.add(answer.outcome.call_id)
        return ToolResults(outcomes=tuple(outcomes))

    async def _close(self, state: LoopState, terminal: AgentEvent | None) -> RunSummary:
        outcome, error = _ending(terminal)
        self._step += 1
        close = CloseRun(
            run=self._spec.run,
            step=self._step,
            outcome=outcome,
            pending=self._take(),
            usage=self._usage,
        )
        await self._port.close_run(close)
        return RunSummary(outcome=outcome, usage=_usage(state), error=error)


def _usage(state: LoopState) -> TokenUsage:
    return state.output.usage if isinstance(state, Done) else state.usage


def _ending(terminal: AgentEvent | None) -> tuple[str, AgentError | None]:
    if isinstance(terminal, RunCompleted):
        return "completed", None
    if isinstance(terminal, RunPaused):
        return "paused", None
    if isinstance(terminal, RunFailed):
        return ("cancelled" if terminal.error.kind == "cancelled" else "failed"), terminal.error
    return "failed", None


__all__ = ["CANCELLED_REASON", "DurableDriver", "StepPort"]
