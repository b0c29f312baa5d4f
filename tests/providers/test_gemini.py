"""GeminiModel against every recorded Gemini cassette (replayed, never the network).

The installed `google-genai` talks httpx2 when given `HttpOptions(httpx_async_client=...)`,
and always streams with `:streamGenerateContent?alt=sse` on `/v1` (the recordings say
`/v1beta` or Vertex's `/v1beta1/.../publishers/google`), so `GeminiReplay` matches on the
model method only and serves every recording in the SSE form the SDK reads: non-streamed
`generateContent` JSON bodies and llm-gemini's JSON-array streams are re-encoded here.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx2
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

from helikon import LlmAgent, tool
from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import (
    ContextLengthExceeded,
    OtherModelError,
    RateLimited,
    Refused,
    Transport,
    Unavailable,
    UserError,
)
from helikon.core.items import (
    AssistantMessage,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
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
from helikon.providers._gemini_schema import STRIPPED, sanitize
from helikon.providers.gemini import GeminiModel

from .cassettes import FIXTURES, Interaction, load

CASSETTES = sorted(p.stem for p in (FIXTURES / "gemini").glob("*.yaml"))

# --- replay ----------------------------------------------------------------------------------


def _sse(chunks: list[Any]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks).encode()


def recorded_chunks(interaction: Interaction) -> list[dict[str, Any]]:
    """The response chunks of a recording, whatever its encoding (SSE, JSON array, one JSON)."""
    text = interaction.body.decode()
    if "event-stream" in interaction.headers.get("content-type", ""):
        return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    value = json.loads(text)
    return value if isinstance(value, list) else [value]


@dataclass
class GeminiReplay(httpx2.AsyncBaseTransport):
    """Serves a cassette's responses in order as SSE; records the requests it was sent."""

    interactions: list[Interaction]
    requests: list[httpx2.Request] = field(default_factory=lambda: [])

    @classmethod
    def of(cls, cassette: str) -> GeminiReplay:
        return cls(load(f"gemini/{cassette}.yaml"))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        self.requests.append(request)
        method = request.url.path.rsplit(":", 1)[-1]
        assert method == "streamGenerateContent", request.url
        assert self.interactions, f"no recorded response left for {request.url}"
        interaction = self.interactions.pop(0)
        recorded_method = interaction.path.rsplit(":", 1)[-1]
        assert recorded_method in ("generateContent", "streamGenerateContent")
        if interaction.status != 200:
            return httpx2.Response(
                interaction.status,
                headers={"content-type": "application/json"},
                content=interaction.body,
                request=request,
            )
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=_sse(recorded_chunks(interaction)),
            request=request,
        )

    def sent_json(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


@dataclass
class Canned(httpx2.AsyncBaseTransport):
    """Answers every request with one hand-built response."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    requests: list[httpx2.Request] = field(default_factory=lambda: [])

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        self.requests.append(request)
        return httpx2.Response(self.status, headers=self.headers, content=self.body, request=request)


def model_for(transport: httpx2.AsyncBaseTransport, model_id: str = "gemini-test") -> GeminiModel:
    options = genai_types.HttpOptions(httpx_async_client=httpx2.AsyncClient(transport=transport))
    return GeminiModel(model_id, client=genai.Client(api_key="test-key", http_options=options))


async def collect(model: GeminiModel, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.invoke(request, CancellationToken())]


_SYNTHETIC = re.compile(r"^call_[0-9a-f]{24}$")


def stable(events: list[ModelEvent]) -> list[ModelEvent]:
    """Synthesized call ids replaced by `call_N` (they are random by design)."""
    ids: dict[str, str] = {}
    out: list[ModelEvent] = []
    for event in events:
        if isinstance(event, ToolCallDelta) and _SYNTHETIC.match(event.call_id):
            event = ToolCallDelta(
                call_id=ids.setdefault(event.call_id, f"call_{len(ids)}"),
                name=event.name,
                args_delta=event.args_delta,
            )
        out.append(event)
    return out


# --- recorded request -> helikon request -----------------------------------------------------


def _get(mapping: dict[str, Any], camel: str) -> Any:
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return mapping.get(camel, mapping.get(snake))


def _sig_text(raw: str) -> str:
    """A recorded thoughtSignature (standard or URL-safe base64) as standard base64."""
    return base64.b64encode(base64.urlsafe_b64decode(raw.replace("+", "-").replace("/", "_"))).decode()


def items_from_body(body: dict[str, Any]) -> list[Item]:
    """The helikon conversation that a recorded request body encodes."""
    items: list[Item] = []
    system = _get(body, "systemInstruction")
    if system:
        items.append(SystemMessage(text="".join(p.get("text", "") for p in system["parts"])))
    for content in body["contents"]:
        parts = content["parts"]
        if content.get("role", "user") == "user":
            texts = [p["text"] for p in parts if "text" in p]
            if texts:
                items.append(UserMessage(content=tuple(TextPart(text=t) for t in texts)))
            for p in parts:
                response = _get(p, "functionResponse")
                if response is not None:
                    items.append(
                        ToolResult(
                            call_id=response.get("id") or response["name"],
                            name=response["name"],
                            content=(TextPart(text=json.dumps(response["response"])),),
                        )
                    )
            continue
        signature = next((_sig_text(s) for p in parts if (s := _get(p, "thoughtSignature"))), None)
        message: list[Any] = []
        if signature:
            message.append(ReasoningPart(text="", signature=signature, provider="gemini"))
        message.extend(TextPart(text=p["text"]) for p in parts if p.get("text") and not p.get("thought"))
        if message:
            items.append(AssistantMessage(content=tuple(message)))
        for p in parts:
            call = _get(p, "functionCall")
            if call is not None:
                items.append(
                    ToolCall(call_id=call.get("id") or call["name"], name=call["name"], args=call["args"])
                )
    return items


def tools_from_body(body: dict[str, Any]) -> list[ToolDef]:
    out: list[ToolDef] = []
    for group in body.get("tools", []):
        for decl in _get(group, "functionDeclarations") or []:
            schema: dict[str, Any] = (
                decl.get("parameters") or _get(decl, "parametersJsonSchema") or {"type": "object"}
            )
            out.append(ToolDef(name=decl["name"], description=decl.get("description", ""), parameters=schema))
    return out


def request_from_body(body: dict[str, Any]) -> ModelRequest:
    config = _get(body, "generationConfig") or {}
    mode = ((_get(body, "toolConfig") or {}).get("functionCallingConfig") or {}).get("mode")
    schema = _get(config, "responseJsonSchema") or _get(config, "responseSchema")
    return ModelRequest(
        messages=items_from_body(body),
        tools=tools_from_body(body),
        model_settings=ModelSettings(
            temperature=config.get("temperature"),
            tool_choice="required" if mode == "ANY" else None,
            response_format=ResponseFormat.json_schema(name="Out", schema=schema) if schema else None,
        ),
    )


def normalized_contents(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contents in one spelling: camelCase keys, decoded signatures, no ids, no empty text."""
    out: list[dict[str, Any]] = []
    for content in contents:
        parts: list[dict[str, Any]] = []
        for p in content["parts"]:
            if p.get("thought"):
                continue
            part: dict[str, Any] = {}
            if p.get("text"):
                part["text"] = p["text"]
            if (call := _get(p, "functionCall")) is not None:
                part["functionCall"] = {"name": call["name"], "args": call["args"]}
            if (response := _get(p, "functionResponse")) is not None:
                part["functionResponse"] = {"name": response["name"], "response": response["response"]}
            if (signature := _get(p, "thoughtSignature")) and "functionCall" in part:
                part["thoughtSignature"] = _sig_text(signature)
            if part:
                parts.append(part)
        role = content.get("role", "user")
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        elif parts:
            out.append({"role": role, "parts": parts})
    return out


def declared_names(body: dict[str, Any]) -> list[str]:
    return [d["name"] for g in body.get("tools", []) for d in _get(g, "functionDeclarations") or []]


# --- the independent oracle ------------------------------------------------------------------


def expected_events(chunks: list[dict[str, Any]]) -> list[ModelEvent]:
    """What the adapter must emit for these recorded chunks, derived from the wire JSON."""
    events: list[ModelEvent] = []
    usage: dict[str, Any] = {}
    finish = None
    called = False
    for chunk in chunks:
        usage = chunk.get("usageMetadata", usage)
        for candidate in chunk.get("candidates", [])[:1]:
            for p in candidate.get("content", {}).get("parts", []):
                signature = _sig_text(p["thoughtSignature"]) if p.get("thoughtSignature") else None
                if "functionCall" in p:
                    if signature:
                        events.append(ReasoningDelta(text="", signature=signature))
                    call = p["functionCall"]
                    called = True
                    events.append(
                        ToolCallDelta(
                            call_id=call.get(
                                "id", f"call_{sum(isinstance(e, ToolCallDelta) for e in events)}"
                            ),
                            name=call["name"],
                            args_delta=json.dumps(call.get("args", {})),
                        )
                    )
                elif p.get("thought"):
                    events.append(ReasoningDelta(text=p.get("text", ""), signature=signature))
                else:
                    if p.get("text"):
                        events.append(TokenDelta(text=p["text"]))
                    if signature:
                        events.append(ReasoningDelta(text="", signature=signature))
            finish = candidate.get("finishReason", finish)
    thoughts = usage.get("thoughtsTokenCount", 0)
    events.append(
        Usage(
            input_tokens=usage.get("promptTokenCount", 0),
            output_tokens=usage.get("candidatesTokenCount", 0) + thoughts,
            cached_input_tokens=usage.get("cachedContentTokenCount", 0),
            reasoning_tokens=thoughts,
        )
    )
    reason = {"STOP": "tool_calls" if called else "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter"}
    events.append(Finish(reason=reason.get(finish or "", "other")))  # type: ignore[arg-type]
    return events


def _model_id(interaction: Interaction) -> str:
    return interaction.path.rsplit("/", 1)[-1].split(":")[0]


# --- every cassette, every interaction -------------------------------------------------------


@pytest.mark.parametrize("cassette", CASSETTES)
async def test_cassette_replays_to_the_recorded_events_and_request(cassette: str) -> None:
    recordings = load(f"gemini/{cassette}.yaml")
    transport = GeminiReplay.of(cassette)
    model = model_for(transport, _model_id(recordings[0]))
    for index, recording in enumerate(recordings):
        request = request_from_body(recording.request_body)
        if recording.status != 200:
            with pytest.raises(OtherModelError) as info:
                await collect(model, request)
            assert info.value.status_code == recording.status
            continue
        events = stable(await collect(model, request))
        assert events == stable(expected_events(recorded_chunks(recording)))
        sent, recorded = transport.sent_json(index), recording.request_body
        assert normalized_contents(sent["contents"]) == normalized_contents(recorded["contents"])
        assert declared_names(sent) == declared_names(recorded)
        if _get(recorded, "systemInstruction"):
            assert sent["systemInstruction"]["parts"] == _get(recorded, "systemInstruction")["parts"]
        recorded_config = _get(recorded, "generationConfig") or {}
        if _get(recorded_config, "responseMimeType"):
            assert sent["generationConfig"]["responseMimeType"] == "application/json"
            assert "responseSchema" in sent["generationConfig"]
    assert not transport.interactions


# --- explicit sequences (hand-checked against the recordings) --------------------------------


async def test_text_stream_events_and_request() -> None:
    transport = GeminiReplay.of("test_google_model_stream")
    request = ModelRequest(
        messages=[
            SystemMessage(text="You are a helpful chatbot."),
            UserMessage.from_text("What is the capital of France?"),
        ],
        model_settings=ModelSettings(temperature=0.0),
    )
    events = await collect(model_for(transport, "gemini-2.0-flash-exp"), request)
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == "The capital of France is Paris.\n"
    # Usage comes from the last usageMetadata (its promptTokenCount differs from the first).
    assert events[-2:] == [Usage(input_tokens=13, output_tokens=8), Finish(reason="stop")]
    sent = transport.sent_json()
    assert sent["systemInstruction"]["parts"] == [{"text": "You are a helpful chatbot."}]
    assert sent["generationConfig"] == {"temperature": 0.0}
    assert sent["contents"] == [{"parts": [{"text": "What is the capital of France?"}], "role": "user"}]
    assert transport.requests[0].url.params["alt"] == "sse"


async def test_safety_block_finishes_with_content_filter() -> None:
    transport = GeminiReplay.of("test_google_model_safety_settings")
    events = await collect(model_for(transport), ModelRequest(messages=[UserMessage.from_text("joke")]))
    assert events == [Usage(input_tokens=14), Finish(reason="content_filter")]


async def test_json_array_stream_with_thoughts_and_signature() -> None:
    transport = GeminiReplay.of("test_tools")
    tools = tools_from_body(load("gemini/test_tools.yaml")[0].request_body)
    events = await collect(
        model_for(transport), ModelRequest(messages=[UserMessage.from_text("x")], tools=tools)
    )
    kinds = [type(e) for e in events]
    assert kinds == [ReasoningDelta, ReasoningDelta, ToolCallDelta, Usage, Finish]
    thought, signed, call = events[0], events[1], events[2]
    assert isinstance(thought, ReasoningDelta) and thought.text and thought.signature is None
    assert isinstance(signed, ReasoningDelta) and signed.text == "" and signed.signature
    assert (
        isinstance(call, ToolCallDelta) and call.name == "pelican_name_generator" and call.args_delta == "{}"
    )
    assert _SYNTHETIC.match(call.call_id)
    assert events[-1] == Finish(reason="tool_calls")
    usage = events[-2]
    assert isinstance(usage, Usage) and usage.reasoning_tokens > 0
    assert usage.output_tokens > usage.reasoning_tokens


async def test_parallel_calls_and_usage() -> None:
    transport = GeminiReplay.of("test_google_instructions_only_with_tool_calls")
    recording = load("gemini/test_google_instructions_only_with_tool_calls.yaml")[0]
    events = await collect(model_for(transport), request_from_body(recording.request_body))
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [c.name for c in calls] == ["generate_topic"] * 3
    assert len({c.call_id for c in calls}) == 3
    assert events[-1] == Finish(reason="tool_calls")
    assert transport.sent_json()["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert transport.sent_json()["contents"] == [{"parts": [{"text": ""}], "role": "user"}]


async def test_thought_signature_round_trips_on_the_function_call() -> None:
    cassette = "test_google_streaming_tool_call_thought_signature"
    recordings = load(f"gemini/{cassette}.yaml")
    transport = GeminiReplay.of(cassette)
    model = model_for(transport, "gemini-3-pro-preview")
    tools = tools_from_body(recordings[0].request_body)
    first = await collect(model, ModelRequest(messages=[UserMessage.from_text("q")], tools=tools))
    signature = next(e.signature for e in first if isinstance(e, ReasoningDelta))
    call = next(e for e in first if isinstance(e, ToolCallDelta))
    history: list[Item] = [
        UserMessage.from_text("q"),
        AssistantMessage(content=(ReasoningPart(text="", signature=signature, provider="gemini"),)),
        ToolCall(call_id=call.call_id, name=call.name, args={}),
        ToolResult(call_id=call.call_id, content=(TextPart(text="Mexico"),)),
    ]
    await collect(model, ModelRequest(messages=history, tools=tools))
    model_turn = transport.sent_json(1)["contents"][1]
    assert model_turn["role"] == "model"
    [part] = model_turn["parts"]
    assert part["functionCall"] == {"id": call.call_id, "name": "get_country", "args": {}}
    recorded = recordings[1].request_body["contents"][1]["parts"][0]["thoughtSignature"]
    assert _sig_text(part["thoughtSignature"]) == _sig_text(recorded)
    response = transport.sent_json(1)["contents"][2]["parts"][0]["functionResponse"]
    assert response == {"id": call.call_id, "name": "get_country", "response": {"result": "Mexico"}}


async def test_signature_from_another_provider_is_not_sent() -> None:
    transport = GeminiReplay.of("test_google_model")
    history: list[Item] = [
        UserMessage.from_text("q"),
        AssistantMessage(
            content=(ReasoningPart(text="t", signature="c2ln", provider="anthropic"), TextPart(text="a"))
        ),
        UserMessage.from_text("again"),
    ]
    await collect(model_for(transport), ModelRequest(messages=history))
    assert transport.sent_json()["contents"][1] == {"role": "model", "parts": [{"text": "a"}]}


# --- request mapping -------------------------------------------------------------------------


async def test_settings_tool_choice_and_schema_sanitized_in_tools() -> None:
    transport = GeminiReplay.of("test_tool_choice_matrix[required-google]")
    schema = {
        "type": "object",
        "additionalProperties": False,
        "$defs": {"Unit": {"enum": ["c", "f"], "type": "string"}},
        "properties": {"city": {"type": "string", "default": "x"}, "unit": {"$ref": "#/$defs/Unit"}},
        "required": ["city"],
    }
    request = ModelRequest(
        messages=[UserMessage.from_text("weather?")],
        tools=[ToolDef(name="get_weather", description="Weather.", parameters=schema)],
        model_settings=ModelSettings(
            temperature=0.5, top_p=0.9, max_output_tokens=64, tool_choice=NamedToolChoice(name="get_weather")
        ),
    )
    await collect(model_for(transport), request)
    sent = transport.sent_json()
    assert sent["generationConfig"] == {"temperature": 0.5, "topP": 0.9, "maxOutputTokens": 64}
    assert sent["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    [decl] = sent["tools"][0]["functionDeclarations"]
    assert decl["parameters"] == {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}, "unit": {"type": "STRING", "enum": ["c", "f"]}},
        "required": ["city"],
    }


@pytest.mark.parametrize(("choice", "mode"), [("auto", "AUTO"), ("none", "NONE"), ("required", "ANY")])
def test_tool_choice_modes(choice: Any, mode: str) -> None:
    model = GeminiModel.developer("m", api_key="k")
    request = ModelRequest(
        messages=[UserMessage.from_text("x")], model_settings=ModelSettings(tool_choice=choice)
    )
    config = model.request_params(request)["config"]
    assert config["tool_config"] == {"function_calling_config": {"mode": mode}}


def test_tool_results_become_objects() -> None:
    model = GeminiModel.developer("m", api_key="k")
    items: list[Item] = [
        UserMessage.from_text("x"),
        ToolCall(call_id="a", name="f", args={"n": 1}),
        ToolCall(call_id="b", name="g", args="not json"),
        ToolResult(call_id="a", content=(TextPart(text='{"ok": true}'),)),
        ToolResult(call_id="b", content=(TextPart(text="[1, 2]"),), name="g"),
        ToolResult(call_id="b", content=(TextPart(text="boom"),), is_error=True),
    ]
    contents = model.request_params(ModelRequest(messages=items))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][1]["function_call"]["args"] == {}
    responses = [p["function_response"] for p in contents[2]["parts"]]
    assert [r["name"] for r in responses] == ["f", "g", "g"]
    assert [r["response"] for r in responses] == [{"ok": True}, {"result": [1, 2]}, {"error": "boom"}]


