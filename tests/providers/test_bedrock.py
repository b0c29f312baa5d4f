"""BedrockModel against every recorded Bedrock cassette (replayed, never the network).

aiobotocore's HTTP layer is intercepted with a `before-send` handler on the session's
event system: it returns an `AioAWSResponse` built from the recording, so signing,
serialization, response parsing and event-stream decoding all run for real.
"""

from __future__ import annotations

import asyncio
import binascii
import json
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal, Union, cast
from urllib.parse import unquote

import pytest
from aiobotocore.awsrequest import AioAWSResponse
from aiobotocore.session import get_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

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
    AudioPart,
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
    ToolDef,
    Usage,
)
from helikon.providers.bedrock import BedrockModel, ModelFamily, Ruleset, rewrite_tool_schema

from .cassettes import Interaction, load

# --- AWS event-stream encoding (the inverse of botocore.eventstream) ---------------------------


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One `application/vnd.amazon.eventstream` message."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + head + payload
    return message + struct.pack(">I", binascii.crc32(message) & 0xFFFFFFFF)


def event_frame(kind: str, body: dict[str, Any]) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(body).encode())


def exception_frame(kind: str, message: str) -> bytes:
    headers = {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"}
    return frame(headers, json.dumps({"message": message}).encode())


def converse_to_stream(response: dict[str, Any]) -> bytes:
    """A non-streamed Converse response as the event stream ConverseStream would have sent."""
    out = [event_frame("messageStart", {"role": "assistant"})]
    for index, block in enumerate(response["output"]["message"]["content"]):
        if "text" in block:
            out.append(
                event_frame(
                    "contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": block["text"]}}
                )
            )
        elif "reasoningContent" in block:
            reasoning = block["reasoningContent"]["reasoningText"]
            for key in ("text", "signature"):
                delta = {"reasoningContent": {key: reasoning[key]}}
                out.append(event_frame("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            out.append(event_frame("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            delta = {"toolUse": {"input": json.dumps(use["input"])}}
            out.append(event_frame("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        out.append(event_frame("contentBlockStop", {"contentBlockIndex": index}))
    out.append(event_frame("messageStop", {"stopReason": response["stopReason"]}))
    out.append(event_frame("metadata", {"usage": response["usage"], "metrics": response["metrics"]}))
    return b"".join(out)


# --- the replay harness --------------------------------------------------------------------------


class _Content:
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def iter_chunks(self) -> AsyncIterator[tuple[bytes, bool]]:
        # Odd-sized chunks so that frames straddle chunk boundaries, as on the wire.
        for start in range(0, len(self._body), 97):
            yield self._body[start : start + 97], False


class FakeRaw:
    """What aiobotocore reads a response from: `read()` for errors, `content` for streams."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.content = _Content(body)
        self.closed = False

    async def read(self, amt: int | None = None) -> bytes:
        return self.body

    def close(self) -> None:
        self.closed = True


class Replay:
    """Serves recorded responses in order from aiobotocore's `before-send` event."""

    def __init__(self, interactions: list[Interaction]) -> None:
        self.interactions = interactions
        self.sent: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.raws: list[FakeRaw] = []

    def handler(self, request: Any, **_: Any) -> AioAWSResponse:
        assert request.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256") or str(
            request.headers["Authorization"]
        ).startswith("AWS4-HMAC-SHA256")
        self.sent.append(json.loads(request.body))
        self.paths.append(request.url)
        if not self.interactions:
            raise AssertionError(f"no recorded response left for {request.url}")
        interaction = self.interactions.pop(0)
        raw = FakeRaw(interaction.body)
        self.raws.append(raw)
        return AioAWSResponse(request.url, interaction.status, interaction.headers, raw)

    def session(self) -> Any:
        session = get_session()
        session.register("before-send.bedrock-runtime", self.handler)
        return session

    def model(self, model_id: str) -> BedrockModel:
        return BedrockModel.converse(model_id, session=self.session(), region="us-east-1")


def replay(cassette: str) -> tuple[Replay, str]:
    """The cassette's replay (non-streamed 200 JSON re-encoded as event streams) and model id."""
    interactions = load(f"bedrock/{cassette}.yaml")
    for interaction in interactions:
        if interaction.status == 200 and "json" in interaction.headers.get("content-type", ""):
            interaction.body = converse_to_stream(json.loads(interaction.body))
            interaction.headers["content-type"] = "application/vnd.amazon.eventstream"
    model_id = unquote(interactions[0].path.split("/")[2])
    return Replay(interactions), model_id


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)


async def collect(model: BedrockModel, request: ModelRequest) -> list[ModelEvent]:
    try:
        return [event async for event in model.invoke(request, CancellationToken())]
    finally:
        await model.aclose()


async def drain(model: BedrockModel, request: ModelRequest, seen: list[ModelEvent]) -> None:
    """Iterate `invoke`, keeping what arrived before a failure."""
    async for event in model.invoke(request, CancellationToken()):
        seen.append(event)  # noqa: PERF401 - the events before the raise are the point


async def run_cassette(cassette: str, request: ModelRequest) -> tuple[list[ModelEvent], Replay]:
    rec, model_id = replay(cassette)
    return await collect(rec.model(model_id), request), rec


def user(text: str) -> UserMessage:
    return UserMessage.from_text(text)


def texts(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TokenDelta))


def request_from(cassette: str, index: int = 0) -> dict[str, Any]:
    body = load(f"bedrock/{cassette}.yaml")[index].request_body
    assert isinstance(body, dict)
    return body  # pyright: ignore[reportUnknownVariableType]


def tool_defs(body: dict[str, Any]) -> list[ToolDef]:
    return [
        ToolDef(
            name=t["toolSpec"]["name"],
            description=t["toolSpec"].get("description", ""),
            parameters=t["toolSpec"]["inputSchema"]["json"],
        )
        for t in body.get("toolConfig", {}).get("tools", [])
        if "toolSpec" in t
    ]


# --- streamed cassettes -----------------------------------------------------------------------


async def test_model_stream_text() -> None:
    request = ModelRequest(
        messages=[SystemMessage(text="You are a helpful chatbot."), user("What is the capital of France?")],
        model_settings=ModelSettings(temperature=0.0),
    )
    events, rec = await run_cassette("test_bedrock_model_stream", request)
    assert len(events) == 31 and all(isinstance(e, TokenDelta) for e in events[:-2])
    assert events[:2] == [TokenDelta(text="The"), TokenDelta(text=" capital of France is Paris.")]
    assert texts(events).endswith('referred to as "The City of Light" or "The City of Love."')
    assert events[-2:] == [Usage(input_tokens=13, output_tokens=82), Finish(reason="stop")]
    assert rec.paths[0].endswith("/model/us.amazon.nova-micro-v1%3A0/converse-stream")
    recorded = request_from("test_bedrock_model_stream")
    assert {k: rec.sent[0][k] for k in ("messages", "system", "inferenceConfig")} == recorded
    assert rec.raws[0].closed


async def test_anthropic_converse_stream_with_tool_use() -> None:
    body = request_from("test_anthropic_converse_stream_with_tool_use")
    request = ModelRequest(
        messages=[user("What is the weather in Barcelona?")],
        tools=tool_defs(body),
        model_settings=ModelSettings(temperature=0.5, max_output_tokens=300),
    )
    events, rec = await run_cassette("test_anthropic_converse_stream_with_tool_use", request)
    call = "tooluse_yypYDr71TwCwByoyao4-Vg"
    words = ["Okay", ",", " let", " me", " check", " the", " weather", " for", " Barcelona", " using", " the"]
    words += [" available", " tool", ":"]
    assert events == [
        *[TokenDelta(text=w) for w in words],
        ToolCallDelta(call_id=call, name="get_weather", args_delta=""),
        ToolCallDelta(call_id=call, args_delta=""),
        ToolCallDelta(call_id=call, args_delta='{"locati'),
        ToolCallDelta(call_id=call, args_delta='on": "Bar'),
        ToolCallDelta(call_id=call, args_delta="ce"),
        ToolCallDelta(call_id=call, args_delta='lona"}'),
        Usage(input_tokens=236, output_tokens=58),
        Finish(reason="tool_calls"),
    ]
    sent = rec.sent[0]
    assert sent["messages"] == body["messages"]
    assert sent["toolConfig"] == body["toolConfig"]
    assert sent["inferenceConfig"] == body["inferenceConfig"]


async def test_iter_stream_tool_round_trip_request() -> None:
    first = request_from("test_bedrock_model_iter_stream")
    request = ModelRequest(
        messages=[
            SystemMessage(text="You are a helpful chatbot."),
            user(first["messages"][0]["content"][0]["text"]),
        ],
        tools=tool_defs(first),
        model_settings=ModelSettings(top_p=0.5),
    )
    rec, model_id = replay("test_bedrock_model_iter_stream")
    model = rec.model(model_id)
    events = [e async for e in model.invoke(request, CancellationToken())]
    call = "tooluse_lAG_zP8QRHmSYOwZzzaCqA"
    assert events[-4:] == [
        ToolCallDelta(call_id=call, name="get_temperature", args_delta=""),
        ToolCallDelta(call_id=call, args_delta='{"city":"Paris"}'),
        Usage(input_tokens=471, output_tokens=91),
        Finish(reason="tool_calls"),
    ]
    text = texts(events)
    second = ModelRequest(
        messages=[
            *request.messages,
            AssistantMessage.from_text(text),
            ToolCall(call_id=call, name="get_temperature", args={"city": "Paris"}),
            ToolResult(call_id=call, content=(TextPart(text="30°C"),)),
        ],
        tools=request.tools,
        model_settings=request.model_settings,
    )
    events2 = [e async for e in model.invoke(second, CancellationToken())]
    await model.aclose()
    assert isinstance(events2[-1], Finish) and events2[-1].reason == "stop"
    assert "30°C" in texts(events2)
    recorded = request_from("test_bedrock_model_iter_stream", 1)
    for key in ("messages", "system", "inferenceConfig", "toolConfig"):
        assert rec.sent[0 if key != "messages" else 1][key] == (first if key != "messages" else recorded)[key]
    assert rec.sent[1]["messages"] == recorded["messages"]


async def test_thinking_part_stream() -> None:
    events, _ = await run_cassette(
        "test_bedrock_model_thinking_part_stream", ModelRequest(messages=[user("Hello")])
    )
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    assert "".join(e.text for e in reasoning).startswith('The user has greeted me with a simple "Hello".')
    assert next(e for e in reasoning if e.signature).signature.startswith("Eu0CCkgIBxABGAIqQJDccbDQkr81n7Q")  # type: ignore[union-attr]
    assert texts(events) == "Hello! It's nice to meet you. How can I help you today?"
    assert events[-2:] == [Usage(input_tokens=36, output_tokens=73), Finish(reason="stop")]
    # Reasoning strictly precedes the answer text.
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TokenDelta))
    assert all(not isinstance(e, ReasoningDelta) for e in events[first_text:])


