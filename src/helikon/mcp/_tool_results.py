"""helikon tools as MCP sees them: a `Tool` as an MCP tool definition, a `ToolOutput` as a call result.

MCP (through protocol 2025-11-25) wants `structuredContent` and `outputSchema` to be
objects, so a value or schema that is not one travels wrapped as `{"result": ...}`, as
the official SDK's own server does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import mcp_types as types

from helikon.core.items import (
    AudioPart,
    Base64Source,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolUsePart,
)
from helikon.core.tools import Tool, ToolEffect, ToolOutput

_PARTS = (TextPart, ReasoningPart, ImagePart, AudioPart, ToolUsePart)  # ContentPart's members


def definition(tool: Tool[Any]) -> types.Tool:
    """The MCP definition of `tool`: its name, description, schemas, and hints from its effect.

    `READ_ONLY` becomes `readOnlyHint: true`; a tool that asks for approval
    (`approval_prompt`) also says `destructiveHint: true`. Nothing else is claimed.
    """
    read_only = tool.effect is ToolEffect.READ_ONLY
    destructive = True if getattr(tool, "approval_prompt", None) else None
    return types.Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=dict(tool.schema) if tool.schema else {"type": "object"},
        output_schema=output_schema(tool),
        annotations=types.ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive),
    )


def output_schema(tool: Tool[Any]) -> dict[str, Any] | None:
    """The MCP `outputSchema` of `tool`: None for text (or unknown) output, else an object schema."""
    schema = tool.output_schema
    if not schema or schema.get("type") == "string":
        return None
    if _is_object(schema):
        return dict(schema)
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


def call_result(tool: Tool[Any], output: object) -> types.CallToolResult:
    """`output` as MCP content: a string as text; any other value as JSON text and `structuredContent`.

    Raises:
        ValueError: `output` is not a `ToolOutput` MCP can carry; the message says what is wrong.
    """
    if not isinstance(output, ToolOutput):
        raise ValueError(f"it returned {_shown(output)}, not a ToolOutput")
    parts: object = output.parts
    if parts is not None:
        if not isinstance(parts, tuple | list):
            raise ValueError(f"its ToolOutput.parts is a {_shown(parts)}, not a tuple of content parts")
        items = cast("Sequence[object]", parts)
        return types.CallToolResult(content=[_block(i, part) for i, part in enumerate(items)])
    value = output.value
    if isinstance(value, str) and output_schema(tool) is None:
        return types.CallToolResult(content=[types.TextContent(text=value)])
    try:
        text = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"its ToolOutput value is not JSON ({exc}): {_shown(value)}") from exc
    schema = tool.output_schema
    wrapped = not _is_object(schema) if schema else not isinstance(value, dict)
    structured = {"result": value} if wrapped else value
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _is_object(schema: object) -> bool:
    if not isinstance(schema, dict):
        return False
    kind: object = cast("dict[str, object]", schema).get("type")
    return kind == "object"


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _block(index: int, part: object) -> types.ContentBlock:
    if not isinstance(part, _PARTS):
        raise ValueError(
            f"its ToolOutput.parts[{index}] is a {_shown(part)}, not a content part "
            "(TextPart, ImagePart, AudioPart, ...): e.g. ToolOutput(parts=(TextPart(text='...'),))"
        )
    if isinstance(part, TextPart):
        return types.TextContent(text=part.text)
    if isinstance(part, ImagePart) and isinstance(part.source, Base64Source):
        return types.ImageContent(data=part.source.data, mime_type=part.source.media_type)
    if isinstance(part, AudioPart) and isinstance(part.source, Base64Source):
        return types.AudioContent(data=part.source.data, mime_type=part.source.media_type)
    if isinstance(part, ImagePart | AudioPart) and not isinstance(part.source, Base64Source):
        return types.TextContent(text=f"[{part.type}: {part.source.url}]")
    return types.TextContent(text=f"[{part.type} content]")


__all__ = ["call_result", "definition", "output_schema"]
