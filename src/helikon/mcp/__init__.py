"""MCP both ways, on the official `mcp` SDK (the `mcp` extra).

- **Client**: `McpServerHandle` connects to an MCP server (stdio child process or streamable
  HTTP) and offers its tools to agents: `LlmAgent(tool_sources=[handle])`.
- **Server**: `McpAgentServer` serves an agent as one MCP tool; `McpToolServer` serves plain
  helikon tools.

`import helikon` never imports this package; `import helikon.mcp` needs the extra
(`pip install 'paigasus-helikon[mcp]'`).
"""

from .builder import McpConnectBuilder
from .client import McpServerHandle
from .errors import McpError
from .server import McpAgentServer, tool_name_for
from .tool_server import McpToolServer

__all__ = [
    "McpAgentServer",
    "McpConnectBuilder",
    "McpError",
    "McpServerHandle",
    "McpToolServer",
    "tool_name_for",
]
