"""The async driver: performs the side effects `transition` asks for and writes the events to a sink.

One coroutine per run (`drive`): each step's events go to the sink as they happen (see
`sink`: collected for `await agent.run(...)`, handed to the reader for `async for`), and
each action it performs returns the next input of `transition` — the only place the loop's
rules live.

Hot path. The driver builds carriers directly (no validation of what it built itself),
passes the model's delta objects through untouched, and raises cancellation into its
own awaits only: a cancel callback interrupts the task while it waits on the model, the
tools or other user code (hooks, guardrails, the instructions), never while the
consumer's code runs between events; a cancel made there is seen when the driver
resumes, before its next await. Whatever user code raises ends the run with `RunFailed`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from .._internal.callbacks import CallbackRaised, call_user
from ..context import RunConfig, RunContext
from ..conversation_check import ConversationCheck
from ..events import (
    AgentError,
    AgentEvent,
    GuardrailTriggered,
    RequestSent,
    RunCompleted,
    RunFailed,
    RunStarted,
    TokenUsage,
    ToolOutputItem,
    TurnStarted,
)
from ..exceptions import ModelError
from ..governance import GuardrailInput, GuardrailVerdict, Hook, HookDecision, HookEvent
from ..input import AgentInput
from ..items import Item, SystemMessage, ToolCall, UserMessage
from ..loop import (
    ApplyHandoff,
    ApplyingHandoff,
    CallingModel,
    CallModel,
    Cancelled,
    CheckingOutput,
    CheckOutput,
    Continue,
    Done,
    ExecuteTools,
    Failed,
    HandedOff,
    LoopState,
    ModelFailed,
    ModelResponse,
    NextAction,
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
from ..model import ModelRequest
from ..output_validators import check_output
from ..usage import metered
from .captured import capture
from .guardrail_steps import input_tripped, run_guardrails, tripwire_error
from .handoff_steps import decide_handoff, hand_off
from .offered_tools import offer
from .reply import Reply
from .resume_point import ResumePoint
from .tool_runner import ToolRunner
from .tracing import RunTrace, TracedSink, tracing_possible
from .transition_ctx import transition_ctx

if TYPE_CHECKING:
    from ..agent import LlmAgent
    from ..observer import RunObserver
    from ..tools import Tool
    from ..usage import UsageMeter
    from .sink import EventSink


T = TypeVar("T")

logger = logging.getLogger("helikon.run")


class Stopped(Exception):
    """Internal: the run's token was cancelled while the driver was suspended; the run ends cancelled."""


_TERMINAL = (RunCompleted, RunFailed)
_NOT_AFTER_LIMIT = (TurnStarted, RunCompleted)  # what a step failed by a usage limit drops
_TERMINATE = Terminate()