async def test_native_output_stream_is_text() -> None:
    events, _ = await run_cassette(
        "test_bedrock_native_output_stream", ModelRequest(messages=[user("Capital?")])
    )
    assert json.loads(texts(events)) == {"city": "Paris", "country": "France", "population": 2161000}
    assert events[-2:] == [Usage(input_tokens=210, output_tokens=18), Finish(reason="stop")]


async def test_nova_guardrail_is_content_filter() -> None:
    events, rec = await run_cassette(
        "test_nova_converse_stream",
        ModelRequest(
            messages=[user("What is the capital of Japan?")], model_settings=ModelSettings(temperature=0.5)
        ),
    )
    assert texts(events) == "{ADDRESS} is the capital of Japan {Account Number}."
    assert events[-1] == Finish(reason="content_filter")
    assert isinstance(events[-2], Usage)
    assert rec.sent[0]["inferenceConfig"] == {"temperature": 0.5}


async def test_code_execution_server_tool_is_skipped() -> None:
    body = request_from("test_bedrock_model_code_execution_tool_stream")
    request = ModelRequest(
        messages=[user("What is 1234 * 5678?")],
        tools=tool_defs(body),
        model_settings=ModelSettings(tool_choice="required"),
    )
    events, rec = await run_cassette("test_bedrock_model_code_execution_tool_stream", request)
    call = "tooluse_ptgCcZ0uQu-UUMz0abqoWw"
    assert events == [
        ToolCallDelta(call_id=call, name="final_result", args_delta=""),
        ToolCallDelta(call_id=call, args_delta='{"result":7006652.0}'),
        Usage(input_tokens=1002, output_tokens=59),
        Finish(reason="tool_calls"),
    ]
    assert rec.sent[0]["toolConfig"]["toolChoice"] == {"any": {}}


