"""Carriers: exact JSON round trips of every union, their tags, and their dataclass behaviour."""

import dataclasses
import pickle
from datetime import UTC, datetime
from typing import Any, get_args, get_type_hints

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helikon import (
    AGENT_EVENT_ADAPTER,
    ITEM_ADAPTER,
    SESSION_EVENT_ADAPTER,
    AgentError,
    AgentUpdated,
    ApprovalRequested,
    AssistantMessage,
    AssistantMessageEvent,
    AudioPart,
    Base64Source,
    Compacted,
    Finish,
    GuardrailTriggered,
    HandoffItem,
    HandoffOccurred,
    ImagePart,
    MessageOutput,
    ModelCapabilities,
    ModelFallback,
    ModelSettings,
    NamedToolChoice,
    PermissionDenied,
    ReasoningDelta,
    ReasoningPart,
    RepairStarted,
    ResponseFormat,
    RunCompleted,
    RunFailed,
    RunStarted,
    StructuredOutputFailed,
    SystemMessage,
    TextPart,
    TokenDelta,
    TokenUsage,
    ToolCall,
    ToolCallDelta,
    ToolCalled,
    ToolCallItem,
    ToolDef,
    ToolOutputItem,
    ToolResult,
    ToolReturned,
    ToolUsePart,
    TurnStarted,
    UrlSource,
    Usage,
    UserError,
    UserMessage,
    UserMessageEvent,
)
from helikon.core.approvals import PendingApproval
from helikon.core.events import (
    AgentErrorKind,
    AgentEvent,
    ApprovalResolved,
    GuardrailKind,
    PersistFailed,
    RunPaused,
    SubRun,
)
from helikon.core.items import CONTENT_PART_ADAPTER, ContentPart, Item
from helikon.core.loop import (
    LOOP_STATE_ADAPTER,
    TRANSITION_INPUT_ADAPTER,
    ApplyingHandoff,
    CallingModel,
    Cancelled,
    CheckingOutput,
    Compacting,
    Continue,
    Done,
    ExecutingTools,
    Failed,
    Finalizing,
    FinalOutput,
    HandedOff,
    HandoffAccepted,
    HandoffInvalidArgs,
    HandoffRefused,
    LoopState,
    ModelFailed,
    ModelResponse,
    NeedsApproval,
    OutputChecked,
    OutputRetry,
    RepairingOutput,
    Start,
    ToolCallOutcome,
    ToolResults,
    TransitionInput,
)
from helikon.core.model import MODEL_EVENT_ADAPTER, FinishReason, ModelEvent
from helikon.core.session import (
    ApprovalDecided,
    ApprovalPending,
    CustomEvent,
    Forked,
    RequestHeader,
    Rewound,
    SubRunPaused,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
)
from helikon.core.session import KnownSessionEvent as SessionEvent

ROUND_TRIP = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])

# --- strategies -------------------------------------------------------------------------------

text = st.text(max_size=12)
opt_text = st.none() | text
small_ints = st.integers(min_value=0, max_value=10_000)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)

pending_approval = st.builds(
    PendingApproval,
    request_id=st.text(max_size=8),
    call_id=st.text(max_size=8),
    tool=st.text(max_size=8),
    agent_path=st.lists(st.text(max_size=8), max_size=3).map(tuple),
    args=json_values,
    args_digest=st.text(max_size=8),
    prompt=st.text(max_size=8),
    expires=st.none() | st.floats(min_value=0, max_value=4e9),
    on_expire=st.sampled_from(["deny", "keep"]),
    via=st.lists(st.text(max_size=8), max_size=2).map(tuple),
)
decisions = st.sampled_from(["approve", "deny", "edit"])

json_objects = st.none() | st.dictionaries(st.text(max_size=6), json_values, max_size=4)

url_source = st.builds(UrlSource, url=text)
base64_source = st.builds(Base64Source, media_type=text, data=text)
media_source = url_source | base64_source

text_part = st.builds(TextPart, text=text)
reasoning_part = st.builds(ReasoningPart, text=text, signature=opt_text, provider=opt_text)
image_part = st.builds(ImagePart, source=media_source, detail=opt_text)
audio_part = st.builds(AudioPart, source=media_source)
tool_use_part = st.builds(ToolUsePart, call_id=text, name=text, args=json_values)
content_part: st.SearchStrategy[ContentPart] = st.one_of(
    text_part, reasoning_part, image_part, audio_part, tool_use_part
)
parts = st.lists(content_part, max_size=4).map(tuple)

