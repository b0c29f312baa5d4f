"""Responses API: `ModelRequest` -> request body, streamed events -> `ModelEvent`s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

from helikon.core.exceptions import Refused
from helikon.core.items import (
    AssistantMessage,
    ImagePart,
    Item,
    ReasoningPart,
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
        # Reasoning parts go back as their own `reasoning` items (see `_input_items`).
        return {"role": "assistant", "content": item.text} if item.text else None
    if isinstance(item, ToolCall):
        return {
            "type": "function_call",
            "call_id": item.call_id,
            "name": item.name,
            "arguments": args_json(item.args),
        }
    return {"type": "function_call_output", "call_id": item.call_id, "output": parts_text(item.content)}


# --- reasoning items ----------------------------------------------------------------------------
#
# The Responses API wants the reasoning items of a turn back, in place, on the next request
# when it does not hold the conversation itself (no `previous_response_id`): each one right
# before the output item that followed it (a `function_call`, or the assistant message).
# helikon keeps them in the turn's `ReasoningPart` (provider `openai`): `text` is the streamed
# summary, `signature` is `{"openai_reasoning": [entry, ...]}` in JSON, one entry per reasoning
# item of the turn: its `id`, `summary` texts, `encrypted_content` (when requested) and
# `before` (the `call_id` of the function call that followed it; null: the message / the end).

_SIGNATURE_KEY = "openai_reasoning"


def reasoning_signature(entries: list[dict[str, Any]]) -> str:
    """The `ReasoningPart.signature` that carries a turn's reasoning items."""
    return json.dumps({_SIGNATURE_KEY: entries}, separators=(",", ":"), ensure_ascii=False)


def _reasoning_entries(part: ReasoningPart) -> list[dict[str, Any]]:
    """The reasoning items a `ReasoningPart` of this adapter carries (none for others')."""
    if part.provider not in (None, "openai") or not part.signature or not part.signature.startswith("{"):
        return []
    try:
        decoded: Any = json.loads(part.signature)
    except ValueError:
        return []
    entries: Any = cast(dict[str, Any], decoded).get(_SIGNATURE_KEY) if isinstance(decoded, dict) else None
    if not isinstance(entries, list):
        return []
    return [
        e
        for e in cast(list[Any], entries)
        if isinstance(e, dict) and isinstance(cast(dict[str, Any], e).get("id"), str)
    ]


def _reasoning_item(entry: dict[str, Any]) -> dict[str, Any]:
    summary: Any = entry.get("summary")
    texts = cast(list[Any], summary) if isinstance(summary, list) else []
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": entry["id"],
        "summary": [{"type": "summary_text", "text": str(t)} for t in texts],
    }
    if isinstance(entry.get("encrypted_content"), str):
        item["encrypted_content"] = entry["encrypted_content"]
    return item


def _input_items(messages: list[Item]) -> list[dict[str, Any]]:
    """The `input` list: every item, with the reasoning items put back where they were."""
    call_ids = {m.call_id for m in messages if isinstance(m, ToolCall)}
    before_call: dict[str, list[dict[str, Any]]] = {}
    out: list[dict[str, Any]] = []
    for item in messages:
        if isinstance(item, AssistantMessage):
            leading: list[dict[str, Any]] = []
            for part in item.content:
                if isinstance(part, ReasoningPart):
                    for entry in _reasoning_entries(part):
                        before = entry.get("before")
                        if isinstance(before, str) and before in call_ids:
                            before_call.setdefault(before, []).append(_reasoning_item(entry))
                        elif item.text:  # a reasoning item must not be the last one of its turn
                            leading.append(_reasoning_item(entry))
            out.extend(leading)
        elif isinstance(item, ToolCall):
            out.extend(before_call.pop(item.call_id, ()))
        entry = _input_item(item)
        if entry is not None:
            out.append(entry)
    return out