# --- non-streamed cassettes (re-encoded as event streams) -------------------------------------


async def test_bedrock_model_text() -> None:
    request = ModelRequest(messages=[SystemMessage(text="You are a chatbot."), user("Hello!")])
    events, rec = await run_cassette("test_bedrock_model", request)
    assert events == [
        TokenDelta(
            text="Hello! How can I assist you today? Whether you have questions, need information, "
            "or just want to chat, I'm here to help."
        ),
        Usage(input_tokens=7, output_tokens=30),
        Finish(reason="stop"),
    ]
    recorded = request_from("test_bedrock_model")
    assert rec.sent[0]["messages"] == recorded["messages"]
    assert rec.sent[0]["system"] == recorded["system"]
    assert "inferenceConfig" not in rec.sent[0] and "toolConfig" not in rec.sent[0]


async def test_tool_choice_required() -> None:
    body = request_from("test_tool_choice_matrix[required-bedrock]")
    request = ModelRequest(
        messages=[user("What's the weather in Paris?")],
        tools=tool_defs(body),
        model_settings=ModelSettings(tool_choice="required"),
    )
    events, rec = await run_cassette("test_tool_choice_matrix[required-bedrock]", request)
    call = "tooluse_BvssH5zaRF-PkYOc3BFYJA"
    assert events == [
        ToolCallDelta(call_id=call, name="get_weather", args_delta=""),
        ToolCallDelta(call_id=call, args_delta='{"city": "Paris"}'),
        Usage(input_tokens=655, output_tokens=38),
        Finish(reason="tool_calls"),
    ]
    assert rec.sent[0]["toolConfig"] == body["toolConfig"]


async def test_model_retry_multi_turn() -> None:
    first = request_from("test_bedrock_model_retry")
    second = request_from("test_bedrock_model_retry", 1)
    rec, model_id = replay("test_bedrock_model_retry")
    model = rec.model(model_id)
    messages: list[Item] = [SystemMessage(text=t["text"]) for t in first.get("system", [])]
    messages.append(user(first["messages"][0]["content"][0]["text"]))
    request = ModelRequest(messages=messages, tools=tool_defs(first))
    events = [e async for e in model.invoke(request, CancellationToken())]
    assert events[-1] == Finish(reason="tool_calls")
    calls = [e for e in events if isinstance(e, ToolCallDelta) and e.name]
    history = second["messages"]
    use = history[1]["content"][-1]["toolUse"]
    assert calls[0].call_id == use["toolUseId"] and calls[0].name == use["name"]
    result = history[2]["content"][0]["toolResult"]
    parts: list[Item] = [AssistantMessage.from_text(b["text"]) for b in history[1]["content"] if "text" in b]
    turn2 = ModelRequest(
        messages=[
            *messages,
            *parts,
            ToolCall(call_id=use["toolUseId"], name=use["name"], args=use["input"]),
            ToolResult(
                call_id=result["toolUseId"],
                content=tuple(TextPart(text=c["text"]) for c in result["content"]),
                is_error=result["status"] == "error",
            ),
        ],
        tools=request.tools,
    )
    events2 = [e async for e in model.invoke(turn2, CancellationToken())]
    await model.aclose()
    assert events2[-1] == Finish(reason="stop") and texts(events2)
    assert rec.sent[1]["messages"] == history