system_message = st.builds(SystemMessage, text=text)
user_message = st.builds(UserMessage, content=parts)
assistant_message = st.builds(AssistantMessage, content=parts, agent=opt_text)
tool_call = st.builds(ToolCall, call_id=text, name=text, args=json_values)
tool_result = st.builds(ToolResult, call_id=text, content=parts, is_error=st.booleans(), name=opt_text)
ITEM_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    SystemMessage: system_message,
    UserMessage: user_message,
    AssistantMessage: assistant_message,
    ToolCall: tool_call,
    ToolResult: tool_result,
}
item: st.SearchStrategy[Item] = st.one_of(*ITEM_STRATEGIES.values())
items = st.lists(item, max_size=4).map(tuple)

token_delta = st.builds(TokenDelta, text=text)
reasoning_delta = st.builds(ReasoningDelta, text=text, signature=opt_text)
tool_call_delta = st.builds(ToolCallDelta, call_id=text, name=text, args_delta=text)
model_fallback = st.builds(ModelFallback, from_model=text, to_model=text, error_kind=text, error=text)
MODEL_EVENT_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    TokenDelta: token_delta,
    ReasoningDelta: reasoning_delta,
    ToolCallDelta: tool_call_delta,
    ModelFallback: model_fallback,
    Usage: st.builds(
        Usage,
        input_tokens=small_ints,
        output_tokens=small_ints,
        cached_input_tokens=small_ints,
        reasoning_tokens=small_ints,
    ),
    Finish: st.builds(Finish, reason=st.sampled_from(get_args(FinishReason))),
}

token_usage = st.builds(
    TokenUsage,
    input_tokens=small_ints,
    output_tokens=small_ints,
    cached_input_tokens=small_ints,
    reasoning_tokens=small_ints,
    requests=small_ints,
)
agent_error = st.builds(
    AgentError,
    kind=st.sampled_from(get_args(AgentErrorKind)),
    message=text,
    limit=st.none() | small_ints,
    cause=opt_text,
    schema_errors=st.lists(text, max_size=3).map(tuple),
    final_text=opt_text,
)
AGENT_EVENT_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    RunStarted: st.builds(RunStarted, agent=text),
    TurnStarted: st.builds(TurnStarted, turn=small_ints),
    TokenDelta: token_delta,
    ReasoningDelta: reasoning_delta,
    ToolCallDelta: tool_call_delta,
    ModelFallback: model_fallback,
    MessageOutput: st.builds(MessageOutput, item=assistant_message),
    ToolCallItem: st.builds(ToolCallItem, item=tool_call),
    ToolOutputItem: st.builds(ToolOutputItem, item=tool_result, metadata=json_objects),
    HandoffItem: st.builds(HandoffItem, from_agent=text, to_agent=text),
    AgentUpdated: st.builds(AgentUpdated, agent=text),
    GuardrailTriggered: st.builds(
        GuardrailTriggered,
        kind=st.sampled_from(get_args(GuardrailKind)),
        info=json_values,
        stage=st.sampled_from(["input", "output"]),
    ),
    ApprovalRequested: st.builds(ApprovalRequested, call_id=text, tool=text, args=json_values),
    PermissionDenied: st.builds(PermissionDenied, tool=text, reason=text, call_id=opt_text),
    RepairStarted: st.builds(
        RepairStarted, attempt=small_ints, reason=text, item=st.none() | st.builds(UserMessage, content=parts)
    ),
    StructuredOutputFailed: st.builds(
        StructuredOutputFailed, schema_errors=st.lists(text, max_size=3).map(tuple), final_text=text
    ),
    PersistFailed: st.builds(
        PersistFailed, unsaved=st.lists(text, max_size=3).map(tuple), error=text, held=st.booleans()
    ),
    RunCompleted: st.builds(RunCompleted, usage=token_usage, output=opt_text),
    RunFailed: st.builds(RunFailed, error=agent_error, usage=token_usage),
    RunPaused: st.builds(
        RunPaused,
        pending=st.lists(pending_approval, max_size=3).map(tuple),
        usage=token_usage,
        sub_runs=st.lists(
            st.builds(
                SubRun,
                via=st.lists(text, min_size=1, max_size=2).map(tuple),
                agent=text,
                messages=st.lists(st.one_of(user_message, tool_call, tool_result), max_size=3).map(tuple),
                usage=token_usage,
            ),
            max_size=2,
        ).map(tuple),
    ),
    ApprovalResolved: st.builds(
        ApprovalResolved,
        request_id=text,
        call_id=text,
        tool=text,
        decision=decisions,
        reason=text,
        by=json_values,
    ),
}

