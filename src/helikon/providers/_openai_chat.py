"""Chat Completions: `ModelRequest` -> request body, streamed chunks -> `ModelEvent`s."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDelta

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


_DECLARED_REASONING = any(name in ChoiceDelta.model_fields for name in ("reasoning_content", "reasoning"))


class ChatStreamState:
    """Turns a stream of `ChatCompletionChunk`s into `ModelEvent`s.

    Usage and the finish reason are held back and emitted last (`Usage`, then `Finish`),
    since the usage chunk arrives after the finishing one.
    """

    def __init__(self) -> None:
        self._call_ids: dict[int, str] = {}
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._refusal: list[str] = []

    def feed(self, chunk: ChatCompletionChunk) -> Iterator[ModelEvent]:
        """The events one chunk carries."""
        if chunk.usage is not None:
            usage = chunk.usage
            prompt_details = usage.prompt_tokens_details
            completion_details = usage.completion_tokens_details
            self._usage = Usage(
                input_tokens=usage.prompt_tokens or 0,
                output_tokens=usage.completion_tokens or 0,
                cached_input_tokens=(prompt_details.cached_tokens or 0) if prompt_details else 0,
                reasoning_tokens=(completion_details.reasoning_tokens or 0) if completion_details else 0,
            )
        for choice in chunk.choices:
            if choice.index != 0:
                continue  # only `n=1` is requested
            delta = choice.delta
            # Compatible servers' reasoning fields are not declared by the SDK: they are pydantic
            # extras (read from `model_extra`, not by a `getattr` that fails for every chunk).
            if _DECLARED_REASONING:
                reasoning: object = getattr(delta, "reasoning_content", None) or getattr(
                    delta, "reasoning", None
                )
            else:
                extra = delta.model_extra
                reasoning = (extra.get("reasoning_content") or extra.get("reasoning")) if extra else None
            if isinstance(reasoning, str) and reasoning:
                yield ReasoningDelta(text=reasoning)
            if delta.content:
                yield TokenDelta(text=delta.content)
            if delta.refusal:
                self._refusal.append(delta.refusal)
            for call in delta.tool_calls or ():
                known = self._call_ids.get(call.index)
                function = call.function
                name = (function.name if function else None) or ""
                args = (function.arguments if function else None) or ""
                if known is None or (call.id and call.id != known):
                    # A new call: some servers (Gemini's compatible endpoint) omit the id.
                    call_id = call.id or f"call_{secrets.token_hex(12)}"
                    self._call_ids[call.index] = call_id
                    yield ToolCallDelta(call_id=call_id, name=name, args_delta=args)
                elif args:
                    yield ToolCallDelta(call_id=known, args_delta=args)
            if choice.finish_reason is not None:
                self._finish = _FINISH.get(choice.finish_reason, "other")

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