async def test_anthropic_thinking_round_trip_signature() -> None:
    @tool
    def get_user_country() -> str:
        """Get the user's country."""
        return "Mexico"

    rec, model_id = replay("test_bedrock_anthropic_tool_with_thinking")
    model = rec.model(model_id)
    result = await LlmAgent(name="geo", model=model, tools=[get_user_country]).run(
        "What is the largest city in the user country?"
    )
    await model.aclose()
    assert "Mexico City" in result.final_output
    recorded = request_from("test_bedrock_anthropic_tool_with_thinking", 1)
    sent = rec.sent[1]
    assert sent["messages"][1]["content"][0] == recorded["messages"][1]["content"][0]
    assert [next(iter(b)) for b in sent["messages"][1]["content"]] == ["reasoningContent", "text", "toolUse"]
    assert sent["messages"][2] == recorded["messages"][2]


def items_from(messages: list[dict[str, Any]]) -> list[Item]:
    """Recorded Converse messages as the helikon items that produce them."""
    items: list[Item] = []
    for message in messages:
        for block in message["content"]:
            if "text" in block:
                text = block["text"]
                items.append(user(text) if message["role"] == "user" else AssistantMessage.from_text(text))
            elif "toolUse" in block:
                use = block["toolUse"]
                items.append(ToolCall(call_id=use["toolUseId"], name=use["name"], args=use["input"]))
            elif "toolResult" in block:
                result = block["toolResult"]
                content = tuple(TextPart(text=c["text"]) for c in result["content"])
                items.append(
                    ToolResult(
                        call_id=result["toolUseId"], content=content, is_error=result["status"] == "error"
                    )
                )
    return items


async def test_structured_output_cassette_three_turns() -> None:
    """Tool call, plain text, then `final_result` called as an ordinary tool (3 requests)."""
    rec, model_id = replay("test_bedrock_model_structured_output")
    recorded = [request_from("test_bedrock_model_structured_output", i) for i in range(3)]
    model = rec.model(model_id)
    turns: list[list[ModelEvent]] = []
    for body in recorded:
        request = ModelRequest(
            messages=[SystemMessage(text=body["system"][0]["text"]), *items_from(body["messages"])],
            tools=tool_defs(body),
            model_settings=ModelSettings(tool_choice="required"),
        )
        turns.append([e async for e in model.invoke(request, CancellationToken())])
    await model.aclose()
    assert turns[0] == [
        ToolCallDelta(call_id="tooluse_Mj06ft-ITJik1Otgpkc1uA", name="temperature", args_delta=""),
        ToolCallDelta(
            call_id="tooluse_Mj06ft-ITJik1Otgpkc1uA", args_delta='{"city": "London", "date": "2022-01-01"}'
        ),
        Usage(input_tokens=571, output_tokens=22),
        Finish(reason="tool_calls"),
    ]
    assert turns[1] == [
        TokenDelta(text=recorded[2]["messages"][3]["content"][0]["text"]),
        Usage(input_tokens=627, output_tokens=67),
        Finish(reason="stop"),
    ]
    final = "tooluse_qVHAm8Q9QMGoJRkk06_TVA"
    assert turns[2] == [
        ToolCallDelta(call_id=final, name="final_result", args_delta=""),
        ToolCallDelta(
            call_id=final, args_delta='{"city": "London", "date": "2022-01-01", "temperature": "30\\u00b0C"}'
        ),
        Usage(input_tokens=821, output_tokens=31),
        Finish(reason="tool_calls"),
    ]
    for sent, body in zip(rec.sent, recorded, strict=True):
        assert sent["messages"] == body["messages"]
        assert sent["toolConfig"]["toolChoice"] == body["toolConfig"]["toolChoice"] == {"any": {}}
        # `format: date` is what Bedrock's validator rejects: the rewriter drops it.
        assert (
            "format"
            not in sent["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"]["date"]
        )


async def test_native_output_supported_model_text() -> None:
    events, _ = await run_cassette(
        "test_bedrock_native_output_supported_model", ModelRequest(messages=[user("Q")])
    )
    assert events == [
        TokenDelta(text='{"city":"Paris","country":"France","population":2161000}'),
        Usage(input_tokens=211, output_tokens=18),
        Finish(reason="stop"),
    ]


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cassette", ["test_bedrock_error", "test_bedrock_streaming_error"])
async def test_recorded_400_is_other_model_error(cassette: str) -> None:
    with pytest.raises(OtherModelError) as info:
        await run_cassette(cassette, ModelRequest(messages=[user("hello")]))
    assert "The provided model identifier is invalid." in str(info.value)
    assert info.value.status_code == 400


def _error(status: int, code: str, message: str) -> Interaction:
    body = json.dumps({"message": message}).encode()
    headers = {"content-type": "application/json", "x-amzn-errortype": f"{code}:http://internal.amazon.com/"}
    return Interaction("POST", "/model/x/converse-stream", None, status, headers, body)