utc_ts = st.datetimes(timezones=st.just(UTC))
SESSION_EVENT_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    UserMessageEvent: st.builds(UserMessageEvent, content=parts, ts=utc_ts),
    AssistantMessageEvent: st.builds(
        AssistantMessageEvent, content=parts, agent=opt_text, ts=utc_ts, usage=st.none() | token_usage
    ),
    ToolCalled: st.builds(ToolCalled, call_id=text, name=text, args=json_values, ts=utc_ts),
    ToolReturned: st.builds(
        ToolReturned,
        call_id=text,
        content=parts,
        is_error=st.booleans(),
        name=opt_text,
        ts=utc_ts,
        metadata=json_objects,
    ),
    HandoffOccurred: st.builds(HandoffOccurred, from_agent=text, to_agent=text, ts=utc_ts),
    Compacted: st.builds(Compacted, summary=text, original_count=small_ints, ts=utc_ts),
    Rewound: st.builds(Rewound, to_seq=small_ints, ts=utc_ts),
    Forked: st.builds(Forked, from_session=text, at_seq=small_ints, ts=utc_ts),
    TurnOpened: st.builds(TurnOpened, run_id=text, agent=opt_text, ts=utc_ts, resumes=opt_text),
    TurnClosed: st.builds(
        TurnClosed,
        run_id=text,
        outcome=st.sampled_from(["completed", "failed", "cancelled", "refused", "interrupted", "paused"]),
        ts=utc_ts,
    ),
    ApprovalPending: st.builds(
        ApprovalPending,
        request_id=text,
        call_id=text,
        tool=text,
        agent_path=st.lists(text, max_size=3).map(tuple),
        args=json_values,
        args_digest=text,
        prompt=text,
        expires_at=st.none() | st.datetimes(timezones=st.just(UTC)),
        on_expire=st.sampled_from(["deny", "keep"]),
        tool_digest=text,
        ts=st.datetimes(timezones=st.just(UTC)),
        via=st.lists(text, max_size=2).map(tuple),
    ),
    SubRunPaused: st.builds(
        SubRunPaused,
        via=st.lists(text, min_size=1, max_size=2).map(tuple),
        agent=text,
        messages=st.lists(st.one_of(user_message, tool_call, tool_result), max_size=3).map(tuple),
        usage=token_usage,
        ts=st.datetimes(timezones=st.just(UTC)),
    ),
    ApprovalDecided: st.builds(
        ApprovalDecided,
        request_id=text,
        decision=decisions,
        args_digest=text,
        args=json_values,
        reason=text,
        by=json_values,
        ts=st.datetimes(timezones=st.just(UTC)),
    ),
    ToolsStarted: st.builds(ToolsStarted, call_ids=st.lists(text, max_size=3).map(tuple), ts=utc_ts),
    CustomEvent: st.builds(CustomEvent, kind=st.text(min_size=1, max_size=12), data=json_values, ts=utc_ts),
    RequestHeader: st.builds(
        RequestHeader,
        provider=text,
        model=text,
        settings=st.dictionaries(text, json_values, max_size=3),
        system=st.lists(text, max_size=2).map(tuple),
        tools=st.lists(
            st.builds(
                ToolDef,
                name=text,
                description=text,
                parameters=st.dictionaries(text, json_values, max_size=3),
                strict=st.booleans(),
            ),
            max_size=2,
        ).map(tuple),
        injected=st.lists(text, max_size=2).map(tuple),
        ts=utc_ts,
    ),
}

tool_names = st.lists(text, max_size=3).map(tuple)
tool_calls = st.lists(tool_call, max_size=3).map(tuple)
LOOP_STATE_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    CallingModel: st.builds(
        CallingModel, turn=small_ints, usage=token_usage, args_retried=tool_names, output_retried=small_ints
    ),
    ExecutingTools: st.builds(
        ExecutingTools, calls=tool_calls, turn=small_ints, usage=token_usage, args_retried=tool_names
    ),
    ApplyingHandoff: st.builds(
        ApplyingHandoff,
        target=text,
        call_id=text,
        transcript=items,
        usage=token_usage,
        calls=tool_calls,
        turn=small_ints,
        args_retried=tool_names,
        turn_start=small_ints,
    ),
    HandedOff: st.builds(
        HandedOff, target=text, transcript=items, usage=token_usage, tool_name=text, turn_start=small_ints
    ),
    Finalizing: st.builds(Finalizing, turn=small_ints, usage=token_usage, output_retried=small_ints),
    RepairingOutput: st.builds(
        RepairingOutput, turn=small_ints, usage=token_usage, output_retried=small_ints
    ),
    CheckingOutput: st.builds(
        CheckingOutput,
        output=st.builds(FinalOutput, content=parts, usage=token_usage, validated=opt_text),
        turn=small_ints,
        usage=token_usage,
        output_retried=small_ints,
        args_retried=tool_names,
    ),
    Compacting: st.builds(Compacting, turn=small_ints, usage=token_usage),
    NeedsApproval: st.builds(
        NeedsApproval,
        calls=tool_calls,
        pending=st.lists(pending_approval, max_size=2).map(tuple),
        turn=small_ints,
        usage=token_usage,
    ),
    Done: st.builds(Done, output=st.builds(FinalOutput, content=parts, usage=token_usage)),
    Failed: st.builds(Failed, error=agent_error, usage=token_usage),
}

