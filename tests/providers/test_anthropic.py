"""AnthropicModel against every recorded Anthropic cassette (replayed, never the network)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest

from helikon import LlmAgent, tool
from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import (
    ContextLengthExceeded,
    ModelError,
    OtherModelError,
    RateLimited,
    Transport,
    Unavailable,
    UserError,
)
from helikon.core.items import (
    AssistantMessage,
    Base64Source,
    ImagePart,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    UrlSource,
    UserMessage,
)
from helikon.core.model import (
    Finish,
    ModelEvent,
    ModelRequest,
    ModelSettings,
    NamedToolChoice,
    ReasoningDelta,
    ResponseFormat,
    TokenDelta,
    ToolCallDelta,
    ToolChoice,
    ToolDef,
    Usage,
)
from helikon.providers.anthropic import AnthropicModel, CacheStrategy, ExtendedThinking

from .cassettes import Interaction, ReplayTransport, load

# The SDK warns about recorded models it lists as deprecated; that is the SDK's message to users.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

# --- helpers ---------------------------------------------------------------------------------


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def message_to_sse(message: dict[str, Any]) -> bytes:
    """A non-streamed Messages API response as the SSE stream the API would have sent."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            begin = {"type": "text", "text": ""}
            deltas.append({"type": "text_delta", "text": block["text"]})
        elif kind == "thinking":
            begin = {"type": "thinking", "thinking": "", "signature": ""}
            deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            begin = {**block, "input": {}}
            deltas.append({"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
        else:
            begin = block
        events.append({"type": "content_block_start", "index": index, "content_block": begin})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return _sse(events)


def replay(cassette: str) -> ReplayTransport:
    """The cassette's transport, its non-streamed 200 JSON bodies re-encoded as SSE."""
    interactions = load(f"anthropic/{cassette}.yaml")
    for interaction in interactions:
        if interaction.status == 200 and "json" in interaction.headers.get("content-type", ""):
            interaction.body = message_to_sse(json.loads(interaction.body))
            interaction.headers["content-type"] = "text/event-stream; charset=utf-8"
    return ReplayTransport(interactions)


def client_for(transport: httpx2.AsyncBaseTransport) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="test-key", http_client=httpx2.AsyncClient(transport=transport))


def model_for(
    transport: httpx2.AsyncBaseTransport, model_id: str = "claude-test", **kwargs: Any
) -> AnthropicModel:
    return AnthropicModel.messages(model_id, client=client_for(transport), **kwargs)


async def collect(model: AnthropicModel, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.invoke(request, CancellationToken())]


def user(text: str) -> UserMessage:
    return UserMessage.from_text(text)


def turn_items(events: list[ModelEvent]) -> list[Item]:
    """What the driver makes of one call's events (see `_driver.call_model`)."""
    text = "".join(e.text for e in events if isinstance(e, TokenDelta))
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    signature = next((e.signature for e in reversed(reasoning) if e.signature), None)
    parts: list[Any] = []
    if reasoning:
        parts.append(
            ReasoningPart(text="".join(e.text for e in reasoning), signature=signature, provider="anthropic")
        )
    if text:
        parts.append(TextPart(text=text))
    items: list[Item] = [AssistantMessage(content=tuple(parts))] if parts else []
    calls: dict[str, list[str]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            calls.setdefault(e.call_id, [e.name]).append(e.args_delta)
    for call_id, entry in calls.items():
        raw = "".join(entry[1:])
        items.append(ToolCall(call_id=call_id, name=entry[0], args=json.loads(raw) if raw else {}))
    return items


_ESSENTIAL = (
    "model",
    "system",
    "messages",
    "tools",
    "tool_choice",
    "max_tokens",
    "thinking",
    "output_config",
)


def essentials(body: dict[str, Any]) -> dict[str, Any]:
    """The request fields the adapter owns, normalised (no `is_error: false`, no blank text)."""
    out = {k: body[k] for k in _ESSENTIAL if k in body}
    messages: list[dict[str, Any]] = []
    for message in out.get("messages", []):
        blocks: list[dict[str, Any]] = []
        for block in message["content"]:
            if block.get("type") == "text" and not block["text"].strip():
                continue
            blocks.append({k: v for k, v in block.items() if not (k == "is_error" and v is False)})
        messages.append({"role": message["role"], "content": blocks})
    out["messages"] = messages
    return out


def recorded_tools(body: dict[str, Any]) -> list[ToolDef]:
    return [
        ToolDef(name=t["name"], description=t["description"], parameters=t["input_schema"])
        for t in body["tools"]
    ]


def tool_results(body: dict[str, Any]) -> list[Item]:
    """The tool results of a recorded request's last (user) message."""
    return [
        ToolResult(
            call_id=b["tool_use_id"],
            content=(TextPart(text=b["content"]),),
            is_error=b.get("is_error", False),
        )
        for b in body["messages"][-1]["content"]
        if b["type"] == "tool_result"
    ]


def sse_deltas(interaction: Interaction, delta_type: str, field: str) -> list[str]:
    """Every `field` of the recorded `delta_type` deltas: the independent oracle for long streams."""
    out: list[str] = []
    for line in interaction.body.decode().splitlines():
        if line.startswith("data:"):
            data = json.loads(line[5:])
            if data.get("type") == "content_block_delta" and data["delta"]["type"] == delta_type:
                out.append(data["delta"][field])
    return out


# --- single-turn streams ---------------------------------------------------------------------


async def test_stream_events_text() -> None:
    transport = replay("test_stream_events_text")
    model = model_for(transport, "claude-haiku-4-5-20251001", max_tokens=8192)
    request = ModelRequest(messages=[user("Say just hello")], model_settings=ModelSettings(temperature=1.0))
    assert await collect(model, request) == [
        TokenDelta(text="Hello"),
        Usage(input_tokens=10, output_tokens=4),
        Finish(reason="stop"),
    ]
    recorded = load("anthropic/test_stream_events_text.yaml")[0].request_body
    sent = transport.sent_json()
    assert essentials(sent) == essentials(recorded)
    assert sent["temperature"] == 1.0 and sent["stream"] is True


async def test_stream_events_tool_calls() -> None:
    transport = replay("test_stream_events_tool_calls")
    recorded = load("anthropic/test_stream_events_tool_calls.yaml")[0].request_body
    model = model_for(transport, "claude-haiku-4-5-20251001", max_tokens=8192)
    request = ModelRequest(
        messages=[user("Generate one name for a pet pelican")], tools=recorded_tools(recorded)
    )
    assert await collect(model, request) == [
        ToolCallDelta(call_id="toolu_01CzN6riCPqw4pVSuTd9Dwn7", name="pelican_name_generator"),
        ToolCallDelta(call_id="toolu_01CzN6riCPqw4pVSuTd9Dwn7", args_delta=""),
        Usage(input_tokens=543, output_tokens=40),
        Finish(reason="tool_calls"),
    ]
    assert essentials(transport.sent_json()) == essentials(recorded)


async def test_stream_events_thinking() -> None:
    transport = replay("test_stream_events_thinking")
    interaction = load("anthropic/test_stream_events_thinking.yaml")[0]
    model = model_for(
        transport, "claude-haiku-4-5-20251001", max_tokens=8192, thinking=ExtendedThinking(budget_tokens=1024)
    )
    events = await collect(model, ModelRequest(messages=[user("Two names for a pet pelican, be brief")]))
    thinking = sse_deltas(interaction, "thinking_delta", "thinking")
    (signature,) = sse_deltas(interaction, "signature_delta", "signature")
    texts = sse_deltas(interaction, "text_delta", "text")
    assert events == [
        *(ReasoningDelta(text=t) for t in thinking),
        ReasoningDelta(text="", signature=signature),
        *(TokenDelta(text=t) for t in texts),
        Usage(input_tokens=46, output_tokens=133),
        Finish(reason="stop"),
    ]
    assert len(thinking) == 6 and texts[0].startswith("1. **Pouch**")
    assert essentials(transport.sent_json()) == essentials(interaction.request_body)


async def test_thinking_part_stream() -> None:
    transport = replay("test_anthropic_model_thinking_part_stream")
    interaction = load("anthropic/test_anthropic_model_thinking_part_stream.yaml")[0]
    model = model_for(transport, "claude-sonnet-4-0", thinking=ExtendedThinking(budget_tokens=1024))
    events = await collect(
        model, ModelRequest(messages=[user(interaction.request_body["messages"][0]["content"][0]["text"])])
    )
    (signature,) = sse_deltas(interaction, "signature_delta", "signature")
    expected = [
        *(ReasoningDelta(text=t) for t in sse_deltas(interaction, "thinking_delta", "thinking")),
        ReasoningDelta(text="", signature=signature),
        *(TokenDelta(text=t) for t in sse_deltas(interaction, "text_delta", "text")),
    ]
    assert events[:-2] == expected
    assert isinstance(events[-2], Usage) and events[-2].output_tokens > 0
    assert events[-1] == Finish(reason="stop")
    assert essentials(transport.sent_json()) == essentials(interaction.request_body)


async def test_redacted_thinking_round_trips_as_signature() -> None:
    transport = replay("test_anthropic_model_thinking_part_redacted_stream")
    interaction = load("anthropic/test_anthropic_model_thinking_part_redacted_stream.yaml")[0]
    model = model_for(transport, "claude-sonnet-4-5-20250929", thinking=ExtendedThinking(budget_tokens=1024))
    prompt = interaction.request_body["messages"][0]["content"][0]["text"]
    events = await collect(model, ModelRequest(messages=[user(prompt)]))
    redacted = [e for e in events if isinstance(e, ReasoningDelta)]
    assert len(redacted) == 2
    assert all(e.text == "" and e.signature and e.signature.startswith("E") for e in redacted)
    texts = sse_deltas(interaction, "text_delta", "text")
    assert [e for e in events if isinstance(e, TokenDelta)] == [TokenDelta(text=t) for t in texts]
    assert events[-1] == Finish(reason="stop")
    # Next turn: a reasoning part with no text and a signature goes back as redacted_thinking.
    part = ReasoningPart(text="", signature=redacted[-1].signature, provider="anthropic")
    params = model.request_params(
        ModelRequest(
            messages=[user(prompt), AssistantMessage(content=(part, TextPart(text="ok"))), user("more")]
        )
    )
    assert params["messages"][1]["content"][0] == {
        "type": "redacted_thinking",
        "data": redacted[-1].signature,
    }


async def test_mcp_server_blocks_are_skipped() -> None:
    transport = replay("test_anthropic_mcp_servers_stream")
    interaction = load("anthropic/test_anthropic_mcp_servers_stream.yaml")[0]
    model = model_for(transport, "claude-sonnet-4-5", thinking=ExtendedThinking(budget_tokens=3000))
    events = await collect(
        model, ModelRequest(messages=[user("Can you tell me more about the pydantic/pydantic-ai repo?")])
    )
    # The mcp_tool_use input deltas and the mcp_tool_result block produce no events.
    assert not any(isinstance(e, ToolCallDelta) for e in events)
    (signature,) = sse_deltas(interaction, "signature_delta", "signature")
    assert events[:-2] == [
        *(ReasoningDelta(text=t) for t in sse_deltas(interaction, "thinking_delta", "thinking")),
        ReasoningDelta(text="", signature=signature),
        *(TokenDelta(text=t) for t in sse_deltas(interaction, "text_delta", "text")),
    ]
    assert events[-2] == Usage(input_tokens=3042, output_tokens=354)
    assert events[-1] == Finish(reason="stop")


async def test_schema_prompt_uses_output_config() -> None:
    transport = replay("test_schema_prompt")
    interaction = load("anthropic/test_schema_prompt.yaml")[0]
    schema = interaction.request_body["output_config"]["format"]["schema"]
    model = model_for(transport, "claude-sonnet-4-5", max_tokens=8192)
    request = ModelRequest(
        messages=[user("Invent a good dog")],
        model_settings=ModelSettings(response_format=ResponseFormat.json_schema(name="Dog", schema=schema)),
    )
    events = await collect(model, request)
    texts = sse_deltas(interaction, "text_delta", "text")
    assert events == [
        *(TokenDelta(text=t) for t in texts),
        Usage(input_tokens=230, output_tokens=94),
        Finish(),
    ]
    assert json.loads("".join(texts))["name"] == "Biscuit"
    assert essentials(transport.sent_json()) == essentials(interaction.request_body)


async def test_native_output_strict_true() -> None:
    transport = replay("test_no_tools_native_output_strict_true")
    recorded = load("anthropic/test_no_tools_native_output_strict_true.yaml")[0].request_body
    schema = recorded["output_config"]["format"]["schema"]
    model = model_for(transport, "claude-sonnet-4-5")
    request = ModelRequest(
        messages=[user("Tell me about London")],
        model_settings=ModelSettings(response_format=ResponseFormat.json_schema(name="City", schema=schema)),
    )
    assert await collect(model, request) == [
        TokenDelta(text='{"city":"London","country":"United Kingdom","population":9002488}'),
        Usage(input_tokens=196, output_tokens=19),
        Finish(reason="stop"),
    ]
    assert essentials(transport.sent_json()) == essentials(recorded)


async def test_instructions_hoisted_into_system() -> None:
    transport = replay("test_anthropic_model_instructions")
    recorded = load("anthropic/test_anthropic_model_instructions.yaml")[0].request_body
    model = model_for(transport, "claude-3-opus-latest")
    request = ModelRequest(
        messages=[
            SystemMessage(text="You are a helpful assistant.\n\n"),
            user("What is the capital of France?"),
        ]
    )
    assert await collect(model, request) == [
        TokenDelta(text="The capital of France is Paris."),
        Usage(input_tokens=20, output_tokens=10),
        Finish(reason="stop"),
    ]
    assert essentials(transport.sent_json()) == essentials(recorded)


# --- multi-turn: each turn's request rebuilt from the previous turn's events -------------------


async def run_turns(
    cassette: str, model_id: str, **kwargs: Any
) -> tuple[list[list[ModelEvent]], ReplayTransport]:
    """Replay every turn: turn n+1 is the conversation so far plus the recorded tool results."""
    transport = replay(cassette)
    interactions = load(f"anthropic/{cassette}.yaml")
    first = interactions[0].request_body
    model = model_for(transport, model_id, max_tokens=first["max_tokens"], **kwargs)
    system = first.get("system")
    conversation: list[Item] = [SystemMessage(text=system)] if system else []
    conversation.append(user(first["messages"][0]["content"][0]["text"]))
    choices: dict[str, ToolChoice] = {"auto": "auto", "any": "required"}
    settings = ModelSettings(
        temperature=first.get("temperature"),
        tool_choice=choices[first["tool_choice"]["type"]] if "tool_choice" in first else None,
    )
    tools = recorded_tools(first) if "tools" in first else []
    turns: list[list[ModelEvent]] = []
    for index, interaction in enumerate(interactions):
        if index:
            conversation.extend(tool_results(interaction.request_body))
        events = await collect(
            model, ModelRequest(messages=list(conversation), tools=tools, model_settings=settings)
        )
        assert essentials(transport.sent_json(index)) == essentials(interaction.request_body), index
        conversation.extend(turn_items(events))
        turns.append(events)
    return turns, transport


async def test_tools_two_turns() -> None:
    turns, _ = await run_turns("test_tools", "claude-haiku-4-5-20251001")
    first, second = turns
    assert first == [
        ToolCallDelta(call_id="toolu_01LtHJmixrs9NcWQkK8hu8hj", name="pelican_name_generator"),
        ToolCallDelta(call_id="toolu_01LtHJmixrs9NcWQkK8hu8hj"),
        ToolCallDelta(call_id="toolu_01N8a4jWyf116qKTMqKKmjyt", name="pelican_name_generator"),
        ToolCallDelta(call_id="toolu_01N8a4jWyf116qKTMqKKmjyt"),
        Usage(input_tokens=542, output_tokens=62),
        Finish(reason="tool_calls"),
    ]
    assert second[-2:] == [Usage(input_tokens=678, output_tokens=82), Finish(reason="stop")]
    assert "".join(e.text for e in second if isinstance(e, TokenDelta)).startswith("Here are two great names")


async def test_tool_with_thinking_round_trips_signature() -> None:
    turns, transport = await run_turns(
        "test_anthropic_tool_with_thinking",
        "claude-sonnet-4-0",
        thinking=ExtendedThinking(budget_tokens=3000),
    )
    recorded = load("anthropic/test_anthropic_tool_with_thinking.yaml")[1].request_body
    thinking = recorded["messages"][1]["content"][0]
    assert turns[0] == [
        ReasoningDelta(text=thinking["thinking"]),
        ReasoningDelta(text="", signature=thinking["signature"]),
        TokenDelta(text=recorded["messages"][1]["content"][1]["text"]),
        ToolCallDelta(call_id="toolu_01YGzqpRE16Vricda3Aqcejo", name="get_user_country"),
        ToolCallDelta(call_id="toolu_01YGzqpRE16Vricda3Aqcejo", args_delta="{}"),
        Usage(input_tokens=398, output_tokens=155),
        Finish(reason="tool_calls"),
    ]
    assert transport.sent_json(1)["messages"][1]["content"][0] == thinking
    assert turns[1][-1] == Finish(reason="stop")


async def test_fixed_version_chain_with_thinking_display() -> None:
    turns, transport = await run_turns(
        "test_fixed_version_tool_chain_with_thinking_display_regression",
        "claude-haiku-4-5-20251001",
        thinking=ExtendedThinking(budget_tokens=1024, display="summarized"),
    )
    assert turns[0][-4:] == [
        ToolCallDelta(call_id="toolu_01825dXWLSoJwCst1qTsiWdb", name="fixed_version"),
        ToolCallDelta(call_id="toolu_01825dXWLSoJwCst1qTsiWdb"),
        Usage(input_tokens=598, output_tokens=turns[0][-2].output_tokens),  # type: ignore[union-attr]
        Finish(reason="tool_calls"),
    ]
    assert transport.sent_json(1)["messages"][1]["content"][0]["type"] == "thinking"
    assert turns[1][-2:] == [Usage(input_tokens=707, output_tokens=89), Finish(reason="stop")]


async def test_parallel_tool_calls() -> None:
    turns, _ = await run_turns("test_multiple_parallel_tool_calls", "claude-haiku-4-5")
    calls = [e for e in turns[0] if isinstance(e, ToolCallDelta)]
    names = [json.loads(e.args_delta)["name"] for e in calls if e.args_delta]
    assert names == ["Alice", "Bob", "Charlie", "Daisy"]
    assert turns[0][-1] == Finish(reason="tool_calls")
    assert turns[1][-2:] == [Usage(input_tokens=771, output_tokens=77), Finish(reason="stop")]


async def test_tool_output_with_tool_choice_any() -> None:
    turns, _ = await run_turns("test_anthropic_tool_output", "claude-sonnet-4-5")
    assert turns[1] == [
        ToolCallDelta(call_id="toolu_01LZABsgreMefH2Go8D5PQbW", name="final_result"),
        ToolCallDelta(
            call_id="toolu_01LZABsgreMefH2Go8D5PQbW",
            args_delta='{"city": "Mexico City", "country": "Mexico"}',
        ),
        Usage(input_tokens=497, output_tokens=56),
        Finish(reason="tool_calls"),
    ]


# --- recorded errors -------------------------------------------------------------------------


async def test_recorded_400_is_other_model_error() -> None:
    model = model_for(
        replay("test_anthropic_explicit_effort_xhigh_unsupported_model_errors"), "claude-opus-4-6"
    )
    with pytest.raises(OtherModelError) as info:
        await collect(model, ModelRequest(messages=[user("What is 2+2?")]))
    assert info.value.status_code == 400
    assert "does not support effort level 'xhigh'" in str(info.value)
    assert isinstance(info.value.__cause__, anthropic.BadRequestError)


async def test_recorded_404_is_other_model_error() -> None:
    # Recorded on /messages/count_tokens, which helikon does not call: served on /messages.
    interactions = load("anthropic/test_anthropic_count_tokens_error.yaml")
    interactions[0].path = "/v1/messages"
    model = model_for(ReplayTransport(interactions), "claude-does-not-exist")
    with pytest.raises(OtherModelError) as info:
        await collect(model, ModelRequest(messages=[user("hello")]))
    assert info.value.status_code == 404
    assert str(info.value) == "Anthropic not_found_error: model: claude-does-not-exist"


# --- documented error JSON -------------------------------------------------------------------


def _error(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> httpx2.MockTransport:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx2.MockTransport(lambda request: httpx2.Response(status, json=body, headers=headers or {}))


@pytest.mark.parametrize(
    ("transport", "error", "status"),
    [
        (_error(429, "rate_limit_error", "slow down", {"retry-after": "7"}), RateLimited, 429),
        (_error(529, "overloaded_error", "Overloaded"), Unavailable, 529),
        (_error(500, "api_error", "Internal server error"), Unavailable, 500),
        (_error(503, "api_error", "unavailable"), Unavailable, 503),
        (
            _error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
            ContextLengthExceeded,
            400,
        ),
        (_error(401, "authentication_error", "invalid x-api-key"), OtherModelError, 401),
    ],
)
async def test_http_errors_are_mapped(
    transport: httpx2.MockTransport, error: type[ModelError], status: int
) -> None:
    with pytest.raises(error) as info:
        await collect(model_for(transport), ModelRequest(messages=[user("hi")]))
    assert type(info.value) is error and info.value.status_code == status
    if isinstance(info.value, RateLimited):
        assert info.value.retry_after_ms == 7000


async def test_retry_after_ms_header_wins() -> None:
    transport = _error(429, "rate_limit_error", "slow down", {"retry-after-ms": "1500", "retry-after": "2"})
    with pytest.raises(RateLimited) as info:
        await collect(model_for(transport), ModelRequest(messages=[user("hi")]))
    assert info.value.retry_after_ms == 1500


def _stream_then(events: list[dict[str, Any]], tail: str = "") -> httpx2.MockTransport:
    body = _sse(events) + tail.encode()
    return httpx2.MockTransport(
        lambda request: httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})
    )


_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {
            "input_tokens": 5, "output_tokens": 1,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20,
        },
    },
}  # fmt: skip
_TEXT = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
]


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("overloaded_error", Unavailable),
        ("rate_limit_error", RateLimited),
        ("invalid_request_error", OtherModelError),
    ],
)
async def test_error_event_inside_stream(kind: str, error: type[ModelError]) -> None:
    tail = f'event: error\ndata: {{"type": "error", "error": {{"type": "{kind}", "message": "boom"}}}}\n\n'
    events: list[ModelEvent] = []

    async def consume() -> None:
        stream = model_for(_stream_then([_START, *_TEXT], tail)).invoke(
            ModelRequest(messages=[user("hi")]), CancellationToken()
        )
        async for event in stream:
            events.append(event)  # noqa: PERF401 - keeps what arrived before the error

    with pytest.raises(error) as info:
        await consume()
    assert events == [TokenDelta(text="Hi")]
    assert type(info.value) is error and "boom" in str(info.value)