@pytest.mark.parametrize(
    ("status", "code", "message", "expected"),
    [
        (429, "ThrottlingException", "Too many requests, please wait before trying again.", RateLimited),
        (503, "ServiceUnavailableException", "Bedrock is unable to process your request.", Unavailable),
        (500, "InternalServerException", "The server encountered an error.", Unavailable),
        (429, "ModelNotReadyException", "Model is not ready.", Unavailable),
        (400, "ValidationException", "Input is too long for requested model.", ContextLengthExceeded),
        (400, "ValidationException", "prompt exceeds the model's context window", ContextLengthExceeded),
        (400, "ValidationException", "The provided model identifier is invalid.", OtherModelError),
        (403, "AccessDeniedException", "You don't have access to the model.", OtherModelError),
    ],
)
async def test_http_errors(status: int, code: str, message: str, expected: type[ModelError]) -> None:
    rec = Replay([_error(status, code, message)])
    with pytest.raises(ModelError) as info:
        await collect(rec.model("amazon.nova-micro-v1:0"), ModelRequest(messages=[user("hi")]))
    assert type(info.value) is expected
    assert code in str(info.value) and message in str(info.value)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("throttlingException", RateLimited),
        ("modelStreamErrorException", Unavailable),
        ("serviceUnavailableException", Unavailable),
        ("internalServerException", Unavailable),
        ("validationException", OtherModelError),
    ],
)
async def test_errors_inside_the_event_stream(code: str, expected: type[ModelError]) -> None:
    body = event_frame("messageStart", {"role": "assistant"})
    body += event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}})
    body += exception_frame(code, "stream broke")
    interaction = Interaction(
        "POST", "/x", None, 200, {"content-type": "application/vnd.amazon.eventstream"}, body
    )
    rec = Replay([interaction])
    seen: list[ModelEvent] = []
    model = rec.model("anthropic.claude-3-haiku-20240307-v1:0")
    with pytest.raises(ModelError) as info:
        await drain(model, ModelRequest(messages=[user("hi")]), seen)
    await model.aclose()
    assert seen == [TokenDelta(text="Hel")]
    assert type(info.value) is expected
    assert rec.raws[0].closed


async def test_stream_without_message_stop_is_transport() -> None:
    body = event_frame("messageStart", {"role": "assistant"})
    interaction = Interaction(
        "POST", "/x", None, 200, {"content-type": "application/vnd.amazon.eventstream"}, body
    )
    with pytest.raises(Transport):
        await collect(
            Replay([interaction]).model("amazon.nova-micro-v1:0"), ModelRequest(messages=[user("hi")])
        )


async def test_connection_error_is_transport() -> None:
    from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

    for error in (
        EndpointConnectionError(endpoint_url="https://x"),
        ReadTimeoutError(endpoint_url="https://x"),
    ):

        def fail(request: Any, _error: Exception = error, **_: Any) -> None:
            raise _error

        session = get_session()
        session.register("before-send.bedrock-runtime", fail)
        model = BedrockModel.converse("amazon.nova-micro-v1:0", session=session, region="us-east-1")
        with pytest.raises(Transport):
            await collect(model, ModelRequest(messages=[user("hi")]))


async def test_cancellation_closes_the_stream() -> None:
    rec, model_id = replay("test_bedrock_model_stream")
    model = rec.model(model_id)
    cancel = CancellationToken()
    seen: list[ModelEvent] = []
    async for event in model.invoke(ModelRequest(messages=[user("hi")]), cancel):
        seen.append(event)
        cancel.cancel()
    await model.aclose()
    assert len(seen) == 1 and isinstance(seen[0], TokenDelta)
    assert rec.raws[0].closed


class _BlockingContent:
    def __init__(self, first: bytes, closed: asyncio.Event) -> None:
        self._first = first
        self._closed = closed

    async def iter_chunks(self) -> AsyncIterator[tuple[bytes, bool]]:
        yield self._first, False
        await self._closed.wait()  # the server goes quiet until the connection is closed
        raise ConnectionResetError("connection closed")


async def test_cancellation_wakes_a_pending_read() -> None:
    closed = asyncio.Event()
    raw = FakeRaw(b"")
    raw.content = _BlockingContent(  # type: ignore[assignment]
        event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}), closed
    )
    raw.close = closed.set  # type: ignore[method-assign]

    def answer(request: Any, **_: Any) -> AioAWSResponse:
        return AioAWSResponse(request.url, 200, {"content-type": "application/vnd.amazon.eventstream"}, raw)

    session = get_session()
    session.register("before-send.bedrock-runtime", answer)
    model = BedrockModel.converse("amazon.nova-micro-v1:0", session=session, region="us-east-1")
    cancel = CancellationToken()
    seen: list[ModelEvent] = []
    async for event in model.invoke(ModelRequest(messages=[user("hi")]), cancel):
        seen.append(event)
        asyncio.get_running_loop().call_later(0.01, cancel.cancel)
    await model.aclose()
    assert seen == [TokenDelta(text="Hel")]
    assert closed.is_set()


async def test_cancelled_before_the_call_sends_nothing() -> None:
    rec = Replay([])
    cancel = CancellationToken()
    cancel.cancel()
    events = [
        e
        async for e in rec.model("amazon.nova-micro-v1:0").invoke(ModelRequest(messages=[user("hi")]), cancel)
    ]
    assert events == [] and rec.sent == []


# --- structured output and families -----------------------------------------------------------

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer", "format": "int64"}},
    "required": ["city", "population"],
}


