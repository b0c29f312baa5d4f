"""Calling a file tool outside a run, for the file-tool tests: its output, its one text part, its metadata."""

from __future__ import annotations

import asyncio
from typing import Any

from helikon import RunContext, ToolContext
from helikon.core.items import TextPart
from helikon.core.tools import ToolOutput


def call(tool: Any, args: dict[str, Any]) -> ToolOutput:
    """`tool.invoke` with `args`, as a run would call it."""
    ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name=tool.name, max_agent_depth=1)
    return asyncio.run(tool.invoke(ctx, args))


def text(out: ToolOutput) -> str:
    """The output's one text part."""
    (part,) = out.to_parts()
    assert isinstance(part, TextPart)
    return part.text


def meta(out: ToolOutput) -> dict[str, Any]:
    """The output's metadata (it must have some)."""
    assert out.metadata is not None
    return out.metadata