async def test_structured_output_sends_mime_type_and_sanitized_schema() -> None:
    transport = GeminiReplay.of("test_google_native_output")

    class City(BaseModel):
        city: str
        country: str | None = None

    fmt = ResponseFormat.json_schema(name="City", schema=City.model_json_schema())
    request = ModelRequest(
        messages=[UserMessage.from_text("largest city?")], model_settings=ModelSettings(response_format=fmt)
    )
    events = await collect(model_for(transport), request)
    text = "".join(e.text for e in events if isinstance(e, TokenDelta))
    assert json.loads(text) == {"city": "Mexico City", "country": "Mexico"}
    config = transport.sent_json()["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["properties"]["country"] == {
        "type": "STRING",
        "nullable": True,
        "title": "Country",
    }


@pytest.mark.parametrize(
    "settings_",
    [
        ModelSettings(response_format=ResponseFormat.json_object(), tool_choice="none"),
        ModelSettings(response_format=ResponseFormat.json_schema(name="X", schema={"type": "object"})),
    ],
)
async def test_structured_output_with_tools_is_a_user_error_before_sending(settings_: ModelSettings) -> None:
    transport = Canned(500, b"{}")
    tools = (
        [ToolDef(name="t", description="", parameters={"type": "object"})]
        if settings_.tool_choice is None
        else []
    )
    request = ModelRequest(messages=[UserMessage.from_text("x")], tools=tools, model_settings=settings_)
    with pytest.raises(UserError, match="structured output"):
        await collect(model_for(transport), request)
    assert transport.requests == []


