"""MCP both ways, on the official `mcp` SDK (the `mcp` extra).

- **Client**: `McpServerHandle` connects to an MCP server (stdio child process or streamable
  HTTP) and offers its tools to agents: `LlmAgent(tool_sources=[handle])`.
- **Server**: `McpAgentServer` serves an agent as one MCP tool; `McpToolServer` serves plain
  helikon tools.

`import helikon` never imports this package, and `import helikon.mcp` does not load the SDK:
connecting, or the servers' first access, does, and without the extra it raises an
`ImportError` that says `pip install 'paigasus-helikon[mcp]'`.
"""

from typing import TYPE_CHECKING, Any

from helikon._lazy_exports import lazy_attribute

from .builder import McpConnectBuilder
from .client import McpServerHandle
from .errors import McpError

if TYPE_CHECKING:
    from ._server_calls import call_headers
    from .server import McpAgentServer, tool_name_for
    from .tool_server import McpToolServer

# The servers' names -> their module, imported on first access: they load the SDK's server
# stack (Starlette, uvicorn), which a client alone never needs.
_LAZY = {
    "call_headers": "_server_calls",
    "McpAgentServer": "server",
    "tool_name_for": "server",
    "McpToolServer": "tool_server",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


__all__ = [
    "McpAgentServer",
    "McpConnectBuilder",
    "McpError",
    "McpServerHandle",
    "McpToolServer",
    "call_headers",
    "tool_name_for",
]
