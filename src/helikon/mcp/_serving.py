"""What `McpAgentServer` and `McpToolServer` share: identity, the low-level SDK server, the transports.

Each server hands this module a `ToolHandler` (what it lists and how a call runs); the
rest — the `initialize` identity, stdio, streamable HTTP on `/mcp`, the ASGI app — is
written once here, on the official SDK's low-level `Server` (no JSON-RPC of our own).
"""

from __future__ import annotations

import asyncio
import copy
import errno
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self

from helikon.core._internal.extras import missing_extra

try:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("helikon.mcp needs the official MCP SDK", "mcp") from exc

from helikon.core.exceptions import UserError

from ._server_calls import WIND_DOWN, abandon
from .errors import Bind, Serve

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from starlette.applications import Starlette

MCP_PATH = "/mcp"
"""Where `serve_streamable_http` and `streamable_http_app` answer MCP requests."""


class ToolHandler(Protocol):
    """A server's tools: what `tools/list` gives and what a `tools/call` runs."""

    def tools(self) -> Sequence[types.Tool]:
        """The tools, as MCP lists them."""
        ...

    async def call(
        self, request: ServerRequestContext[Any], name: str, args: dict[str, Any]
    ) -> types.CallToolResult:
        """Run the tool `name` (one `tools()` lists) with the client's arguments."""
        ...


def unknown_tool(name: str, known: Sequence[str]) -> MCPError:
    """The protocol error for a call of a tool the server does not have (the spec's -32602)."""
    listed = ", ".join(repr(n) for n in known) or "none"
    return MCPError(
        code=types.INVALID_PARAMS, message=f"Unknown tool {name!r}: this server's tools are {listed}"
    )


class McpServing:
    """The serving half of an MCP server: builder steps for its identity, and the transports.

    Subclasses set `_handler`; each builder step returns a changed copy, so one configured
    server can be the template of others.
    """

    _handler: ToolHandler
    _name: str
    _version: str
    _instructions: str | None

    def _init_serving(self, handler: ToolHandler, name: str) -> None:
        self._handler = handler
        self._name = _text("name", name)
        self._version = ""
        self._instructions = None

    def _with(self, **changes: object) -> Self:
        new = copy.copy(self)
        for key, value in changes.items():
            setattr(new, key, value)
        return new

    def name(self, name: str) -> Self:
        """Set the server name reported at `initialize` (`serverInfo.name`)."""
        return self._with(_name=_text("name", name))

    def version(self, version: str) -> Self:
        """Set the server version reported at `initialize` (`serverInfo.version`)."""
        return self._with(_version=_text("version", version, empty_ok=True))

    def instructions(self, instructions: str | None) -> Self:
        """Set the instructions the client receives at `initialize` (None: none)."""
        if instructions is not None:
            instructions = _text("instructions", instructions, empty_ok=True)
        return self._with(_instructions=instructions)

    @property
    def server_name(self) -> str:
        """The name reported at `initialize`."""
        return self._name

    def lowlevel_server(self) -> Server[Any]:
        """A new SDK low-level `Server` answering `tools/list` and `tools/call` for these tools.

        The escape hatch for transports this class does not wrap: run it with
        `await server.run(read_stream, write_stream, server.create_initialization_options())`.
        """
        handler = self._handler

        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=list(handler.tools()))

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return await handler.call(ctx, params.name, dict(params.arguments or {}))

        return Server(
            self._name,
            version=self._version,
            instructions=self._instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )

    async def serve_stdio(self) -> None:
        """Serve on this process's stdin and stdout until the client disconnects.

        Raises:
            McpError.Serve: the server stopped abnormally.
        """
        server = self.lowlevel_server()
        try:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        except Exception as exc:
            raise Serve(f"the MCP stdio server {self._name!r} stopped: {exc}") from exc

    def streamable_http_app(self, *, path: str = MCP_PATH, host: str = "127.0.0.1") -> Starlette:
        """A Starlette app answering streamable HTTP at `path`, to serve or mount in a larger app.

        The app's lifespan runs the MCP session manager: when you mount it, run that lifespan
        in the outer app (`Starlette(..., lifespan=app.router.lifespan_context)`). `host` is
        the address the app is reached on: for a loopback one (the default) requests whose
        `Host`/`Origin` is not loopback are refused (DNS-rebinding protection).
        """
        if not path.startswith("/"):
            raise UserError(f"streamable_http_app(path={path!r}): the path must start with '/'")
        return self.lowlevel_server().streamable_http_app(streamable_http_path=path, host=host)

    async def serve_streamable_http(self, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Listen on `host:port` and serve streamable HTTP at `/mcp` until cancelled.

        Raises:
            McpError.Bind: the address cannot be listened on (in use, not local, no permission).
            McpError.Serve: the HTTP server stopped abnormally.
        """
        import uvicorn

        sock = _bound(host, port)
        app = self.streamable_http_app(host=host)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=int(WIND_DOWN)
        )
        server = uvicorn.Server(config)
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            await asyncio.wait((serving,))
        except asyncio.CancelledError:
            # Stopped by the caller: shut down as on Ctrl-C (the runs in flight are cancelled,
            # the lifespan ends) rather than cutting uvicorn off mid-step.
            server.should_exit = True
            await asyncio.wait((serving,), timeout=3 * WIND_DOWN)
            await abandon(serving)
            raise
        finally:
            sock.close()
        error = serving.exception()
        if error is not None:
            raise Serve(f"the MCP HTTP server {self._name!r} on {host}:{port} stopped: {error}") from error


def _bound(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port`; `Bind` when the address cannot be had.

    Bound here rather than by uvicorn, which logs a bind failure and exits the process.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UserError(f"serve_streamable_http(port={port!r}): give a port number from 0 to 65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise Bind(f"cannot listen on {host}:{port}: the host does not resolve ({exc})") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else str(exc)
        raise Bind(f"cannot listen on {host}:{port}: {why}") from exc
    sock.setblocking(False)
    return sock


def _text(what: str, value: object, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str) or (not empty_ok and not value):
        raise UserError(f".{what}({value!r}): give a {'string' if empty_ok else 'non-empty string'}")
    return value


__all__ = ["MCP_PATH", "McpServing", "ToolHandler", "unknown_tool"]