# --- errors ----------------------------------------------------------------------------------


def _google_error(code: int, status: str, message: str, details: list[Any] | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details is not None:
        error["details"] = details
    return json.dumps({"error": error}).encode()


async def _raises(transport: httpx2.AsyncBaseTransport) -> BaseException:
    with pytest.raises(Exception) as info:
        await collect(model_for(transport), ModelRequest(messages=[UserMessage.from_text("x")]))
    return info.value


async def test_429_is_rate_limited_with_retry_info() -> None:
    details = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
    ]
    error = await _raises(Canned(429, _google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", details)))
    assert isinstance(error, RateLimited) and error.retry_after_ms == 37_000 and error.status_code == 429


async def test_429_falls_back_to_retry_after_header() -> None:
    body = _google_error(429, "RESOURCE_EXHAUSTED", "Slow down.")
    error = await _raises(Canned(429, body, headers={"content-type": "application/json", "retry-after": "2"}))
    assert isinstance(error, RateLimited) and error.retry_after_ms == 2000


async def test_429_without_hint() -> None:
    error = await _raises(Canned(429, _google_error(429, "RESOURCE_EXHAUSTED", "Slow down.")))
    assert isinstance(error, RateLimited) and error.retry_after_ms is None


@pytest.mark.parametrize(("code", "status"), [(500, "INTERNAL"), (503, "UNAVAILABLE")])
async def test_5xx_is_unavailable(code: int, status: str) -> None:
    error = await _raises(Canned(code, _google_error(code, status, "The model is overloaded.")))
    assert isinstance(error, Unavailable) and error.status_code == code and error.retryable


async def test_token_limit_is_context_length_exceeded() -> None:
    message = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    error = await _raises(Canned(400, _google_error(400, "INVALID_ARGUMENT", message)))
    assert isinstance(error, ContextLengthExceeded) and error.status_code == 400


async def test_other_4xx_is_other_model_error() -> None:
    error = await _raises(Canned(403, _google_error(403, "PERMISSION_DENIED", "API key not valid.")))
    assert (
        isinstance(error, OtherModelError) and error.status_code == 403 and "API key not valid" in str(error)
    )


async def test_connection_error_is_transport() -> None:
    class Broken(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ConnectError("connection refused", request=request)

    assert isinstance(await _raises(Broken()), Transport)


async def test_blocked_prompt_is_refused() -> None:
    chunk = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 3},
    }
    transport = Canned(200, _sse([chunk]), headers={"content-type": "text/event-stream"})
    error = await _raises(transport)
    assert isinstance(error, Refused) and "PROHIBITED_CONTENT" in str(error)


@pytest.mark.parametrize(
    ("reason", "expected"), [("MAX_TOKENS", "length"), ("RECITATION", "content_filter"), ("OTHER", "other")]
)
async def test_finish_reasons(reason: str, expected: str) -> None:
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": reason}]
    }
    transport = Canned(200, _sse([chunk]), headers={"content-type": "text/event-stream"})
    events = await collect(model_for(transport), ModelRequest(messages=[UserMessage.from_text("x")]))
    assert events == [TokenDelta(text="hi"), Finish(reason=expected)]  # type: ignore[arg-type]


