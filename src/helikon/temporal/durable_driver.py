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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from helikon.core.approvals import PendingApproval
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
from helikon.core.items import Item, ToolCall, ToolResult
from helikon.core.loop import (
    ApplyHandoff,
    ApplyingHandoff,
    CallModel,
    Cancelled,
    CheckingOutput,
    CheckOutput,
    Done,
    ExecuteTools,
    Failed,
    Finalizing,
    HandedOff,
    LoopState,
    ModelResponse,
    NeedsApproval,
    NextAction,
    RepairingOutput,
    Start,
    Terminate,
    ToolCallOutcome,
    ToolResults,
    TransitionCtx,
    TransitionInput,
    cancel_error,
    initial_state,
    transition,
)
from helikon.core.run.resume_point import Decided
from helikon.core.run.transition_ctx import transition_ctx

from .refs import (
    CheckTurn,
    CloseRun,
    Guarded,
    GuardTurn,
    HandoffTurn,
    ModelTurn,
    Opened,
    Resumed,
    ResumeTurn,
    RunSpec,
    RunSummary,
    StepFailed,
    ToolAnswer,
    ToolTurn,
)

if TYPE_CHECKING:
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunConfig

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
_NOT_RUN = ("deny", "unknown")  # the decided calls a resumed turn does not run

CANCELLED_REASON = "the workflow was cancelled"


class StepPort(Protocol):
    """Where the driver's steps are performed (a Temporal workflow schedules them as activities)."""

    async def open_run(self, spec: RunSpec) -> Opened:
        """Open the run's turn in its session, record its input; its start hooks and input guardrails."""
        ...

    async def call_model(self, turn: ModelTurn) -> TransitionInput | StepFailed:
        """Record `turn.pending`, make the model call; what it settles into."""
        ...

    async def invoke_tool(self, turn: ToolTurn) -> ToolAnswer:
        """Record `turn.pending` and the batch's start, run the call, record its result."""
        ...

    async def check_output(self, turn: CheckTurn) -> TransitionInput | StepFailed:
        """Run the output validators."""
        ...

    async def guard_output(self, turn: GuardTurn) -> Guarded:
        """Run the output guardrails."""
        ...

    async def hand_off(self, turn: HandoffTurn) -> TransitionInput | StepFailed:
        """Decide a handoff."""
        ...

    async def close_run(self, close: CloseRun) -> None:
        """Record `close.pending` and close the run's turn."""
        ...

    def cancel_reason(self) -> str | None:
        """Why the run was cancelled, if the canceller said (`TIMEOUT_REASON`: its timeout)."""
        ...

    def paused(self, summary: RunSummary) -> None:
        """The run paused (its turn is closed): what a status query answers while it waits."""
        ...

    async def wait_for_decisions(self, pending: tuple[PendingApproval, ...]) -> None:
        """Wait until every request of the pause is decided (expired ones are denied at expiry)."""
        ...

    async def resume_run(self, turn: ResumeTurn) -> Resumed:
        """Open the turn that goes on with the paused run; where it goes on from."""
        ...


@dataclass(frozen=True)
class AgentShape:
    """What the driver knows of an agent: its loop's context at a depth, whether it guards its output."""

    tctx: TransitionCtx
    output_guarded: bool = False

    @staticmethod
    def of(agent: LlmAgent[Any, Any], config: RunConfig, depth: int) -> AgentShape:
        """`agent`'s shape under `config` at `depth` (its instructions are rendered by the model step)."""
        return AgentShape(transition_ctx(agent, config, (), depth), bool(agent.output_guardrails))


Shapes = Callable[[str, int], AgentShape]
"""The shape of the agent named so, at that depth (a handoff continues with its target, deeper)."""