async def test_connection_error_is_transport() -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    with pytest.raises(Transport):
        await collect(model_for(httpx2.MockTransport(fail)), ModelRequest(messages=[user("hi")]))


async def test_truncated_stream_is_transport() -> None:
    with pytest.raises(Transport):
        await collect(model_for(_stream_then([_START, *_TEXT])), ModelRequest(messages=[user("hi")]))


@pytest.mark.parametrize(
    ("stop", "reason"),
    [("max_tokens", "length"), ("refusal", "refusal"), ("stop_sequence", "stop"), ("pause_turn", "other")],
)
async def test_stop_reasons_and_cache_usage(stop: str, reason: str) -> None:
    delta = {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}}
    events = await collect(
        model_for(_stream_then([_START, *_TEXT, delta])), ModelRequest(messages=[user("hi")])
    )
    assert events == [
        TokenDelta(text="Hi"),
        Usage(input_tokens=125, output_tokens=9, cached_input_tokens=100),
        Finish(reason=reason),  # type: ignore[arg-type]
    ]


async def test_cancellation_stops_and_closes_the_stream() -> None:
    token = CancellationToken()
    closed: list[bool] = []

    class Body(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield _sse([_START, *_TEXT])
            token.cancel("user")
            yield _sse([_TEXT[1]])
            raise AssertionError("read past the cancel")  # pragma: no cover

        async def aclose(self) -> None:
            closed.append(True)

    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, stream=Body(), headers={"content-type": "text/event-stream"})
    )
    events = [e async for e in model_for(transport).invoke(ModelRequest(messages=[user("hi")]), token)]
    assert events == [TokenDelta(text="Hi")]
    assert closed


