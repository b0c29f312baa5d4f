"""Responses API: `ModelRequest` -> request body, streamed events -> `ModelEvent`s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseIncompleteEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseStreamEvent,
)
from openai.types.responses.response_usage import ResponseUsage

from helikon.core.exceptions import Refused
from helikon.core.items import (
    AssistantMessage,
    ImagePart,
    Item,
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

from ._openai_common import (
    args_json,
    error_from_code,
    format_schema,
    image_url,
    parameters_schema,
    parts_text,
)


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(p, TextPart) for p in message.content):
        return message.text
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            parts.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"type": "input_image", "image_url": image_url(part)}
            image["detail"] = part.detail or "auto"
            parts.append(image)
    return parts


def _input_item(item: Item) -> dict[str, Any] | None:
    if isinstance(item, SystemMessage):
        return None
    if isinstance(item, UserMessage):
        return {"role": "user", "content": _user_content(item)}
    if isinstance(item, AssistantMessage):
        # Reasoning parts are not sent back (they need the server's item ids).
        return {"role": "assistant", "content": item.text} if item.text else None
    if isinstance(item, ToolCall):
        return {
            "type": "function_call",
            "call_id": item.call_id,
            "name": item.name,
            "arguments": args_json(item.args),
        }
    return {"type": "function_call_output", "call_id": item.call_id, "output": parts_text(item.content)}


def _pending_items(messages: list[Item]) -> list[Item]:
    """With server-managed state, only what came after the model's last turn is new."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AssistantMessage | ToolCall):
            return messages[index + 1 :]
    return messages


def responses_body(model_id: str, request: ModelRequest) -> dict[str, Any]:
    """The full Responses request body (always streamed)."""
    settings = request.model_settings
    messages = list(request.messages)
    if settings.previous_response_id is not None:
        messages = _pending_items(messages)
    body: dict[str, Any] = {
        "model": model_id,
        "input": [entry for item in messages if (entry := _input_item(item)) is not None],
    }
    instructions = "\n\n".join(item.text for item in request.messages if isinstance(item, SystemMessage))
    if instructions:
        body["instructions"] = instructions
    if settings.previous_response_id is not None:
        body["previous_response_id"] = settings.previous_response_id
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": parameters_schema(tool),
                "strict": tool.strict,
            }
            for tool in request.tools
        ]
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.max_output_tokens is not None:
        body["max_output_tokens"] = settings.max_output_tokens
    choice = settings.tool_choice
    if isinstance(choice, NamedToolChoice):
        body["tool_choice"] = {"type": "function", "name": choice.name}
    elif choice is not None:
        body["tool_choice"] = choice
    fmt = settings.response_format
    if fmt is not None:
        if fmt.type == "json_schema":
            body["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": fmt.name,
                    "schema": format_schema(fmt),
                    "strict": fmt.strict,
                }
            }
        else:
            body["text"] = {"format": {"type": fmt.type}}
    body["stream"] = True
    return body


def _usage(usage: ResponseUsage) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.input_tokens_details.cached_tokens or 0,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens or 0,
    )


_INCOMPLETE: dict[str, FinishReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ResponsesStreamState:
    """Turns Responses stream events into `ModelEvent`s.

    Server-side tool items (MCP, web search, ...) run on OpenAI's side and are not
    client tool calls: they are skipped; the model's text about them streams as usual.
    """

    def __init__(self) -> None:
        self._call_ids: dict[str, str] = {}
        self._refusal: list[str] = []
        self._done = False
        self.response_id: str | None = None

    def feed(self, event: ResponseStreamEvent) -> Iterator[ModelEvent]:
        """The events one stream event carries."""
        if event.type == "response.created":
            self.response_id = event.response.id
        elif event.type == "response.output_text.delta":
            yield TokenDelta(text=event.delta)
        elif isinstance(event, ResponseReasoningSummaryTextDeltaEvent | ResponseReasoningTextDeltaEvent):
            yield ReasoningDelta(text=event.delta)
        elif event.type == "response.refusal.delta":
            self._refusal.append(event.delta)
        elif event.type == "response.output_item.added":
            item = event.item
            if item.type == "function_call":
                self._call_ids[item.id or item.call_id] = item.call_id
                yield ToolCallDelta(call_id=item.call_id, name=item.name, args_delta=item.arguments)
        elif event.type == "response.function_call_arguments.delta":
            call_id = self._call_ids.get(event.item_id, event.item_id)
            yield ToolCallDelta(call_id=call_id, args_delta=event.delta)
        elif event.type == "response.output_item.done":
            item = event.item
            if item.type == "reasoning" and item.encrypted_content:
                yield ReasoningDelta(text="", signature=item.encrypted_content)
        elif isinstance(event, ResponseCompletedEvent | ResponseIncompleteEvent):
            response = event.response
            if self._refusal:
                raise Refused("".join(self._refusal))
            if response.usage is not None:
                yield _usage(response.usage)
            reason: FinishReason = "tool_calls" if self._call_ids else "stop"
            if isinstance(event, ResponseIncompleteEvent):
                details = response.incomplete_details
                reason = _INCOMPLETE.get((details.reason if details else None) or "", "other")
            self._done = True
            yield Finish(reason=reason)
        elif event.type == "response.failed":
            error = event.response.error
            raise error_from_code(
                error.code if error else None, error.message if error else "the response failed"
            )
        elif event.type == "error":
            raise error_from_code(event.code, event.message)

    def finish(self) -> Iterator[ModelEvent]:
        """A closing `Finish` when the stream ended without `response.completed`."""
        if not self._done:
            if self._refusal:
                raise Refused("".join(self._refusal))
            yield Finish(reason="tool_calls" if self._call_ids else "other")