class DurableDriver:
    """Steps one run's loop from its input to its end, performing each step through `port`.

    A handoff continues the run with its target: the driver takes the target's shape, one
    level deeper, and steps its loop from the transcript, as the in-process driver runs it.

    Example:
        ```python
        from helikon.temporal.durable_driver import AgentShape, DurableDriver

        assert DurableDriver.__doc__ and AgentShape.__doc__
        ```
    """

    __slots__ = (
        "_before",
        "_conversation",
        "_pending",
        "_port",
        "_recorded",
        "_ref",
        "_resumes",
        "_shape",
        "_shapes",
        "_spec",
        "_started",
        "_step",
        "_usage",
        "limit",
    )

    def __init__(self, spec: RunSpec, shapes: Shapes, port: StepPort, parallel_limit: int | None) -> None:
        self._spec = spec
        self._ref = spec.run  # the run as the steps name it: its agent changes with a handoff
        self._shapes = shapes
        self._shape = shapes(spec.run.agent, 0)
        self._port = port
        self.limit = parallel_limit
        self._conversation: list[Item] = []
        self._pending: list[AgentEvent] = []
        self._recorded: set[str] = set()  # calls whose results a tool step stored
        self._step = 0
        self._usage: TokenUsage | None = None  # the last model call's
        self._before = TokenUsage()  # what the agents handed off from spent
        self._started = True
        self._resumes = 0

    async def run(self) -> RunSummary:
        """Drive the run to its end; how it ended."""
        state = initial_state(self._shape.tctx)
        next_input: TransitionInput | None = Start(messages=self._spec.input)
        terminal: AgentEvent | None = None
        try:
            opened = await self._port.open_run(self._spec)
        except asyncio.CancelledError:  # cancelled before it began: it ends so, closed if it opened
            opened = Opened()
            next_input = Cancelled(reason=self._port.cancel_reason() or CANCELLED_REASON)
        if opened.failed is not None or opened.refused:
            self._started = False
            state, terminal = self._refused(opened, state)
            next_input = None
        state, terminal = await self._drive(state, next_input, terminal)
        summary = await self._close(state, terminal)
        while summary.outcome == "paused" and isinstance(state, NeedsApproval):
            self._port.paused(summary)  # a person decides, maybe days later: then the run goes on
            resumed = await self._resume(state)
            if isinstance(resumed, AgentError):  # cancelled while it waited: it stays paused in the session
                return RunSummary(outcome="cancelled", usage=summary.usage, error=resumed)
            state, resumed_input = resumed
            terminal = None
            if isinstance(resumed_input, AgentError):  # a decided call's hook raised: the run fails
                state = Failed(error=resumed_input, usage=_usage(state))
                terminal, resumed_input = RunFailed(error=resumed_input, usage=state.usage), None
            state, terminal = await self._drive(state, resumed_input, terminal)
            summary = await self._close(state, terminal)
        return summary

    async def _drive(
        self, state: LoopState, next_input: TransitionInput | None, terminal: AgentEvent | None
    ) -> tuple[LoopState, AgentEvent | None]:
        """Step the loop from `state` on `next_input` to its end or its pause; the state, the last event."""
        while next_input is not None:
            outcome = transition(state, next_input, self._shape.tctx, self._conversation)
            self._conversation.extend(outcome.conversation_appends)
            state, events = outcome.next_state, outcome.events
            if self._shape.output_guarded and isinstance(state, Done):
                events = await self._guarded(state, events)
            for event in events:
                self._note(event)
                if isinstance(event, _TERMINAL):
                    terminal = event
            if isinstance(state, HandedOff):
                state, next_input = self._handed_off(state)
                continue
            performed = await self._perform(outcome.next_action, state)
            if isinstance(performed, AgentError):  # user code raised: the run fails, as in-process
                state = Failed(error=performed, usage=_usage(state))
                terminal = RunFailed(error=performed, usage=state.usage)
                performed = None
            next_input = performed
        return state, terminal

    async def _resume(
        self, state: NeedsApproval
    ) -> tuple[LoopState, TransitionInput | AgentError] | AgentError:
        """Once the pause is decided: a new turn, the decided calls run; where the loop goes on from."""
        try:
            await self._port.wait_for_decisions(state.pending)
        except asyncio.CancelledError:
            return cancel_error(self._port.cancel_reason() or CANCELLED_REASON)
        self._resumes += 1
        self._step += 1
        run_id = f"{self._spec.run.run_id}.{self._resumes}"
        resumed = await self._port.resume_run(ResumeTurn(run=self._spec.run, run_id=run_id, step=self._step))
        point = resumed.point
        self._ref = replace(self._spec.run, agent=resumed.agent, run_id=run_id)
        self._shape = self._shapes(resumed.agent, resumed.depth)
        paused = point.state
        ids = {call.call_id for call in paused.calls} if isinstance(paused, NeedsApproval) else set[str]()
        self._conversation = [
            m for m in self._conversation if not (isinstance(m, ToolResult) and m.call_id in ids)
        ]
        self._recorded = set(point.done)  # stored before the pause
        self._usage = None
        calls = paused.calls if isinstance(paused, NeedsApproval) else ()
        to_run = tuple(
            c for c in calls if c.call_id in point.decided and point.decided[c.call_id].kind not in _NOT_RUN
        )
        ran: dict[str, ToolCallOutcome] = {}
        if to_run:
            results = await self._tools(to_run, paused.turn, point.decided)
            if not isinstance(results, ToolResults):
                return paused, results
            ran = {outcome.call_id: outcome for outcome in results.outcomes}
        return paused, point.results(ran)

    def _refused(self, opened: Opened, state: LoopState) -> tuple[LoopState, AgentEvent]:
        """The run ends at its start: a hook or an input guardrail refused it (or raised)."""
        events: tuple[AgentEvent, ...] = opened.refused
        if opened.failed is not None:
            events = (RunFailed(error=opened.failed.error),)
        for event in events:
            self._note(event)
        terminal = events[-1]
        error = (
            terminal.error if isinstance(terminal, RunFailed) else AgentError(kind="other", message="refused")
        )
        return Failed(error=error, usage=_usage(state)), terminal

    def _handed_off(self, state: HandedOff) -> tuple[LoopState, TransitionInput]:
        """Go on with the handoff's target, one level deeper, from the transcript."""
        depth = self._shape.tctx.agent_depth + 1
        self._before = self._before + state.usage
        self._shape = self._shapes(state.target, depth)
        self._ref = replace(self._ref, agent=state.target)
        self._conversation = []
        return initial_state(self._shape.tctx), Start(messages=state.transcript)

    async def _guarded(self, state: Done, events: tuple[AgentEvent, ...]) -> tuple[AgentEvent, ...]:
        """The final answer past the output guardrails: `events`, or the run failed by a tripwire."""
        self._step += 1
        verdict = await self._port.guard_output(GuardTurn(run=self._ref, step=self._step, state=state))
        if verdict.failed is not None:
            error = verdict.failed.error
            return (
                *(e for e in events if not isinstance(e, RunCompleted)),
                RunFailed(error=error, usage=_usage(state)),
            )
        if not verdict.events:
            return events
        return (*(e for e in events if not isinstance(e, RunCompleted)), *verdict.events)

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
            if isinstance(action, CheckOutput) and isinstance(state, CheckingOutput):
                self._step += 1
                return _settled(
                    await self._port.check_output(CheckTurn(run=self._ref, step=self._step, state=state))
                )
            if isinstance(action, ApplyHandoff) and isinstance(state, ApplyingHandoff):
                self._step += 1
                light = replace(
                    state, transcript=()
                )  # the decision reads the calls; the session has the rest
                return _settled(
                    await self._port.hand_off(HandoffTurn(run=self._ref, step=self._step, state=light))
                )
        except asyncio.CancelledError:  # the step is over (its cancel completed): the run ends cancelled
            return Cancelled(reason=self._port.cancel_reason() or CANCELLED_REASON)
        if isinstance(action, Terminate):
            return None
        return AgentError(
            kind="other", message=f"the durable runner cannot perform {action.type} in {state.type}"
        )

    async def _model(self, state: LoopState) -> TransitionInput | AgentError:
        self._step += 1
        turn = ModelTurn(
            run=self._ref,
            step=self._step,
            turn=getattr(state, "turn", 0),
            structured=isinstance(state, Finalizing | RepairingOutput),
            pending=self._take(),
            usage=self._usage,
        )
        answer = _settled(await self._port.call_model(turn))
        if isinstance(answer, ModelResponse):
            self._usage = answer.usage
        return answer

    async def _tools(
        self, calls: tuple[ToolCall, ...], turn: int, decided: Mapping[str, Decided] | None = None
    ) -> TransitionInput | AgentError:
        self._step += 1
        pending, batch = self._take(), tuple(call.call_id for call in calls)
        gate = asyncio.Semaphore(self.limit) if self.limit is not None and self.limit < len(calls) else None

        async def one(call: ToolCall) -> ToolAnswer:
            tool_turn = ToolTurn(
                run=self._ref,
                step=self._step,
                turn=turn,
                call=call,
                batch=batch,
                pending=pending,
                usage=self._usage,
                decided=None if decided is None else decided.get(call.call_id),
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
            if answer.stored:
                self._recorded.add(answer.outcome.call_id)
        return ToolResults(outcomes=tuple(outcomes))

    async def _close(self, state: LoopState, terminal: AgentEvent | None) -> RunSummary:
        outcome, error = _ending(terminal)
        self._step += 1
        close = CloseRun(
            run=self._ref,
            step=self._step,
            outcome=outcome,
            pending=self._take(),
            usage=self._usage,
            started=self._started,
        )
        await self._port.close_run(close)
        return RunSummary(outcome=outcome, usage=self._before + _usage(state), error=error)


def _settled(answer: TransitionInput | StepFailed) -> TransitionInput | AgentError:
    """A step's answer as the loop takes it: a failed step as the error that fails the run."""
    return answer.error if isinstance(answer, StepFailed) else answer


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


__all__ = ["CANCELLED_REASON", "AgentShape", "DurableDriver", "Shapes", "StepPort"]
