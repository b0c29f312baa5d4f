"""The handoff steps of a run: whether a transfer goes ahead, and running its target.

A model's call of a `transfer_to_...` tool becomes `ApplyingHandoff`; `decide_handoff`
checks the arguments against the handoff's `input_type` and asks the `on_handoff` hooks,
then `hand_off` runs the target on the transcript (filtered by the handoff's
`input_filter`, if it has one), one level deeper, its events becoming the run's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._internal.callbacks import CallbackRaised
from ..events import AgentEvent, RunCompleted, RunFailed, RunPaused, RunStarted, TokenUsage
from ..exceptions import InvalidArgs
from ..governance import HookDecision, HookEvent
from ..handoff import Handoff, HandoffInputData
from ..input import AgentInput
from ..items import Item
from ..loop import (
    ApplyingHandoff,
    HandedOff,
    HandoffAccepted,
    HandoffInvalidArgs,
    HandoffRefused,
    TransitionInput,
)
from .sink import DONE, drive_agent

if TYPE_CHECKING:
    from ..agent import LlmAgent
    from ..context import RunConfig, RunContext
    from .sink import EventSink
    from .tracing import RunTrace

logger = logging.getLogger("helikon.run")


async def decide_handoff(
    agent: LlmAgent[Any, Any],
    ctx: RunContext[Any],
    state: ApplyingHandoff,
    fire: Callable[[HookEvent], Awaitable[HookDecision]] | None,
) -> TransitionInput:
    """Arguments that do not fit the `input_type` and the `on_handoff` hooks (`fire`) stop the transfer.

    The model is told why. Then the handoff's own `on_handoff` callback gets the arguments.
    """
    call = next(c for c in state.calls if c.call_id == state.call_id)
    handoff = agent.handoffs_by_tool[call.name]
    try:
        args = handoff.parse_args(call.args)
    except InvalidArgs as exc:
        return HandoffInvalidArgs(errors=exc.schema_errors)
    if fire is not None:
        decision = await fire(
            HookEvent("on_handoff", agent=agent.name, from_agent=agent.name, to_agent=state.target)
        )
        if decision.kind == "deny":
            return HandoffRefused(reason=decision.reason)
    if handoff.on_handoff is not None:
        await handoff.handed_off(ctx, args)
    return HandoffAccepted()


async def hand_off(
    agent: LlmAgent[Any, Any],
    ctx: RunContext[Any],
    config: RunConfig,
    state: HandedOff,
    trace: RunTrace | None,
    given: AgentInput | None,
    hold: Callable[[Awaitable[tuple[Item, ...]]], Awaitable[tuple[Item, ...]]],
    sink: EventSink,
) -> None:
    """Run the target on the transcript, one level deeper; its events go to `sink` as this run's.

    The target's `RunStarted` is dropped (the run goes on, under a new agent) and its
    terminal event carries the usage of both agents. `given` is what this run was given (an
    `input_filter` tells it from what the run added); `hold` awaits the filter so that a
    cancel interrupts it.
    """
    handoff = agent.handoffs_by_tool.get(state.tool_name) or next(
        h for h in agent.handoffs if h.target == state.target
    )
    transcript = state.transcript
    if handoff.input_filter is not None:
        transcript = await hold(_filtered(ctx, handoff, state, given))
    child = ctx.child()
    if trace is not None:
        trace.end_turn()
        child = child.with_trace_parent(trace.run_span)  # the target's spans nest under ours
    target = _TargetSink(sink, state.usage, agent.name)
    try:
        await drive_agent(handoff.agent, AgentInput((), transcript), child, config, target)
    except Exception as exc:  # a custom Agent's run; an LlmAgent's never raises
        raised = CallbackRaised(f"the handoff target {state.target!r}", "handoff", exc)
        if not target.ended:
            raise raised from exc
        logger.warning("%s after its run ended", raised)


class _TargetSink:
    """The handoff target's events, as the handing-off run's: no second start, the usage of both.

    A pause in the target names the way to it: this run's agent goes in front of each
    pending call's `agent_path`.
    """

    __slots__ = ("agent", "before", "ended", "sink")

    def __init__(self, sink: EventSink, before: TokenUsage, agent: str) -> None:
        self.sink = sink
        self.before = before
        self.agent = agent
        self.ended = False

    def put(self, event: AgentEvent) -> Awaitable[None]:
        if type(event) is RunStarted:
            return DONE
        if isinstance(event, RunCompleted | RunFailed):
            self.ended = True
            event = replace(event, usage=self.before + event.usage)
        elif isinstance(event, RunPaused):
            self.ended = True
            pending = tuple(replace(p, agent_path=(self.agent, *p.agent_path)) for p in event.pending)
            event = RunPaused(pending=pending, usage=self.before + event.usage, sub_runs=event.sub_runs)
        return self.sink.put(event)


async def _filtered(
    ctx: RunContext[Any], handoff: Handoff[Any], state: HandedOff, given: AgentInput | None
) -> tuple[Item, ...]:
    """The conversation `handoff`'s `input_filter` makes of the transcript: what the target is sent.

    The session log is built from the events, so it keeps the whole transcript.
    """
    transcript = state.transcript
    count = len(given.conversation) if given is not None else 0
    start = max(count, min(state.turn_start, len(transcript)))
    data = HandoffInputData(
        input_history=transcript[:count],
        pre_handoff_items=transcript[count:start],
        new_items=transcript[start:],
        context=ctx,
    )
    return (await handoff.filtered(data)).all_items
