"""The async driver: performs the side effects `transition` asks for and streams the events.

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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from ._callbacks import CallbackRaised, call_user, cancelled_here, described, short_repr
from ._captured import capture
from ._handoff_steps import decide_handoff, hand_off
from ._offered_tools import offer
from ._reply import Reply
from ._tool_calls import run_reported_tool, run_tool
from ._tracing import RunTrace, traced, tracing_possible
from .context import RunConfig, RunContext
from .conversation_check import valid_request
from .events import (
    AgentError,
    AgentEvent,
    GuardrailTriggered,
    RequestSent,
    RunCompleted,
    RunFailed,
    RunStarted,
    TokenUsage,
    ToolsStarting,
    TurnStarted,
)
from .exceptions import ModelError
from .governance import GuardrailInput, GuardrailVerdict, Hook, HookDecision, HookEvent
from .governance._tripwire import guardrail_name, tripwire_message
from .input import AgentInput
from .items import Item, SystemMessage, ToolCall, UserMessage
from .loop import (
    ApplyHandoff,
    ApplyingHandoff,
    CallModel,
    Cancelled,
    CheckingOutput,
    CheckOutput,
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
from .model import ModelRequest
from .output_validators import check_output
from .usage import metered

if TYPE_CHECKING:
    from .agent import LlmAgent
    from .observer import RunObserver
    from .tools import Tool
    from .usage import UsageMeter


T = TypeVar("T")

logger = logging.getLogger("helikon.run")


class _Stopped(Exception):
    """Internal: the run's token was cancelled while the driver was suspended; the run ends cancelled."""


_TERMINAL = (RunCompleted, RunFailed)
_NOT_AFTER_LIMIT = (TurnStarted, RunCompleted)  # what a step failed by a usage limit drops
_TERMINATE = Terminate()


class _Settled:
    """Internal marker: the model call settled into this transition input."""

    __slots__ = ("input",)

    def __init__(self, input: TransitionInput) -> None:
        self.input = input


class _Nothing:
    """An empty stream of driver items: a run that ended with nothing left to do."""

    __slots__ = ()

    def __aiter__(self) -> _Nothing:
        return self

    async def __anext__(self) -> AgentEvent | _Settled:
        raise StopAsyncIteration


_NOTHING = _Nothing()