def _pending_items(messages: list[Item]) -> list[Item]:
    """With server-managed state, only what came after the model's last turn is new."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AssistantMessage | ToolCall):
            return messages[index + 1 :]
    return messages


def responses_body(
    model_id: str, request: ModelRequest, *, reasoning: bool = False, previous_response_id: str | None = None
) -> dict[str, Any]:
    """The full Responses request body (always streamed).

    With `previous_response_id` (server-managed state) only the items after the model's last
    turn are sent. With `reasoning` (a reasoning model) and no server-managed state, the body
    asks for `include=["reasoning.encrypted_content"]`: the reasoning items then come back
    with their encrypted content, which the next request sends back (stateless / ZDR use).
    """
    settings = request.model_settings
    messages = list(request.messages)
    if previous_response_id is not None:
        messages = _pending_items(messages)
    body: dict[str, Any] = {"model": model_id, "input": _input_items(messages)}
    if reasoning and previous_response_id is None:
        body["include"] = ["reasoning.encrypted_content"]
    instructions = "\n\n".join(item.text for item in request.messages if isinstance(item, SystemMessage))
    if instructions:
        body["instructions"] = instructions
    if previous_response_id is not None:
        body["previous_response_id"] = previous_response_id
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


def _usage(usage: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        cached_input_tokens=(usage.get("input_tokens_details") or _NONE).get("cached_tokens") or 0,
        reasoning_tokens=(usage.get("output_tokens_details") or _NONE).get("reasoning_tokens") or 0,
    )


_INCOMPLETE: dict[str, FinishReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}
_NONE: dict[str, Any] = {}  # an absent object in an event (read only)
_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})

# The per-delta events, built without the keyword `__init__` (every field given, already checked).


class ResponsesStreamState:
    """Turns Responses stream events into `ModelEvent`s.

    The events are the SDK's decoded JSON (`dict`s in the `ResponseStreamEvent` shapes), not
    its pydantic models: see `OpenAIModel.invoke`. Server-side tool items (MCP, web search,
    ...) run on OpenAI's side and are not client tool calls: they are skipped; the model's
    text about them streams as usual.
    """

    def __init__(self) -> None:
        self._call_ids: dict[str, str] = {}
        self._reasoning: list[dict[str, Any]] = []  # this turn's reasoning items (see above)
        self._unsent = 0  # how many of them no signature has carried yet
        self._refusal: list[str] = []
        self._done = False
        self.response_id: str | None = None

    def feed(self, event: dict[str, Any]) -> Iterator[ModelEvent]:
        """The events one stream event carries."""
        kind: str = event["type"]
        if kind == "response.output_text.delta":
            yield TokenDelta(text=event["delta"])
        elif kind == "response.function_call_arguments.delta":
            item_id: str = event["item_id"]
            yield ToolCallDelta(call_id=self._call_ids.get(item_id, item_id), args_delta=event["delta"])
        elif kind in _REASONING_DELTAS:
            yield ReasoningDelta(text=event["delta"])
        elif kind == "response.created":
            self.response_id = event["response"]["id"]
        elif kind == "response.refusal.delta":
            self._refusal.append(event["delta"])
        elif kind == "response.output_item.added":
            yield from self._item_added(event["item"])
        elif kind == "response.output_item.done":
            self._item_done(event["item"])
        elif kind == "response.completed" or kind == "response.incomplete":
            yield from self._completed(kind, event["response"])
        elif kind == "response.failed":
            error: dict[str, Any] | None = event["response"].get("error")
            raise error_from_code(
                error.get("code") if error else None,
                error.get("message") or "" if error else "the response failed",
            )
        elif kind == "error":
            raise error_from_code(event.get("code"), event.get("message") or "")

    def _item_added(self, item: dict[str, Any]) -> Iterator[ModelEvent]:
        """An output item starts: a client tool call opens; the reasoning before it is placed."""
        item_type: str = item["type"]
        if self._unsent and item_type != "reasoning":
            # The item that follows the turn's latest reasoning items: they go back before it.
            follower = item["call_id"] if item_type == "function_call" else None
            for entry in self._reasoning[-self._unsent :]:
                entry["before"] = follower
            yield from self._signature()
        if item_type == "function_call":
            call_id: str = item["call_id"]
            self._call_ids[item.get("id") or call_id] = call_id
            yield ToolCallDelta(call_id=call_id, name=item["name"], args_delta=item["arguments"])

    def _item_done(self, item: dict[str, Any]) -> None:
        """An output item is complete: a reasoning item is kept for the turn's signature."""
        if item["type"] != "reasoning":
            return
        summary: list[dict[str, Any]] = item.get("summary") or []
        entry: dict[str, Any] = {"id": item["id"], "summary": [part["text"] for part in summary]}
        if item.get("encrypted_content"):
            entry["encrypted_content"] = item["encrypted_content"]
        entry["before"] = None
        self._reasoning.append(entry)
        self._unsent += 1

    def _completed(self, kind: str, response: dict[str, Any]) -> Iterator[ModelEvent]:
        """The response ended (`response.completed` or `response.incomplete`): usage and `Finish`."""
        yield from self._signature()
        if self._refusal:
            raise Refused("".join(self._refusal))
        usage: dict[str, Any] | None = response.get("usage")
        if usage is not None:
            yield _usage(usage)
        reason: FinishReason = "tool_calls" if self._call_ids else "stop"
        if kind == "response.incomplete":
            details: dict[str, Any] = response.get("incomplete_details") or _NONE
            reason = _INCOMPLETE.get(details.get("reason") or "", "other")
        self._done = True
        yield Finish(reason=reason)

    def _signature(self) -> Iterator[ModelEvent]:
        """The turn's reasoning items so far, as the signature of an empty `ReasoningDelta`.

        The run keeps a turn's last signature, so each one carries all the items.
        """
        if self._unsent:
            self._unsent = 0
            yield ReasoningDelta(text="", signature=reasoning_signature(self._reasoning))

    def finish(self) -> Iterator[ModelEvent]:
        """A closing `Finish` when the stream ended without `response.completed`."""
        if not self._done:
            yield from self._signature()
            if self._refusal:
                raise Refused("".join(self._refusal))
            yield Finish(reason="tool_calls" if self._call_ids else "other")
