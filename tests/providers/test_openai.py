# ruff: noqa: RUF001 - recorded model text holds typographic quotes and signs
"""OpenAIModel: every openai_chat / openai_responses cassette replayed, errors, cancellation, schemas.

Non-streamed recordings are turned into the equivalent SSE stream (the adapter always
streams), and each recorded request body is turned back into the `ModelRequest` it
corresponds to, so the body the adapter sends can be compared with the recorded one.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, Literal

import httpx2
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import (
    ContextLengthExceeded,
    ModelError,
    OtherModelError,
    RateLimited,
    Refused,
    Transport,
    Unavailable,
    UserError,
)
from helikon.core.items import (
    AssistantMessage,
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
from helikon.core.schema import strict
from helikon.providers._openai_responses import reasoning_signature
from helikon.providers.openai import OpenAIModel, OpenAISettings

from .cassettes import FIXTURES, ReplayTransport, load


def _sse(events: list[dict[str, Any]], *, done: bool) -> bytes:
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def chat_completion_as_sse(completion: dict[str, Any]) -> bytes:
    """The chunk stream equivalent to a non-streamed chat completion."""
    base = {k: completion.get(k) for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks: list[dict[str, Any]] = []
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks.append(chunk({"role": "assistant"}))
    if message.get("reasoning_content"):
        chunks.append(chunk({"reasoning_content": message["reasoning_content"]}))
    if message.get("content"):
        chunks.append(chunk({"content": message["content"]}))
    if message.get("refusal"):
        chunks.append(chunk({"refusal": message["refusal"]}))
    for index, call in enumerate(message.get("tool_calls") or ()):
        fragment = {"index": index, "type": "function", "function": call["function"]}
        if call.get("id"):
            fragment["id"] = call["id"]
        chunks.append(chunk({"tool_calls": [fragment]}))
    chunks.append(chunk({}, choice.get("finish_reason")))
    if completion.get("usage"):
        chunks.append(base | {"choices": [], "usage": completion["usage"]})
    return _sse(chunks, done=True)


def response_as_sse(response: dict[str, Any]) -> bytes:
    """The event stream equivalent to a non-streamed Responses API response."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response | {"status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(response.get("output") or []):
        item_id = item.get("id")
        if item["type"] == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": item | {"arguments": ""},
                }
            )
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "item_id": item_id,
                    "delta": item["arguments"],
                }
            )
        else:
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
            for part in item.get("content") or []:
                if part["type"] == "output_text":
                    events.append(
                        {"type": "response.output_text.delta", "item_id": item_id, "delta": part["text"]}
                    )
                elif part["type"] == "refusal":
                    events.append(
                        {"type": "response.refusal.delta", "item_id": item_id, "delta": part["refusal"]}
                    )
            for part in item.get("summary") or []:
                events.append(  # noqa: PERF401
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": item_id,
                        "delta": part["text"],
                    }
                )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": f"response.{response.get('status', 'completed')}", "response": response})
    return _sse(events, done=False)


def replay(cassette: str) -> ReplayTransport:
    """A replay transport whose non-streamed 200 bodies are turned into the equivalent SSE."""
    transport = ReplayTransport(load(cassette))
    for interaction in transport.interactions:
        if interaction.status != 200 or interaction.body.lstrip().startswith((b"data:", b"event:")):
            continue
        body = json.loads(interaction.body)
        sse = (
            chat_completion_as_sse(body)
            if interaction.path.endswith("/chat/completions")
            else response_as_sse(body)
        )
        interaction.body = sse
        interaction.headers["content-type"] = "text/event-stream"
    return transport


def client_for(transport: httpx2.AsyncBaseTransport, base_url: str | None = None) -> AsyncOpenAI:
    return AsyncOpenAI(
        api_key="test-key",
        base_url=base_url,
        http_client=httpx2.AsyncClient(transport=transport),
        max_retries=0,
    )


def base_url_of(path: str) -> str:
    """The SDK base URL that makes requests land on a recorded path (host does not matter)."""
    for suffix in ("/chat/completions", "/responses"):
        if path.endswith(suffix):
            return "https://replay.invalid" + path.removesuffix(suffix)
    raise AssertionError(path)


# --- recorded request bodies -> ModelRequest -------------------------------------------------


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content)


def _args(raw: str) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw


def _settings(body: dict[str, Any], *, responses: bool) -> ModelSettings:
    choice: ToolChoice | None = None
    raw_choice = body.get("tool_choice")
    if isinstance(raw_choice, str):
        choice = raw_choice  # type: ignore[assignment]
    elif isinstance(raw_choice, dict):
        name = raw_choice["name"] if responses else raw_choice["function"]["name"]
        choice = NamedToolChoice(name=name)
    fmt: ResponseFormat | None = None
    raw_fmt = (body.get("text") or {}).get("format") if responses else body.get("response_format")
    if raw_fmt:
        if raw_fmt["type"] == "json_schema":
            spec = raw_fmt if responses else raw_fmt["json_schema"]
            fmt = ResponseFormat.json_schema(
                name=spec["name"], schema=spec["schema"], strict=bool(spec.get("strict"))
            )
        else:
            fmt = ResponseFormat(type=raw_fmt["type"])
    temperature = body.get("temperature")
    if temperature is not None and not 0 <= temperature <= 2:
        temperature = None  # helikon rejects it up front (UserError); the recorded 400 still replays
    return ModelSettings(
        temperature=temperature,
        top_p=body.get("top_p"),
        max_output_tokens=body.get("max_output_tokens" if responses else "max_completion_tokens"),
        tool_choice=choice,
        response_format=fmt,
    )


def chat_request(body: dict[str, Any]) -> ModelRequest:
    """The `ModelRequest` a recorded Chat Completions body corresponds to."""
    items: list[Item] = []
    for message in body["messages"]:
        role = message["role"]
        if role in ("system", "developer"):
            items.append(SystemMessage(text=_text(message["content"])))
        elif role == "user":
            items.append(UserMessage.from_text(_text(message["content"])))
        elif role == "assistant":
            if message.get("content"):
                items.append(AssistantMessage.from_text(_text(message["content"])))
            for call in message.get("tool_calls") or ():
                fn = call["function"]
                items.append(ToolCall(call_id=call["id"], name=fn["name"], args=_args(fn["arguments"])))
        elif role == "tool":
            items.append(
                ToolResult(
                    call_id=message["tool_call_id"], content=(TextPart(text=_text(message["content"])),)
                )
            )
    tools = [
        ToolDef(
            name=t["function"]["name"],
            description=t["function"].get("description", ""),
            parameters=t["function"].get("parameters", {}),
            strict=bool(t["function"].get("strict")),
        )
        for t in body.get("tools") or ()
    ]
    return ModelRequest(messages=items, tools=tools, model_settings=_settings(body, responses=False))


