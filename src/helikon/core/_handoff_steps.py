"""The handoff steps of a run: whether a transfer goes ahead, and running its target.

A model's call of a `transfer_to_...` tool becomes `ApplyingHandoff`; `decide_handoff`
checks the arguments against the handoff's `input_type` and asks the `on_handoff` hooks,
then `hand_off` runs the target on the transcript (filtered by the handoff's
`input_filter`, if it has one), one level deeper, its events becoming the run's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._callbacks import CallbackRaised
from .events import AgentEvent, RunCompleted, RunFailed, RunStarted
from .exceptions import InvalidArgs
from .governance import HookEvent
from .handoff import Handoff, HandoffInputData
from .input import AgentInput
from .items import Item
from .loop import (
    ApplyingHandoff,
    HandedOff,
    HandoffAccepted,
    HandoffInvalidArgs,
    HandoffRefused,
    TransitionInput,
)

if TYPE_CHECKING:
    from ._driver import _Run

logger = logging.getLogger("helikon.run")


async def decide_handoff(run: _Run, state: ApplyingHandoff) -> TransitionInput:
    """Arguments that do not fit the `input_type` and the `on_handoff` hooks stop the transfer.

    The model is told why. Then the handoff's own `on_handoff` callback gets the arguments.
    """
    call = next(c for c in state.calls if c.call_id == state.call_id)
    handoff = run.agent.handoffs_by_tool[call.name]
    try:
        args = handoff.parse_args(call.args)
    except InvalidArgs as exc:
        return HandoffInvalidArgs(errors=exc.schema_errors)
    if run.hooks:
        decision = await run.fire(
            HookEvent("on_handoff", agent=run.agent.name, from_agent=run.agent.name, to_agent=state.target)
        )
        if decision.kind == "deny":
            return HandoffRefused(reason=decision.reason)
    if handoff.on_handoff is not None:
        await handoff.handed_off(run.ctx, args)
    return HandoffAccepted()


async def hand_off(run: _Run, state: HandedOff) -> AsyncIterator[AgentEvent]:
    """Run the target on the transcript, one level deeper; its events become this run's.

    The target's `RunStarted` is dropped (the run goes on, under a new agent) and its
    terminal event carries the usage of both agents.
    """
    handoff = run.agent.handoffs_by_tool.get(state.tool_name) or next(
        h for h in run.agent.handoffs if h.target == state.target
    )
    transcript = state.transcript
    if handoff.input_filter is not None:
        transcript = await run.hold(_filtered(run, handoff, state))
    before = state.usage
    child = run.ctx.child()
    if run.trace is not None:
        run.trace.end_turn()
        child = child.with_trace_parent(run.trace.run_span)  # the target's spans nest under ours
    ended = False
    try:
        stream = handoff.agent.run(AgentInput((), transcript), context=child, config=run.config)
        async for event in stream:
            if isinstance(event, RunStarted):
                continue
            if isinstance(event, RunCompleted | RunFailed):
                ended = True
                yield replace(event, usage=before + event.usage)
            else:
                yield event
    except Exception as exc:  # a custom Agent's run; an LlmAgent's never raises
        raised = CallbackRaised(f"the handoff target {state.target!r}", "handoff", exc)
        if not ended:
            raise raised from exc
        logger.warning("%s after its run ended", raised)


async def _filtered(run: _Run, handoff: Handoff[Any], state: HandedOff) -> tuple[Item, ...]:
    """The conversation `handoff`'s `input_filter` makes of the transcript: what the target is sent.

    The session log is built from the events, so it keeps the whole transcript.
    """
    transcript = state.transcript
    given = len(run.input.conversation) if run.input is not None else 0
    start = max(given, min(state.turn_start, len(transcript)))
    data = HandoffInputData(
        input_history=transcript[:given],
        pre_handoff_items=transcript[given:start],
        new_items=transcript[start:],
        context=run.ctx,
    )
    return (await handoff.filtered(data)).all_items