tool_call_outcome = st.builds(
    ToolCallOutcome,
    call_id=text,
    name=text,
    content=parts,
    status=st.sampled_from(["ok", "error", "invalid_args", "denied"]),
    metadata=json_objects,
)
TRANSITION_INPUT_STRATEGIES: dict[type, st.SearchStrategy[Any]] = {
    Start: st.builds(Start, messages=items),
    ModelResponse: st.builds(
        ModelResponse, items=items, usage=token_usage, finish_reason=st.sampled_from(get_args(FinishReason))
    ),
    ModelFailed: st.builds(ModelFailed, kind=text, message=text),
    ToolResults: st.builds(ToolResults, outcomes=st.lists(tool_call_outcome, max_size=3).map(tuple)),
    Cancelled: st.builds(Cancelled, reason=opt_text),
    Continue: st.just(Continue()),
    HandoffAccepted: st.just(HandoffAccepted()),
    HandoffRefused: st.builds(HandoffRefused, reason=text),
    HandoffInvalidArgs: st.builds(HandoffInvalidArgs, errors=tool_names),
    OutputChecked: st.builds(OutputChecked, output=opt_text),
    OutputRetry: st.builds(OutputRetry, reason=text, validator=text),
}


def union_members(alias: Any) -> set[type]:
    return set(get_args(alias))


# --- every variant has a strategy -------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "strategies"),
    [
        (Item, ITEM_STRATEGIES),
        (ModelEvent, MODEL_EVENT_STRATEGIES),
        (AgentEvent, AGENT_EVENT_STRATEGIES),
        (SessionEvent, SESSION_EVENT_STRATEGIES),
        (LoopState, LOOP_STATE_STRATEGIES),
        (TransitionInput, TRANSITION_INPUT_STRATEGIES),
    ],
)
def test_the_round_trip_properties_cover_every_variant(alias: Any, strategies: dict[type, Any]) -> None:
    assert union_members(alias) == set(strategies)


def test_content_parts_cover_every_variant() -> None:
    assert union_members(ContentPart) == {TextPart, ReasoningPart, ImagePart, AudioPart, ToolUsePart}


# --- round trips ------------------------------------------------------------------------------


def assert_round_trips(adapter: Any, value: Any) -> None:
    data = adapter.dump_json(value)
    back = adapter.validate_json(data)
    assert type(back) is type(value)
    assert back == value
    # and the re-serialization is byte-identical: nothing was lost or reordered
    assert adapter.dump_json(back) == data


@ROUND_TRIP
@given(st.one_of(*ITEM_STRATEGIES.values()))
def test_items_round_trip(value: Item) -> None:
    assert_round_trips(ITEM_ADAPTER, value)


@ROUND_TRIP
@given(content_part)
def test_content_parts_round_trip(value: ContentPart) -> None:
    assert_round_trips(CONTENT_PART_ADAPTER, value)


@ROUND_TRIP
@given(st.one_of(*MODEL_EVENT_STRATEGIES.values()))
def test_model_events_round_trip(value: ModelEvent) -> None:
    assert_round_trips(MODEL_EVENT_ADAPTER, value)


@ROUND_TRIP
@given(st.one_of(*AGENT_EVENT_STRATEGIES.values()))
def test_agent_events_round_trip(value: AgentEvent) -> None:
    assert_round_trips(AGENT_EVENT_ADAPTER, value)


@ROUND_TRIP
@given(st.one_of(*SESSION_EVENT_STRATEGIES.values()))
def test_session_events_round_trip(value: SessionEvent) -> None:
    assert_round_trips(SESSION_EVENT_ADAPTER, value)
    back = SESSION_EVENT_ADAPTER.validate_json(SESSION_EVENT_ADAPTER.dump_json(value))
    assert back.ts.utcoffset() is not None
    assert back.ts.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