def _structured_stream(tool_name: str, preamble: str = "") -> bytes:
    out = event_frame("messageStart", {"role": "assistant"})
    if preamble:
        out += event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": preamble}})
    start = {"toolUse": {"toolUseId": "tooluse_1", "name": tool_name}}
    out += event_frame("contentBlockStart", {"contentBlockIndex": 1, "start": start})
    for fragment in ('{"city": "Par', 'is", "population": 2161000}'):
        out += event_frame(
            "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": fragment}}}
        )
    out += event_frame("messageStop", {"stopReason": "tool_use"})
    return out + event_frame("metadata", {"usage": {"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}})


@pytest.mark.parametrize(
    "model_id",
    [
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        "amazon.nova-pro-v1:0",
        "mistral.mistral-large-2407-v1:0",
    ],
)
async def test_structured_output_forced_tool(model_id: str) -> None:
    body = _structured_stream("helikon_structured_output", preamble="<thinking>ok</thinking>")
    rec = Replay(
        [Interaction("POST", "/x", None, 200, {"content-type": "application/vnd.amazon.eventstream"}, body)]
    )
    fmt = ResponseFormat.json_schema(name="City", schema=_SCHEMA)
    events = await collect(
        rec.model(model_id),
        ModelRequest(messages=[user("Paris?")], model_settings=ModelSettings(response_format=fmt)),
    )
    assert events == [
        TokenDelta(text='{"city": "Par'),
        TokenDelta(text='is", "population": 2161000}'),
        Usage(input_tokens=5, output_tokens=7),
        Finish(reason="stop"),
    ]
    config = rec.sent[0]["toolConfig"]
    assert config["toolChoice"] == {"tool": {"name": "helikon_structured_output"}}
    (spec,) = [t["toolSpec"] for t in config["tools"]]
    assert spec["name"] == "helikon_structured_output"
    assert spec["inputSchema"]["json"]["properties"]["population"] == {"type": "integer"}


async def test_structured_output_next_to_tools_requires_any_tool() -> None:
    body = _structured_stream("get_weather")
    rec = Replay(
        [Interaction("POST", "/x", None, 200, {"content-type": "application/vnd.amazon.eventstream"}, body)]
    )
    fmt = ResponseFormat.json_schema(name="City", schema=_SCHEMA)
    weather = ToolDef(
        name="get_weather", description="Weather.", parameters={"type": "object", "properties": {}}
    )
    request = ModelRequest(
        messages=[user("Paris?")], tools=[weather], model_settings=ModelSettings(response_format=fmt)
    )
    events = await collect(rec.model("anthropic.claude-3-5-sonnet-20241022-v2:0"), request)
    assert events[0] == ToolCallDelta(call_id="tooluse_1", name="get_weather", args_delta="")
    assert events[-1] == Finish(reason="tool_calls")
    config = rec.sent[0]["toolConfig"]
    assert config["toolChoice"] == {"any": {}}
    assert [t["toolSpec"]["name"] for t in config["tools"]] == ["get_weather", "helikon_structured_output"]


@pytest.mark.parametrize(
    "model_id",
    ["meta.llama3-70b-instruct-v1:0", "amazon.titan-text-express-v1", "cohere.command-r-v1:0", "x.y"],
)
async def test_structured_output_degrades_to_text(model_id: str) -> None:
    body = event_frame("messageStart", {"role": "assistant"})
    body += event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": '{"city": "Paris"}'}})
    body += event_frame("messageStop", {"stopReason": "end_turn"})
    rec = Replay(
        [Interaction("POST", "/x", None, 200, {"content-type": "application/vnd.amazon.eventstream"}, body)]
    )
    fmt = ResponseFormat.json_schema(name="City", schema=_SCHEMA)
    model = rec.model(model_id)
    assert not model.capabilities().structured_output
    events = await collect(
        model, ModelRequest(messages=[user("Paris?")], model_settings=ModelSettings(response_format=fmt))
    )
    assert events == [TokenDelta(text='{"city": "Paris"}'), Finish(reason="stop")]
    assert "toolConfig" not in rec.sent[0]


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", ModelFamily.ANTHROPIC),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", ModelFamily.ANTHROPIC),
        ("eu.anthropic.claude-sonnet-4-20250514-v1:0", ModelFamily.ANTHROPIC),
        ("apac.anthropic.claude-3-haiku-20240307-v1:0", ModelFamily.ANTHROPIC),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", ModelFamily.ANTHROPIC),
        ("ap.amazon.nova-lite-v1:0", ModelFamily.AMAZON_NOVA),
        ("us.amazon.nova-micro-v1:0", ModelFamily.AMAZON_NOVA),
        ("amazon.titan-text-premier-v1:0", ModelFamily.AMAZON_TITAN),
        ("us.meta.llama3-2-90b-instruct-v1:0", ModelFamily.LLAMA),
        ("mistral.mistral-large-2407-v1:0", ModelFamily.MISTRAL),
        ("cohere.command-r-plus-v1:0", ModelFamily.COHERE),
        ("deepseek.r1-v1:0", ModelFamily.UNKNOWN),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            ModelFamily.ANTHROPIC,
        ),
    ],
)
def test_family_detection(model_id: str, family: ModelFamily) -> None:
    assert ModelFamily.detect(model_id) is family
    model = BedrockModel.converse(model_id, region="us-east-1")
    assert model.family is family and model.model_name == model_id and model.provider == "aws.bedrock"
    assert model.capabilities().structured_output == family.forced_tool_output
    assert model.capabilities().streaming


