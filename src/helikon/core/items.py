"""Conversation carriers: `Item` (one message in the conversation) and `ContentPart`.

Every variant is a frozen, slotted, keyword-only dataclass with a `type` tag in
snake_case (the stored session format's tags); `ITEM_ADAPTER` and
`CONTENT_PART_ADAPTER` do all JSON (de)serialization.

Example:
    ```python
    from helikon.core.items import ITEM_ADAPTER, AssistantMessage, TextPart

    reply = AssistantMessage(content=(TextPart(text="Hello!"),), agent="greeter")
    assert reply.text == "Hello!"
    assert ITEM_ADAPTER.validate_json(ITEM_ADAPTER.dump_json(reply)) == reply
    ```
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from ._internal.adapter import BY_TYPE, LazyAdapter
from ._internal.carrier import carrier
from ._internal.json_value import JsonValue

# --- media sources ---------------------------------------------------------------------------


@carrier
class UrlSource:
    """Media referenced by URL."""

    type: Literal["url"] = "url"
    url: str


@carrier
class Base64Source:
    """Media carried inline as base64 data."""

    type: Literal["base64"] = "base64"
    media_type: str
    """MIME type, e.g. `image/png` or `audio/wav`."""
    data: str


MediaSource: TypeAlias = UrlSource | Base64Source
"""Where an image or audio part's bytes come from."""

# --- content parts ---------------------------------------------------------------------------


@carrier
class TextPart:
    """Plain text."""

    type: Literal["text"] = "text"
    text: str


@carrier
class ReasoningPart:
    """Model reasoning ("thinking"), with the provider's signature when it gives one.

    Providers such as Anthropic require the signature to be sent back verbatim with the
    reasoning on the next turn.
    """

    type: Literal["reasoning"] = "reasoning"
    text: str
    signature: str | None = None
    provider: str | None = None
    """The provider that produced (and signed) the reasoning, e.g. `anthropic`."""


@carrier
class ImagePart:
    """An image, by URL or inline."""

    type: Literal["image"] = "image"
    source: MediaSource
    detail: str | None = None
    """Provider resolution hint (`low`, `high`, `auto`), when the provider has one."""


@carrier
class AudioPart:
    """An audio clip, by URL or inline."""

    type: Literal["audio"] = "audio"
    source: MediaSource


@carrier
class ToolUsePart:
    """A tool call nested in message content, as Anthropic-style providers emit it."""

    type: Literal["tool_use"] = "tool_use"
    call_id: str
    name: str
    args: JsonValue


ContentPart: TypeAlias = TextPart | ReasoningPart | ImagePart | AudioPart | ToolUsePart
"""One piece of message content."""

ContentParts: TypeAlias = tuple[Annotated[ContentPart, BY_TYPE], ...]
"""A message's content, as the carriers declare it (pydantic reads each part by its `type` tag)."""

# --- items -----------------------------------------------------------------------------------


def _joined_text(parts: tuple[ContentPart, ...]) -> str:
    if len(parts) == 1:
        part = parts[0]
        return part.text if isinstance(part, TextPart) else ""
    return "".join(p.text for p in parts if isinstance(p, TextPart))


@carrier
class SystemMessage:
    """Instructions (or a compaction summary) addressed to the model."""

    type: Literal["system"] = "system"
    text: str


@carrier
class UserMessage:
    """A user turn."""

    type: Literal["user"] = "user"
    content: ContentParts

    @classmethod
    def from_text(cls, text: str) -> UserMessage:
        """A user message holding one text part."""
        return cls(content=(TextPart(text=text),))

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return _joined_text(self.content)


@carrier
class AssistantMessage:
    """A model turn's message, tagged with the agent that produced it."""

    type: Literal["assistant"] = "assistant"
    content: ContentParts
    agent: str | None = None

    @classmethod
    def from_text(cls, text: str, agent: str | None = None) -> AssistantMessage:
        """An assistant message holding one text part."""
        return cls(content=(TextPart(text=text),), agent=agent)

    @property
    def text(self) -> str:
        """The concatenated text parts (reasoning and other parts are left out)."""
        return _joined_text(self.content)


@carrier
class ToolCall:
    """The model asked to call a tool. `args` is the parsed JSON arguments object.

    When a provider streams arguments that are not valid JSON, `args` holds the raw
    string so the tool layer can report it back to the model as invalid arguments.
    """

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    args: JsonValue


@carrier
class ToolResult:
    """A tool's answer to one `ToolCall`, matched by `call_id`."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    content: ContentParts
    is_error: bool = False
    name: str | None = None
    """The tool's name; some providers (Gemini) need it next to the result."""

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return _joined_text(self.content)


Item: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolCall | ToolResult
"""One entry of the conversation a model sees."""


def _item_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[Item, Field(discriminator="type")]


def _part_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[ContentPart, Field(discriminator="type")]


ITEM_ADAPTER: LazyAdapter[Item] = LazyAdapter(_item_type)
"""JSON (de)serialization of any `Item`."""

CONTENT_PART_ADAPTER: LazyAdapter[ContentPart] = LazyAdapter(_part_type)
"""JSON (de)serialization of any `ContentPart`."""

__all__ = [
    "CONTENT_PART_ADAPTER",
    "ITEM_ADAPTER",
    "AssistantMessage",
    "AudioPart",
    "Base64Source",
    "ContentPart",
    "ImagePart",
    "Item",
    "MediaSource",
    "ReasoningPart",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "ToolUsePart",
    "UrlSource",
    "UserMessage",
]
