"""Chat Completions: `ModelRequest` -> request body, streamed chunks -> `ModelEvent`s."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

from helikon.core.exceptions import Refused
from helikon.core.items import (
    AssistantMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    UserMessage,
)
from helikon.core.model import (
    Finish,
    FinishReason,
    ModelEvent,
    ModelRequest,
    NamedToolChoice,
    ReasoningDelta,
    TokenDelta,
    ToolCallDelta,
    Usage,
)

from ._openai_common import args_json, format_schema, image_url, parameters_schema, parts_text

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(p, TextPart) for p in message.content):
        return message.text
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url: dict[str, Any] = {"url": image_url(part)}
            if part.detail:
                url["detail"] = part.detail
            parts.append({"type": "image_url", "image_url": url})
    return parts


def chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The `messages` array: system text first, assistant text and its tool calls merged."""
    messages: list[dict[str, Any]] = []
    system = "\n\n".join(item.text for item in request.messages if isinstance(item, SystemMessage))
    if system:
        messages.append({"role": "system", "content": system})
    # The assistant message that the next ToolCall items join, while nothing else came between.
    open_assistant: dict[str, Any] | None = None
    for item in request.messages:
        if isinstance(item, SystemMessage):
            continue
        if isinstance(item, ToolCall):
            if open_assistant is None:
                open_assistant = {"role": "assistant", "content": None}
                messages.append(open_assistant)
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": args_json(item.args)},
            }
            open_assistant.setdefault("tool_calls", []).append(call)
            continue
        open_assistant = None
        if isinstance(item, UserMessage):
            messages.append({"role": "user", "content": _user_content(item)})
        elif isinstance(item, AssistantMessage):
            # Reasoning parts are not accepted back by Chat Completions: dropped.
            open_assistant = {"role": "assistant", "content": item.text or None}
            messages.append(open_assistant)
        else:
            messages.append(
                {"role": "tool", "tool_call_id": item.call_id, "content": parts_text(item.content)}
            )
    return messages


def chat_body(model_id: str, request: ModelRequest) -> dict[str, Any]:
    """The full Chat Completions request body (always streamed, with usage)."""
    body: dict[str, Any] = {"model": model_id, "messages": chat_messages(request)}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": parameters_schema(tool),
                    **({"strict": True} if tool.strict else {}),
                },
            }
            for tool in request.tools
        ]
    settings = request.model_settings
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.max_output_tokens is not None:
        body["max_completion_tokens"] = settings.max_output_tokens
    choice = settings.tool_choice
    if isinstance(choice, NamedToolChoice):
        body["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
    elif choice is not None:
        body["tool_choice"] = choice
    fmt = settings.response_format
    if fmt is not None:
        if fmt.type == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": fmt.name, "schema": format_schema(fmt), "strict": fmt.strict},
            }
        else:
            body["response_format"] = {"type": fmt.type}
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return body


_NONE: dict[str, Any] = {}  # an absent object in a chunk (read only)

# The per-delta events, built without the keyword `__init__` (every field given, already checked).


class ChatStreamState:
    """Turns a stream of chat completion chunks into `ModelEvent`s.

    The chunks are the SDK's decoded JSON (`dict`s in the `ChatCompletionChunk` shape), not
    its pydantic models: see `OpenAIModel.invoke`. Compatible servers' reasoning fields
    (`reasoning_content`, `reasoning`), which the SDK does not declare, are read the same way.

    Usage and the finish reason are held back and emitted last (`Usage`, then `Finish`),
    since the usage chunk arrives after the finishing one.
    """

    def __init__(self) -> None:
        self._call_ids: dict[int, str] = {}
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._refusal: list[str] = []

    def feed(self, chunk: dict[str, Any]) -> Iterator[ModelEvent]:
        """The events one chunk carries."""
        usage: dict[str, Any] | None = chunk.get("usage")
        if usage is not None:
            prompt_details: dict[str, Any] = usage.get("prompt_tokens_details") or _NONE
            completion_details: dict[str, Any] = usage.get("completion_tokens_details") or _NONE
            self._usage = Usage(
                input_tokens=usage.get("prompt_tokens") or 0,
                output_tokens=usage.get("completion_tokens") or 0,
                cached_input_tokens=prompt_details.get("cached_tokens") or 0,
                reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
            )
        choices: list[dict[str, Any]] = chunk.get("choices") or []
        for choice in choices:
            if choice.get("index", 0) != 0:
                continue  # only `n=1` is requested
            delta: dict[str, Any] = choice.get("delta") or _NONE
            reasoning: object = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                yield ReasoningDelta(text=reasoning)
            content: str | None = delta.get("content")
            if content:
                yield TokenDelta(text=content)
            refusal: str | None = delta.get("refusal")
            if refusal:
                self._refusal.append(refusal)
            calls: list[dict[str, Any]] | None = delta.get("tool_calls")
            if calls:
                call_ids = self._call_ids
                for call in calls:
                    index: int = call.get("index", 0)
                    known = call_ids.get(index)
                    function: dict[str, Any] = call.get("function") or _NONE
                    args: str = function.get("arguments") or ""
                    new_id: str | None = call.get("id")
                    if known is None or (new_id and new_id != known):
                        # A new call: some servers (Gemini's compatible endpoint) omit the id.
                        call_id = new_id or f"call_{secrets.token_hex(12)}"
                        call_ids[index] = call_id
                        yield ToolCallDelta(call_id=call_id, name=function.get("name") or "", args_delta=args)
                    elif args:
                        yield ToolCallDelta(call_id=known, args_delta=args)
            finish: str | None = choice.get("finish_reason")
            if finish is not None:
                self._finish = _FINISH.get(finish, "other")

    def finish(self) -> Iterator[ModelEvent]:
        """The closing events, once the stream ended."""
        if self._refusal:
            raise Refused("".join(self._refusal))
        if self._usage is not None:
            yield self._usage
        reason = self._finish
        if reason is None:  # some compatible servers end the stream without a finish_reason
            reason = "tool_calls" if self._call_ids else "stop"
        yield Finish(reason=reason)
