"""Map a helikon `ModelRequest` to the keyword arguments of Anthropic's `messages.create`.

Pure functions over plain dicts: no SDK import, so they are cheap to test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from helikon.core.exceptions import UserError
from helikon.core.items import (
    AudioPart,
    ContentPart,
    ImagePart,
    Item,
    ReasoningPart,
    TextPart,
    ToolResult,
    ToolUsePart,
    UrlSource,
)
from helikon.core.model import ModelRequest, NamedToolChoice, ToolChoice

from ._turns import fold_turns

Block = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendedThinking:
    """Anthropic extended thinking: `thinking={"type": "enabled", "budget_tokens": ...}`.

    `budget_tokens` must be at least 1024 and below the call's `max_tokens`. `display`
    (`"summarized"` or `"omitted"`) is sent only when set.
    """

    budget_tokens: int
    display: Literal["summarized", "omitted"] | None = None

    def __post_init__(self) -> None:
        budget = cast(object, self.budget_tokens)
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1024:
            raise UserError(f"ExtendedThinking(budget_tokens={budget!r}): must be an integer >= 1024")

    def to_param(self) -> dict[str, Any]:
        """The `thinking` request field."""
        param: dict[str, Any] = {"type": "enabled", "budget_tokens": self.budget_tokens}
        if self.display is not None:
            param["display"] = self.display
        return param


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheStrategy:
    """Where to put Anthropic prompt-cache breakpoints (`cache_control: {"type": "ephemeral"}`).

    Attributes:
        system: Cache the system prompt (sent as one text block carrying the breakpoint).
        tools: Cache the tool definitions (the breakpoint goes on the last tool).
        last_message: Also cache the conversation so far (breakpoint on the last block of
            the last message), useful for long multi-turn runs.
        ttl: `"5m"` (the default cache lifetime) or `"1h"` (sent as `ttl: "1h"`).
    """

    system: bool = True
    tools: bool = True
    last_message: bool = False
    ttl: Literal["5m", "1h"] = "5m"

    def control(self) -> dict[str, Any]:
        """The `cache_control` value."""
        return {"type": "ephemeral", "ttl": "1h"} if self.ttl == "1h" else {"type": "ephemeral"}


def build_params(
    request: ModelRequest,
    *,
    model_id: str,
    max_tokens: int,
    thinking: ExtendedThinking | None,
    cache: CacheStrategy | None,
) -> dict[str, Any]:
    """The `messages.create` keyword arguments (without `stream`) for `request`."""
    system, messages = _conversation(request.messages)
    settings = request.model_settings
    params: dict[str, Any] = {
        "model": model_id,
        "max_tokens": settings.max_output_tokens or max_tokens,
        "messages": messages,
    }
    if system:
        text = "\n\n".join(system)
        if cache is not None and cache.system:
            params["system"] = [{"type": "text", "text": text, "cache_control": cache.control()}]
        else:
            params["system"] = text
    if request.tools:
        tools: list[Block] = []
        for tool in request.tools:
            param: Block = {
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters,
            }
            if tool.strict:
                param["strict"] = True
            tools.append(param)
        if cache is not None and cache.tools:
            tools[-1]["cache_control"] = cache.control()
        params["tools"] = tools
        if settings.tool_choice is not None:
            params["tool_choice"] = _tool_choice(settings.tool_choice)
    if cache is not None and cache.last_message and messages:
        last = messages[-1]["content"]
        if last:
            last[-1]["cache_control"] = cache.control()
    if thinking is not None:
        params["thinking"] = thinking.to_param()
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.top_p is not None:
        params["top_p"] = settings.top_p
    fmt = settings.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.schema is not None:
        params["output_config"] = {"format": {"type": "json_schema", "schema": dict(fmt.schema)}}
    return params


def _tool_choice(choice: ToolChoice) -> Block:
    if isinstance(choice, NamedToolChoice):
        return {"type": "tool", "name": choice.name}
    return {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}


def _conversation(items: Sequence[Item]) -> tuple[list[str], list[Block]]:
    """System texts (hoisted, in order) and the alternating user/assistant messages."""
    return fold_turns(
        items,
        user_block=_user_block,
        assistant_block=_assistant_block,
        tool_use=_tool_use,
        tool_result=_tool_result,
    )


def _tool_use(call_id: str, name: str, args: Any) -> Block:
    # Arguments that did not parse as JSON are kept as the raw string by the driver;
    # Anthropic only accepts an object here, so such a call goes back with `{}`.
    return {"type": "tool_use", "id": call_id, "name": name, "input": args if isinstance(args, dict) else {}}


def _media(part: ImagePart) -> Block:
    source = part.source
    if isinstance(source, UrlSource):
        return {"type": "image", "source": {"type": "url", "url": source.url}}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": source.media_type, "data": source.data},
    }


def _user_block(part: ContentPart) -> Block | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ImagePart):
        return _media(part)
    if isinstance(part, AudioPart):
        raise UserError("AnthropicModel: Anthropic does not accept audio input; remove the AudioPart")
    return None  # reasoning / tool_use parts have no place in a user turn


def _assistant_block(part: ContentPart) -> Block | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ReasoningPart):
        # Only Anthropic-signed reasoning can go back; anything else would be rejected.
        if not part.signature or part.provider not in (None, "anthropic"):
            return None
        if not part.text:
            return {"type": "redacted_thinking", "data": part.signature}
        return {"type": "thinking", "thinking": part.text, "signature": part.signature}
    if isinstance(part, ToolUsePart):
        return _tool_use(part.call_id, part.name, part.args)
    if isinstance(part, ImagePart):
        return _media(part)
    return None


def _tool_result(result: ToolResult) -> Block:
    content: Any
    if all(isinstance(p, TextPart) for p in result.content):
        content = "".join(p.text for p in result.content if isinstance(p, TextPart))
    else:
        content = [b for p in result.content if (b := _user_block(p)) is not None]
    block: Block = {"type": "tool_result", "tool_use_id": result.call_id, "content": content}
    if result.is_error:
        block["is_error"] = True
    return block
