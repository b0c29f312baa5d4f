"""The agent loop as data: `LoopState`, `TransitionInput`, `NextAction` and the pure `transition`.

`transition(state, input, ctx, conversation)` is synchronous and does no IO: it returns
the next state, the events to emit, the side effect the driver must perform next, and the
items to append to the conversation (which the caller keeps: `ctx` is configuration only).
The async driver in `LlmAgent` performs the side effects.
Every carrier here is a frozen dataclass that `LOOP_STATE_ADAPTER` and
`TRANSITION_INPUT_ADAPTER` serialize, so a durable runner can persist the loop at any
transition boundary and resume it.

A run walks `CallingModel -> ExecutingTools -> CallingModel -> ... -> Done`; with an
output type it ends `... -> Finalizing [-> RepairingOutput ...] -> Done`; output
validators check the answer in `CheckingOutput` first (a retry goes back to the model).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import field, replace

from .._internal.adapter import LazyAdapter
from .._internal.carrier import carrier
from ..approvals import PendingApproval
from ..events import (
    AgentError,
    AgentEvent,
    AgentUpdated,
    HandoffItem,
    MessageOutput,
    RepairStarted,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunStarted,
    StructuredOutputFailed,
    SubRun,
    TokenUsage,
    ToolCallItem,
    ToolOutputItem,
    TurnStarted,
)
from ..items import (
    AssistantMessage,
    Item,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    UserMessage,
)
from ..model import ModelRequest, ModelSettings, ToolDef
from ..output import OutputSpec, validator_raised
from .actions import (
    ApplyHandoff,
    CallModel,
    CheckOutput,
    ExecuteTools,
    NextAction,
    Terminate,
    TransitionOutcome,
)
from .inputs import (
    Cancelled,
    Continue,
    HandoffAccepted,
    HandoffDecision,
    HandoffInvalidArgs,
    HandoffRefused,
    ModelFailed,
    ModelResponse,
    Start,
    TransitionInput,
)
from .output import (
    FINALIZE_PROMPT,
    REPAIR_PROMPT,
    RETRY_PROMPT,
    STRUCTURED_RETRY_PROMPT,
    CheckingOutput,
    Done,
    Failed,
    Finalizing,
    FinalOutput,
    OutputChecked,
    OutputRetry,
    RepairingOutput,
    retries_exceeded,
)
from .states import (
    ApplyingHandoff,
    CallingModel,
    Compacting,
    ExecutingTools,
    HandedOff,
    LoopState,
    NeedsApproval,
)
from .tools import TOOL_DENIED_PREFIX, ToolCallOutcome, ToolResults, ToolStatus

TIMEOUT_REASON = "helikon:timeout"
"""The cancellation reason a runner gives when `RunConfig.timeout` expires."""

_TERMINATE = Terminate()
_APPLY_HANDOFF = ApplyHandoff()
_CHECK_OUTPUT = CheckOutput()


@carrier
class TransitionCtx:
    """The agent and run configuration every `transition` step of a run reads; frozen."""

    agent_name: str
    tools: Sequence[ToolDef] = ()
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    max_turns: int = 16
    system: Sequence[SystemMessage] = ()
    """Rendered instructions (and hook-injected messages) that lead every request."""
    output: OutputSpec | None = None
    handoffs: dict[str, str] = field(default_factory=lambda: {})
    """Transfer tool name -> target agent name."""
    agent_depth: int = 0
    """How deeply this run is nested; a handoff nests one level deeper."""
    max_agent_depth: int = 8
    fail_on_tool_denied: bool = False
    """Whether a tool's `Denied` fails the run (`tool_denied`) instead of going back to the model."""
    check_output: bool = False
    """Whether the agent has output validators (a final answer goes to `CheckingOutput`)."""
    output_retries: int = 1
    """How often the final output may be sent back (schema errors, a validator's `ModelRetry`)."""


# --- the machine -----------------------------------------------------------------------------


def initial_state(ctx: TransitionCtx) -> LoopState:
    """Where a run starts: straight at the finalizing turn for a tool-less structured agent."""
    if ctx.output is not None and not ctx.tools and not ctx.handoffs:
        return Finalizing(turn=0)
    return CallingModel(turn=0)