async def test_stream_without_finish_is_transport() -> None:
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}}]}
    transport = Canned(200, _sse([chunk]), headers={"content-type": "text/event-stream"})
    assert isinstance(await _raises(transport), Transport)


async def test_cancellation_stops_the_stream() -> None:
    transport = GeminiReplay.of("test_google_model_stream")
    cancel = CancellationToken()
    events: list[ModelEvent] = []
    async for event in model_for(transport).invoke(
        ModelRequest(messages=[UserMessage.from_text("x")]), cancel
    ):
        events.append(event)
        cancel.cancel()
    assert events == [TokenDelta(text="The")]


# --- construction ----------------------------------------------------------------------------


def test_from_env_reads_either_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    model = GeminiModel.from_env("gemini-2.5-flash")
    assert model.client._api_client.api_key == "g-key"  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key")
    assert GeminiModel.from_env("m").client._api_client.api_key == "gem-key"  # pyright: ignore[reportPrivateUsage]
    assert (model.provider, model.model_name) == ("gemini", "gemini-2.5-flash")
    caps = model.capabilities()
    assert caps.streaming and caps.tools and caps.structured_output and caps.reasoning
    assert not caps.server_managed_state


def test_missing_key_names_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(UserError, match=r"GEMINI_API_KEY.*GOOGLE_API_KEY"):
        GeminiModel.from_env("gemini-2.5-flash")