# --- request mapping -------------------------------------------------------------------------


def _params(request: ModelRequest, **kwargs: Any) -> dict[str, Any]:
    return model_for(httpx2.MockTransport(lambda r: httpx2.Response(500)), **kwargs).request_params(request)


def test_request_mapping() -> None:
    tool = ToolDef(name="lookup", description="Look up.", parameters={"type": "object"}, strict=True)
    request = ModelRequest(
        messages=[
            SystemMessage(text="Be brief."),
            user("Look"),
            UserMessage(
                content=(
                    ImagePart(source=UrlSource(url="https://example.com/a.png")),
                    ImagePart(source=Base64Source(media_type="image/png", data="AAAA")),
                )
            ),
            AssistantMessage(content=(ReasoningPart(text="hm", signature=None), TextPart(text="Looking."))),
            ToolCall(call_id="c1", name="lookup", args={"q": 1}),
            ToolCall(call_id="c2", name="lookup", args="not json"),
            ToolResult(call_id="c1", content=(TextPart(text="one"),)),
            ToolResult(call_id="c2", content=(TextPart(text="bad"),), is_error=True),
            SystemMessage(text="Injected."),
            user("Thanks"),
        ],
        tools=[tool],
        model_settings=ModelSettings(
            temperature=0.5, top_p=0.9, max_output_tokens=100, tool_choice="required"
        ),
    )
    params = _params(request)
    assert params == {
        "model": "claude-test",
        "max_tokens": 100,
        "system": "Be brief.\n\nInjected.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look"},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": 1}},
                    {"type": "tool_use", "id": "c2", "name": "lookup", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "bad", "is_error": True},
                    {"type": "text", "text": "Thanks"},
                ],
            },
        ],
        "tools": [
            {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}, "strict": True}
        ],
        "tool_choice": {"type": "any"},
        "temperature": 0.5,
        "top_p": 0.9,
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        (NamedToolChoice(name="t"), {"type": "tool", "name": "t"}),
    ],
)
def test_tool_choice(choice: Any, expected: dict[str, Any]) -> None:
    tool = ToolDef(name="t", description="", parameters={"type": "object"})
    request = ModelRequest(
        messages=[user("x")], tools=[tool], model_settings=ModelSettings(tool_choice=choice)
    )
    assert _params(request)["tool_choice"] == expected