_ENDED = (Done, Failed, HandedOff)  # the terminal states
_STRUCTURED = (Finalizing, RepairingOutput)  # the states that ask for the output type
_CHECKED = (OutputChecked, OutputRetry)  # what the output validators settle into


def transition(
    state: LoopState, input: TransitionInput, ctx: TransitionCtx, conversation: Sequence[Item] = ()
) -> TransitionOutcome:
    """Advance the loop by one step. Pure: no IO, no awaits, no mutation of its arguments.

    `conversation` is the conversation before this step: what the earlier steps'
    `conversation_appends` added up to (the caller keeps it, and extends it with this one's).
    """
    if isinstance(state, _ENDED):
        # Terminal states absorb everything: a late cancel never overrides the outcome.
        return TransitionOutcome(state, (), _TERMINATE)
    usage = state.usage
    if isinstance(input, Cancelled):
        return _fail(cancel_error(input.reason), usage)
    if isinstance(input, ModelFailed):
        return _fail(AgentError(kind="model_error", message=input.message, cause=input.kind), usage)
    if isinstance(input, Start):
        return _start(state, input, ctx, conversation)
    if isinstance(state, CallingModel) and isinstance(input, ModelResponse):
        return _after_model(state, input, ctx, conversation)
    if isinstance(state, CallingModel) and isinstance(input, Continue):
        request = CallModel(request=_request(ctx, conversation, ()))
        return TransitionOutcome(state, (TurnStarted(turn=state.turn),), request)
    if isinstance(state, ExecutingTools | NeedsApproval) and isinstance(input, ToolResults):
        return _after_tools(state, input, ctx, conversation)
    if isinstance(state, _STRUCTURED) and isinstance(input, ModelResponse):
        return _after_structured(state, input, ctx, conversation)
    if isinstance(state, ApplyingHandoff) and isinstance(
        input, HandoffAccepted | HandoffRefused | HandoffInvalidArgs
    ):
        return _after_handoff(state, input, ctx, conversation)
    if isinstance(state, CheckingOutput) and isinstance(input, _CHECKED):
        return _after_check(state, input, ctx, conversation)
    return _fail(
        AgentError(kind="other", message=f"invalid transition: {state.type} cannot take {input.type}"), usage
    )


def cancel_error(reason: str | None) -> AgentError:
    """Why a run cancelled with `reason` failed (`TIMEOUT_REASON`: the runner's timeout)."""
    if reason == TIMEOUT_REASON:
        return AgentError(kind="timeout", message="the run timed out")
    return AgentError(kind="cancelled", message=f"the run was cancelled ({reason or 'no reason given'})")


def _fail(error: AgentError, usage: TokenUsage) -> TransitionOutcome:
    return TransitionOutcome(
        Failed(error=error, usage=usage), (RunFailed(error=error, usage=usage),), _TERMINATE
    )


def _request(
    ctx: TransitionCtx, conversation: Sequence[Item], appends: Sequence[Item], *, structured: bool = False
) -> ModelRequest:
    messages = [*ctx.system, *conversation, *appends]
    if structured and ctx.output is not None:
        settings = ctx.model_settings.merged(ModelSettings(response_format=ctx.output.response_format))
        return ModelRequest(messages=messages, tools=(), model_settings=settings)
    return ModelRequest(messages=messages, tools=ctx.tools, model_settings=ctx.model_settings)


def model_request(
    ctx: TransitionCtx, conversation: Sequence[Item], *, structured: bool = False
) -> ModelRequest:
    """The request a model turn in `ctx` sends after `conversation` (`structured`: for the output type).

    What `CallModel.request` holds; a durable runner makes it again where the call runs,
    from the conversation its session holds.
    """
    return _request(ctx, conversation, (), structured=structured)


def _start(
    state: LoopState, input: Start, ctx: TransitionCtx, conversation: Sequence[Item]
) -> TransitionOutcome:
    started = RunStarted(agent=ctx.agent_name)
    if isinstance(state, Finalizing):
        appends = input.messages
        request = _request(ctx, conversation, appends, structured=True)
        return TransitionOutcome(
            state, (started, TurnStarted(turn=state.turn)), CallModel(request=request), appends
        )
    if not isinstance(state, CallingModel):
        usage = state.output.usage if isinstance(state, Done) else state.usage
        return _fail(AgentError(kind="other", message=f"a run cannot start in state {state.type}"), usage)
    request = _request(ctx, conversation, input.messages)
    return TransitionOutcome(
        state, (started, TurnStarted(turn=state.turn)), CallModel(request=request), input.messages
    )


