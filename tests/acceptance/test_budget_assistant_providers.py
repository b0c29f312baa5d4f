"""The Quickstart's budget assistant, unchanged, on every provider with recorded-shape traffic.

examples/budget_assistant.py is loaded as is; per provider only the model line differs. Each
provider's transport serves two responses in its own wire format (built with the replay
helpers of tests/providers from bodies in the recorded shapes of SCENARIOS.md §0):
turn 1 calls `lookup_spending` and `budget_status` in parallel, turn 2 streams the answer.
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
from anthropic import AsyncAnthropic
from google import genai
from google.genai import types as genai_types
from openai import AsyncOpenAI

from helikon import MessageOutput, Model, RunContext, ToolCallItem, ToolOutputItem
from helikon.providers.anthropic import AnthropicModel
from helikon.providers.gemini import GeminiModel
from helikon.providers.openai import OpenAIModel
from providers.cassettes import Interaction, ReplayTransport
from providers.test_anthropic import message_to_sse
from providers.test_bedrock import Replay, converse_to_stream
from providers.test_gemini import GeminiReplay
from providers.test_openai import chat_completion_as_sse, response_as_sse

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "budget_assistant.py"
ANSWER = "You're $62.40 over your dining budget."
CALLS = [
    ("lookup_spending", {"category": "Dining", "month": "2026-11"}),
    ("budget_status", {"category": "Dining"}),
]
OUTPUTS = [{"total": 312.4, "count": 18}, {"budget": 250.0, "spent": 312.4, "remaining": -62.4}]

Call = tuple[str, str, Any]  # (call id, tool name, arguments)
Result = tuple[str, Any]  # (call id, output)


@dataclass
class Wire:
    """A provider's model on replayed traffic, and how to read its requests back."""

    model: Model
    sent: Callable[[], list[dict[str, Any]]]
    calls: Callable[[dict[str, Any]], list[Call]]
    results: Callable[[dict[str, Any]], list[Result]]
    call_ids: list[str] | None  # the recorded ids (Gemini sends none: helikon makes them up)


def _interaction(path: str, content_type: str, body: bytes) -> Interaction:
    return Interaction("POST", path, None, 200, {"content-type": content_type}, body)


def _sse_transport(path: str, bodies: list[bytes]) -> ReplayTransport:
    return ReplayTransport([_interaction(path, "text/event-stream", b) for b in bodies])


def _http(transport: httpx2.AsyncBaseTransport) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=transport)


def _sent(transport: ReplayTransport | GeminiReplay) -> Callable[[], list[dict[str, Any]]]:
    return lambda: [json.loads(r.content) for r in transport.requests]


# --- OpenAI Chat Completions -----------------------------------------------------------------

CHAT_IDS = ["call_kX2fV9mQ7tLr4nB8wZ1yH3sD", "call_P0aJ6cE5uG2iT8oM4vR9xKqL"]


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    usage = {"prompt_tokens": 212, "completion_tokens": 58, "total_tokens": 270}
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    return {"id": "chatcmpl-CXq1", "object": "chat.completion", "created": 1764000000} | {
        "model": "gpt-5-mini-2025-08-07",
        "choices": [choice],
        "usage": usage,
    }


def openai_chat(_: pytest.MonkeyPatch) -> Wire:
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in zip(CHAT_IDS, CALLS, strict=True)
    ]
    turn1 = _completion({"content": None, "tool_calls": tool_calls, "refusal": None}, "tool_calls")
    turn2 = _completion({"content": ANSWER, "refusal": None}, "stop")
    transport = _sse_transport("/v1/chat/completions", [chat_completion_as_sse(b) for b in (turn1, turn2)])
    client = AsyncOpenAI(api_key="test", http_client=_http(transport), max_retries=0)

    def calls(body: dict[str, Any]) -> list[Call]:
        assistant = [m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
        return [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in assistant
            for c in m["tool_calls"]
        ]

    def results(body: dict[str, Any]) -> list[Result]:
        return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]

    model = OpenAIModel.chat("gpt-5-mini", client=client)
    return Wire(model, _sent(transport), calls, results, CHAT_IDS)


# --- OpenAI Responses ------------------------------------------------------------------------