def test_bad_arguments_are_user_errors() -> None:
    with pytest.raises(UserError, match="model_id"):
        GeminiModel.developer("", api_key="k")
    with pytest.raises(UserError, match="api_key"):
        GeminiModel.developer("m", api_key="")
    with pytest.raises(UserError, match="project"):
        GeminiModel.vertex("m", "")


def test_vertex_with_bearer_token_and_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    model = GeminiModel.vertex("gemini-2.5-flash", "my-project", "us-central1", bearer_token="ya29.token")
    api = model.client._api_client  # pyright: ignore[reportPrivateUsage]
    assert api.vertexai and api.project == "my-project" and api.location == "us-central1"
    assert api._credentials is not None and api._credentials.token == "ya29.token"  # pyright: ignore
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    api = GeminiModel.vertex_from_env("m").client._api_client  # pyright: ignore[reportPrivateUsage]
    assert (api.project, api.location, api._credentials) == ("env-project", "global", None)  # pyright: ignore
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    with pytest.raises(UserError, match="GOOGLE_CLOUD_PROJECT"):
        GeminiModel.vertex_from_env("m")


async def test_vertex_bearer_token_is_sent() -> None:
    recording = load("gemini/test_multimodal_tool_return_matrix[direct-url-image-google_vertex].yaml")[0]
    transport = GeminiReplay([recording])
    options = genai_types.HttpOptions(httpx_async_client=httpx2.AsyncClient(transport=transport))
    model = GeminiModel.vertex(
        "gemini-3-pro-preview", "p", "global", bearer_token="ya29.t", http_options=options
    )
    await collect(model, request_from_body(recording.request_body))
    sent = transport.requests[0]
    assert sent.headers["authorization"] == "Bearer ya29.t"
    assert "/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview" in sent.url.path