@ROUND_TRIP
@given(st.one_of(*LOOP_STATE_STRATEGIES.values()))
def test_loop_states_round_trip(value: LoopState) -> None:
    assert_round_trips(LOOP_STATE_ADAPTER, value)


@ROUND_TRIP
@given(st.one_of(*TRANSITION_INPUT_STRATEGIES.values()))
def test_transition_inputs_round_trip(value: TransitionInput) -> None:
    assert_round_trips(TRANSITION_INPUT_ADAPTER, value)


@ROUND_TRIP
@given(
    st.one_of(*ITEM_STRATEGIES.values(), *AGENT_EVENT_STRATEGIES.values(), *SESSION_EVENT_STRATEGIES.values())
)
def test_carriers_pickle_round_trip(value: Any) -> None:
    assert pickle.loads(pickle.dumps(value)) == value


def test_a_tool_result_with_every_kind_of_nested_content_round_trips() -> None:
    result = ToolResult(
        call_id="call_1",
        content=(
            TextPart(text="chart:"),
            ImagePart(source=UrlSource(url="https://example.com/a.png"), detail="high"),
            ImagePart(source=Base64Source(media_type="image/png", data="iVBORw0KGgo=")),
            AudioPart(source=Base64Source(media_type="audio/wav", data="UklGRg==")),
            AudioPart(source=UrlSource(url="https://example.com/a.wav")),
            ReasoningPart(text="thinking", signature="sig==", provider="anthropic"),
            ToolUsePart(call_id="inner", name="lookup", args={"q": [1, 2.5, None, True, "x"]}),
        ),
        is_error=True,
        name="chart",
    )
    data = ITEM_ADAPTER.dump_json(result)
    assert ITEM_ADAPTER.validate_json(data) == result
    python = ITEM_ADAPTER.dump_python(result)
    assert python["content"][2] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        "detail": None,
    }
    assert python["content"][5] == {
        "type": "reasoning",
        "text": "thinking",
        "signature": "sig==",
        "provider": "anthropic",
    }
    assert ITEM_ADAPTER.validate_python(python) == result


def test_session_timestamps_serialize_as_rfc3339_utc() -> None:
    event = HandoffOccurred(
        from_agent="a", to_agent="b", ts=datetime(2024, 5, 1, 12, 30, 5, 250000, tzinfo=UTC)
    )
    assert SESSION_EVENT_ADAPTER.dump_python(event) == {
        "type": "handoff_occurred",
        "from_agent": "a",
        "to_agent": "b",
        "ts": "2024-05-01T12:30:05.250000Z",
    }


def test_session_events_stamp_an_aware_utc_now_by_default() -> None:
    before = datetime.now(UTC)
    event = UserMessageEvent(content=(TextPart(text="hi"),))
    after = datetime.now(UTC)
    assert event.ts.tzinfo is UTC
    assert before <= event.ts <= after


def test_an_unknown_tag_is_rejected() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        ITEM_ADAPTER.validate_json('{"type": "developer", "text": "x"}')


def test_adapters_give_a_discriminated_json_schema() -> None:
    schema = AGENT_EVENT_ADAPTER.json_schema()
    assert schema["discriminator"]["propertyName"] == "type"
    assert len(schema["oneOf"]) == len(AGENT_EVENT_STRATEGIES)


# --- tags -------------------------------------------------------------------------------------