class _Run:
    """One run's driver state."""

    __slots__ = (
        "agent",
        "cancelled",
        "config",
        "ctx",
        "emit",
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
        # Where permission events raised while tools run go: a queue the run streams live.
        self.emit: Callable[[AgentEvent], None] = _drop
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

        Raises `_Stopped` when the run's token did.
        """
        self.task = asyncio.current_task()
        self.holding = True
        try:
            result = await awaitable
        except asyncio.CancelledError:
            if not self.absorb_cancel():
                raise
            raise _Stopped from None
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

    async def events(self, input: AgentInput) -> AsyncGenerator[AgentEvent, None]:
        """The run's events, `RunStarted` to the terminal one: `transition`'s, and those of each action."""
        token = self.token
        self.input = input
        remove_callback = token.add_callback(self.on_cancel)
        try:
            tctx = self.transition_ctx(await self.render_system())
            refused = await self.before_run(input.messages)
            if refused is not None:
                for event in refused:
                    yield event
                return
            conversation: list[Item] = []  # the run's, as the steps' `conversation_appends` build it
            state = self.state = initial_state(tctx)
            next_input: TransitionInput | None = Start(messages=input.conversation)
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
                    if self.cancelled and event.__class__ in _TERMINAL:
                        # Cancelled while the consumer handled an event before this one.
                        event = RunFailed(error=cancel_error(token.reason), usage=_usage(state))
                    yield event
                next_input = None  # unless the action settles into one: the run is over
                async for item in self.perform(action, state, tctx.system):
                    if type(item) is _Settled:
                        next_input = item.input
                    else:
                        yield item  # pyright: ignore[reportReturnType]
        except (_Stopped, CallbackRaised) as exc:
            async for event in self.end_early(exc):
                yield event
        finally:
            remove_callback()
            self.stop_guardrails()

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
        agent, config = self.agent, self.config
        handoffs = agent.handoffs_by_tool
        return TransitionCtx(
            agent_name=agent.name,
            tools=(*agent.tool_defs, *agent.handoff_defs) if handoffs else agent.tool_defs,
            model_settings=(
                agent.model_settings
                if config.model_settings is None
                else agent.model_settings.merged(config.model_settings)
            ),
            max_turns=config.max_turns,
            system=system,
            output=agent.output_spec,
            handoffs={name: h.target for name, h in handoffs.items()} if handoffs else {},
            agent_depth=self.ctx.agent_depth,
            max_agent_depth=config.max_agent_depth,
            fail_on_tool_denied=config.fail_on_tool_denied,
            check_output=bool(agent.output_checks),
            output_retries=agent.output_retries,
        )

    def perform(
        self, action: NextAction, state: LoopState, system: Sequence[SystemMessage]
    ) -> AsyncIterator[AgentEvent | _Settled]:
        """Do what `action` asks: its events, then a `_Settled` with the next input (none: the run ended)."""
        if isinstance(action, CallModel):
            return self.call_model(action.request, getattr(state, "turn", 0), system)
        if isinstance(action, ExecuteTools):
            return self.tool_turn(action.calls)
        if isinstance(action, ApplyHandoff) and isinstance(state, ApplyingHandoff):
            return self.apply_handoff(state)
        if isinstance(action, CheckOutput) and isinstance(state, CheckingOutput):
            return self.settle(check_output(self, state))
        if self.hooks or isinstance(state, HandedOff):
            return self.finish(state)
        return _NOTHING

    async def tool_turn(self, calls: tuple[ToolCall, ...]) -> AsyncIterator[AgentEvent | _Settled]:
        """One batch of tool calls, announced before they start: the events they raise, then their results."""
        token, observer = self.token, self.observer
        if not token.is_cancelled():
            if observer is not None:
                await observer.tools_starting(tuple(call.call_id for call in calls))
            elif self.config.record_tool_starts:
                # The consumer records the calls as started while this generator waits.
                yield ToolsStarting(call_ids=tuple(call.call_id for call in calls))
        if token.is_cancelled():
            yield _Settled(Cancelled(reason=token.reason))
        elif self.ctx.approval_handler is None:
            # Nothing waits for a human: the pipeline's events (PermissionDenied,
            # an unanswerable ApprovalRequested) follow once the tools are done.
            raised: list[AgentEvent] = []
            self.emit = raised.append
            try:
                results = await self.run_tools(calls)
            finally:
                self.emit = _drop
            for event in raised:
                yield event
            yield _Settled(results)
        else:
            # An approval may wait on a human, who must see ApprovalRequested while
            # the call waits: the tools run beside the stream.
            async for item in self.run_tools_live(calls):
                yield item

    async def apply_handoff(self, state: ApplyingHandoff) -> AsyncIterator[AgentEvent | _Settled]:
        """Whether the handoff the model asked for goes ahead (unless the run was cancelled)."""
        token = self.token
        if token.is_cancelled():
            yield _Settled(Cancelled(reason=token.reason))
        else:
            yield _Settled(await self.hold(decide_handoff(self, state)))

    async def settle(self, step: Awaitable[TransitionInput]) -> AsyncIterator[AgentEvent | _Settled]:
        """A step of user code (the output validators) that a cancel interrupts, as its settled input."""
        yield _Settled(await self.hold(step))

    async def finish(self, state: LoopState) -> AsyncIterator[AgentEvent | _Settled]:
        """The run is over: a handed-off one goes on in its target; then the `on_run_complete` hooks."""
        if isinstance(state, HandedOff):
            async for event in hand_off(self, state):
                yield event
        if self.hooks:
            await self.run_complete()

    async def end_early(self, exc: _Stopped | CallbackRaised) -> AsyncIterator[AgentEvent]:
        """The run stopped by its token, or by user code that raised: it fails (started, if not yet)."""
        state = self.state
        if state is None:
            yield RunStarted(agent=self.agent.name)
        if isinstance(exc, CallbackRaised):
            error = AgentError(kind="other", message=str(exc), cause=exc.cause)
        else:
            error = cancel_error(self.token.reason)
        yield RunFailed(error=error, usage=_usage(state))
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
        except _Stopped:
            raise
        except Exception as exc:
            raise CallbackRaised(f"the instructions function of {agent.name!r}", "instructions", exc) from exc

    def with_injected(self, request: ModelRequest) -> ModelRequest:
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
    ) -> RequestSent | None:
        """Tell the observer what the call was sent; the event to stream when the config asks for it."""
        observer = self.observer
        if observer is None and not self.config.record_requests:
            return None
        sent = self.request_sent(request, system, injected, settled)
        if observer is None:
            return sent
        observer.request_sent(sent)
        return None

    def request_sent(
        self,
        request: ModelRequest,
        system: Sequence[SystemMessage],
        injected: tuple[str, ...],
        settled: TransitionInput | None,
    ) -> RequestSent:
        """What `request` held besides the conversation, for a recorder (see `RunObserver`)."""
        model = self.model
        tools = request.tools
        return RequestSent(
            provider=getattr(model, "provider", "unknown"),
            model=getattr(model, "model_name", ""),
            system=tuple(system),
            injected=injected,
            tools=tuple(tools),
            settings=request.model_settings,
            usage=settled.usage if isinstance(settled, ModelResponse) else None,
        )

    async def call_model(
        self, request: ModelRequest, turn: int, system: Sequence[SystemMessage]
    ) -> AsyncIterator[AgentEvent | _Settled]:
        """One turn's model call: its deltas and its record, then a `_Settled` with its answer.

        The answer is held until the input guardrails running beside the first call clear
        the input (if they trip, their events end the run instead).
        """
        settled: TransitionInput | None = None  # None: cancelled
        sending = await self.before_call(request, turn)
        if sending is not None:
            request, injected = sending
            # What a provider would refuse with a 400 (a call without its result after a crash,
            # a cut handoff transcript, ...) is repaired; a valid request passes as it is.
            valid = valid_request(request)
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
                        raise _Stopped  # cancelled while the consumer handled the last delta: read no more
                    self.waiting = True
                    try:
                        event: Any = await anext_()
                    except StopAsyncIteration:
                        break
                    finally:
                        self.waiting = False
                    if reply.add(event):
                        yield event
                settled = self.answered(reply, span)
                if self.meter is not None:
                    self.meter.add_usage(self.agent.name, reply.usage)
            except (asyncio.CancelledError, _Stopped) as exc:
                if not self.call_stopped(exc, span):
                    raise
            except Exception as exc:  # an adapter bug fails the run; it must not crash the consumer
                settled = self.call_failed(exc, span)
            finally:
                aclose = getattr(iterator, "aclose", None)
                if aclose is not None:
                    await aclose()
            sent = self.report_request(request, system, injected, settled)
            if sent is not None:
                yield sent
        if self.guard_task is not None:
            # Nothing the model asked for happens before the input is cleared.
            failed = await self.hold(self.input_verdict(self.guard_task))
            if failed is not None:
                for event in failed:
                    yield event
                return
        yield _Settled(settled if settled is not None else Cancelled(reason=self.token.reason))

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
        return type(exc) is _Stopped or self.absorb_cancel()

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

    async def run_tools(self, calls: tuple[ToolCall, ...]) -> TransitionInput:
        self.task = asyncio.current_task()
        self.waiting = True
        # A runner recording the run hears of each result as it comes (see run_reported_tool).
        run_one = run_tool if self.observer is None else run_reported_tool
        try:
            if len(calls) == 1:
                outcomes: Sequence[ToolCallOutcome] = (await run_one(self, calls[0]),)
            else:
                limit = self.config.parallel_tool_call_limit
                if limit is not None and limit < len(calls):
                    semaphore = asyncio.Semaphore(limit)

                    async def bounded(call: ToolCall) -> ToolCallOutcome:
                        async with semaphore:
                            return await run_one(self, call)

                    tasks = [asyncio.ensure_future(bounded(c)) for c in calls]
                else:
                    tasks = [asyncio.ensure_future(run_one(self, c)) for c in calls]
                try:
                    outcomes = await asyncio.gather(*tasks)
                except CallbackRaised:
                    # A hook or policy raised: the run fails, so the other calls stop (and
                    # have stopped before it does).
                    for task in tasks:
                        task.cancel()
                    await asyncio.wait(tasks)
                    raise
        except asyncio.CancelledError:
            if not self.absorb_cancel():
                raise
            return Cancelled(reason=self.token.reason)
        finally:
            self.waiting = False
        return ToolResults(outcomes=tuple(outcomes))

    async def run_tools_live(self, calls: tuple[ToolCall, ...]) -> AsyncIterator[AgentEvent | _Settled]:
        """Run the tools in their own task, streaming the events they raise as they happen."""
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        self.emit = queue.put_nowait
        tools = asyncio.ensure_future(self.run_tools(calls))
        try:
            while not tools.done():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait((tools, getter), return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            yield _Settled(tools.result())
        finally:
            self.emit = _drop
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
        text = "\n".join(m.text for m in messages if isinstance(m, UserMessage))
        if agent.input_guardrails and text:  # a handed-off run has no new user text
            guard_input = GuardrailInput("user_text", text)
            first = [g for g in agent.input_guardrails if not getattr(g, "run_in_parallel", True)]
            beside = [g for g in agent.input_guardrails if getattr(g, "run_in_parallel", True)]
            if first:
                verdict = await self.hold(self.guard(first, guard_input))
                if verdict.tripped:
                    return [RunStarted(agent=agent.name), *_input_tripped(verdict)]
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
        return _input_tripped(verdict)

    async def check_output(self, state: Done, events: tuple[AgentEvent, ...]) -> tuple[AgentEvent, ...]:
        verdict = await self.guard(
            self.agent.output_guardrails, GuardrailInput("model_output", state.output.text)
        )
        if not verdict.tripped:
            return events
        usage = state.output.usage
        error = _tripwire_error("output", verdict)
        kept = tuple(e for e in events if not isinstance(e, RunCompleted))
        return (
            *kept,
            GuardrailTriggered(kind=verdict.kind, info=verdict.info, stage="output"),
            RunFailed(error=error, usage=usage),
        )

    async def guard(self, guardrails: Sequence[Any], input: GuardrailInput) -> GuardrailVerdict:
        """Run guardrails concurrently; one that raises, or returns no verdict, trips (kind `other`)."""
        verdicts = await asyncio.gather(
            *(self.check_one(g, input) for g in guardrails), return_exceptions=True
        )
        for guardrail, verdict in zip(guardrails, verdicts, strict=True):
            if isinstance(verdict, asyncio.CancelledError) and cancelled_here():
                raise verdict  # else the guardrail raised it by itself: it trips like any error
            name = guardrail_name(guardrail)
            if isinstance(verdict, BaseException):
                error = described(verdict)
                return GuardrailVerdict.tripwire("other", {"guardrail": name, "error": error}, guardrail=name)
            if not isinstance(verdict, GuardrailVerdict):  # e.g. None: a `return` forgotten
                return GuardrailVerdict.tripwire(
                    "other", {"guardrail": name, "returned": short_repr(verdict)}, guardrail=name
                )
            if verdict.tripped:  # named, so the run's error says which guardrail tripped
                return verdict if verdict.guardrail else replace(verdict, guardrail=name)
        return GuardrailVerdict.pass_()

    async def check_one(self, guardrail: Any, input: GuardrailInput) -> object:
        """`guardrail.check`, awaited here: one that raises at the call (a plain function) trips alone."""
        return await guardrail.check(self.ctx, input)


def _drop(event: AgentEvent) -> None:
    return None


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


def _input_tripped(verdict: GuardrailVerdict) -> list[AgentEvent]:
    error = _tripwire_error("input", verdict)
    return [GuardrailTriggered(kind=verdict.kind, info=verdict.info, stage="input"), RunFailed(error=error)]


def _tripwire_error(stage: str, verdict: GuardrailVerdict) -> AgentError:
    """The run's error for a tripped guardrail: it names the guardrail, the kind and the info."""
    return AgentError(kind="guardrail_tripwire", message=tripwire_message(stage, verdict), cause=verdict.kind)


def drive(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], input: AgentInput, config: RunConfig
) -> AsyncIterator[AgentEvent]:
    """Run `agent` on `input` to a terminal event, streaming every event."""
    run = _Run(agent, ctx, config)
    # Traced, the run's one extra layer is `traced`, which opens the span as the stream starts.
    return traced(run.open_trace, run.events(input)) if tracing_possible() else run.events(input)