def test_import_helikon_does_not_import_google_genai() -> None:
    code = "import sys, helikon; assert 'google.genai' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})


# --- the sanitizer ---------------------------------------------------------------------------


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        out = set(node)
        for value in node.values():
            out |= _keys(value)
        return out
    if isinstance(node, list):
        return set().union(*(_keys(v) for v in node)) if node else set()
    return set()


def test_sanitizer_book_rules() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "definitions": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}}}},
        "properties": {
            "kind": {"const": "cat"},
            "age": {"type": ["integer", "null"], "format": "int32", "examples": [3]},
            "when": {"type": "string", "format": "date-time"},
            "email": {"type": "string", "format": "email"},
            "pet": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "tags": {"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
            "node": {"$ref": "#/definitions/Node", "description": "A node."},
        },
    }
    assert sanitize(schema) == {
        "type": "object",
        "properties": {
            "kind": {"enum": ["cat"], "type": "string"},
            "age": {"type": "integer", "nullable": True, "format": "int32"},
            "when": {"type": "string", "format": "date-time"},
            "email": {"type": "string"},
            "pet": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "tags": {"type": "object"},
            "node": {
                "type": "object",
                "properties": {"next": {"type": "object"}},
                "description": "A node.",
            },
        },
    }


class Color(BaseModel):
    hue: int = Field(ge=0, le=360, examples=[120])


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


