"""An MCP `CallToolResult` as the `ToolOutput` the agent sees.

- `structuredContent` is the value, as the server sent it;
- else a single text block is a string, any other content a list (text blocks as strings,
  other blocks as their MCP JSON objects);
- images and audio also travel as content parts, so a model with vision sees them;
- `isError` raises `ToolError` with the server's text.
"""

from __future__ import annotations

from typing import Any

from helikon.core.exceptions import ToolError
from helikon.core.items import AudioPart, Base64Source, ContentPart, ImagePart, TextPart
from helikon.core.tools import ToolOutput

__all__ = ["content_part", "tool_output"]


def tool_output(tool: str, result: Any) -> ToolOutput:
    """`result` (a `mcp_types.CallToolResult`) as a `ToolOutput`; `ToolError` for an error result."""
    blocks: list[Any] = list(result.content)
    if result.is_error:
        text = "\n".join(block.text for block in blocks if block.type == "text")
        raise ToolError(text or f"the MCP tool {tool!r} failed (an error result with no text)")
    if result.structured_content is not None:
        return ToolOutput(result.structured_content)
    parts = _media_parts(blocks)
    if len(blocks) == 1 and blocks[0].type == "text":
        return ToolOutput(blocks[0].text)
    return ToolOutput([_block_json(block) for block in blocks], parts=parts)


def _block_json(block: Any) -> Any:
    if block.type == "text":
        return block.text
    return block.model_dump(by_alias=True, mode="json", exclude_none=True)


def content_part(block: Any) -> ContentPart | None:
    """An MCP text, image or audio block as the model's content part; `None` for other blocks."""
    if block.type == "text":
        return TextPart(text=block.text)
    if block.type == "image":
        return ImagePart(source=Base64Source(media_type=block.mime_type, data=block.data))
    if block.type == "audio":
        return AudioPart(source=Base64Source(media_type=block.mime_type, data=block.data))
    return None


def _media_parts(blocks: list[Any]) -> tuple[ContentPart, ...] | None:
    """Text, image and audio parts for the model, when the result holds an image or audio."""
    if not any(block.type in ("image", "audio") for block in blocks):
        return None
    parts: list[ContentPart] = []
    for block in blocks:
        part = content_part(block)
        if part is None:
            import json

            part = TextPart(text=json.dumps(_block_json(block), ensure_ascii=False))
        parts.append(part)
    return tuple(parts)