class RunDriver:
    """One run's driver state."""

    __slots__ = (
        "agent",
        "cancelled",
        "check",
        "config",
        "ctx",
        "fired",
        "governed",
        "guard_task",
        "guard_tripped",
        "holding",
        "hooks",
        "injected",
        "input",
        "meter",
        "model",
        "observer",
        "offered",
        "output_guarded",
        "redactor",
        "state",
        "task",
        "token",
        "tools",
        "trace",
        "waiting",
    )

    def __init__(self, agent: LlmAgent[Any, Any], ctx: RunContext[Any], config: RunConfig) -> None:
        # With usage limits, the runs this one starts count into its meter (carried by `ctx`).
        self.meter: UsageMeter | None = None
        if config.usage_limits is not None or ctx._meter is not None:  # pyright: ignore[reportPrivateUsage]
            ctx, self.meter = metered(ctx, config.usage_limits)
        self.agent = agent
        self.model: Any = agent.model_for(config.model)  # an override, else the run's, else its own
        self.ctx = ctx
        self.config = config
        self.hooks: list[Hook[Any]] = [*agent.hooks, *ctx.hooks] if agent.hooks or len(ctx.hooks) else []
        self.injected: list[str] = []  # hook-injected system messages for the next model call
        # Told of each model request and tool batch (a runner recording the run), if anything.
        self.observer: RunObserver | None = ctx.observer
        self.output_guarded = bool(agent.output_guardrails)
        self.state: LoopState | None = None  # None until RunStarted is out
        self.tools: ToolRunner | None = None  # made at the first tool call
        # Each request's conversation, looked at from the last one found valid: the session's
        # (carried by a runner's context), else this run's own.
        self.check = ctx._check or ConversationCheck()  # pyright: ignore[reportPrivateUsage]
        # Cancellation: `on_cancel` interrupts `task` only while it is `waiting` on the model or
        # the tools, or `holding` on other user code (a hook, a guardrail, the instructions).
        self.task: asyncio.Task[Any] | None = None
        self.waiting = False
        self.holding = False
        self.fired = False
        self.cancelled = False  # the token's state, as a flag: the per-event checks read it
        self.token = ctx.cancel
        governance = ctx.governance
        self.governed = governance.needs_pipeline
        self.redactor = governance.redactor
        # Input guardrails running beside the first model call, and whether one tripped.
        self.guard_task: asyncio.Future[GuardrailVerdict] | None = None
        self.guard_tripped = False
        self.trace: RunTrace | None = None  # set by `open_trace` when spans are recorded
        self.input: AgentInput | None = None  # set as the run starts (a handoff's filter reads it)
        self.offered: dict[str, Tool[Any]] | None = None  # this turn's tools, when they vary by turn

    # --- cancellation ----------------------------------------------------------------------

    def on_cancel(self) -> None:
        """The token fired: interrupt what the driver awaits, if it awaits anything."""
        self.cancelled = True
        task = self.task
        if task is None or not (self.waiting or self.holding):
            return  # the consumer's code runs: the driver checks the token when it resumes
        if task is _current_task():
            # Code the driver awaits cancelled in the driver's own task (a tool stopping its
            # run): interrupting now would hit whatever that task awaits next, possibly the
            # consumer's code. Once the task is suspended, it is suspended in the driver.
            asyncio.get_running_loop().call_soon(self.interrupt)
        else:
            self.interrupt()

    def interrupt(self) -> None:
        """Cancel the driver's task, once, if it awaits the model, the tools or user code."""
        if (self.waiting or self.holding) and self.task is not None and not self.fired:
            self.fired = True
            self.task.cancel()

    def on_guard_done(self, task: asyncio.Future[GuardrailVerdict]) -> None:
        """An input guardrail tripped while the model streams: stop the call, do not pay for it."""
        if task.cancelled() or not task.result().tripped:
            return
        self.guard_tripped = True
        if self.waiting and self.task is not None and not self.fired:  # the model call only
            self.fired = True
            self.task.cancel()

    def absorb_cancel(self) -> bool:
        """After a CancelledError: whether it came from our token (then it is withdrawn)."""
        if not self.fired:
            return False
        self.fired = False
        if self.task is not None:
            self.task.uncancel()
        return True

    async def hold(self, awaitable: Awaitable[T]) -> T:
        """Await user code (hooks, guardrails, the instructions) so that a cancel interrupts it.

        Raises `Stopped` when the run's token did.
        """
        self.task = asyncio.current_task()
        self.holding = True
        try:
            result = await awaitable
        except asyncio.CancelledError:
            if not self.absorb_cancel():
                raise
            raise Stopped from None
        finally:
            self.holding = False
        if self.fired:  # the code swallowed the interrupt: withdraw it; the token is checked next
            self.absorb_cancel()
        return result

    # --- the loop --------------------------------------------------------------------------

    def open_trace(self) -> RunTrace | None:
        """Open the run's `invoke_agent` span (as the stream starts); None when nothing records it."""
        model = self.model
        self.trace = RunTrace.start(
            self.ctx,
            self.agent.name,
            getattr(model, "provider", "unknown"),
            getattr(model, "model_name", "unknown"),
        )
        return self.trace

    async def run(self, input: AgentInput, sink: EventSink) -> None:
        """Write the run's events to `sink`, from `RunStarted` to the terminal one."""
        token = self.token
        self.input = input
        remove_callback = token.add_callback(self.on_cancel)
        try:
            tctx = self.transition_ctx(await self.render_system())
            refused = await self.before_run(input.messages)
            if refused is not None:
                for event in refused:
                    await sink.put(event)
                return
            state = self.state = initial_state(tctx)
            await self.loop(state, Start(messages=input.conversation), tctx, [], sink)
        except (Stopped, CallbackRaised) as exc:
            await self.end_early(exc, sink)
        finally:
            remove_callback()
            self.stop_guardrails()

    async def resume(self, point: ResumePoint, sink: EventSink) -> None:
        """Go on with a stopped run: the turn's calls settled as decided, then the loop to its end.

        The calls whose results the log has are not run again, and their results are not
        written again (the session has them): the step after the tools gets their outcomes.
        A run stopped before a model call makes that call again.
        """
        token = self.token
        self.input = AgentInput((), point.conversation)
        remove_callback = token.add_callback(self.on_cancel)
        try:
            tctx = self.transition_ctx(await self.render_system())
            if point.checks_input:  # it stopped before its first answer: its input is checked again
                refused = await self.before_run(point.checks_input)
                if refused is not None:
                    for event in refused:
                        await sink.put(event)
                    return
            state = self.state = point.state
            first: TransitionInput = (
                Continue() if isinstance(state, CallingModel) else await self.decided_calls(point, sink)
            )
            await self.loop(state, first, tctx, list(point.conversation), sink, frozenset(point.done))
        except (Stopped, CallbackRaised) as exc:
            await self.end_early(exc, sink)
        finally:
            remove_callback()
            self.stop_guardrails()

    async def decided_calls(self, point: ResumePoint, sink: EventSink) -> TransitionInput:
        """Run the turn's calls that are to run; every call's outcome, in call order.

        An approved call runs with the arguments approved, asked nothing again; a call that
        never started runs as any call; the call of an agent called as a tool that paused
        runs again with its own arguments, and the agent goes on with its paused run
        (`ToolContext.resuming`).
        """
        runner = self.tool_runner()
        to_run: list[ToolCall] = []
        for call in () if isinstance(point.state, CallingModel) else point.state.calls:
            decided = point.decided.get(call.call_id)
            if decided is None or decided.kind in ("deny", "unknown"):
                continue
            if decided.kind == "run":
                runner.decided[call.call_id] = decided.args
            elif decided.kind == "resume":
                runner.decided[call.call_id] = call.args
                if decided.sub is not None:
                    runner.resuming[call.call_id] = decided.sub
            to_run.append(call)
        ran: dict[str, ToolCallOutcome] = {}
        if to_run:
            results = await self.tool_turn(tuple(to_run), sink)
            if not isinstance(results, ToolResults):
                return results  # cancelled
            ran = {outcome.call_id: outcome for outcome in results.outcomes}
        return point.results(ran)

    async def loop(
        self,
        state: LoopState,
        next_input: TransitionInput | None,
        tctx: TransitionCtx,
        conversation: list[Item],
        sink: EventSink,
        logged: frozenset[str] = frozenset(),
    ) -> None:
        """Step the loop from `state` on `next_input` to its end, performing each action.

        `conversation` is the run's so far (each step's `conversation_appends` extend it);
        `logged` the calls whose results a resumed run has already (not streamed again).
        """
        token = self.token
        while next_input is not None:
            outcome = transition(state, next_input, tctx, conversation)
            conversation.extend(outcome.conversation_appends)
            state = self.state = outcome.next_state
            events, action = outcome.events, outcome.next_action
            if self.meter is not None and not isinstance(state, Failed):
                state, events, action = self.within_limits(self.meter, state, events, action)
                self.state = state
            if self.output_guarded and isinstance(state, Done):
                events = await self.hold(self.check_output(state, events))
            for event in events:
                if logged and type(event) is ToolOutputItem and event.item.call_id in logged:
                    continue
                if self.cancelled and event.__class__ in _TERMINAL:
                    # Cancelled while the consumer handled an event before this one.
                    event = RunFailed(error=cancel_error(token.reason), usage=_usage(state))
                await sink.put(event)
            next_input = await self.perform(action, state, tctx.system, sink)

    def within_limits(
        self, meter: UsageMeter, state: LoopState, events: tuple[AgentEvent, ...], action: NextAction
    ) -> tuple[LoopState, tuple[AgentEvent, ...], NextAction]:
        """Check the step against the usage limits: the step as it is, or the run failed instead.

        A cap passed so far (by this run's last model call, or by another run on the meter)
        fails the run now; a model call or a tool batch that would pass one is not made.
        """
        error = meter.failure()
        if error is None and isinstance(action, CallModel):
            error = meter.before_request(self.agent.name)
        elif error is None and isinstance(action, ExecuteTools):
            error = meter.before_tools(len(action.calls))
        if error is None:
            return state, events, action
        usage = _usage(state)
        # What the step had settled stays (it is recorded); the turn it would start and its end do not.
        kept = tuple(e for e in events if e.__class__ not in _NOT_AFTER_LIMIT)
        return Failed(error=error, usage=usage), (*kept, RunFailed(error=error, usage=usage)), _TERMINATE

    def transition_ctx(self, system: tuple[SystemMessage, ...]) -> TransitionCtx:
        """What every step of the run reads: the agent, its rendered instructions, the limits."""
        return transition_ctx(self.agent, self.config, system, self.ctx.agent_depth)

    def perform(
        self, action: NextAction, state: LoopState, system: Sequence[SystemMessage], sink: EventSink
    ) -> Awaitable[TransitionInput | None]:
        """Do what `action` asks, writing its events to `sink`; the next input (None: the run ended)."""
        if isinstance(action, CallModel):
            return self.call_model(action.request, getattr(state, "turn", 0), system, sink)
        if isinstance(action, ExecuteTools):
            return self.tool_turn(action.calls, sink)
        return self.settle(action, state, sink)

    async def settle(self, action: NextAction, state: LoopState, sink: EventSink) -> TransitionInput | None:
        """The actions that are neither a model call nor tools: a handoff, the output checks, the end."""
        token = self.token
        if isinstance(action, ApplyHandoff) and isinstance(state, ApplyingHandoff):
            if token.is_cancelled():
                return Cancelled(reason=token.reason)
            return await self.hold(
                decide_handoff(self.agent, self.ctx, state, self.fire if self.hooks else None)
            )
        if isinstance(action, CheckOutput) and isinstance(state, CheckingOutput):
            return await self.hold(check_output(self.agent, self.ctx, state))
        if isinstance(state, HandedOff):
            await hand_off(self.agent, self.ctx, self.config, state, self.trace, self.input, self.hold, sink)
        if self.hooks:
            await self.run_complete()
        return None

    async def tool_turn(self, calls: tuple[ToolCall, ...], sink: EventSink) -> TransitionInput:
        """One batch of tool calls (a recorder is told first): the events they raise, then their results."""
        token, observer = self.token, self.observer
        if observer is not None and not token.is_cancelled():
            await observer.tools_starting(tuple(call.call_id for call in calls))
        if token.is_cancelled():
            return Cancelled(reason=token.reason)
        if self.ctx.approval_handler is not None:
            # An approval may wait on a human, who must see ApprovalRequested while the call
            # waits: the tools run beside the stream.
            return await self.run_tools_live(calls, sink)
        # Nothing waits for a human: the pipeline's events (PermissionDenied, an unanswerable
        # ApprovalRequested) follow once the tools are done.
        raised: list[AgentEvent] = []
        results = await self.run_tools(calls, raised.append)
        for event in raised:
            await sink.put(event)
        return results

    async def end_early(self, exc: Stopped | CallbackRaised, sink: EventSink) -> None:
        """The run stopped by its token, or by user code that raised: it fails (started, if not yet)."""
        state = self.state
        if state is None:
            await sink.put(RunStarted(agent=self.agent.name))
        if isinstance(exc, CallbackRaised):
            error = AgentError(kind="other", message=str(exc), cause=exc.cause)
        else:
            error = cancel_error(self.token.reason)
        await sink.put(RunFailed(error=error, usage=_usage(state)))
        if self.hooks and state is not None:
            await self.run_complete()

    def stop_guardrails(self) -> None:
        """Cancel the input guardrails still running beside the model: the run ended first."""
        if self.guard_task is not None and not self.guard_task.done():
            self.guard_task.cancel()

    async def run_complete(self) -> None:
        """The `on_run_complete` hooks, after the terminal event: one that raises is logged."""
        try:
            await self.fire(HookEvent("on_run_complete", agent=self.agent.name))
        except CallbackRaised as exc:
            logger.warning("%s after the run of %r ended", exc, self.agent.name)

    def render_system(self) -> Awaitable[tuple[SystemMessage, ...]]:
        """The agent's system messages: static text as it is, an instructions function as user code."""
        if callable(self.agent.instructions):
            return self.render_instructions()
        return self.agent.render_system(self.ctx)

    async def render_instructions(self) -> tuple[SystemMessage, ...]:
        """The system messages from the instructions function; one that raises fails the run."""
        agent = self.agent
        try:
            return await self.hold(agent.render_system(self.ctx))
        except Stopped:
            raise
        except Exception as exc:
            raise CallbackRaised(f"the instructions function of {agent.name!r}", "instructions", exc) from exc

    def with_injected(self, request: ModelRequest) -> ModelRequest:
        """`request` with the system messages hooks injected, after its leading ones."""
        if not self.injected:
            return request
        injected = [SystemMessage(text=t) for t in self.injected]
        self.injected = []
        messages = list(request.messages)
        lead = 0
        while lead < len(messages) and isinstance(messages[lead], SystemMessage):
            lead += 1
        return replace(request, messages=[*messages[:lead], *injected, *messages[lead:]])

    # --- the model -------------------------------------------------------------------------

    def report_request(
        self,
        request: ModelRequest,
        system: Sequence[SystemMessage],
        injected: tuple[str, ...],
        settled: TransitionInput | None,
    ) -> None:
        """Tell a recorder what the call was sent besides the conversation (see `RunObserver`)."""
        model = self.model
        observer = self.observer
        if observer is None:
            return
        observer.request_sent(
            RequestSent(
                provider=getattr(model, "provider", "unknown"),
                model=getattr(model, "model_name", ""),
                system=tuple(system),
                injected=injected,
                tools=tuple(request.tools),
                settings=request.model_settings,
                usage=settled.usage if isinstance(settled, ModelResponse) else None,
            )
        )

    async def call_model(
        self, request: ModelRequest, turn: int, system: Sequence[SystemMessage], sink: EventSink
    ) -> TransitionInput | None:
        """One turn's model call: its deltas to `sink`, its record to a recorder; what it settles into.

        The answer is held until the input guardrails running beside the first call clear
        the input (if they trip, their events end the run instead: None).
        """
        settled: TransitionInput | None = None  # None: cancelled
        sending = await self.before_call(request, turn)
        if sending is not None:
            request, injected = sending
            # What a provider would refuse with a 400 (a call without its result after a crash,
            # a cut handoff transcript, ...) is repaired; a valid request passes as it is.
            valid = self.check.valid_request(request)
            capture(self.agent, self.model, valid)  # for helikon.testing.capture_requests, when one is open
            reply = Reply()
            span = self.trace.start_chat(valid) if self.trace is not None else None
            # The task that awaits the model; captured once per call, not per delta.
            self.task = asyncio.current_task()
            iterator: Any = None
            try:
                iterator = self.model.invoke(valid, self.token).__aiter__()
                anext_ = iterator.__anext__
                while True:
                    if self.cancelled:
                        raise Stopped  # cancelled while the consumer handled the last delta: read no more
                    self.waiting = True
                    try:
                        event: Any = await anext_()
                    except StopAsyncIteration:
                        break
                    finally:
                        self.waiting = False
                    if reply.add(event):
                        await sink.put(event)
                settled = self.answered(reply, span)
                if self.meter is not None:
                    self.meter.add_usage(self.agent.name, reply.usage)
            except (asyncio.CancelledError, Stopped) as exc:
                if not self.call_stopped(exc, span):
                    raise
            except Exception as exc:  # an adapter bug fails the run; it must not crash the consumer
                settled = self.call_failed(exc, span)
            finally:
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
            self.report_request(request, system, injected, settled)
        if self.guard_task is not None:
            # Nothing the model asked for happens before the input is cleared.
            failed = await self.hold(self.input_verdict(self.guard_task))
            if failed is not None:
                for event in failed:
                    await sink.put(event)
                return None
        return settled if settled is not None else Cancelled(reason=self.token.reason)

    async def before_call(
        self, request: ModelRequest, turn: int
    ) -> tuple[ModelRequest, tuple[str, ...]] | None:
        """Open the turn: its span, the `on_turn_start` hooks, the tools it offers.

        Returns the request to send (with the system messages hooks injected) and those
        messages; None once the run is cancelled.
        """
        if self.trace is not None:
            self.trace.start_turn(turn)
        if self.hooks:
            await self.hold(self.fire(HookEvent("on_turn_start", agent=self.agent.name, turn=turn)))
        run_prepare = self.config.prepare_tools
        if (self.agent.dynamic_tools or run_prepare is not None) and (  # they vary by turn
            request.tools or self.agent.tool_sources
        ):
            request, self.offered = await self.hold(offer(self.agent, self.ctx, request, run_prepare))
        if self.token.is_cancelled():
            return None
        injected = tuple(self.injected) if self.injected else ()
        return self.with_injected(request), injected

    def answered(self, reply: Reply, span: Any) -> ModelResponse:
        """What a model call that streamed to its end settles into (its span closed)."""
        items = reply.items(self.agent)
        if self.trace is not None and span is not None:
            self.trace.end_chat(span, usage=reply.usage, finish=reply.finish, items=items)
        return ModelResponse(items=items, usage=reply.usage, finish_reason=reply.finish)

    def call_stopped(self, exc: BaseException, span: Any) -> bool:
        """A model call interrupted: whether by the run's token (then it settles cancelled)."""
        self.end_chat(span, "cancelled")
        return type(exc) is Stopped or self.absorb_cancel()

    def call_failed(self, exc: Exception, span: Any) -> ModelFailed:
        """What a model call that raised settles into: a `ModelError` as it says, anything else as `other`."""
        if isinstance(exc, ModelError):
            self.end_chat(span, exc.kind)
            return ModelFailed(kind=exc.kind, message=str(exc))
        self.end_chat(span, type(exc).__name__)
        return ModelFailed(kind="other", message=f"{type(exc).__name__}: {exc}")

    def end_chat(self, span: Any, error: str) -> None:
        """Close the span of a model call that did not answer."""
        if self.trace is not None and span is not None:
            self.trace.end_chat(span, usage=None, finish=None, error=error)

    # --- tools -----------------------------------------------------------------------------

    def tool_runner(self) -> ToolRunner:
        """The run's tool runner, made at its first tool call."""
        runner = self.tools
        if runner is None:
            agent = self.agent
            runner = self.tools = ToolRunner(
                tools=agent.tools_by_name,  # pyright: ignore[reportArgumentType]
                agent_name=agent.name,
                ctx=self.ctx,
                max_agent_depth=self.config.max_agent_depth,
                fire=self.fire if self.hooks else None,
                governed=self.governed,
                redactor=self.redactor,
                trace=self.trace,
                observer=self.observer,
                parallel_limit=self.config.parallel_tool_call_limit,
            )
            runner.expiry = (self.config.approval_expires_after, self.config.on_approval_expired)
        return runner

    async def run_tools(
        self, calls: tuple[ToolCall, ...], emit: Callable[[AgentEvent], None]
    ) -> TransitionInput:
        """Run a batch of calls where a cancel interrupts them; what they settle into."""
        self.task = asyncio.current_task()
        self.waiting = True
        try:
            outcomes = await self.tool_runner().run_batch(calls, self.offered, emit)
        except asyncio.CancelledError:
            if not self.absorb_cancel():
                raise
            return Cancelled(reason=self.token.reason)
        finally:
            self.waiting = False
        return ToolResults(outcomes=outcomes)

    async def run_tools_live(self, calls: tuple[ToolCall, ...], sink: EventSink) -> TransitionInput:
        """Run the tools in their own task, writing the events they raise to `sink` as they happen."""
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        tools = asyncio.ensure_future(self.run_tools(calls, queue.put_nowait))
        try:
            while not tools.done():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait((tools, getter), return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    await sink.put(getter.result())
                else:
                    getter.cancel()
            while not queue.empty():
                await sink.put(queue.get_nowait())
            return tools.result()
        finally:
            if not tools.done():
                tools.cancel()

    # --- hooks and guardrails --------------------------------------------------------------

    async def fire(self, event: HookEvent) -> HookDecision:
        """Fold the hooks' decisions: the first deny wins, replacements are last-writer-wins.

        A hook that raises, or returns something else than a `HookDecision`, raises
        `CallbackRaised`, naming the event and the hook.
        """
        result = HookDecision.allow()
        for hook in self.hooks:
            decision = await call_user(
                f"the {event.type} hook {type(hook).__name__}",
                "hook",
                lambda hook=hook: hook.on_event(self.ctx, event),
                HookDecision,
                "a HookDecision (e.g. HookDecision.allow())",
            )
            if decision.kind == "deny":
                return decision
            if decision.kind in ("replace_input", "replace_output"):
                result = decision
            elif decision.kind == "inject_system_message":
                self.injected.append(decision.text)
        return result

    async def before_run(self, messages: tuple[Item, ...]) -> list[AgentEvent] | None:
        """Run-start hooks and input guardrails; the events of a refused run, or None."""
        agent = self.agent
        if self.hooks:
            decision = await self.hold(self.fire(HookEvent("on_run_start", agent=agent.name)))
            if decision.kind == "deny":
                error = AgentError(
                    kind="other", message=f"a hook refused the run: {decision.reason}", cause="hook"
                )
                return [RunStarted(agent=agent.name), RunFailed(error=error)]
        if not agent.input_guardrails:
            return None
        text = "\n".join(m.text for m in messages if isinstance(m, UserMessage))
        if text:  # a handed-off run has no new user text
            guard_input = GuardrailInput("user_text", text)
            first = [g for g in agent.input_guardrails if not getattr(g, "run_in_parallel", True)]
            beside = [g for g in agent.input_guardrails if getattr(g, "run_in_parallel", True)]
            if first:
                verdict = await self.hold(self.guard(first, guard_input))
                if verdict.tripped:
                    return [RunStarted(agent=agent.name), *input_tripped(verdict)]
            if beside:
                # Input guardrails run in parallel with the agent: the first model call
                # starts now, and its result is held until the verdict (see `input_verdict`).
                self.guard_task = asyncio.ensure_future(self.guard(beside, guard_input))
                self.guard_task.add_done_callback(self.on_guard_done)
        return None

    async def input_verdict(self, task: asyncio.Future[GuardrailVerdict]) -> list[AgentEvent] | None:
        """Wait for the parallel input guardrails; the events of a refused run, or None."""
        verdict = await task
        self.guard_task = None
        if self.guard_tripped:
            self.guard_tripped = False
            self.absorb_cancel()  # in case the trip came after the model call had ended
        if not verdict.tripped:
            return None
        return input_tripped(verdict)

    async def check_output(self, state: Done, events: tuple[AgentEvent, ...]) -> tuple[AgentEvent, ...]:
        """The output guardrails on the final answer: `events`, or the run failed by a tripwire."""
        verdict = await self.guard(
            self.agent.output_guardrails, GuardrailInput("model_output", state.output.text)
        )
        if not verdict.tripped:
            return events
        usage = state.output.usage
        error = tripwire_error("output", verdict)
        kept = tuple(e for e in events if not isinstance(e, RunCompleted))
        return (
            *kept,
            GuardrailTriggered(kind=verdict.kind, info=verdict.info, stage="output"),
            RunFailed(error=error, usage=usage),
        )

    def guard(self, guardrails: Sequence[Any], input: GuardrailInput) -> Awaitable[GuardrailVerdict]:
        """The verdict of `guardrails` on `input` (see `guardrail_steps.run_guardrails`)."""
        return run_guardrails(self.ctx, guardrails, input)


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop in this thread: a cancel from elsewhere
        return None


def _usage(state: LoopState | None) -> TokenUsage:
    """The usage a run in `state` has spent so far."""
    if state is None:
        return TokenUsage()
    return state.output.usage if isinstance(state, Done) else state.usage


async def drive(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], input: AgentInput, config: RunConfig, sink: EventSink
) -> None:
    """Run `agent` on `input` to a terminal event, writing every event to `sink`."""
    run = RunDriver(agent, ctx, config)
    if not tracing_possible():
        await run.run(input, sink)
        return
    trace = run.open_trace()
    if trace is None:  # sampled out
        await run.run(input, sink)
        return
    traced = TracedSink(sink)
    try:
        await run.run(input, traced)
    finally:
        traced.end(trace)


async def resume(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], point: ResumePoint, config: RunConfig, sink: EventSink
) -> None:
    """Go on with `agent`'s paused run from `point` to a terminal event, writing every event to `sink`."""
    run = RunDriver(agent, ctx, config)
    trace = run.open_trace() if tracing_possible() else None
    if trace is None:
        await run.resume(point, sink)
        return
    traced = TracedSink(sink)
    try:
        await run.resume(point, traced)
    finally:
        traced.end(trace)