TAGS: dict[type, str] = {
    # media sources and content parts
    UrlSource: "url",
    Base64Source: "base64",
    TextPart: "text",
    ReasoningPart: "reasoning",
    ImagePart: "image",
    AudioPart: "audio",
    ToolUsePart: "tool_use",
    # items
    SystemMessage: "system",
    UserMessage: "user",
    AssistantMessage: "assistant",
    ToolCall: "tool_call",
    ToolResult: "tool_result",
    # model events
    TokenDelta: "token_delta",
    ReasoningDelta: "reasoning_delta",
    ToolCallDelta: "tool_call_delta",
    Usage: "usage",
    Finish: "finish",
    ModelFallback: "model_fallback",
    # agent events
    RunStarted: "run_started",
    TurnStarted: "turn_started",
    MessageOutput: "message_output",
    ToolCallItem: "tool_call_item",
    ToolOutputItem: "tool_output_item",
    HandoffItem: "handoff_item",
    AgentUpdated: "agent_updated",
    GuardrailTriggered: "guardrail_triggered",
    ApprovalRequested: "approval_requested",
    PermissionDenied: "permission_denied",
    RepairStarted: "repair_started",
    StructuredOutputFailed: "structured_output_failed",
    PersistFailed: "persist_failed",
    RunCompleted: "run_completed",
    RunFailed: "run_failed",
    RunPaused: "run_paused",
    ApprovalResolved: "approval_resolved",
    # session events
    UserMessageEvent: "user_message",
    AssistantMessageEvent: "assistant_message",
    ToolCalled: "tool_called",
    ToolReturned: "tool_returned",
    HandoffOccurred: "handoff_occurred",
    Compacted: "compacted",
    RequestHeader: "request_header",
    Rewound: "rewound",
    Forked: "forked",
    TurnOpened: "turn_opened",
    TurnClosed: "turn_closed",
    ToolsStarted: "tools_started",
    ApprovalPending: "approval_pending",
    ApprovalDecided: "approval_decided",
    SubRunPaused: "sub_run_paused",
    CustomEvent: "custom",
    # loop states and inputs
    CallingModel: "calling_model",
    ExecutingTools: "executing_tools",
    ApplyingHandoff: "applying_handoff",
    HandedOff: "handed_off",
    Finalizing: "finalizing",
    RepairingOutput: "repairing_output",
    CheckingOutput: "checking_output",
    Compacting: "compacting",
    NeedsApproval: "needs_approval",
    Done: "done",
    Failed: "failed",
    Start: "start",
    ModelResponse: "model_response",
    ModelFailed: "model_failed",
    ToolResults: "tool_results",
    Cancelled: "cancelled",
    Continue: "continue",
    HandoffAccepted: "handoff_accepted",
    HandoffRefused: "handoff_refused",
    HandoffInvalidArgs: "handoff_invalid_args",
    OutputChecked: "output_checked",
    OutputRetry: "output_retry",
    # others
    NamedToolChoice: "tool",
}


@pytest.mark.parametrize(("cls", "tag"), TAGS.items(), ids=[c.__name__ for c in TAGS])
def test_type_tags_are_the_book_names(cls: type, tag: str) -> None:
    [type_field] = [f for f in dataclasses.fields(cls) if f.name == "type"]
    assert type_field.default == tag
    # the field is typed as exactly that one literal, so the unions can discriminate on it
    assert get_args(get_type_hints(cls)["type"]) == (tag,)


@pytest.mark.parametrize(
    ("strategies", "adapter"),
    [
        (ITEM_STRATEGIES, ITEM_ADAPTER),
        (MODEL_EVENT_STRATEGIES, MODEL_EVENT_ADAPTER),
        (AGENT_EVENT_STRATEGIES, AGENT_EVENT_ADAPTER),
        (SESSION_EVENT_STRATEGIES, SESSION_EVENT_ADAPTER),
        (LOOP_STATE_STRATEGIES, LOOP_STATE_ADAPTER),
        (TRANSITION_INPUT_STRATEGIES, TRANSITION_INPUT_ADAPTER),
    ],
)
@settings(deadline=None, max_examples=30)
@given(data=st.data())
def test_the_serialized_type_field_is_the_tag(
    strategies: dict[type, Any], adapter: Any, data: st.DataObject
) -> None:
    value = data.draw(st.one_of(*strategies.values()))
    assert adapter.dump_python(value)["type"] == TAGS[type(value)]


# --- dataclass behaviour ----------------------------------------------------------------------