def _model_events(items: Sequence[Item]) -> tuple[list[AgentEvent], list[ToolCall], AssistantMessage | None]:
    events: list[AgentEvent] = []
    calls: list[ToolCall] = []
    message: AssistantMessage | None = None
    for item in items:
        if isinstance(item, AssistantMessage):
            message = item
            events.append(MessageOutput(item=item))
        elif isinstance(item, ToolCall):
            calls.append(item)
            events.append(ToolCallItem(item=item))
    return events, calls, message


def _after_model(
    state: CallingModel, input: ModelResponse, ctx: TransitionCtx, conversation: Sequence[Item]
) -> TransitionOutcome:
    usage = state.usage + input.usage
    events, calls, message = _model_events(input.items)
    appends = input.items
    if calls:
        for call in calls:
            target = ctx.handoffs.get(call.name)
            if target is not None:
                if ctx.agent_depth + 1 > ctx.max_agent_depth:
                    error = AgentError(
                        kind="max_agent_depth_exceeded",
                        message=f"handing off to {target!r} would nest agents deeper than "
                        f"RunConfig.max_agent_depth ({ctx.max_agent_depth})",
                        limit=ctx.max_agent_depth,
                    )
                    events.append(RunFailed(error=error, usage=usage))
                    return TransitionOutcome(
                        Failed(error=error, usage=usage), tuple(events), _TERMINATE, appends
                    )
                transcript = (*conversation, *appends)
                applying = ApplyingHandoff(
                    target=target,
                    call_id=call.call_id,
                    transcript=transcript,
                    usage=usage,
                    calls=tuple(calls),
                    turn=state.turn,
                    args_retried=state.args_retried,
                    turn_start=len(conversation),
                    output_retried=state.output_retried,
                )
                return TransitionOutcome(applying, tuple(events), _APPLY_HANDOFF, appends)
        if state.turn + 1 >= ctx.max_turns:
            return _max_turns(events, ctx, usage, appends)
        executing = ExecutingTools(
            calls=tuple(calls),
            turn=state.turn,
            usage=usage,
            args_retried=state.args_retried,
            output_retried=state.output_retried,
        )
        return TransitionOutcome(executing, tuple(events), ExecuteTools(calls=tuple(calls)), appends)
    if ctx.output is not None:
        # The model has finished with its tools; ask it for the output type.
        if state.turn + 1 >= ctx.max_turns:
            return _max_turns(events, ctx, usage, appends)
        nudge = UserMessage.from_text(FINALIZE_PROMPT.format(name=ctx.output.name))
        appends = (*appends, nudge)
        next_turn = state.turn + 1
        events.append(TurnStarted(turn=next_turn))
        return TransitionOutcome(
            Finalizing(turn=next_turn, usage=usage, output_retried=state.output_retried),
            tuple(events),
            CallModel(request=_request(ctx, conversation, appends, structured=True)),
            appends,
        )
    content = message.content if message is not None else ()
    if ctx.check_output:
        checking = CheckingOutput(
            output=FinalOutput(content=content, usage=usage),
            turn=state.turn,
            usage=usage,
            output_retried=state.output_retried,
            args_retried=state.args_retried,
        )
        return TransitionOutcome(checking, tuple(events), _CHECK_OUTPUT, appends)
    events.append(RunCompleted(usage=usage))
    return TransitionOutcome(
        Done(output=FinalOutput(content=content, usage=usage)), tuple(events), _TERMINATE, appends
    )


