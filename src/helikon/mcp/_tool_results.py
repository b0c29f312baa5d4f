"""helikon tools as MCP sees them: a `Tool` as an MCP tool definition, a `ToolOutput` as a call result.

MCP (through protocol 2025-11-25) wants `structuredContent` and `outputSchema` to be
objects, so a value or schema that is not one travels wrapped as `{"result": ...}`, as
the official SDK's own server does.
"""

from __future__ import annotations

import json
from typing import Any, cast

import mcp_types as types

from helikon.core.items import AudioPart, Base64Source, ContentPart, ImagePart, TextPart
from helikon.core.tools import Tool, ToolEffect, ToolOutput


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


def call_result(tool: Tool[Any], output: ToolOutput) -> types.CallToolResult:
    """`output` as MCP content: a string as text; any other value as JSON text and `structuredContent`."""
    if output.parts is not None:
        return types.CallToolResult(content=[_block(part) for part in output.parts])
    value = output.value
    if isinstance(value, str) and output_schema(tool) is None:
        return types.CallToolResult(content=[types.TextContent(text=value)])
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    schema = tool.output_schema
    wrapped = not _is_object(schema) if schema else not isinstance(value, dict)
    structured = {"result": value} if wrapped else value
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _is_object(schema: object) -> bool:
    if not isinstance(schema, dict):
        return False
    kind: object = cast("dict[str, object]", schema).get("type")
    return kind == "object"


def _block(part: ContentPart) -> types.ContentBlock:
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
