"""Lazy mode's `search_tools` meta-tool: the real schemas, found on demand.

In lazy mode every MCP tool advertises a placeholder schema, which keeps a server with
thousands of tools from flooding the prompt; the model asks `search_tools` (prefixed like
the tools) for the ones it needs. The query matches names and descriptions
case-insensitively; at most 20 matches come back, with `total_matches` the count before
the cap and `"truncated": true` only when it cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from helikon.core.exceptions import InvalidArgs
from helikon.core.tools import ToolEffect, ToolOutput

if TYPE_CHECKING:
    from helikon.core._internal.json_value import JsonObject, JsonValue
    from helikon.core.context import ToolContext

    from ._mcp_tool import McpTool

__all__ = ["MAX_MATCHES", "SearchTools"]

MAX_MATCHES = 20

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to look for in tool names and descriptions."}
    },
    "required": ["query"],
    "additionalProperties": False,
}


class SearchTools:
    """The meta-tool: `{"query": string}` -> `{"tools": [...], "total_matches": N[, "truncated": true]}`."""

    __slots__ = ("_tools", "description", "name")

    effect = ToolEffect.READ_ONLY
    output_schema: JsonObject | None = None

    def __init__(self, name: str, server_label: str, tools: Callable[[], Sequence[McpTool]]) -> None:
        self.name = name
        self.description = (
            f"Search the tools of the MCP server {server_label} by name or description. The tools are "
            "listed without their parameters: call this first to get a tool's real input schema."
        )
        self._tools = tools

    @property
    def schema(self) -> JsonObject:
        """`{"query": string}`."""
        return _SCHEMA

    def __repr__(self) -> str:
        return f"SearchTools({self.name!r})"

    async def invoke(self, ctx: ToolContext[Any], args: JsonValue) -> ToolOutput:
        """The tools whose name or description contains the query (case-insensitive)."""
        query = args.get("query") if isinstance(args, dict) else None
        if not isinstance(query, str):
            raise InvalidArgs(['query: give the words to look for, as a string: {"query": "file"}'])
        return ToolOutput(search(self._tools(), query))


def search(tools: Sequence[McpTool], query: str) -> dict[str, JsonValue]:
    """The envelope `search_tools` returns for `query` over `tools`."""
    needle = query.casefold()
    matches = [t for t in tools if needle in t.name.casefold() or needle in t.description.casefold()]
    found: list[JsonValue] = [
        {"name": t.name, "description": t.description, "input_schema": t.real_schema}
        for t in matches[:MAX_MATCHES]
    ]
    envelope: dict[str, JsonValue] = {"tools": found, "total_matches": len(matches)}
    if len(matches) > MAX_MATCHES:
        envelope["truncated"] = True
    return envelope