class Tree(BaseModel):
    """Recursive: the sanitizer must stop inlining it somewhere."""

    label: str
    children: list[Tree] = []


Pet = Annotated[Cat | Dog, Field(discriminator="kind")]  # a tagged union: oneOf + discriminator

_LEAVES: list[Any] = [
    int,
    str,
    float,
    bool,
    int | None,
    str | None,
    Literal["a", "b", "c"],
    Color,
    Color | None,
    Tree,
    list[Color],
    Pet,
    list[Pet],
    dict[str, int],
]


@st.composite
def models(draw: st.DrawFn, depth: int = 0) -> type[BaseModel]:
    """Pydantic models with nested, optional, enum, tagged-union and recursive fields."""
    fields: dict[str, Any] = {}
    for i in range(draw(st.integers(min_value=1, max_value=4))):
        if depth < 2 and draw(st.booleans()):
            kind: Any = draw(models(depth + 1))
            kind = kind | None if draw(st.booleans()) else kind
        else:
            kind = draw(st.sampled_from(_LEAVES))
        default: Any = None if draw(st.booleans()) else ...
        fields[f"f{i}"] = (kind | None if default is None else kind, default)
    return create_model(f"Generated{depth}", **fields)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models())
def test_sanitizer_output_has_no_stripped_keywords(model: type[BaseModel]) -> None:
    schema = model.model_json_schema()
    out = sanitize(schema)
    keys = _keys(out)
    assert not keys & STRIPPED
    assert "$ref" not in keys and "oneOf" not in keys and "const" not in keys
    # Property names are data, not keywords: they may be anything, but never a stripped one here.
    genai_types.Schema.model_validate(out)  # the SDK's own Schema accepts it (extras are forbidden)