def test_foreign_reasoning_is_dropped_and_audio_rejected() -> None:
    foreign = ReasoningPart(text="x", signature="sig", provider="openai")
    params = _params(ModelRequest(messages=[user("a"), AssistantMessage(content=(foreign,)), user("b")]))
    assert params["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    from helikon.core.items import AudioPart

    with pytest.raises(UserError, match="audio"):
        _params(ModelRequest(messages=[UserMessage(content=(AudioPart(source=UrlSource(url="u")),))]))


def test_cache_strategy() -> None:
    tools = [ToolDef(name=n, description="", parameters={"type": "object"}) for n in ("a", "b")]
    request = ModelRequest(messages=[SystemMessage(text="S"), user("hi")], tools=tools)
    params = _params(request, cache=CacheStrategy(last_message=True, ttl="1h"))
    control = {"type": "ephemeral", "ttl": "1h"}
    assert params["system"] == [{"type": "text", "text": "S", "cache_control": control}]
    assert "cache_control" not in params["tools"][0] and params["tools"][1]["cache_control"] == control
    assert params["messages"][0]["content"][-1]["cache_control"] == control
    plain = _params(request, cache=CacheStrategy(system=False))
    assert plain["system"] == "S" and plain["tools"][1]["cache_control"] == {"type": "ephemeral"}


def test_json_object_format_is_not_sent() -> None:
    request = ModelRequest(
        messages=[user("x")], model_settings=ModelSettings(response_format=ResponseFormat.json_object())
    )
    assert "output_config" not in _params(request)


# --- construction ----------------------------------------------------------------------------


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        AnthropicModel.messages("claude-sonnet-4-5")


def test_env_key_and_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    model = AnthropicModel.messages("claude-sonnet-4-5", base_url="http://127.0.0.1:9")
    assert model._client.api_key == "env-key" and model._client.max_retries == 0
    assert model.provider == "anthropic" and model.model_name == "claude-sonnet-4-5"
    caps = model.capabilities()
    assert caps.streaming and caps.tools and caps.parallel_tool_calls and caps.structured_output
    assert caps.reasoning and caps.vision and caps.prompt_caching and not caps.audio


def test_bad_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match="budget_tokens"):
        ExtendedThinking(budget_tokens=10)
    with pytest.raises(UserError, match="below"):
        AnthropicModel.messages(
            "m", api_key="k", max_tokens=2000, thinking=ExtendedThinking(budget_tokens=2000)
        )
    with pytest.raises(UserError, match="max_tokens"):
        AnthropicModel.messages("m", api_key="k", max_tokens=0)
    with pytest.raises(UserError, match="model_id"):
        AnthropicModel.messages("", api_key="k")