def responses_request(body: dict[str, Any]) -> ModelRequest:
    """The `ModelRequest` a recorded Responses body corresponds to."""
    items: list[Item] = []
    if body.get("instructions"):
        items.append(SystemMessage(text=body["instructions"]))
    raw_input = body["input"]
    if isinstance(raw_input, str):
        raw_input = [{"role": "user", "content": raw_input}]
    for entry in raw_input:
        kind = entry.get("type", "message")
        if kind == "message":
            text = _text(entry.get("content"))
            if entry["role"] == "user":
                items.append(UserMessage.from_text(text))
            elif entry["role"] in ("system", "developer"):
                items.append(SystemMessage(text=text))
            elif text:
                items.append(AssistantMessage.from_text(text))
        elif kind == "function_call":
            items.append(
                ToolCall(call_id=entry["call_id"], name=entry["name"], args=_args(entry["arguments"]))
            )
        elif kind == "function_call_output":
            items.append(ToolResult(call_id=entry["call_id"], content=(TextPart(text=entry["output"]),)))
        # reasoning input items are not modelled by helikon: skipped (the adapter drops them too)
    tools = [
        ToolDef(
            name=t["name"],
            description=t.get("description") or "",
            parameters=t.get("parameters") or {},
            strict=bool(t.get("strict")),
        )
        for t in body.get("tools") or ()
        if t.get("type") == "function"
    ]
    return ModelRequest(messages=items, tools=tools, model_settings=_settings(body, responses=True))


_SYNTHESIZED = re.compile(r"^call_[0-9a-f]{24}$")


@dataclass(frozen=True)
class Turn:
    """A turn's events, collapsed: text (or `(length, prefix)`), reasoning chars, signatures,
    tool calls `(call_id, name, args)`, usages `(in, out, cached, reasoning)`, finish reasons."""

    text: str | tuple[int, str]
    reasoning: int
    signatures: int
    calls: list[tuple[str, str, str]] = field(default_factory=lambda: [])
    usage: list[tuple[int, int, int, int]] = field(default_factory=lambda: [])
    finish: list[str] = field(default_factory=lambda: [])