# --- request mapping ------------------------------------------------------------------------


def test_request_mapping() -> None:
    model = BedrockModel.converse("anthropic.claude-3-5-sonnet-20241022-v2:0", region="us-east-1")
    schema = {"$schema": "x", "type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    request = ModelRequest(
        messages=[
            SystemMessage(text="A"),
            SystemMessage(text="B"),
            UserMessage(
                content=(
                    TextPart(text="look"),
                    ImagePart(source=Base64Source(media_type="image/png", data="AAE=")),
                )
            ),
            AssistantMessage(
                content=(
                    ReasoningPart(text="hmm", signature="sig", provider="aws.bedrock"),
                    ReasoningPart(text="other", signature="s2", provider="openai"),
                    TextPart(text="calling"),
                )
            ),
            ToolCall(call_id="c1", name="when", args={"when": "now"}),
            ToolCall(call_id="c2", name="when", args="not json"),
            ToolResult(call_id="c1", content=(TextPart(text="ok"),)),
            ToolResult(call_id="c2", content=(TextPart(text="bad"),), is_error=True),
        ],
        tools=[ToolDef(name="when", description="", parameters=schema)],
        model_settings=ModelSettings(
            temperature=0.2, top_p=0.9, max_output_tokens=64, tool_choice=NamedToolChoice(name="when")
        ),
    )
    params = model.request_params(request)
    assert params["system"] == [{"text": "A"}, {"text": "B"}]
    assert params["inferenceConfig"] == {"temperature": 0.2, "topP": 0.9, "maxTokens": 64}
    assert params["messages"] == [
        {
            "role": "user",
            "content": [{"text": "look"}, {"image": {"format": "png", "source": {"bytes": b"\x00\x01"}}}],
        },
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}},
                {"text": "calling"},
                {"toolUse": {"toolUseId": "c1", "name": "when", "input": {"when": "now"}}},
                {"toolUse": {"toolUseId": "c2", "name": "when", "input": {}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "c1", "content": [{"text": "ok"}], "status": "success"}},
                {"toolResult": {"toolUseId": "c2", "content": [{"text": "bad"}], "status": "error"}},
            ],
        },
    ]
    assert params["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "when",
                    "description": "when",
                    "inputSchema": {"json": {"type": "object", "properties": {"when": {"type": "string"}}}},
                }
            }
        ],
        "toolChoice": {"tool": {"name": "when"}},
    }
    auto = ModelRequest(
        messages=[user("x")], tools=request.tools, model_settings=ModelSettings(tool_choice="auto")
    )
    assert model.request_params(auto)["toolConfig"]["toolChoice"] == {"auto": {}}
    none = ModelRequest(
        messages=[user("x")], tools=request.tools, model_settings=ModelSettings(tool_choice="none")
    )
    assert "toolConfig" not in model.request_params(none)


def test_request_rejects_audio_and_http_images() -> None:
    model = BedrockModel.converse("amazon.nova-pro-v1:0", region="us-east-1")
    audio = UserMessage(content=(AudioPart(source=Base64Source(media_type="audio/wav", data="AA==")),))
    with pytest.raises(UserError, match="audio"):
        model.request_params(ModelRequest(messages=[audio]))
    image = UserMessage(content=(ImagePart(source=UrlSource(url="https://x/y.png")),))
    with pytest.raises(UserError, match="s3://"):
        model.request_params(ModelRequest(messages=[image]))


def test_construction_errors_and_import_guard() -> None:
    with pytest.raises(UserError, match="model_id"):
        BedrockModel.converse("")
    code = "import sys, helikon; assert 'aiobotocore' not in sys.modules and 'botocore' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_from_env_is_lazy_and_needs_a_region(monkeypatch: pytest.MonkeyPatch) -> None:
    model = await BedrockModel.from_env("amazon.nova-micro-v1:0")
    assert model.model_name == "amazon.nova-micro-v1:0"
    await model.aclose()  # no client was ever created
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    with pytest.raises(UserError, match="AWS_REGION"):
        await BedrockModel.from_env("amazon.nova-micro-v1:0")
    assert (await BedrockModel.from_env("amazon.nova-micro-v1:0", region="eu-west-1")).model_name


async def test_aws_region_names_the_region_as_the_errors_say(monkeypatch: pytest.MonkeyPatch) -> None:
    # botocore itself reads only AWS_DEFAULT_REGION; the errors and the docs say AWS_REGION.
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_REGION", "eu-west-2")
    assert (await BedrockModel.from_env("amazon.nova-micro-v1:0")).model_name == "amazon.nova-micro-v1:0"
    recorded, model_id = replay("test_bedrock_model_stream")
    model = BedrockModel.converse(model_id, session=recorded.session())  # no region given
    await collect(model, ModelRequest(messages=[UserMessage.from_text("What is the capital of France?")]))
    assert recorded.paths[0].startswith("https://bedrock-runtime.eu-west-2.amazonaws.com/")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-1")  # AWS_REGION comes first, as in the AWS CLI
    assert (await BedrockModel.from_env("amazon.nova-micro-v1:0"))._region == "eu-west-2"  # pyright: ignore[reportPrivateUsage]


# --- the schema rewriter ----------------------------------------------------------------------

_FORBIDDEN = {"$ref", "$defs", "definitions", "oneOf", "anyOf", "allOf", "$schema", "format", "examples"}