def _handoff_result(state: ApplyingHandoff, call: ToolCall, input: HandoffDecision) -> ToolResult:
    """What the model reads for `call`, one of the calls of the turn that asked for the handoff."""
    target = state.target
    if call.call_id == state.call_id:
        if isinstance(input, HandoffAccepted):
            text, error = json.dumps({"assistant": target}), False
        elif isinstance(input, HandoffRefused):
            text, error = f"Error: the handoff to {target!r} was refused: {input.reason}", True
        else:
            text = (
                f"Error: invalid arguments: {'; '.join(input.errors)}. "
                "Fix the arguments to match the tool's schema and call it again."
            )
            error = True
    elif isinstance(input, HandoffAccepted):
        text, error = f"Error: not run: control was transferred to {target!r}", True
    else:
        text, error = "Error: not run: it was asked for together with a handoff that did not happen", True
    return ToolResult(call_id=call.call_id, content=(TextPart(text=text),), is_error=error, name=call.name)


def _after_handoff(
    state: ApplyingHandoff, input: HandoffDecision, ctx: TransitionCtx, conversation: Sequence[Item]
) -> TransitionOutcome:
    """Answer every call of the turn; then hand off, or go on with the model."""
    target = state.target
    results = [_handoff_result(state, call, input) for call in state.calls]
    events: list[AgentEvent] = [ToolOutputItem(item=r) for r in results]
    appends = tuple(results)
    if isinstance(input, HandoffAccepted):
        events += [HandoffItem(from_agent=ctx.agent_name, to_agent=target), AgentUpdated(agent=target)]
        tool_name = next((c.name for c in state.calls if c.call_id == state.call_id), "")
        handed = HandedOff(
            target=target,
            transcript=(*state.transcript, *appends),
            usage=state.usage,
            tool_name=tool_name,
            turn_start=state.turn_start,
        )
        return TransitionOutcome(handed, tuple(events), _TERMINATE, appends)
    retried = state.args_retried
    if isinstance(input, HandoffInvalidArgs):
        name = next((c.name for c in state.calls if c.call_id == state.call_id), target)
        if name in retried:
            error = AgentError(
                kind="tool_error",
                message=f"tool {name!r} got invalid arguments again after one correction: "
                + next(r.text for r in results if r.call_id == state.call_id),
                cause=name,
            )
            events.append(RunFailed(error=error, usage=state.usage))
            return TransitionOutcome(
                Failed(error=error, usage=state.usage), tuple(events), _TERMINATE, appends
            )
        retried = (*retried, name)
    next_turn = state.turn + 1
    if next_turn >= ctx.max_turns:
        return _max_turns(events, ctx, state.usage, appends)
    events.append(TurnStarted(turn=next_turn))
    return TransitionOutcome(
        CallingModel(
            turn=next_turn, usage=state.usage, args_retried=retried, output_retried=state.output_retried
        ),
        tuple(events),
        CallModel(request=_request(ctx, conversation, appends)),
        appends,
    )


def _max_turns(
    events: list[AgentEvent], ctx: TransitionCtx, usage: TokenUsage, appends: tuple[Item, ...]
) -> TransitionOutcome:
    error = AgentError(
        kind="max_turns_exceeded",
        message=f"the run used all {ctx.max_turns} turns (RunConfig.max_turns) without a final answer",
        limit=ctx.max_turns,
    )
    events.append(RunFailed(error=error, usage=usage))
    return TransitionOutcome(Failed(error=error, usage=usage), tuple(events), _TERMINATE, appends)