def collapse(events: list[ModelEvent]) -> Turn:
    text = "".join(e.text for e in events if isinstance(e, TokenDelta))
    calls: dict[str, list[str]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            call = calls.setdefault(e.call_id, [e.name, ""])
            assert e.name == "" or e.name == call[0]
            call[1] += e.args_delta
    return Turn(
        text=text if len(text) <= 80 else (len(text), text[:40]),
        reasoning=sum(len(e.text) for e in events if isinstance(e, ReasoningDelta)),
        signatures=sum(1 for e in events if isinstance(e, ReasoningDelta) and e.signature),
        calls=[
            (
                "<synthesized>" if _SYNTHESIZED.match(k) else k,
                v[0],
                v[1] if len(v[1]) <= 80 else f"<{len(v[1])} chars>",
            )
            for k, v in calls.items()
        ],
        usage=[
            (e.input_tokens, e.output_tokens, e.cached_input_tokens, e.reasoning_tokens)
            for e in events
            if isinstance(e, Usage)
        ],
        finish=[e.reason for e in events if isinstance(e, Finish)],
    )


EXPECTED: dict[str, list[Turn | tuple[str, int | None, str]]] = {
    "openai_chat/test_chat_response_format.yaml": [
        Turn((133, '{"joke":"Why did the developer bring Ope'), 0, 0, [], [(83, 32, 0, 0)], ["stop"]),
        Turn((119, '{"joke":"Why did the developer bring Ope'), 0, 0, [], [(83, 32, 0, 0)], ["stop"]),
        Turn((133, '{"joke":"Why did the developer bring Ope'), 0, 0, [], [(83, 34, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_compatible_api_with_tool_calls_without_id.yaml": [
        Turn("", 0, 0, [("<synthesized>", "get_current_time", "{}")], [(35, 12, 0, 0)], ["tool_calls"]),
        Turn("The current time is Noon.", 0, 0, [], [(66, 6, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_max_completion_tokens[o3-mini].yaml": [
        Turn("Hello there! How can I help you today?", 0, 0, [], [(7, 87, 0, 64)], ["stop"]),
    ],
    "openai_chat/test_open_ai_function_calls_tools_parallel.yaml": [
        Turn(
            "",
            0,
            0,
            [
                ("call_3JNWJ9wdfRsmkhKWql4HqJhR", "get_current_weather", '{"location": "San Francisco"}'),
                ("call_8jQ7TzSBlLV4tzrMRpq5Tg98", "get_current_weather", '{"location": "Boston"}'),
            ],
            [(70, 46, 0, 0)],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            0,
            [
                ("call_rU416PaA6UFgxje2GemBVAwt", "get_current_weather", '{"location": "San Francisco"}'),
                ("call_iqCZB6DkOW5TPjHK29vpiAFa", "get_current_weather", '{"location": "Boston"}'),
            ],
            [(70, 46, 0, 0)],
            ["tool_calls"],
        ),
    ],
    "openai_chat/test_open_ai_function_calls_tools_streaming_parallel.yaml": [
        Turn(
            "",
            0,
            0,
            [
                ("call_cCPjAyfwTzboEKjVlqFrArNF", "get_current_weather", '{"location": "San Francisco"}'),
                ("call_Zi4He1Ns0mozwT6f85nW1BOW", "get_current_weather", '{"location": "Boston"}'),
            ],
            [],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            0,
            [
                ("call_u0T52evs3Y0byXDiUv5Al8dG", "get_current_weather", '{"location": "San Francisco"}'),
                ("call_iXfR9wmFaDTHUw5YaVxD1uFH", "get_current_weather", '{"location": "Boston"}'),
            ],
            [],
            ["tool_calls"],
        ),
    ],
    "openai_chat/test_openai_instructions.yaml": [
        Turn("The capital of France is Paris.", 0, 0, [], [(24, 8, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_openai_moderation_stream.yaml": [
        Turn("Paris.", 0, 0, [], [(13, 11, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_openai_native_output.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_PkRGedQNRFUzJp2R7dO7avWR", "get_user_country", "{}")],
            [(71, 12, 0, 0)],
            ["tool_calls"],
        ),
        Turn('{"city":"Mexico City","country":"Mexico"}', 0, 0, [], [(92, 15, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_openai_o1_mini_system_role[system].yaml": [
        ("OtherModelError", 400, "Unsupported value: 'messages[0].role' does not support 'syst"),
    ],
    "openai_chat/test_openai_tool_output.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_iXFttys57ap0o16JSlC8yhYo", "get_user_country", "{}")],
            [(68, 12, 0, 0)],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            0,
            [
                (
                    "call_gmD2oUZUzSoCkmNmp3JPUF7R",
                    "final_result",
                    '{"city": "Mexico City", "country": "Mexico"}',
                )
            ],
            [(89, 36, 0, 0)],
            ["tool_calls"],
        ),
    ],
    "openai_chat/test_openai_web_search_tool_model_not_supported.yaml": [
        ("OtherModelError", 400, "Web search options not supported with this model."),
    ],
    "openai_chat/test_openrouter_errors_raised.yaml": [
        ("RateLimited", 429, "Provider returned error: google/gemini-2.0-flash-exp:free is"),
        ("RateLimited", 429, "Provider returned error: google/gemini-2.0-flash-exp:free is"),
        ("RateLimited", 429, "Provider returned error: google/gemini-2.0-flash-exp:free is"),
    ],
    "openai_chat/test_parsed_refused_completion.yaml": [
        ("Refused", None, "I'm very sorry, but I can't assist with that request."),
        ("Refused", None, "I'm very sorry, but I can't assist with that request."),
        ("Refused", None, "I'm very sorry, but I can't assist with that request."),
    ],
    "openai_chat/test_run_stream_sync_streams_real_model.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}')],
            [(53, 15, 0, 0)],
            ["tool_calls"],
        ),
        Turn("The capital of the UK is London.", 0, 0, [], [(78, 9, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_tool_choice_matrix[required-openai].yaml": [
        Turn(
            "",
            0,
            0,
            [("call_injwxidE5XUzmiKVfOH3rxf2", "get_weather", '{"city":"Paris"}')],
            [(130, 87, 0, 64)],
            ["tool_calls"],
        ),
    ],
    "openai_chat/test_tool_use_basic.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_1EYWDzueHEp8OsB8jJSEp7WB", "multiply", '{"a":1231,"b":2331}')],
            [(54, 20, 0, 0)],
            ["tool_calls"],
        ),
        Turn(
            "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).",
            0,
            0,
            [],
            [(87, 26, 0, 0)],
            ["stop"],
        ),
    ],
    "openai_chat/test_tool_use_chain_of_two_calls.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", '{"country":"Crumpet"}')],
            [(92, 17, 0, 0)],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            0,
            [("call_aq9UyiSFkzX6W8Ydc33DoI9Y", "can_have_dragons", '{"population":123124}')],
            [(118, 18, 0, 0)],
            ["tool_calls"],
        ),
        Turn("YES", 0, 0, [], [(146, 3, 0, 0)], ["stop"]),
    ],
    "openai_chat/test_tools_streaming_variant_a.yaml": [
        Turn("", 0, 0, [("0", "llm_version", "{}")], [(57, 17, 0, 0)], ["tool_calls"]),
        Turn("The current version of *llm* is **0.fixed-version**.", 0, 0, [], [(107, 15, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_native_output.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_tTAThu8l2S9hNky2krdwijGP", "get_user_country", "{}")],
            [(66, 12, 0, 0)],
            ["tool_calls"],
        ),
        Turn('{"city":"Mexico City","country":"Mexico"}', 0, 0, [], [(89, 16, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_model_http_error.yaml": [
        ("OtherModelError", 400, "Invalid 'temperature': decimal below minimum value. Expected"),
    ],
    "openai_responses/test_openai_responses_model_mcp_server_tool_stream.yaml": [
        Turn((687, "pydantic-ai is a Python “agent” framewor"), 0, 2, [], [(1401, 480, 0, 256)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_model_retry.yaml": [
        Turn(
            "",
            0,
            0,
            [
                ("call_LWVp74L5HaH2KNvgVz9PJsrj", "get_location", '{"loc_name":"Londos"}'),
                ("call_YnRAWeTyxI91m5uNa5bxXwVO", "get_location", '{"loc_name":"London"}'),
            ],
            [(0, 0, 0, 0)],
            ["tool_calls"],
        ),
        Turn((175, 'It seems "Londos" might be incorrect or '), 0, 0, [], [(335, 44, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_model_simple_response.yaml": [
        Turn("The capital of France is Paris.", 0, 0, [], [(14, 8, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", '{"country":"PotatoLand"}')],
            [(40, 18, 0, 0)],
            ["tool_calls"],
        ),
        Turn("The capital of PotatoLand is Potato City.", 0, 0, [], [(67, 11, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_phase_streamed_on_part_start.yaml": [
        Turn(
            "I’ll check the capital lookup tool for “PotatoLand.”",
            0,
            1,
            [("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", '{"country":"PotatoLand"}')],
            [(63, 69, 0, 26)],
            ["tool_calls"],
        ),
        Turn("The capital of PotatoLand is **Potato City**.", 0, 0, [], [(147, 16, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_stream.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", '{"country":"France"}')],
            [(255, 16, 0, 0)],
            ["tool_calls"],
        ),
        Turn("The capital of France is Paris.", 0, 0, [], [(278, 9, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_openai_responses_streaming_usage.yaml": [
        Turn(
            "",
            0,
            1,
            [("call_CWXgs68YprAjp6t0371hiPOI", "final_result", '{"result":6666}')],
            [(53, 469, 0, 448)],
            ["tool_calls"],
        ),
    ],
    "openai_responses/test_openai_responses_thinking_part_iter.yaml": [
        Turn(
            (1251, "I'm not a road safety professional, but "), 2022, 1, [], [(13, 1680, 0, 1408)], ["stop"]
        ),
    ],
    "openai_responses/test_openai_responses_thinking_with_modified_history.yaml": [
        Turn((831, "A single, final answer doesn’t exist—it "), 569, 1, [], [(13, 248, 0, 64)], ["stop"]),
        ("OtherModelError", 400, "Item 'rs_68c42de022c881948db7ed1cc2529f2e0202c9ad459e0d23' o"),
        Turn(
            (969, "Plenty.\n\nA few quick lenses:\n- Biologica"), 556, 1, [], [(142, 355, 0, 128)], ["stop"]
        ),
    ],
    "openai_responses/test_openai_responses_thinking_with_tool_calls.yaml": [
        Turn(
            "",
            2911,
            1,
            [("call_gL7JE6GDeGGsFubqO2XGytyO", "update_plan", "<488 chars>")],
            [(124, 1926, 0, 1792)],
            ["tool_calls"],
        ),
        Turn((499, "Softly old fountains illumine alleys\nDun"), 0, 0, [], [(2087, 124, 2048, 0)], ["stop"]),
    ],
    "openai_responses/test_reasoning_summary_auto.yaml": [
        Turn((543, "```python\ndef factorial(n: int) -> int:\n"), 451, 1, [], [(34, 226, 0, 59)], ["stop"]),
    ],
    "openai_responses/test_responses_basic_streaming.yaml": [
        Turn("pong", 0, 0, [], [(11, 5, 0, 0)], ["stop"]),
    ],
    "openai_responses/test_responses_interleaved_reasoning_between_tool_calls.yaml": [
        Turn(
            "",
            0,
            1,
            [("call_I670mAzR6AYszdoqaI96qg0k", "db_lookup", '{"key":"start"}')],
            [(88, 65, 0, 45)],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            1,
            [("call_Uj506iEKjBZWrHPq2C3GDtgr", "db_lookup", '{"key":"7"}')],
            [(171, 118, 0, 98)],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            1,
            [("call_Vik9mkNli8KsnSbHOShapdmG", "db_lookup", '{"key":"step1"}')],
            [(302, 217, 0, 196)],
            ["tool_calls"],
        ),
        Turn(
            "",
            0,
            1,
            [
                ("call_WbWwKw4J6EXQ7Sn93fgmuZe3", "db_lookup", '{"key":"begin"}'),
                ("call_et3hsNc1ipjCfuBylmAwqkEy", "db_lookup", '{"key":"value"}'),
                ("call_J4rpPS0QEz4CIdsVGKEKG6k3", "db_lookup", '{"key":"the value 7"}'),
                ("call_gd2cYY61KkICSgB6qNd7ZC66", "db_lookup", '{"key":"Begin with the value 7."}'),
                ("call_nInKAmdZObYpqc3OR3WC61K3", "db_lookup", '{"key":"start2"}'),
            ],
            [(532, 119, 0, 17)],
            ["tool_calls"],
        ),
    ],
    "openai_responses/test_responses_tool_use_streaming.yaml": [
        Turn(
            "",
            0,
            0,
            [("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", '{"a":1231,"b":2331}')],
            [(58, 23, 0, 0)],
            ["tool_calls"],
        ),
        Turn("1231 × 2331 = **2,869,461**", 0, 0, [], [(94, 18, 0, 0)], ["stop"]),
    ],
}

CASSETTES = sorted(
    f"{p.parent.name}/{p.name}"
    for d in ("openai_chat", "openai_responses")
    for p in (FIXTURES / d).glob("*.yaml")
)


def _valid_temperature(body: dict[str, Any]) -> Any:
    value = body.get("temperature")
    return value if value is None or 0 <= value <= 2 else None


def _format(fmt: dict[str, Any] | None) -> Any:
    if not fmt or fmt.get("type") != "json_schema":
        return fmt
    spec = fmt.get("json_schema", fmt)
    schema = strict(spec["schema"]) if spec.get("strict") else spec["schema"]
    return (spec["name"], schema, bool(spec.get("strict")))


def essential_chat(body: dict[str, Any]) -> dict[str, Any]:
    """What a chat body means: roles, texts, tool calls, tools, tool_choice, response_format."""
    messages: list[dict[str, Any]] = []
    for m in body["messages"]:
        role = "system" if m["role"] == "developer" else m["role"]
        calls = [
            (c["id"], c["function"]["name"], _args(c["function"]["arguments"]))
            for c in m.get("tool_calls") or ()
        ]
        if (
            role == "assistant"
            and messages
            and messages[-1]["role"] == "assistant"
            and not messages[-1]["calls"]
        ):
            messages[-1]["calls"] = calls  # simonw/llm sends text and tool calls as two messages
            continue
        messages.append(
            {"role": role, "content": _text(m.get("content")), "calls": calls, "id": m.get("tool_call_id")}
        )
    return {
        "model": body["model"],
        "messages": messages,
        "tools": [
            (t["function"]["name"], t["function"].get("parameters", {})) for t in body.get("tools") or ()
        ],
        "tool_choice": body.get("tool_choice"),
        "response_format": _format(body.get("response_format")),
        "max_completion_tokens": body.get("max_completion_tokens"),
        "temperature": _valid_temperature(body),
    }


def essential_responses(body: dict[str, Any]) -> dict[str, Any]:
    """What a Responses body means (reasoning input items and empty assistant texts aside)."""
    raw = body["input"]
    entries: list[Any] = []
    for e in [{"role": "user", "content": raw}] if isinstance(raw, str) else raw:
        kind = e.get("type", "message")
        if kind == "message" and (e["role"] != "assistant" or _text(e.get("content"))):
            entries.append((e["role"], _text(e.get("content"))))
        elif kind == "function_call":
            entries.append((kind, e["call_id"], e["name"], _args(e["arguments"])))
        elif kind == "function_call_output":
            entries.append((kind, e["call_id"], e["output"]))
    return {
        "model": body["model"],
        "instructions": body.get("instructions") or None,
        "input": entries,
        "tools": [
            (t["name"], t.get("parameters")) for t in body.get("tools") or () if t.get("type") == "function"
        ],
        "tool_choice": body.get("tool_choice"),
        "text": _format((body.get("text") or {}).get("format")),
        "previous_response_id": body.get("previous_response_id"),
        "temperature": _valid_temperature(body),
    }


async def _collect(
    model: OpenAIModel, request: ModelRequest, cancel: CancellationToken | None = None
) -> list[ModelEvent]:
    return [event async for event in model.invoke(request, cancel or CancellationToken())]


@pytest.mark.parametrize("cassette", CASSETTES)
async def test_cassette_replays_to_the_expected_events_and_request(cassette: str) -> None:
    recorded = load(cassette)
    transport = replay(cassette)
    client = client_for(transport, base_url_of(recorded[0].path))
    chat = cassette.startswith("openai_chat/")
    model = (OpenAIModel.chat if chat else OpenAIModel.responses)(
        recorded[0].request_body["model"], client=client
    )
    expected = EXPECTED[cassette]
    assert len(expected) == len(recorded)
    for index, (interaction, want) in enumerate(zip(recorded, expected, strict=True)):
        request = (chat_request if chat else responses_request)(interaction.request_body)
        previous = interaction.request_body.get("previous_response_id")
        turn_model = model.with_settings(OpenAISettings(previous_response_id=previous))
        if isinstance(want, Turn):
            assert collapse(await _collect(turn_model, request)) == want, index
        else:
            with pytest.raises(ModelError) as info:
                await _collect(turn_model, request)
            name, status, message = want
            assert (type(info.value).__name__, info.value.status_code) == (name, status)
            assert str(info.value).startswith(message)
        sent = transport.sent_json(index)
        assert sent["stream"] is True
        if chat:
            assert sent["stream_options"] == {"include_usage": True}
            assert essential_chat(sent) == essential_chat(interaction.request_body)
        else:
            assert essential_responses(sent) == essential_responses(interaction.request_body)


# --- exact event sequences -------------------------------------------------------------------


async def test_streamed_tool_call_events_in_order() -> None:
    transport = replay("openai_chat/test_run_stream_sync_streams_real_model.yaml")
    model = OpenAIModel.chat("gpt-4o-mini", client=client_for(transport))
    request = ModelRequest(
        messages=[UserMessage.from_text("What is the capital of the UK? Use the tool, then answer.")]
    )
    events = await _collect(model, request)
    call_id = "call_ZR5UUuTt3pf61kjwAJIYdVMj"
    assert events == [
        ToolCallDelta(call_id=call_id, name="get_capital"),
        ToolCallDelta(call_id=call_id, args_delta='{"'),
        ToolCallDelta(call_id=call_id, args_delta="country"),
        ToolCallDelta(call_id=call_id, args_delta='":"'),
        ToolCallDelta(call_id=call_id, args_delta="UK"),
        ToolCallDelta(call_id=call_id, args_delta='"}'),
        Usage(input_tokens=53, output_tokens=15),
        Finish(reason="tool_calls"),
    ]


async def test_parallel_streamed_calls_keep_their_index() -> None:
    transport = replay("openai_chat/test_open_ai_function_calls_tools_streaming_parallel.yaml")
    model = OpenAIModel.chat("gpt-3.5-turbo", client=client_for(transport))
    events = await _collect(model, ModelRequest(messages=[UserMessage.from_text("weather?")]))
    first = next(e for e in events if isinstance(e, ToolCallDelta))
    assert first == ToolCallDelta(call_id="call_cCPjAyfwTzboEKjVlqFrArNF", name="get_current_weather")
    assert events[-1] == Finish(reason="tool_calls")


async def test_responses_text_stream_in_order() -> None:
    transport = replay("openai_responses/test_responses_basic_streaming.yaml")
    model = OpenAIModel.responses("gpt-5.5", client=client_for(transport))
    events = await _collect(
        model, responses_request(load("openai_responses/test_responses_basic_streaming.yaml")[0].request_body)
    )
    assert [e for e in events if not isinstance(e, TokenDelta)] == [
        Usage(input_tokens=11, output_tokens=5),
        Finish(reason="stop"),
    ]
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == "pong"


async def test_reasoning_content_and_refusal_of_compatible_servers() -> None:
    completion = {
        "id": "x",
        "created": 1,
        "model": "deepseek-reasoner",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "reasoning_content": "hmm", "content": "ok"},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 2}},
    }
    model = OpenAIModel.chat(
        "deepseek-reasoner", client=client_for(_sse_transport(chat_completion_as_sse(completion)))
    )
    events = await _collect(model, ModelRequest(messages=[UserMessage.from_text("hi")]))
    assert events == [
        ReasoningDelta(text="hmm"),
        TokenDelta(text="ok"),
        Usage(input_tokens=3, output_tokens=4, cached_input_tokens=2),
        Finish(reason="length"),
    ]


# --- errors ----------------------------------------------------------------------------------


def _sse_transport(body: bytes) -> httpx2.MockTransport:
    return httpx2.MockTransport(
        lambda _: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    )


def _error_transport(
    status: int, error: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx2.MockTransport:
    return httpx2.MockTransport(
        lambda _: httpx2.Response(status, headers=headers or {}, json={"error": error})
    )


def _error(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"message": message, "type": type_, "code": code, "param": None}


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    ("status", "error", "headers", "kind", "retry_after_ms"),
    [
        (
            429,
            _error("Rate limit reached", "requests", "rate_limit_exceeded"),
            {"retry-after-ms": "1500"},
            RateLimited,
            1500,
        ),
        (
            429,
            _error("Rate limit reached", "tokens", "rate_limit_exceeded"),
            {"retry-after": "2"},
            RateLimited,
            2000,
        ),
        (429, _error("Rate limit reached", "tokens", "rate_limit_exceeded"), {}, RateLimited, None),
        (
            429,
            _error("You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
            {},
            OtherModelError,
            None,
        ),
        (500, _error("The server had an error", "server_error", None), {}, Unavailable, None),
        (503, _error("The engine is currently overloaded", "server_error", None), {}, Unavailable, None),
        (
            400,
            _error(
                "This model's maximum context length is 128000 tokens.",
                "invalid_request_error",
                "context_length_exceeded",
            ),
            {},
            ContextLengthExceeded,
            None,
        ),
        (
            401,
            _error("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
            {},
            OtherModelError,
            None,
        ),
    ],
)
async def test_http_errors_map_to_model_errors(
    api: str,
    status: int,
    error: dict[str, Any],
    headers: dict[str, str],
    kind: type[ModelError],
    retry_after_ms: int | None,
) -> None:
    client = client_for(_error_transport(status, error, headers))
    model = (
        OpenAIModel.chat("gpt-4o", client=client)
        if api == "chat"
        else OpenAIModel.responses("gpt-4o", client=client)
    )
    with pytest.raises(kind) as info:
        await _collect(model, ModelRequest(messages=[UserMessage.from_text("hi")]))
    assert type(info.value) is kind
    assert info.value.status_code == status
    assert info.value.message == error["message"]
    assert isinstance(info.value.__cause__, Exception)
    if kind is RateLimited:
        assert isinstance(info.value, RateLimited) and info.value.retry_after_ms == retry_after_ms


async def test_connection_failure_is_transport() -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    model = OpenAIModel.chat("gpt-4o", client=client_for(httpx2.MockTransport(fail)))
    with pytest.raises(Transport):
        await _collect(model, ModelRequest(messages=[UserMessage.from_text("hi")]))


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (
            {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
            RateLimited,
        ),
        ({"type": "error", "code": "server_error", "message": "boom", "param": None}, Unavailable),
        (
            {
                "type": "response.failed",
                "response": {
                    "id": "r",
                    "status": "failed",
                    "output": [],
                    "error": {"code": "context_length_exceeded", "message": "too long"},
                },
            },
            ContextLengthExceeded,
        ),
    ],
)
async def test_responses_stream_errors_map_to_model_errors(
    event: dict[str, Any], kind: type[ModelError]
) -> None:
    body = _sse([{"type": "response.output_text.delta", "item_id": "m", "delta": "par"}, event], done=False)
    model = OpenAIModel.responses("gpt-4o", client=client_for(_sse_transport(body)))
    events: list[ModelEvent] = []

    async def read() -> None:
        async for item in model.invoke(
            ModelRequest(messages=[UserMessage.from_text("hi")]), CancellationToken()
        ):
            events.append(item)  # noqa: PERF401 - the events before the error are the point

    with pytest.raises(kind):
        await read()
    assert events == [TokenDelta(text="par")]


async def test_refusal_raises_refused_with_the_text() -> None:
    transport = replay("openai_chat/test_parsed_refused_completion.yaml")
    model = OpenAIModel.chat("gpt-4o", client=client_for(transport))
    with pytest.raises(Refused, match="can't assist"):
        await _collect(model, ModelRequest(messages=[UserMessage.from_text("...")]))


# --- cancellation ----------------------------------------------------------------------------


class _SlowStream(httpx2.AsyncByteStream):
    def __init__(self) -> None:
        self.closed = False
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for n in range(1000):
            self.sent += 1
            chunk = {"id": "x", "created": 1, "model": "m", "object": "chat.completion.chunk"}
            chunk["choices"] = [{"index": 0, "delta": {"content": f"t{n} "}, "finish_reason": None}]
            yield f"data: {json.dumps(chunk)}\n\n".encode()
            await asyncio.sleep(0)

    async def aclose(self) -> None:
        self.closed = True


async def test_cancel_stops_reading_and_closes_the_stream() -> None:
    stream = _SlowStream()
    transport = httpx2.MockTransport(
        lambda _: httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)
    )
    model = OpenAIModel.chat("gpt-4o", client=client_for(transport))
    cancel = CancellationToken()
    events: list[ModelEvent] = []
    async for event in model.invoke(ModelRequest(messages=[UserMessage.from_text("hi")]), cancel):
        events.append(event)
        if len(events) == 2:
            cancel.cancel("user")
    assert events == [TokenDelta(text="t0 "), TokenDelta(text="t1 ")]
    assert stream.closed
    assert stream.sent < 10


async def test_already_cancelled_sends_nothing() -> None:
    transport = replay("openai_chat/test_openai_moderation_stream.yaml")
    model = OpenAIModel.chat("gpt-5", client=client_for(transport))
    cancel = CancellationToken()
    cancel.cancel()
    assert await _collect(model, ModelRequest(messages=[UserMessage.from_text("hi")]), cancel) == []
    assert transport.requests == []


# --- request mapping -------------------------------------------------------------------------


def _conversation() -> list[Item]:
    return [
        SystemMessage(text="Be brief."),
        UserMessage(
            content=(
                TextPart(text="What is this?"),
                ImagePart(source=UrlSource(url="https://x/cat.png"), detail="low"),
            )
        ),
        SystemMessage(text="Answer in English."),
        AssistantMessage(
            content=(ReasoningPart(text="thinking", signature="sig"), TextPart(text="Let me look."))
        ),
        ToolCall(call_id="c1", name="lookup", args={"q": "cat"}),
        ToolCall(call_id="c2", name="lookup", args="not json"),
        ToolResult(call_id="c1", content=(TextPart(text="a cat"),)),
        ToolResult(call_id="c2", content=(TextPart(text="bad args"),), is_error=True),
    ]


_TOOL = ToolDef(
    name="lookup",
    description="Look it up.",
    parameters={
        "type": "object",
        "properties": {"q": {"type": "string", "title": "Q"}, "n": {"type": "integer"}},
        "required": ["q"],
    },
    strict=True,
)
_FORMAT = ResponseFormat.json_schema(
    name="Answer", schema={"type": "object", "properties": {"a": {"type": "string"}}}
)


def test_chat_body_maps_every_field() -> None:
    settings = ModelSettings(
        temperature=0.5,
        top_p=0.9,
        max_output_tokens=64,
        tool_choice=NamedToolChoice(name="lookup"),
        response_format=_FORMAT,
    )
    model = OpenAIModel.chat("gpt-4o", client=client_for(_sse_transport(b"")))
    body = model.build_body(ModelRequest(messages=_conversation(), tools=[_TOOL], model_settings=settings))
    assert body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nAnswer in English."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/cat.png", "detail": "low"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":"cat"}'}},
                {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
        {"role": "tool", "tool_call_id": "c2", "content": "bad args"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look it up.",
                "parameters": strict(dict(_TOOL.parameters)),
                "strict": True,
            },
        }
    ]
    assert body["tools"][0]["function"]["parameters"]["required"] == ["q", "n"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": strict(dict(_FORMAT.schema or {})), "strict": True},
    }
    assert (body["temperature"], body["top_p"], body["max_completion_tokens"]) == (0.5, 0.9, 64)
    assert (body["stream"], body["stream_options"]) == (True, {"include_usage": True})


def test_responses_body_maps_every_field() -> None:
    settings = ModelSettings(
        max_output_tokens=64, tool_choice="required", response_format=ResponseFormat.json_object()
    )
    model = OpenAIModel.responses("gpt-5", client=client_for(_sse_transport(b"")))
    body = model.build_body(ModelRequest(messages=_conversation(), tools=[_TOOL], model_settings=settings))
    assert body["instructions"] == "Be brief.\n\nAnswer in English."
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": "https://x/cat.png", "detail": "low"},
            ],
        },
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q":"cat"}'},
        {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c1", "output": "a cat"},
        {"type": "function_call_output", "call_id": "c2", "output": "bad args"},
    ]
    assert body["tools"][0]["strict"] is True and body["tools"][0]["name"] == "lookup"
    assert (body["tool_choice"], body["text"], body["max_output_tokens"]) == (
        "required",
        {"format": {"type": "json_object"}},
        64,
    )
    named = model.build_body(
        ModelRequest(
            messages=_conversation(), model_settings=ModelSettings(tool_choice=NamedToolChoice(name="lookup"))
        )
    )
    assert named["tool_choice"] == {"type": "function", "name": "lookup"}


def test_previous_response_id_sends_only_the_new_items() -> None:
    settings = OpenAISettings(previous_response_id="resp_1")
    model = OpenAIModel.responses("gpt-5", client=client_for(_sse_transport(b"")), settings=settings)
    body = model.build_body(ModelRequest(messages=_conversation()))
    assert body["previous_response_id"] == "resp_1"
    assert [e["call_id"] for e in body["input"]] == ["c1", "c2"]
    assert body["instructions"] == "Be brief.\n\nAnswer in English."
    # the same model, with other settings: the whole conversation again
    assert "previous_response_id" not in model.with_settings(OpenAISettings()).build_body(
        ModelRequest(messages=_conversation())
    )


def test_the_old_model_settings_field_says_where_it_went() -> None:
    with pytest.raises(UserError, match=r"OpenAISettings\(previous_response_id=\.\.\.\)"):
        ModelSettings(previous_response_id="resp_1")  # type: ignore[call-arg]


@pytest.mark.parametrize("bad", ["", 7])
def test_a_previous_response_id_must_be_a_response_id(bad: object) -> None:
    with pytest.raises(UserError, match="non-empty response id"):
        OpenAISettings(previous_response_id=bad)  # type: ignore[arg-type]


# --- strict schemas: property test -----------------------------------------------------------


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Cat(pydantic.BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(pydantic.BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool


class Tree(pydantic.BaseModel):
    label: str
    children: list[Tree] = []


_LEAVES: list[Any] = [
    str,
    int,
    float,
    bool,
    Color,
    Annotated[Cat | Dog, pydantic.Field(discriminator="kind")],
    Tree,
    list[int],
]


@st.composite
def pydantic_models(draw: st.DrawFn, depth: int = 0) -> type[pydantic.BaseModel]:
    fields: dict[str, Any] = {}
    for index in range(draw(st.integers(min_value=1, max_value=4))):
        kind: Any = draw(st.sampled_from(_LEAVES))
        if depth < 2 and draw(st.booleans()):
            kind = draw(pydantic_models(depth + 1))
        if draw(st.booleans()):
            kind = kind | None
            fields[f"f{index}"] = (kind, None)
        else:
            fields[f"f{index}"] = (kind, ...)
    return pydantic.create_model(f"M{depth}_{draw(st.integers(0, 10**6))}", **fields)


def _assert_strict(node: Any, defs: dict[str, Any]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            assert node.get("additionalProperties") is False, node
            assert sorted(node.get("required", [])) == sorted(node.get("properties", {})), node
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    _assert_strict(sub, defs)
            elif key not in ("enum", "const", "required"):
                _assert_strict(value, defs)
        ref = node.get("$ref")
        if ref is not None:
            assert ref == "#" or ref.removeprefix("#/$defs/") in defs, ref
    elif isinstance(node, list):
        for sub in node:
            _assert_strict(sub, defs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pydantic_models())
def test_response_format_schema_sent_is_strict(model_type: type[pydantic.BaseModel]) -> None:
    fmt = ResponseFormat.json_schema(name="Out", schema=model_type.model_json_schema())
    request = ModelRequest(
        messages=[UserMessage.from_text("hi")], model_settings=ModelSettings(response_format=fmt)
    )
    client = client_for(_sse_transport(b""))
    chat_schema = OpenAIModel.chat("gpt-4o", client=client).build_body(request)["response_format"][
        "json_schema"
    ]
    responses_format = OpenAIModel.responses("gpt-4o", client=client).build_body(request)["text"]["format"]
    assert chat_schema["strict"] is True and responses_format["strict"] is True
    for schema in (chat_schema["schema"], responses_format["schema"]):
        assert schema["type"] == "object"
        _assert_strict(schema, schema.get("$defs", {}))


# --- end to end, construction, capabilities --------------------------------------------------


async def test_llm_agent_runs_a_tool_loop_over_the_recording() -> None:
    from helikon import LlmAgent, tool

    @tool
    async def get_capital(country: str) -> str:
        """The capital of a country."""
        return "London" if country == "UK" else "?"

    transport = replay("openai_chat/test_run_stream_sync_streams_real_model.yaml")
    agent = LlmAgent(
        name="geo", model=OpenAIModel.chat("gpt-4o", client=client_for(transport)), tools=[get_capital]
    )
    result = await agent.run("What is the capital of the UK? Use the tool, then answer.")
    assert result.final_output == "The capital of the UK is London."
    second = transport.sent_json(1)["messages"]
    assert second[1]["tool_calls"][0]["id"] == "call_ZR5UUuTt3pf61kjwAJIYdVMj"
    assert second[2] == {"role": "tool", "tool_call_id": "call_ZR5UUuTt3pf61kjwAJIYdVMj", "content": "London"}


def test_missing_api_key_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIModel.chat("gpt-4o")
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIModel.responses("gpt-4o")


def test_env_key_and_no_sdk_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = OpenAIModel.chat("gpt-4o", base_url="http://localhost:8000/v1", organization="org-1")
    client = model._client
    assert (client.api_key, client.max_retries, client.organization) == ("sk-from-env", 0, "org-1")
    assert str(client.base_url).startswith("http://localhost:8000/v1")
    assert OpenAIModel.chat("gpt-4o", api_key="explicit")._client.api_key == "explicit"


def test_identity_and_capabilities() -> None:
    client = client_for(_sse_transport(b""))
    chat = OpenAIModel.chat("gpt-4o", client=client)
    assert (chat.provider, chat.model_name, chat.api) == ("openai", "gpt-4o", "chat")
    caps = chat.capabilities()
    assert (
        caps.streaming and caps.tools and caps.parallel_tool_calls and caps.structured_output and caps.vision
    )
    assert not caps.reasoning and not caps.server_managed_state
    reasoning = OpenAIModel.responses("o3-mini", client=client).capabilities()
    assert reasoning.reasoning and reasoning.server_managed_state and not reasoning.vision
    assert OpenAIModel.chat("gpt-5-mini", client=client).capabilities().reasoning
    with pytest.raises(UserError):
        OpenAIModel.chat("", client=client)


# --- reasoning items round-trip (Responses, stateless) ----------------------------------------


def turn_items(events: list[ModelEvent]) -> list[Item]:
    """What the run makes of one call's events (see `core._driver.call_model`)."""
    text = "".join(e.text for e in events if isinstance(e, TokenDelta))
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    signature = next((e.signature for e in reversed(reasoning) if e.signature), None)
    parts: list[Any] = []
    if reasoning:
        parts.append(
            ReasoningPart(text="".join(e.text for e in reasoning), signature=signature, provider="openai")
        )
    if text:
        parts.append(TextPart(text=text))
    items: list[Item] = [AssistantMessage(content=tuple(parts))] if parts else []
    calls: dict[str, list[str]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            calls.setdefault(e.call_id, [e.name]).append(e.args_delta)
    items.extend(
        ToolCall(call_id=call_id, name=entry[0], args=_args("".join(entry[1:])))
        for call_id, entry in calls.items()
    )
    return items


def _reasoning_shape(body: dict[str, Any]) -> list[Any]:
    """The input as (kind, key) pairs, reasoning items whole: their place and content."""
    out: list[Any] = []
    for e in body["input"]:
        kind = e.get("type", "message")
        if kind == "reasoning":
            out.append(
                {k: e[k] for k in ("type", "id", "summary", "encrypted_content") if k in e}
                | {"summary": [{"type": s["type"], "text": s["text"]} for s in e.get("summary") or ()]}
            )
        elif kind == "message":
            out.append((e["role"], _text(e.get("content"))))
        else:
            out.append((kind, e["call_id"]))
    return out


@pytest.mark.parametrize(
    "cassette",
    [
        "openai_responses/test_openai_responses_thinking_with_tool_calls.yaml",
        "openai_responses/test_responses_interleaved_reasoning_between_tool_calls.yaml",
    ],
)
async def test_reasoning_items_go_back_in_place(cassette: str) -> None:
    """Each turn's reasoning items (id, summary, encrypted content) are re-sent on the next
    request right before the item that followed them, as the recorded client sent them."""
    recorded = load(cassette)
    transport = replay(cassette)
    model = OpenAIModel.responses(
        recorded[0].request_body["model"], client=client_for(transport, base_url_of(recorded[0].path))
    )
    history: list[Item] = list(responses_request(recorded[0].request_body).messages)
    first = responses_request(recorded[0].request_body)
    for index, interaction in enumerate(recorded):
        request = ModelRequest(messages=history, tools=first.tools, model_settings=first.model_settings)
        events = await _collect(model, request)
        sent = transport.sent_json(index)
        assert sent["include"] == ["reasoning.encrypted_content"]
        assert _reasoning_shape(sent) == _reasoning_shape(interaction.request_body), index
        # the next request: this turn's items, then the tool results the recorded client sent
        history = [*history, *turn_items(events)]
        if index + 1 < len(recorded):
            following = recorded[index + 1].request_body["input"]
            history += [
                ToolResult(call_id=e["call_id"], content=(TextPart(text=e["output"]),))
                for e in following[len(interaction.request_body["input"]) :]
                if e.get("type") == "function_call_output"
            ]


def _signed(entries: list[dict[str, Any]], provider: str | None = "openai") -> ReasoningPart:
    return ReasoningPart(text="thought", signature=reasoning_signature(entries), provider=provider)


def test_reasoning_request_shape() -> None:
    """`include` only for reasoning models without server state; reasoning items before
    their follower; none from other providers, none left dangling at the end of a turn."""
    client = client_for(httpx2.MockTransport(lambda r: httpx2.Response(500)))
    reasoner, plain = (
        OpenAIModel.responses("gpt-5", client=client),
        OpenAIModel.responses("gpt-4o", client=client),
    )
    enc = {"id": "rs_1", "summary": ["a", "b"], "encrypted_content": "gAAA", "before": "call_2"}
    lead = {"id": "rs_0", "summary": [], "before": None}
    messages: list[Item] = [
        UserMessage.from_text("hi"),
        AssistantMessage(content=(_signed([lead, enc]), TextPart(text="let me look"))),
        ToolCall(call_id="call_1", name="f", args={}),
        ToolCall(call_id="call_2", name="g", args={}),
        ToolResult(call_id="call_1", content=(TextPart(text="1"),)),
        ToolResult(call_id="call_2", content=(TextPart(text="2"),)),
        AssistantMessage(
            content=(ReasoningPart(text="x", signature="sig", provider="anthropic"), TextPart(text="ok"))
        ),
        AssistantMessage(content=(_signed([{"id": "rs_9", "summary": [], "before": None}]),)),
        UserMessage.from_text("more"),
    ]
    body = reasoner.build_body(ModelRequest(messages=messages))
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["input"] == [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_0", "summary": []},
        {"role": "assistant", "content": "let me look"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
            "encrypted_content": "gAAA",
        },
        {"type": "function_call", "call_id": "call_2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "1"},
        {"type": "function_call_output", "call_id": "call_2", "output": "2"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    assert "include" not in plain.build_body(ModelRequest(messages=messages))
    stateful = reasoner.with_settings(OpenAISettings(previous_response_id="resp_1"))
    body = stateful.build_body(ModelRequest(messages=messages))
    assert "include" not in body and body["input"] == [{"role": "user", "content": "more"}]


async def test_reasoning_item_signature_from_the_stream() -> None:
    """The streamed reasoning item becomes one signed `ReasoningDelta` carrying its id,
    summary, encrypted content and the call it preceded."""
    cassette = "openai_responses/test_openai_responses_thinking_with_tool_calls.yaml"
    recorded = load(cassette)
    model = OpenAIModel.responses("gpt-5", client=client_for(replay(cassette), base_url_of(recorded[0].path)))
    events = await _collect(model, responses_request(recorded[0].request_body))
    signed = [e for e in events if isinstance(e, ReasoningDelta) and e.signature]
    assert len(signed) == 1 and signed[0].text == ""
    output = json.loads(recorded[0].body)["output"]
    assert json.loads(signed[0].signature or "") == {
        "openai_reasoning": [
            {
                "id": output[0]["id"],
                "summary": [s["text"] for s in output[0]["summary"]],
                "encrypted_content": output[0]["encrypted_content"],
                "before": output[1]["call_id"],
            }
        ]
    }