def _response(output: list[dict[str, Any]]) -> dict[str, Any]:
    usage = {"input_tokens": 212, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 58}
    usage |= {"output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 270}
    return {"id": "resp_68f1c2", "object": "response", "created_at": 1764000000, "status": "completed"} | {
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-mini-2025-08-07",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def openai_responses(_: pytest.MonkeyPatch) -> Wire:
    turn1 = _response(
        [
            {"type": "function_call", "id": f"fc_68f1c2{n}", "call_id": i, "name": n}
            | {
                "arguments": json.dumps(a),
                "status": "completed",
            }
            for i, (n, a) in zip(CHAT_IDS, CALLS, strict=True)
        ]
    )
    text: dict[str, Any] = {"type": "output_text", "text": ANSWER, "annotations": []}
    message = {"type": "message", "id": "msg_68f1c3", "status": "completed", "role": "assistant"}
    turn2 = _response([message | {"content": [text]}])
    transport = _sse_transport("/v1/responses", [response_as_sse(b) for b in (turn1, turn2)])
    client = AsyncOpenAI(api_key="test", http_client=_http(transport), max_retries=0)

    def calls(body: dict[str, Any]) -> list[Call]:
        items = [i for i in body["input"] if i.get("type") == "function_call"]
        return [(i["call_id"], i["name"], json.loads(i["arguments"])) for i in items]

    def results(body: dict[str, Any]) -> list[Result]:
        items = [i for i in body["input"] if i.get("type") == "function_call_output"]
        return [(i["call_id"], i["output"]) for i in items]

    model = OpenAIModel.responses("gpt-5-mini", client=client)
    return Wire(model, _sent(transport), calls, results, CHAT_IDS)


# --- Anthropic Messages ----------------------------------------------------------------------

TOOLU_IDS = ["toolu_01EEe2V5HD1Ac4rKiUR4HD2T", "toolu_0167cfEnoQaPviGdVXA95zcu"]


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    usage = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0} | {
        "input_tokens": 423,
        "output_tokens": 102,
        "service_tier": "standard",
    }
    return {"id": "msg_011S3wxtqL5CVescWqS3zeg2", "type": "message", "role": "assistant"} | {
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic(_: pytest.MonkeyPatch) -> Wire:
    uses = [
        {"type": "tool_use", "id": i, "name": n, "input": a}
        for i, (n, a) in zip(TOOLU_IDS, CALLS, strict=True)
    ]
    turn1 = _message([{"type": "text", "text": "Let me check your dining numbers."}, *uses], "tool_use")
    turn2 = _message([{"type": "text", "text": ANSWER}], "end_turn")
    transport = _sse_transport("/v1/messages", [message_to_sse(b) for b in (turn1, turn2)])
    client = AsyncAnthropic(api_key="test", http_client=_http(transport), max_retries=0)

    def blocks(body: dict[str, Any], role: str, kind: str) -> list[dict[str, Any]]:
        return [
            b
            for m in body["messages"]
            if m["role"] == role and isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == kind
        ]

    def calls(body: dict[str, Any]) -> list[Call]:
        return [(b["id"], b["name"], b["input"]) for b in blocks(body, "assistant", "tool_use")]

    def results(body: dict[str, Any]) -> list[Result]:
        return [(b["tool_use_id"], b["content"]) for b in blocks(body, "user", "tool_result")]

    model = AnthropicModel.messages("claude-sonnet-4-6", client=client)
    return Wire(model, _sent(transport), calls, results, TOOLU_IDS)


# --- Gemini ----------------------------------------------------------------------------------


def _chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage = {"promptTokenCount": 83, "candidatesTokenCount": 30, "totalTokenCount": 113}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"} | {
        "responseId": "wOd8abGuO5rgz7IP5tLEGA"
    }


def _gemini_sse(chunks: list[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks).encode()


def gemini(_: pytest.MonkeyPatch) -> Wire:
    turn1 = [_chunk([{"functionCall": {"name": n, "args": a}} for n, a in CALLS], "STOP")]
    turn2 = [_chunk([{"text": ANSWER[:16]}]), _chunk([{"text": ANSWER[16:]}], "STOP")]
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    transport = GeminiReplay(
        [_interaction(path, "text/event-stream", _gemini_sse(t)) for t in (turn1, turn2)]
    )
    options = genai_types.HttpOptions(httpx_async_client=_http(transport))

    def parts(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
        return [p[key] for c in body["contents"] for p in c["parts"] if key in p]

    def calls(body: dict[str, Any]) -> list[Call]:
        return [(p["id"], p["name"], p["args"]) for p in parts(body, "functionCall")]

    def results(body: dict[str, Any]) -> list[Result]:
        return [(p["id"], p["response"]) for p in parts(body, "functionResponse")]

    model = GeminiModel("gemini-2.5-flash", client=genai.Client(api_key="test", http_options=options))
    return Wire(model, _sent(transport), calls, results, None)


# --- Bedrock Converse ------------------------------------------------------------------------

TOOLUSE_IDS = ["tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "tooluse_9bX3VqTnS0a4Jd2hWf8LcA"]


def _converse(content: list[dict[str, Any]], stop: str) -> bytes:
    usage = {"inputTokens": 420, "outputTokens": 64, "totalTokens": 484}
    output = {"message": {"role": "assistant", "content": content}}
    return converse_to_stream(
        {"output": output, "stopReason": stop, "usage": usage, "metrics": {"latencyMs": 812}}
    )


def bedrock(monkeypatch: pytest.MonkeyPatch) -> Wire:
    for name, value in [("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test")]:
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    uses = [
        {"toolUse": {"toolUseId": i, "name": n, "input": a}}
        for i, (n, a) in zip(TOOLUSE_IDS, CALLS, strict=True)
    ]
    turns = [_converse(uses, "tool_use"), _converse([{"text": ANSWER}], "end_turn")]
    path = "/model/anthropic.claude-3-5-sonnet-20241022-v2:0/converse-stream"
    replay = Replay([_interaction(path, "application/vnd.amazon.eventstream", t) for t in turns])

    def blocks(body: dict[str, Any], role: str, kind: str) -> list[dict[str, Any]]:
        return [b[kind] for m in body["messages"] if m["role"] == role for b in m["content"] if kind in b]

    def calls(body: dict[str, Any]) -> list[Call]:
        return [(b["toolUseId"], b["name"], b["input"]) for b in blocks(body, "assistant", "toolUse")]

    def results(body: dict[str, Any]) -> list[Result]:
        return [(b["toolUseId"], b["content"]) for b in blocks(body, "user", "toolResult")]

    model = replay.model("anthropic.claude-3-5-sonnet-20241022-v2:0")
    return Wire(model, lambda: replay.sent, calls, results, TOOLUSE_IDS)


# --- the acceptance test ---------------------------------------------------------------------


def _output(value: Any) -> Any:
    """A tool output as sent, whatever the provider's shape (string, text blocks, object)."""
    if isinstance(value, list):
        blocks = cast(list[dict[str, Any]], value)
        value = "".join(b.get("text", "") for b in blocks)
    return json.loads(value) if isinstance(value, str) else value


@pytest.mark.parametrize("provider", [openai_chat, openai_responses, anthropic, gemini, bedrock])
async def test_the_budget_assistant_runs_unchanged_on_each_provider(
    provider: Callable[[pytest.MonkeyPatch], Wire], monkeypatch: pytest.MonkeyPatch
) -> None:
    example = runpy.run_path(str(EXAMPLE), run_name="budget_assistant_providers_test")
    wire = provider(monkeypatch)

    agent = example["build_agent"](wire.model)  # the agent code: identical for every provider
    events = [e async for e in agent.run(example["QUESTION"], context=RunContext.ephemeral(None))]
    aclose = getattr(wire.model, "aclose", None)  # Bedrock's aiobotocore client
    if aclose is not None:
        await aclose()

    assert [(e.item.name, e.item.args) for e in events if isinstance(e, ToolCallItem)] == CALLS
    assert [json.loads(e.item.text) for e in events if isinstance(e, ToolOutputItem)] == OUTPUTS
    assert [e for e in events if isinstance(e, MessageOutput)][-1].item.text == ANSWER
    assert events[-1].type == "run_completed"

    first, second = wire.sent()
    assert example["QUESTION"] in json.dumps(first)
    assert wire.calls(first) == [] and wire.results(first) == []
    calls = wire.calls(second)
    assert [(name, args) for _, name, args in calls] == CALLS
    ids = [call_id for call_id, _, _ in calls]
    if wire.call_ids is not None:
        assert ids == wire.call_ids
    assert len(set(ids)) == 2
    assert [(call_id, _output(out)) for call_id, out in wire.results(second)] == list(
        zip(ids, OUTPUTS, strict=True)
    )