def _keywords(schema: Any) -> Iterator[str]:
    """Every keyword in schema positions (property names are data, not keywords)."""
    if isinstance(schema, list):
        for item in schema:
            yield from _keywords(item)
        return
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        yield key
        if key == "properties" and isinstance(value, dict):
            for sub in value.values():
                yield from _keywords(sub)
        elif key in ("enum", "default", "const", "required"):
            continue
        else:
            yield from _keywords(value)


def test_rewrite_tagged_union_and_refs() -> None:
    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int

    class Dog(BaseModel):
        kind: Literal["dog"]
        good: bool = True

    class Node(BaseModel):
        name: str
        children: list[Node] = []

    class Owner(BaseModel):
        pet: Cat | Dog = Field(discriminator="kind")
        tree: Node
        nick: str | None = None

    out = rewrite_tool_schema(Owner.model_json_schema(), Ruleset.STRICT)
    assert not (_FORBIDDEN & set(_keywords(out)))
    pet: Any = out["properties"]["pet"]  # type: ignore[index]
    assert pet["type"] == "object"
    assert pet["properties"]["kind"]["enum"] == ["cat", "dog"]
    assert set(pet["properties"]) == {"kind", "lives", "good"}
    assert pet["required"] == ["kind"]
    tree: Any = out["properties"]["tree"]  # type: ignore[index]
    assert tree["properties"]["children"]["items"] == {"type": "object"}  # the cycle, cut
    assert out["properties"]["nick"]["type"] == "string"  # type: ignore[index]


_names = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"])
_scalars = st.sampled_from([int, str, float, bool])


@st.composite
def _models(draw: st.DrawFn, depth: int = 0) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name in draw(st.lists(_names, min_size=1, max_size=4, unique=True)):
        choice = draw(st.integers(0, 6 if depth < 2 else 2))
        annotation: Any
        if choice == 0:
            annotation = draw(_scalars)
        elif choice == 1:
            annotation = draw(_scalars) | None
        elif choice == 2:
            annotation = Literal[tuple(draw(st.lists(_names, min_size=1, max_size=3, unique=True)))]  # type: ignore[valid-type]
        elif choice == 3:
            annotation = draw(_models(depth + 1))
        elif choice == 4:
            annotation = list[draw(_models(depth + 1))]  # type: ignore[misc]
        elif choice == 5:
            variants = [
                create_model(
                    f"V{depth}{i}", tag=(cast(Any, Literal)[f"v{i}"], ...), value=(draw(_scalars), ...)
                )
                for i in range(draw(st.integers(2, 3)))
            ]
            annotation = Field(discriminator="tag")
            fields[name] = (Union[tuple(variants)], annotation)  # type: ignore[valid-type]  # noqa: UP007
            continue
        else:
            annotation = draw(_models(depth + 1)) | None
        fields[name] = (annotation, None if choice in (1, 6) else ...)
    return create_model(f"M{depth}_{draw(st.integers(0, 10**6))}", **fields)


@given(_models())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_rewrite_property(model: type[BaseModel]) -> None:
    schema = model.model_json_schema()
    out = rewrite_tool_schema(schema, Ruleset.STRICT)
    assert not (_FORBIDDEN & set(_keywords(out)))
    assert out["type"] == "object"
    assert set(out["properties"]) == set(schema["properties"])  # type: ignore[arg-type]


def test_rewrite_recursive_and_deep() -> None:
    recursive = {
        "$defs": {"A": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}},
        "$ref": "#/$defs/A",
    }
    out = rewrite_tool_schema(recursive)
    assert out == {"type": "object", "properties": {"a": {"type": "object"}}}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    flat = json.dumps(rewrite_tool_schema(deep))
    assert '"type": "string"' not in flat and flat.count('"properties"') <= 26
    assert rewrite_tool_schema({"$ref": "#/nowhere"}) == {"type": "object"}
    assert rewrite_tool_schema(
        {
            "type": "object",
            "allOf": [
                {"properties": {"a": {"const": 1}}, "required": ["a"]},
                {"properties": {"b": {}}, "required": ["b"]},
            ],
        }
    ) == {
        "type": "object",
        "properties": {"a": {"enum": [1]}, "b": {}},
        "required": ["a", "b"],
    }
    assert rewrite_tool_schema({"anyOf": [{"type": "string"}, {"type": "integer"}]}) == {
        "type": ["string", "integer"]
    }


# --- the agent loop ---------------------------------------------------------------------------


async def test_agent_tool_loop_over_iter_stream() -> None:
    @tool
    def get_capital(country: str) -> str:
        """Get the capital of a country.

        Args:
            country: The country name.
        """
        return "Paris"

    @tool
    def get_temperature(city: str) -> str:
        """Get the temperature in a city.

        Args:
            city: The city name.
        """
        return "30°C"

    rec, model_id = replay("test_bedrock_model_iter_stream")
    model = rec.model(model_id)
    agent = LlmAgent(
        name="weather",
        model=model,
        instructions="You are a helpful chatbot.",
        tools=[get_capital, get_temperature],
    )
    result = await agent.run("What is the temperature of the capital of France?")
    await model.aclose()
    assert "30°C" in result.final_output
    recorded = request_from("test_bedrock_model_iter_stream", 1)
    sent = rec.sent[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][-1] == recorded["messages"][1]["content"][-1]
    assert sent[2] == recorded["messages"][2]