def _after_tools(
    state: ExecutingTools | NeedsApproval,
    input: ToolResults,
    ctx: TransitionCtx,
    conversation: Sequence[Item],
) -> TransitionOutcome:
    """The turn's results join the conversation; the model is next (or the run fails, or pauses).

    From `NeedsApproval` (a paused run resumed), `input` holds the outcomes of every call
    of the turn, the ones that ran before the pause included.
    """
    usage = state.usage
    for outcome in input.outcomes:
        if outcome.usage is not None:  # an agent-tool's run: the run's usage includes it
            usage = usage + outcome.usage
    events: list[AgentEvent] = []
    results: list[Item] = []
    retried = state.args_retried
    failure: AgentError | None = None
    pending: list[PendingApproval] = []
    sub_runs: list[SubRun] = []
    for outcome in input.outcomes:
        if outcome.pending:  # no result yet: it waits for a person
            pending += outcome.pending
            sub_runs += outcome.sub_runs
            continue
        result = outcome.to_result()
        results.append(result)
        events.append(ToolOutputItem(item=result, metadata=outcome.metadata))
        if failure is not None:
            continue
        if outcome.status == "denied" and ctx.fail_on_tool_denied:
            failure = AgentError(
                kind="tool_denied",
                message=f"tool {outcome.name!r} refused: {result.text.removeprefix(TOOL_DENIED_PREFIX)}",
                cause=outcome.name,
            )
        elif outcome.status == "fatal":
            failure = AgentError(
                kind="tool_error", message=result.text.removeprefix("Error: "), cause=outcome.name
            )
        elif outcome.status == "invalid_args" or outcome.status == "retry":
            # `retried` holds a tool's name once per correction the model was sent back for.
            if retried.count(outcome.name) >= outcome.max_retries:
                failure = AgentError(
                    kind="tool_error", message=_retries_spent(outcome, result.text), cause=outcome.name
                )
            else:
                retried = (*retried, outcome.name)
    appends = tuple(results)
    if failure is not None:
        events.append(RunFailed(error=failure, usage=usage))
        return TransitionOutcome(Failed(error=failure, usage=usage), tuple(events), _TERMINATE, appends)
    if pending:
        paused = NeedsApproval(
            calls=state.calls,
            pending=tuple(pending),
            turn=state.turn,
            usage=usage,
            args_retried=retried,
            output_retried=state.output_retried,
        )
        events.append(RunPaused(pending=paused.pending, usage=usage, sub_runs=tuple(sub_runs)))
        return TransitionOutcome(paused, tuple(events), _TERMINATE, appends)
    next_turn = state.turn + 1
    events.append(TurnStarted(turn=next_turn))
    return TransitionOutcome(
        CallingModel(turn=next_turn, usage=usage, args_retried=retried, output_retried=state.output_retried),
        tuple(events),
        CallModel(request=_request(ctx, conversation, appends)),
        appends,
    )


def _retries_spent(outcome: ToolCallOutcome, text: str) -> str:
    name, bound = outcome.name, outcome.max_retries
    if outcome.status == "retry":
        return f"tool {name!r} asked the model to retry past its max_retries ({bound}): {text}"
    spent = "one correction" if bound == 1 else f"{bound} corrections (its max_retries)"
    return f"tool {name!r} got invalid arguments again after {spent}: {text}"


def _after_structured(
    state: Finalizing | RepairingOutput,
    input: ModelResponse,
    ctx: TransitionCtx,
    conversation: Sequence[Item],
) -> TransitionOutcome:
    usage = state.usage + input.usage
    if ctx.output is None:
        return _fail(
            AgentError(kind="other", message=f"{state.type} needs an output type in TransitionCtx"), usage
        )
    events, _calls, message = _model_events(input.items)
    appends = input.items
    text = message.text if message is not None else ""
    try:
        errors = ctx.output.validate(text)
    except Exception as exc:  # a bug in a validator of the output type: the run fails, naming it
        error = AgentError(
            kind="other", message=validator_raised(ctx.output.name, exc), cause="output_validator"
        )
        events.append(RunFailed(error=error, usage=usage))
        return TransitionOutcome(Failed(error=error, usage=usage), tuple(events), _TERMINATE, appends)
    if not errors:
        content = message.content if message is not None else ()
        output = FinalOutput(content=content, usage=usage)
        if ctx.check_output:
            checking = CheckingOutput(
                output=output, turn=state.turn, usage=usage, output_retried=state.output_retried
            )
            return TransitionOutcome(checking, tuple(events), _CHECK_OUTPUT, appends)
        events.append(RunCompleted(usage=usage))
        return TransitionOutcome(Done(output=output), tuple(events), _TERMINATE, appends)
    events.append(StructuredOutputFailed(schema_errors=errors, final_text=text))
    if state.output_retried >= ctx.output_retries or state.turn + 1 >= ctx.max_turns:
        error = AgentError(
            kind="invalid_structured_output",
            message=f"the model's output does not match {ctx.output.name}: " + "; ".join(errors),
            schema_errors=errors,
            final_text=text,
        )
        events.append(RunFailed(error=error, usage=usage))
        return TransitionOutcome(Failed(error=error, usage=usage), tuple(events), _TERMINATE, appends)
    repair = UserMessage.from_text(
        REPAIR_PROMPT.format(name=ctx.output.name, errors="\n".join(f"- {e}" for e in errors))
    )
    return _retry(state, usage, "; ".join(errors), repair, ctx, conversation, events, appends)