def test_carriers_are_frozen() -> None:
    part = TextPart(text="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.text = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del part.text  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.extra = 1  # type: ignore[attr-defined]
    event = RunFailed(error=AgentError(kind="other", message="m"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.usage = TokenUsage()  # type: ignore[misc]
    assert part.text == "a"


def test_carriers_are_slotted_and_keyword_only() -> None:
    part = TextPart(text="a")
    assert not hasattr(part, "__dict__")
    assert vars(TextPart)["__slots__"] == ("type", "text")
    with pytest.raises(TypeError):
        TextPart("a")  # type: ignore[misc]


def test_carriers_are_real_dataclasses() -> None:
    assert dataclasses.is_dataclass(ToolResult)
    assert [f.name for f in dataclasses.fields(ToolResult)] == [
        "type",
        "call_id",
        "content",
        "is_error",
        "name",
    ]
    assert [f.name for f in dataclasses.fields(RunFailed(error=AgentError(kind="other", message="x")))] == [
        "type",
        "error",
        "usage",
    ]
    params = ToolResult.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen is True
    assert params.eq is True


def test_dataclasses_replace_builds_a_new_value() -> None:
    original = ToolResult(call_id="c", content=(TextPart(text="x"),))
    changed = dataclasses.replace(original, is_error=True, name="t")
    assert changed == ToolResult(call_id="c", content=(TextPart(text="x"),), is_error=True, name="t")
    assert original.is_error is False
    assert original.name is None


def test_dataclasses_asdict_works() -> None:
    assert dataclasses.asdict(UserMessage.from_text("hi")) == {
        "type": "user",
        "content": ({"type": "text", "text": "hi"},),
    }


def test_carriers_are_equal_by_value() -> None:
    assert UserMessage.from_text("hi") == UserMessage(content=(TextPart(text="hi"),))
    assert UserMessage.from_text("hi") != UserMessage.from_text("ho")
    assert ToolCall(call_id="1", name="n", args={"a": [1]}) == ToolCall(
        call_id="1", name="n", args={"a": [1]}
    )
    # same fields, different variant: not equal
    assert RunStarted(agent="a") != AgentUpdated(agent="a")
    assert TextPart(text="a") != "a"
    assert (TextPart(text="a") == object()) is False


def test_carriers_are_hashable_when_their_fields_are() -> None:
    assert hash(TextPart(text="a")) == hash(TextPart(text="a"))
    assert len({TextPart(text="a"), TextPart(text="a"), TextPart(text="b")}) == 2
    assert len({RunStarted(agent="a"), AgentUpdated(agent="a")}) == 2
    frozen = UserMessage(content=(TextPart(text="x"), ImagePart(source=UrlSource(url="u"))))
    assert frozen in {frozen}
    hash(RunFailed(error=AgentError(kind="cancelled", message="m", schema_errors=("e",))))
    with pytest.raises(TypeError):
        hash(ToolCall(call_id="1", name="n", args={"a": 1}))
    with pytest.raises(TypeError):
        hash(ToolUsePart(call_id="1", name="n", args=[1]))


def test_repr_shows_the_fields() -> None:
    assert repr(TextPart(text="a")) == "TextPart(type='text', text='a')"
    assert repr(ToolCall(call_id="c", name="n", args={"x": 1})) == (
        "ToolCall(type='tool_call', call_id='c', name='n', args={'x': 1})"
    )
    assert repr(TokenUsage(input_tokens=1)) == (
        "TokenUsage(input_tokens=1, output_tokens=0, cached_input_tokens=0, reasoning_tokens=0, requests=0)"
    )


def test_pattern_matching_on_carriers() -> None:
    match ToolCall(call_id="c", name="search", args={"q": "x"}):
        case ToolCall(name="search", args={"q": query}):
            assert query == "x"
        case _:
            pytest.fail("did not match")


def test_item_text_helpers() -> None:
    message = AssistantMessage(
        content=(ReasoningPart(text="hmm"), TextPart(text="Hello, "), TextPart(text="world")), agent="a"
    )
    assert message.text == "Hello, world"
    assert AssistantMessage.from_text("x", agent="g") == AssistantMessage(
        content=(TextPart(text="x"),), agent="g"
    )
    assert UserMessage(content=(ImagePart(source=UrlSource(url="u")),)).text == ""
    assert ToolResult(call_id="c", content=(TextPart(text="ok"),)).text == "ok"


def test_agent_error_str() -> None:
    assert str(AgentError(kind="timeout", message="the run timed out")) == "timeout: the run timed out"


# --- ModelCapabilities ------------------------------------------------------------------------

CAPABILITY_FLAGS = [
    "streaming",
    "tools",
    "parallel_tool_calls",
    "structured_output",
    "server_managed_state",
    "reasoning",
    "vision",
    "audio",
    "prompt_caching",
]


def test_empty_capabilities_have_no_flag() -> None:
    empty = ModelCapabilities.empty()
    assert [f.name for f in dataclasses.fields(ModelCapabilities)] == CAPABILITY_FLAGS
    assert all(getattr(empty, flag) is False for flag in CAPABILITY_FLAGS)
    assert empty == ModelCapabilities()


@pytest.mark.parametrize("flag", CAPABILITY_FLAGS)
def test_each_with_builder_sets_exactly_its_flag(flag: str) -> None:
    empty = ModelCapabilities.empty()
    caps = getattr(empty, f"with_{flag}")()
    assert getattr(caps, flag) is True
    assert [f for f in CAPABILITY_FLAGS if getattr(caps, f)] == [flag]
    assert getattr(empty, flag) is False  # the original is untouched


def test_capability_builders_chain() -> None:
    caps = ModelCapabilities.empty().with_streaming().with_tools().with_structured_output().with_tools()
    assert caps == ModelCapabilities(streaming=True, tools=True, structured_output=True)
    assert not caps.vision


# --- ResponseFormat ---------------------------------------------------------------------------


def test_response_format_constructors() -> None:
    assert ResponseFormat.text() == ResponseFormat()
    assert ResponseFormat.text().type == "text"
    assert ResponseFormat.json_object() == ResponseFormat(type="json_object")
    schema = {"type": "object", "properties": {}}
    fmt = ResponseFormat.json_schema(name="Answer", schema=schema)
    assert fmt == ResponseFormat(type="json_schema", name="Answer", schema=schema, strict=True)
    assert ResponseFormat.json_schema(name="A", schema=schema, strict=False).strict is False


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"name": "A"}, {"schema": {"type": "object"}}, {"name": "", "schema": {"type": "object"}}],
)
def test_a_json_schema_format_needs_a_name_and_a_schema(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UserError, match=r"json_schema.*needs a non-empty `name` and a `schema`"):
        ResponseFormat(type="json_schema", **kwargs)


