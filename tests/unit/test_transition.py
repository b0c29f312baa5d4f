"""The pure state machine: every state against every input."""

from __future__ import annotations

from dataclasses import replace

import pytest

from helikon import (
    AssistantMessage,
    MessageOutput,
    ModelSettings,
    ResponseFormat,
    RunCompleted,
    RunFailed,
    RunStarted,
    StructuredOutputFailed,
    SystemMessage,
    TextPart,
    TokenUsage,
    ToolCall,
    ToolCallItem,
    ToolDef,
    ToolOutputItem,
    ToolResult,
    TurnStarted,
    UserMessage,
)
from helikon.core.events import RepairStarted
from helikon.core.items import Item
from helikon.core.loop import (
    FINALIZE_PROMPT,
    LOOP_STATE_ADAPTER,
    TIMEOUT_REASON,
    TRANSITION_INPUT_ADAPTER,
    ApplyHandoff,
    ApplyingHandoff,
    CallingModel,
    CallModel,
    Cancelled,
    Compacting,
    Done,
    ExecuteTools,
    ExecutingTools,
    Failed,
    Finalizing,
    FinalOutput,
    HandedOff,
    HandoffAccepted,
    HandoffRefused,
    LoopState,
    ModelFailed,
    ModelResponse,
    NeedsApproval,
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
from helikon.core.output import OutputSpec

TOOLS = (ToolDef(name="lookup", description="Look up.", parameters={"type": "object", "properties": {}}),)
USER = UserMessage.from_text("hi")
CALL = ToolCall(call_id="c1", name="lookup", args={"q": "x"})
CALL2 = ToolCall(call_id="c2", name="lookup", args={"q": "y"})
REPLY = AssistantMessage.from_text("done", agent="a")
USAGE = TokenUsage(input_tokens=10, output_tokens=2, requests=1)


def ctx(**overrides: object) -> TransitionCtx:
    base = TransitionCtx(agent_name="a", tools=TOOLS, max_turns=4, system=(SystemMessage(text="Be brief."),))
    return replace(base, **overrides)


def json_output(valid: str = '{"ok": true}') -> OutputSpec:
    return OutputSpec(
        name="Answer",
        response_format=ResponseFormat.json_schema(name="Answer", schema={"type": "object"}),
        validate=lambda text: () if text == valid else ("ok: field required",),
    )


def outcome_ok(call: ToolCall, text: str = "result") -> ToolCallOutcome:
    return ToolCallOutcome(call_id=call.call_id, name=call.name, content=(TextPart(text=text),))


# --- Start ------------------------------------------------------------------------------------


def test_start_emits_run_and_turn_started_and_calls_the_model_with_system_first() -> None:
    out = transition(CallingModel(turn=0), Start(messages=(USER,)), ctx())
    assert out.events == (RunStarted(agent="a"), TurnStarted(turn=0))
    assert out.next_state == CallingModel(turn=0)
    assert out.conversation_appends == (USER,)
    assert isinstance(out.next_action, CallModel)
    request = out.next_action.request
    assert list(request.messages) == [SystemMessage(text="Be brief."), USER]
    assert tuple(request.tools) == TOOLS
    assert request.model_settings.response_format is None


def test_start_from_finalizing_requests_the_output_schema_without_tools() -> None:
    c = ctx(tools=(), output=json_output())
    state = initial_state(c)
    assert state == Finalizing(turn=0)
    out = transition(state, Start(messages=(USER,)), c)
    assert isinstance(out.next_action, CallModel)
    settings = out.next_action.request.model_settings
    assert settings.response_format == ResponseFormat.json_schema(name="Answer", schema={"type": "object"})
    assert tuple(out.next_action.request.tools) == ()


def test_initial_state_calls_the_model_when_tools_exist_even_with_an_output_type() -> None:
    assert initial_state(ctx(output=json_output())) == CallingModel(turn=0)
    assert initial_state(ctx()) == CallingModel(turn=0)


@pytest.mark.parametrize(
    "state",
    [
        ExecutingTools(calls=(CALL,), turn=0),
        RepairingOutput(turn=1),
        ApplyingHandoff(target="b", call_id="c1", transcript=()),
        Compacting(turn=0),
        NeedsApproval(calls=(CALL,), pending=(), turn=0),
    ],
)
def test_start_in_a_mid_run_state_fails(state: LoopState) -> None:
    out = transition(state, Start(messages=(USER,)), ctx())
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "other"
    assert isinstance(out.next_action, Terminate)
    assert isinstance(out.events[-1], RunFailed)


# --- CallingModel + ModelResponse --------------------------------------------------------------


def test_a_text_answer_completes_the_run_with_the_summed_usage() -> None:
    state = CallingModel(turn=1, usage=USAGE)
    out = transition(state, ModelResponse(items=(REPLY,), usage=USAGE), ctx(), (USER,))
    assert out.events == (MessageOutput(item=REPLY), RunCompleted(usage=USAGE + USAGE))
    assert out.next_state == Done(output=FinalOutput(content=REPLY.content, usage=USAGE + USAGE))
    assert isinstance(out.next_action, Terminate)
    assert out.conversation_appends == (REPLY,)
    assert isinstance(out.next_state, Done)
    assert out.next_state.output.text == "done"


def test_an_empty_answer_completes_with_empty_content() -> None:
    out = transition(CallingModel(turn=0), ModelResponse(items=()), ctx())
    assert out.next_state == Done(output=FinalOutput(content=()))
    assert out.events == (RunCompleted(usage=TokenUsage()),)


def test_tool_calls_move_to_executing_tools_in_call_order() -> None:
    items = (REPLY, CALL, CALL2)
    out = transition(CallingModel(turn=0), ModelResponse(items=items, usage=USAGE), ctx())
    assert out.events == (MessageOutput(item=REPLY), ToolCallItem(item=CALL), ToolCallItem(item=CALL2))
    assert out.next_state == ExecutingTools(calls=(CALL, CALL2), turn=0, usage=USAGE)
    assert out.next_action == ExecuteTools(calls=(CALL, CALL2))
    assert out.conversation_appends == items


def test_tool_calls_on_the_last_turn_fail_with_max_turns_before_running_tools() -> None:
    out = transition(CallingModel(turn=3), ModelResponse(items=(CALL,)), ctx(max_turns=4))
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "max_turns_exceeded"
    assert out.next_state.error.limit == 4
    assert isinstance(out.events[-1], RunFailed)
    assert out.events[0] == ToolCallItem(item=CALL)


def test_max_turns_one_allows_a_direct_answer() -> None:
    out = transition(CallingModel(turn=0), ModelResponse(items=(REPLY,)), ctx(max_turns=1))
    assert isinstance(out.next_state, Done)


def test_a_handoff_tool_call_moves_to_applying_handoff_with_the_transcript() -> None:
    transfer = ToolCall(call_id="t1", name="transfer_to_b", args={})
    c = ctx(handoffs={"transfer_to_b": "b"})
    out = transition(CallingModel(turn=0, usage=USAGE), ModelResponse(items=(transfer,)), c, (USER,))
    assert out.next_state == ApplyingHandoff(
        target="b",
        call_id="t1",
        transcript=(USER, transfer),
        usage=USAGE,
        calls=(transfer,),
        turn=0,
        turn_start=1,  # the handoff turn starts after the conversation so far
    )
    assert isinstance(out.next_action, ApplyHandoff)


def test_an_accepted_handoff_answers_every_call_and_hands_over_the_transcript() -> None:
    transfer = ToolCall(call_id="t1", name="transfer_to_b", args={})
    other = ToolCall(call_id="c2", name="lookup", args={})
    c = ctx(handoffs={"transfer_to_b": "b"})
    asked = transition(CallingModel(turn=0, usage=USAGE), ModelResponse(items=(other, transfer)), c, (USER,))
    assert isinstance(asked.next_state, ApplyingHandoff)
    out = transition(asked.next_state, HandoffAccepted(), c, (USER,))
    assert isinstance(out.next_state, HandedOff) and isinstance(out.next_action, Terminate)
    results = out.conversation_appends
    assert [r.call_id for r in results] == ["c2", "t1"]  # type: ignore[union-attr]
    assert [r.is_error for r in results] == [True, False]  # type: ignore[union-attr]
    assert [e.type for e in out.events] == [
        "tool_output_item",
        "tool_output_item",
        "handoff_item",
        "agent_updated",
    ]
    assert out.next_state.transcript == (USER, other, transfer, *results)
    assert out.next_state.usage == USAGE and out.next_state.target == "b"
    assert (out.next_state.tool_name, out.next_state.turn_start) == ("transfer_to_b", 1)


def test_a_refused_handoff_tells_the_model_and_goes_on() -> None:
    transfer = ToolCall(call_id="t1", name="transfer_to_b", args={})
    c = ctx(handoffs={"transfer_to_b": "b"})
    asked = transition(CallingModel(turn=0), ModelResponse(items=(transfer,)), c, (USER,))
    out = transition(asked.next_state, HandoffRefused(reason="not now"), c, (USER,))
    assert out.next_state == CallingModel(turn=1)
    assert isinstance(out.next_action, CallModel)
    [result] = out.conversation_appends
    assert isinstance(result, ToolResult) and result.is_error and "not now" in result.text


def test_a_handoff_past_the_depth_limit_fails_the_run() -> None:
    transfer = ToolCall(call_id="t1", name="transfer_to_b", args={})
    c = ctx(handoffs={"transfer_to_b": "b"}, agent_depth=2, max_agent_depth=2)
    out = transition(CallingModel(turn=0), ModelResponse(items=(transfer,)), c)
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "max_agent_depth_exceeded" and out.next_state.error.limit == 2


def test_a_text_answer_with_an_output_type_moves_to_finalizing() -> None:
    c = ctx(output=json_output())
    out = transition(CallingModel(turn=0), ModelResponse(items=(REPLY,), usage=USAGE), c, (USER,))
    assert out.next_state == Finalizing(turn=1, usage=USAGE)
    assert out.events == (MessageOutput(item=REPLY), TurnStarted(turn=1))
    nudge = UserMessage.from_text(FINALIZE_PROMPT.format(name="Answer"))
    assert out.conversation_appends == (REPLY, nudge)
    assert isinstance(out.next_action, CallModel)
    request = out.next_action.request
    assert list(request.messages)[-2:] == [REPLY, nudge]
    assert request.model_settings.response_format is not None
    assert request.model_settings.response_format.strict


def test_finalizing_needs_a_turn_left() -> None:
    c = ctx(output=json_output(), max_turns=1)
    out = transition(CallingModel(turn=0), ModelResponse(items=(REPLY,)), c)
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "max_turns_exceeded"


# --- ExecutingTools + ToolResults ---------------------------------------------------------------


def test_tool_results_feed_the_next_turn() -> None:
    state = ExecutingTools(calls=(CALL, CALL2), turn=0, usage=USAGE)
    outcomes = (outcome_ok(CALL, "a"), outcome_ok(CALL2, "b"))
    out = transition(state, ToolResults(outcomes=outcomes), ctx(), (USER, CALL, CALL2))
    results = tuple(o.to_result() for o in outcomes)
    assert out.events == (
        ToolOutputItem(item=results[0]),
        ToolOutputItem(item=results[1]),
        TurnStarted(turn=1),
    )
    assert out.next_state == CallingModel(turn=1, usage=USAGE)
    assert out.conversation_appends == results
    assert isinstance(out.next_action, CallModel)
    assert list(out.next_action.request.messages)[-2:] == list(results)
    assert results[0] == ToolResult(call_id="c1", content=(TextPart(text="a"),), name="lookup")


def test_an_error_result_is_data_for_the_model() -> None:
    bad = ToolCallOutcome(
        call_id="c1", name="lookup", content=(TextPart(text="Error: boom"),), status="error"
    )
    out = transition(ExecutingTools(calls=(CALL,), turn=0), ToolResults(outcomes=(bad,)), ctx())
    assert isinstance(out.next_state, CallingModel)
    assert out.conversation_appends[0] == ToolResult(
        call_id="c1", content=(TextPart(text="Error: boom"),), is_error=True, name="lookup"
    )


def test_invalid_args_are_fed_back_once_then_fail_the_run() -> None:
    invalid = ToolCallOutcome(
        call_id="c1", name="lookup", content=(TextPart(text="bad q"),), status="invalid_args"
    )
    first = transition(ExecutingTools(calls=(CALL,), turn=0), ToolResults(outcomes=(invalid,)), ctx())
    assert first.next_state == CallingModel(turn=1, args_retried=("lookup",))
    again = ExecutingTools(calls=(CALL,), turn=1, args_retried=("lookup",))
    second = transition(again, ToolResults(outcomes=(invalid,)), ctx())
    assert isinstance(second.next_state, Failed)
    assert second.next_state.error.kind == "tool_error"
    assert second.next_state.error.cause == "lookup"
    assert isinstance(second.events[-1], RunFailed)
    assert isinstance(second.events[0], ToolOutputItem)


def test_the_retry_allowance_survives_the_next_model_turn() -> None:
    state = CallingModel(turn=1, args_retried=("lookup",))
    out = transition(state, ModelResponse(items=(CALL,)), ctx())
    assert out.next_state == ExecutingTools(calls=(CALL,), turn=1, args_retried=("lookup",))


DENIED = ToolCallOutcome(
    call_id="c1",
    name="lookup",
    content=(TextPart(text="Error: the tool refused the call: outside sandbox"),),
    status="denied",
)


def test_a_denied_tool_goes_back_to_the_model() -> None:
    out = transition(
        ExecutingTools(calls=(CALL, CALL2), turn=0), ToolResults(outcomes=(DENIED, outcome_ok(CALL2))), ctx()
    )
    assert out.next_state == CallingModel(turn=1)
    assert [e.type for e in out.events] == ["tool_output_item", "tool_output_item", "turn_started"]
    [first, _] = out.conversation_appends
    assert isinstance(first, ToolResult) and first.is_error and "outside sandbox" in first.text


def test_fail_on_tool_denied_fails_the_run_after_recording_every_result() -> None:
    out = transition(
        ExecutingTools(calls=(CALL, CALL2), turn=0),
        ToolResults(outcomes=(DENIED, outcome_ok(CALL2))),
        ctx(fail_on_tool_denied=True),
    )
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "tool_denied"
    assert out.next_state.error.message == "tool 'lookup' refused: outside sandbox"
    assert [e.type for e in out.events] == ["tool_output_item", "tool_output_item", "run_failed"]
    assert len(out.conversation_appends) == 2


# --- Finalizing / RepairingOutput ---------------------------------------------------------------


def test_a_valid_structured_answer_completes() -> None:
    answer = AssistantMessage.from_text('{"ok": true}', agent="a")
    out = transition(
        Finalizing(turn=1, usage=USAGE),
        ModelResponse(items=(answer,), usage=USAGE),
        ctx(output=json_output()),
    )
    assert out.next_state == Done(output=FinalOutput(content=answer.content, usage=USAGE + USAGE))
    assert out.events == (MessageOutput(item=answer), RunCompleted(usage=USAGE + USAGE))


def test_an_invalid_structured_answer_gets_exactly_one_repair_turn() -> None:
    bad = AssistantMessage.from_text("nope", agent="a")
    c = ctx(output=json_output())
    out = transition(Finalizing(turn=1), ModelResponse(items=(bad,)), c)
    assert out.next_state == RepairingOutput(turn=2)
    repair = out.conversation_appends[-1]
    assert isinstance(repair, UserMessage)
    assert "ok: field required" in repair.text
    # The repair message travels on the event too, so a session records it.
    assert out.events == (
        MessageOutput(item=bad),
        StructuredOutputFailed(schema_errors=("ok: field required",), final_text="nope"),
        RepairStarted(attempt=1, reason="ok: field required", item=repair),
        TurnStarted(turn=2),
    )
    assert isinstance(out.next_action, CallModel)
    assert out.next_action.request.model_settings.response_format is not None

    final = transition(RepairingOutput(turn=2), ModelResponse(items=(bad,)), c)
    assert isinstance(final.next_state, Failed)
    error = final.next_state.error
    assert error.kind == "invalid_structured_output"
    assert error.schema_errors == ("ok: field required",)
    assert error.final_text == "nope"
    assert [e.type for e in final.events] == ["message_output", "structured_output_failed", "run_failed"]


def test_a_repair_turn_that_validates_completes() -> None:
    good = AssistantMessage.from_text('{"ok": true}')
    out = transition(RepairingOutput(turn=2), ModelResponse(items=(good,)), ctx(output=json_output()))
    assert isinstance(out.next_state, Done)


def test_no_repair_turn_when_no_turn_is_left() -> None:
    bad = AssistantMessage.from_text("nope")
    out = transition(Finalizing(turn=3), ModelResponse(items=(bad,)), ctx(output=json_output(), max_turns=4))
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "invalid_structured_output"


def test_finalizing_without_an_output_spec_fails_cleanly() -> None:
    out = transition(Finalizing(turn=0), ModelResponse(items=(REPLY,)), ctx())
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "other"


def test_the_structured_request_merges_the_agents_settings() -> None:
    c = ctx(output=json_output(), model_settings=ModelSettings(temperature=0.2))
    out = transition(CallingModel(turn=0), ModelResponse(items=(REPLY,)), c)
    assert isinstance(out.next_action, CallModel)
    settings = out.next_action.request.model_settings
    assert settings.temperature == 0.2
    assert settings.response_format is not None


# --- failures, cancellation, terminal states --------------------------------------------------

NON_TERMINAL: list[LoopState] = [
    CallingModel(turn=0, usage=USAGE),
    ExecutingTools(calls=(CALL,), turn=0, usage=USAGE),
    ApplyingHandoff(target="b", call_id="c1", transcript=(), usage=USAGE),
    Finalizing(turn=0, usage=USAGE),
    RepairingOutput(turn=1, usage=USAGE),
    Compacting(turn=0, usage=USAGE),
    NeedsApproval(calls=(CALL,), pending=(), turn=0, usage=USAGE),
]


@pytest.mark.parametrize("state", NON_TERMINAL)
def test_cancelled_fails_any_running_state(state: LoopState) -> None:
    out = transition(state, Cancelled(reason="stop"), ctx())
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "cancelled"
    assert "stop" in out.next_state.error.message
    assert out.events == (RunFailed(error=out.next_state.error, usage=USAGE),)


def test_a_runner_timeout_is_a_timeout_error() -> None:
    out = transition(CallingModel(turn=0), Cancelled(reason=TIMEOUT_REASON), ctx())
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "timeout"


@pytest.mark.parametrize("state", NON_TERMINAL)
def test_a_model_failure_fails_the_run_with_its_kind(state: LoopState) -> None:
    out = transition(state, ModelFailed(kind="rate_limited", message="slow down"), ctx())
    assert isinstance(out.next_state, Failed)
    assert out.next_state.error.kind == "model_error"
    assert out.next_state.error.cause == "rate_limited"
    assert out.next_state.error.message == "slow down"


INPUTS: list[TransitionInput] = [
    Start(messages=(USER,)),
    ModelResponse(items=(REPLY,)),
    ModelFailed(kind="other", message="x"),
    ToolResults(outcomes=()),
    Cancelled(reason="late"),
    HandoffAccepted(),
    HandoffRefused(reason="no"),
]


TERMINAL: list[LoopState] = [
    Done(output=FinalOutput(content=REPLY.content)),
    Failed(error=transition(CallingModel(turn=0), Cancelled(), ctx()).next_state.error),  # type: ignore[union-attr]
    HandedOff(target="b", transcript=(USER,), usage=USAGE),
]


@pytest.mark.parametrize("input", INPUTS)
@pytest.mark.parametrize("state", TERMINAL)
def test_terminal_states_absorb_every_input(state: LoopState, input: TransitionInput) -> None:
    out = transition(state, input, ctx())
    assert out.next_state is state
    assert out.events == ()
    assert isinstance(out.next_action, Terminate)


@pytest.mark.parametrize(
    ("state", "input"),
    [
        (CallingModel(turn=0), ToolResults(outcomes=())),
        (ExecutingTools(calls=(CALL,), turn=0), ModelResponse(items=(REPLY,))),
        (Finalizing(turn=0), ToolResults(outcomes=())),
        (ApplyingHandoff(target="b", call_id="c1", transcript=()), ModelResponse(items=())),
        (CallingModel(turn=0), HandoffAccepted()),
        (Compacting(turn=0), ModelResponse(items=())),
        (NeedsApproval(calls=(CALL,), pending=(), turn=0), ModelResponse(items=())),
    ],
)
def test_an_input_a_state_cannot_take_fails_the_run(state: LoopState, input: TransitionInput) -> None:
    out = transition(state, input, ctx())
    assert isinstance(out.next_state, Failed)
    assert "invalid transition" in out.next_state.error.message


def test_transition_does_not_mutate_its_arguments() -> None:
    conversation = [USER]
    c = ctx()
    transition(CallingModel(turn=0), ModelResponse(items=(REPLY, CALL)), c, conversation)
    assert conversation == [USER]


def test_states_and_inputs_serialize_for_a_durable_runner() -> None:
    state = ExecutingTools(calls=(CALL,), turn=2, usage=USAGE, args_retried=("lookup",))
    assert LOOP_STATE_ADAPTER.validate_json(LOOP_STATE_ADAPTER.dump_json(state)) == state
    step = ToolResults(outcomes=(outcome_ok(CALL),))
    assert TRANSITION_INPUT_ADAPTER.validate_json(TRANSITION_INPUT_ADAPTER.dump_json(step)) == step


def test_a_replayed_run_reaches_the_same_state() -> None:
    """Persist after each step, reload, continue: the same outcome as an uninterrupted run."""
    c = ctx()
    steps: list[TransitionInput] = [
        Start(messages=(USER,)),
        ModelResponse(items=(CALL,), usage=USAGE),
        ToolResults(outcomes=(outcome_ok(CALL),)),
        ModelResponse(items=(REPLY,), usage=USAGE),
    ]
    state: LoopState = initial_state(c)
    conversation: list[Item] = []
    for step in steps:
        state = LOOP_STATE_ADAPTER.validate_json(LOOP_STATE_ADAPTER.dump_json(state))
        step = TRANSITION_INPUT_ADAPTER.validate_json(TRANSITION_INPUT_ADAPTER.dump_json(step))
        out = transition(state, step, c, tuple(conversation))
        conversation.extend(out.conversation_appends)
        state = out.next_state
    assert state == Done(output=FinalOutput(content=REPLY.content, usage=USAGE + USAGE))
    assert conversation == [USER, CALL, outcome_ok(CALL).to_result(), REPLY]
