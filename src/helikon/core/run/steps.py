"""One step of a run, for a durable runner: a model call, or one tool call, made as the driver makes it.

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
from ..events import AgentError, AgentEvent
from ..loop import Cancelled, ToolCallOutcome, TransitionInput, cancel_error
from .driver import RunDriver, Stopped

if TYPE_CHECKING:
    from ..agent import LlmAgent
    from ..context import RunConfig, RunContext
    from ..items import ToolCall
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
) -> ToolCallOutcome | AgentError:
    """One tool call of `agent`'s run through every layer (hooks, permissions, the tool, redaction).

    `emit` takes the events the pipeline raises (a `PermissionDenied`, ...).
    """
    run = RunDriver(agent, ctx, config)
    remove_callback = run.token.add_callback(run.on_cancel)
    try:
        if run.token.is_cancelled():
            return cancel_error(run.token.reason)
        return await run.tool_runner().run_one(call, None, emit)
    except CallbackRaised as exc:
        return _step_error(exc, run)
    finally:
        remove_callback()


def _step_error(exc: Stopped | CallbackRaised, run: RunDriver) -> AgentError:
    if isinstance(exc, CallbackRaised):
        return AgentError(kind="other", message=str(exc), cause=exc.cause)
    return cancel_error(run.token.reason)


__all__ = ["model_step", "tool_step"]
