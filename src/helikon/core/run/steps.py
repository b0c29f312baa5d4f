"""One step of a run, for a durable runner: a model call, one tool call, a check, made as the driver makes it.

A durable runner (`helikon.temporal`) steps `transition` itself and performs each model call
and each tool call where its engine schedules it, perhaps in another process: these make
one such step exactly as the run in `driver` would, with the same hooks, governance and
redaction. User code that raises settles as the `AgentError` the run would fail with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._internal.callbacks import CallbackRaised
from ..events import AgentError, AgentEvent, RunCompleted, RunStarted
from ..loop import (
    ApplyingHandoff,
    Cancelled,
    CheckingOutput,
    Done,
    OutputChecked,
    OutputRetry,
    ToolCallOutcome,
    TransitionInput,
    cancel_error,
)
from ..output_validators import check_output
from .driver import RunDriver, Stopped
from .handoff_steps import decide_handoff
from .resume_point import Decided

if TYPE_CHECKING:
    from ..agent import LlmAgent
    from ..context import RunConfig, RunContext
    from ..items import Item, ToolCall
    from ..model import ModelRequest
    from .sink import EventSink


async def model_step(
    agent: LlmAgent[Any, Any],
    ctx: RunContext[Any],
    config: RunConfig,
    request: ModelRequest,
    turn: int,
    sink: EventSink,
) -> TransitionInput | AgentError:
    """`agent`'s model call for `turn` (its `on_turn_start` hooks first): what the call settles into.

    Its instructions are rendered here (user code, where the step runs) and lead the
    request, whose conversation (`request.messages`) the caller gives without them. The
    deltas go to `sink`; the call's record to `ctx.observer`.
    """
    run = RunDriver(agent, ctx, config)
    remove_callback = run.token.add_callback(run.on_cancel)
    try:
        system = await run.render_system()
        request = replace(request, messages=[*system, *request.messages])
        settled = await run.call_model(request, turn, system, sink)
    except (Stopped, CallbackRaised) as exc:
        return _step_error(exc, run)
    finally:
        remove_callback()
    return settled if settled is not None else Cancelled(reason=run.token.reason)


async def tool_step(
    agent: LlmAgent[Any, Any],
    ctx: RunContext[Any],
    config: RunConfig,
    call: ToolCall,
    emit: Callable[[AgentEvent], None],
    decided: Decided | None = None,
) -> ToolCallOutcome | AgentError:
    """One tool call of `agent`'s run through every layer (hooks, permissions, the tool, redaction).

    `emit` takes the events the pipeline raises (a `PermissionDenied`, ...). A call of a
    resumed run comes `decided`: approved (it runs with the arguments approved, asked
    nothing again), or an agent called as a tool going on with its paused run.
    """
    run = RunDriver(agent, ctx, config)
    remove_callback = run.token.add_callback(run.on_cancel)
    try:
        if run.token.is_cancelled():
            return cancel_error(run.token.reason)
        runner = run.tool_runner()
        if decided is not None and decided.kind == "run":
            runner.decided[call.call_id] = decided.args
        elif decided is not None and decided.kind == "resume":
            runner.decided[call.call_id] = call.args
            if decided.sub is not None:
                runner.resuming[call.call_id] = decided.sub
        return await runner.run_one(call, None, emit)
    except CallbackRaised as exc:
        return _step_error(exc, run)
    finally:
        remove_callback()


async def run_start_step(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], config: RunConfig, messages: tuple[Item, ...]
) -> tuple[AgentEvent, ...] | AgentError:
    """The run's `on_run_start` hooks and input guardrails, all of them before the first model call.

    Returns the events of a refused run (from its `RunStarted`), or none: it may go on.
    """
    run = RunDriver(agent, ctx, config)
    try:
        refused = await run.before_run(messages)
        if refused is None and run.guard_task is not None:
            tripped = await run.input_verdict(run.guard_task)
            refused = None if tripped is None else [RunStarted(agent=agent.name), *tripped]
    except (Stopped, CallbackRaised) as exc:
        return _step_error(exc, run)
    finally:
        run.stop_guardrails()
    return () if refused is None else tuple(refused)


async def output_check_step(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], config: RunConfig, state: CheckingOutput
) -> OutputChecked | OutputRetry | AgentError:
    """The agent's output validators on the final output (`CheckOutput`)."""
    run = RunDriver(agent, ctx, config)
    try:
        return await run.hold(check_output(agent, ctx, state))
    except (Stopped, CallbackRaised) as exc:
        return _step_error(exc, run)


async def output_guard_step(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], config: RunConfig, state: Done
) -> tuple[AgentEvent, ...] | AgentError:
    """The agent's output guardrails on the final answer: the events that fail the run, or none."""
    run = RunDriver(agent, ctx, config)
    completed = RunCompleted(usage=state.output.usage)
    try:
        events = await run.hold(run.check_output(state, (completed,)))
    except (Stopped, CallbackRaised) as exc:
        return _step_error(exc, run)
    return () if events == (completed,) else events


async def handoff_step(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], config: RunConfig, state: ApplyingHandoff
) -> TransitionInput | AgentError:
    """Whether the transfer `state` names goes ahead: its arguments, the `on_handoff` hooks and callback."""
    run = RunDriver(agent, ctx, config)
    try:
        return await run.hold(decide_handoff(agent, ctx, state, run.fire if run.hooks else None))
    except (Stopped, CallbackRaised) as exc:
        return _step_error(exc, run)


async def run_complete_step(agent: LlmAgent[Any, Any], ctx: RunContext[Any], config: RunConfig) -> None:
    """The `on_run_complete` hooks, after the run's end (one that raises is logged)."""
    run = RunDriver(agent, ctx, config)
    if run.hooks:
        await run.run_complete()


def _step_error(exc: Stopped | CallbackRaised, run: RunDriver) -> AgentError:
    if isinstance(exc, CallbackRaised):
        return AgentError(kind="other", message=str(exc), cause=exc.cause)
    return cancel_error(run.token.reason)


__all__ = [
    "handoff_step",
    "model_step",
    "output_check_step",
    "output_guard_step",
    "run_complete_step",
    "run_start_step",
    "tool_step",
]