def test_given_client_gets_no_retries() -> None:
    client = anthropic.AsyncAnthropic(api_key="k", max_retries=5)
    assert AnthropicModel.messages("m", client=client)._client.max_retries == 0


def test_import_helikon_does_not_import_anthropic() -> None:
    code = "import sys, helikon; assert 'anthropic' not in sys.modules and 'httpx2' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- end to end through LlmAgent -------------------------------------------------------------


async def test_agent_runs_tool_loop_to_completion() -> None:
    names = iter(["Charles", "Sammy"])

    @tool
    def pelican_name_generator() -> str:
        """Generate a pelican name."""
        return next(names)

    transport = replay("test_tools")
    agent = LlmAgent(
        name="pelicans",
        model=model_for(transport, "claude-haiku-4-5-20251001"),
        tools=[pelican_name_generator],
    )
    result = await agent.run("Two names for a pet pelican")
    assert "Charles" in result.final_output and "Sammy" in result.final_output
    second = transport.sent_json(1)["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert [b["content"] for b in second[2]["content"]] == ["Charles", "Sammy"]


async def test_agent_round_trips_thinking_signature() -> None:
    @tool
    def get_user_country() -> str:
        """Get the user's country."""
        return "Mexico"

    transport = replay("test_anthropic_tool_with_thinking")
    model = model_for(transport, "claude-sonnet-4-0", thinking=ExtendedThinking(budget_tokens=3000))
    result = await LlmAgent(name="geo", model=model, tools=[get_user_country]).run(
        "What is the largest city in the user country?"
    )
    assert "Mexico City" in result.final_output
    recorded = load("anthropic/test_anthropic_tool_with_thinking.yaml")[1].request_body
    sent = transport.sent_json(1)
    assert sent["messages"][1]["content"][0] == recorded["messages"][1]["content"][0]
    assert sent["messages"][1]["content"][0]["signature"].startswith("EqEECkYICxgC")
    assert [b["type"] for b in sent["messages"][1]["content"]] == ["thinking", "text", "tool_use"]