# --- ModelSettings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"temperature": -0.1}, "temperature=-0.1"),
        ({"temperature": 2.01}, "temperature=2.01"),
        ({"top_p": -0.5}, "top_p=-0.5"),
        ({"top_p": 1.5}, "top_p=1.5"),
        ({"max_output_tokens": 0}, "max_output_tokens=0"),
        ({"max_output_tokens": -3}, "max_output_tokens=-3"),
        ({"temperature": "0.5"}, "temperature='0.5'"),
        ({"temperature": True}, "temperature=True"),
        ({"temperature": float("nan")}, "temperature=nan"),
        ({"top_p": "high"}, "top_p='high'"),
        ({"max_output_tokens": 1.5}, "max_output_tokens=1.5"),
        ({"max_output_tokens": True}, "max_output_tokens=True"),
        ({"max_output_tokens": "100"}, "max_output_tokens='100'"),
    ],
)
def test_model_settings_validation_names_the_argument(kwargs: dict[str, Any], argument: str) -> None:
    with pytest.raises(UserError) as info:
        ModelSettings(**kwargs)
    assert f"ModelSettings({argument})" in str(info.value)


def test_model_settings_boundaries_are_accepted() -> None:
    assert ModelSettings(temperature=0.0, top_p=0.0).temperature == 0.0
    assert ModelSettings(temperature=2.0, top_p=1.0, max_output_tokens=1).max_output_tokens == 1
    assert ModelSettings(temperature=1, top_p=1).temperature == 1


def test_model_settings_merged_lays_the_set_fields_over() -> None:
    base = ModelSettings(temperature=0.2, max_output_tokens=100, tool_choice="auto")
    over = ModelSettings(temperature=0.9, response_format=ResponseFormat.json_object())
    merged = base.merged(over)
    assert merged == ModelSettings(
        temperature=0.9,
        max_output_tokens=100,
        tool_choice="auto",
        response_format=ResponseFormat.json_object(),
    )
    assert base.temperature == 0.2  # untouched
    assert base.merged(ModelSettings()) is base
    assert ModelSettings().merged(base) == base


def test_model_settings_merge_a_named_tool_choice() -> None:
    merged = ModelSettings(tool_choice="none").merged(
        ModelSettings(tool_choice=NamedToolChoice(name="search"))
    )
    assert merged.tool_choice == NamedToolChoice(name="search")


def test_tool_def_defaults() -> None:
    definition = ToolDef(name="t", description="d", parameters={"type": "object"})
    assert definition.strict is False


# --- TokenUsage -------------------------------------------------------------------------------


def test_token_usage_addition() -> None:
    total = TokenUsage(
        input_tokens=10, output_tokens=2, cached_input_tokens=4, reasoning_tokens=1, requests=1
    )
    total = total + TokenUsage(input_tokens=5, output_tokens=3, reasoning_tokens=2, requests=1)
    assert total == TokenUsage(
        input_tokens=15, output_tokens=5, cached_input_tokens=4, reasoning_tokens=3, requests=2
    )
    assert total.total_tokens == 20
    assert TokenUsage().total_tokens == 0


@settings(deadline=None)
@given(token_usage, token_usage, token_usage)
def test_token_usage_addition_is_a_commutative_monoid(a: TokenUsage, b: TokenUsage, c: TokenUsage) -> None:
    assert a + TokenUsage() == a
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert (a + b).total_tokens == a.total_tokens + b.total_tokens
