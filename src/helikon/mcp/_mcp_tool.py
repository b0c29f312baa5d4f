"""`McpTool`: one remote MCP tool as a helikon `Tool`.

The effect comes from the server's annotations, which are untrusted hints: `readOnlyHint:
true` is `READ_ONLY`, anything else `SIDE_EFFECT`, and never `WRITE` (so an MCP tool can
never ride `ACCEPT_EDITS`' auto-approval). A tool the server marks destructive carries an
`approval_prompt`, which the permission pipeline puts to the approval handler under the
`DEFAULT` and `ACCEPT_EDITS` modes unless an allow rule covers the call. Destructive
follows the MCP defaults where the server annotated the tool (`destructiveHint` absent
with `readOnlyHint` false means destructive); a tool with no annotations at all is not
destructive unless the handle was built with `.assume_destructive(True)`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from helikon.core.exceptions import InvalidArgs
from helikon.core.tools import ToolEffect

if TYPE_CHECKING:
    from helikon.core._internal.json_value import JsonObject, JsonValue
    from helikon.core.context import ToolContext
    from helikon.core.tools import ToolOutput

    from .client import McpServerHandle

__all__ = ["PLACEHOLDER_SCHEMA", "McpTool", "is_destructive", "tool_name"]

PLACEHOLDER_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}
"""The schema every tool advertises in lazy mode (its real one comes from `search_tools`)."""

# What every provider accepts in a tool name (OpenAI, Anthropic and Gemini alike).
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64


def tool_name(prefix: str, remote: str) -> str:
    """The name the model calls: the prefix and the remote name, made safe for every provider.

    Characters providers refuse (MCP allows `.` and `/`) become `_`; the name is cut to 64.
    """
    return _UNSAFE.sub("_", prefix + remote)[:_MAX_NAME] or "_"


def is_destructive(annotations: Any, assume_destructive: bool) -> bool:
    """Whether a call needs approval, from a `mcp_types.ToolAnnotations` (or None)."""
    if annotations is None:
        return assume_destructive
    if annotations.read_only_hint is True:
        return False
    return annotations.destructive_hint is not False


class McpTool:
    """A tool of an MCP server, called through the handle that listed it."""

    __slots__ = (
        "approval_prompt",
        "description",
        "effect",
        "name",
        "output_schema",
        "real_schema",
        "remote_name",
        "schema",
        "server",
    )

    def __init__(
        self, server: McpServerHandle, remote: Any, name: str, *, lazy: bool, assume_destructive: bool
    ) -> None:
        self.server = server
        self.remote_name: str = remote.name
        self.name = name
        self.description: str = remote.description or ""
        self.real_schema: JsonObject = remote.input_schema
        self.schema: JsonObject = dict(PLACEHOLDER_SCHEMA) if lazy else remote.input_schema
        self.output_schema: JsonObject | None = remote.output_schema
        read_only = remote.annotations is not None and remote.annotations.read_only_hint is True
        self.effect = ToolEffect.READ_ONLY if read_only else ToolEffect.SIDE_EFFECT
        self.approval_prompt: str | None = (
            f"The MCP server {server.label} marks {self.remote_name!r} as destructive. Allow this call?"
            if is_destructive(remote.annotations, assume_destructive)
            else None
        )

    def __repr__(self) -> str:
        return f"McpTool({self.name!r} of {self.server.label})"

    async def invoke(self, ctx: ToolContext[Any], args: JsonValue) -> ToolOutput:
        """Call the remote tool (`tools/call`), racing the run's cancel token."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidArgs([f"(arguments): expected a JSON object, got {type(args).__name__}"])
        return await self.server.call_tool(self.remote_name, args, cancel=ctx.cancel, label=self.name)