# --- end to end through LlmAgent -------------------------------------------------------------


async def test_agent_runs_tool_loop_and_round_trips_signature() -> None:
    @tool
    def multiply(x: int, y: int) -> int:
        """Multiply two numbers."""
        return x * y

    cassette = "test_tools_with_gemini_3_thought_signatures"
    transport = GeminiReplay.of(cassette)
    agent = LlmAgent(name="calc", model=model_for(transport, "gemini-3-flash-preview"), tools=[multiply])
    result = await agent.run("What is 5 times 3?")
    assert result.final_output == "5 times 3 is 15."
    second = transport.sent_json(1)
    assert [c["role"] for c in second["contents"]] == ["user", "model", "user"]
    [call] = second["contents"][1]["parts"]
    assert call["functionCall"]["name"] == "multiply" and call["functionCall"]["args"] == {"x": 5, "y": 3}
    recorded = load(f"gemini/{cassette}.yaml")[1].request_body["contents"][1]["parts"][1]["thoughtSignature"]
    assert _sig_text(call["thoughtSignature"]) == _sig_text(recorded)
    [response] = second["contents"][2]["parts"]
    assert response["functionResponse"]["name"] == "multiply"
    assert response["functionResponse"]["response"] == {"result": 15}
    assert response["functionResponse"]["id"] == call["functionCall"]["id"]


def test_cassettes_are_all_here() -> None:
    assert len(CASSETTES) == 14
    assert all(Path(FIXTURES / "gemini" / f"{c}.yaml").exists() for c in CASSETTES)