def _retry(
    state: Finalizing | RepairingOutput | CheckingOutput,
    usage: TokenUsage,
    reason: str,
    message: UserMessage,
    ctx: TransitionCtx,
    conversation: Sequence[Item],
    events: list[AgentEvent],
    appends: tuple[Item, ...],
) -> TransitionOutcome:
    """Send the output back: `message` joins the conversation (and the session, by `RepairStarted`)."""
    appends = (*appends, message)
    next_turn = state.turn + 1
    retried = state.output_retried + 1
    events += [RepairStarted(attempt=retried, reason=reason, item=message), TurnStarted(turn=next_turn)]
    if ctx.output is not None:
        return TransitionOutcome(
            RepairingOutput(turn=next_turn, usage=usage, output_retried=retried),
            tuple(events),
            CallModel(request=_request(ctx, conversation, appends, structured=True)),
            appends,
        )
    args_retried = state.args_retried if isinstance(state, CheckingOutput) else ()
    return TransitionOutcome(
        CallingModel(turn=next_turn, usage=usage, args_retried=args_retried, output_retried=retried),
        tuple(events),
        CallModel(request=_request(ctx, conversation, appends)),
        appends,
    )


def _after_check(
    state: CheckingOutput,
    input: OutputChecked | OutputRetry,
    ctx: TransitionCtx,
    conversation: Sequence[Item],
) -> TransitionOutcome:
    """The output validators' verdict: the run completes, or the model is sent back (within bounds)."""
    usage = state.usage
    if isinstance(input, OutputChecked):
        done = Done(output=replace(state.output, validated=input.output))
        return TransitionOutcome(done, (RunCompleted(usage=usage, output=input.output),), _TERMINATE)
    if state.output_retried >= ctx.output_retries:
        return _fail(
            retries_exceeded(ctx.output_retries, input.reason, input.validator, state.output.text), usage
        )
    if state.turn + 1 >= ctx.max_turns:
        return _max_turns([], ctx, usage, ())
    if ctx.output is not None:
        text = STRUCTURED_RETRY_PROMPT.format(reason=input.reason, name=ctx.output.name)
    else:
        text = RETRY_PROMPT.format(reason=input.reason)
    return _retry(state, usage, input.reason, UserMessage.from_text(text), ctx, conversation, [], ())


def _state_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[LoopState, Field(discriminator="type")]


def _input_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[TransitionInput, Field(discriminator="type")]


LOOP_STATE_ADAPTER: LazyAdapter[LoopState] = LazyAdapter(_state_type)
"""JSON (de)serialization of any `LoopState` (for durable runners)."""

TRANSITION_INPUT_ADAPTER: LazyAdapter[TransitionInput] = LazyAdapter(_input_type)
"""JSON (de)serialization of any `TransitionInput` (for durable runners)."""

__all__ = [
    "FINALIZE_PROMPT",
    "LOOP_STATE_ADAPTER",
    "REPAIR_PROMPT",
    "RETRY_PROMPT",
    "STRUCTURED_RETRY_PROMPT",
    "TIMEOUT_REASON",
    "TRANSITION_INPUT_ADAPTER",
    "ApplyHandoff",
    "ApplyingHandoff",
    "CallModel",
    "CallingModel",
    "Cancelled",
    "CheckOutput",
    "Continue",
    "CheckingOutput",
    "Compacting",
    "Done",
    "ExecuteTools",
    "ExecutingTools",
    "Failed",
    "FinalOutput",
    "Finalizing",
    "HandedOff",
    "HandoffAccepted",
    "HandoffDecision",
    "HandoffInvalidArgs",
    "HandoffRefused",
    "LoopState",
    "ModelFailed",
    "ModelResponse",
    "NeedsApproval",
    "NextAction",
    "OutputChecked",
    "OutputRetry",
    "RepairingOutput",
    "Start",
    "Terminate",
    "ToolCallOutcome",
    "ToolResults",
    "ToolStatus",
    "TransitionCtx",
    "TransitionInput",
    "TransitionOutcome",
    "cancel_error",
    "initial_state",
    "model_request",
    "transition",
]
