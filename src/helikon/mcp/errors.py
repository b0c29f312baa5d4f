"""`McpError`: what can go wrong with an MCP connection or server, one subclass per kind.

A tool call that fails on the client side is never an `McpError`: the agent sees a
`ToolError`, like any tool's failure. `McpError` is for the connection itself (connecting,
spawning a server, a request the peer refused) and for serving.

Example:
    ```python
    from helikon.mcp import McpError

    try:
        raise McpError.Spawn("npx: command not found")
    except McpError as error:
        assert error.kind == "spawn"
    ```
"""

from __future__ import annotations

from typing import ClassVar

from helikon.core.exceptions import HelikonError

__all__ = ["Bind", "Connect", "McpError", "OtherMcpError", "Serve", "Service", "Spawn"]


class McpError(HelikonError):
    """An MCP connection or server failed; `kind` names which step ("connect", "spawn", ...)."""

    kind: ClassVar[str] = "other"
    Connect: ClassVar[type[Connect]]
    Spawn: ClassVar[type[Spawn]]
    Service: ClassVar[type[Service]]
    Bind: ClassVar[type[Bind]]
    Serve: ClassVar[type[Serve]]
    Other: ClassVar[type[OtherMcpError]]


class Connect(McpError):
    """The initialize handshake (or the transport under it) failed."""

    kind = "connect"


class Spawn(McpError):
    """The stdio server's process could not be started."""

    kind = "spawn"


class Service(McpError):
    """A request on a live connection failed (the server answered with an error, or went away)."""

    kind = "service"


class Bind(McpError):
    """The HTTP server could not listen on the address asked for."""

    kind = "bind"


class Serve(McpError):
    """A running server stopped abnormally."""

    kind = "serve"


class OtherMcpError(McpError):
    """Anything else."""

    kind = "other"


McpError.Connect = Connect
McpError.Spawn = Spawn
McpError.Service = Service
McpError.Bind = Bind
McpError.Serve = Serve
McpError.Other = OtherMcpError
