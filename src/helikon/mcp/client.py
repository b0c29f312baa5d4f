"""`McpServerHandle`: a connected MCP server whose tools an agent can use.

Connect with one of three entry points, each returning an `McpConnectBuilder`:
`McpServerHandle.stdio(command, args)` (a child process), `.streamable_http(url)` or
`.transport(factory)` (anything yielding the SDK's streams). The handle is a `ToolSource`:
`LlmAgent(tool_sources=[handle])` offers its tools each model turn. The connection (and a
stdio child) lives until `close()`, the end of `async with`, or the handle and every tool
it made being garbage-collected; a stdio child never outlives this process.

Example:
    ```python
    import asyncio
    import sys

    from helikon.mcp import McpServerHandle

    SERVER = '''
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("demo")

    @server.tool()
    def add(a: int, b: int) -> str:
        "Add two numbers."
        return str(a + b)

    server.run()
    '''

    async def main() -> None:
        async with McpServerHandle.stdio(sys.executable, ["-c", SERVER]).tool_prefix("demo_") as demo:
            (add,) = demo.tools()
            assert add.name == "demo_add"
            out = await demo.call_tool("add", {"a": 2, "b": 40})
            assert out.value == {"result": "42"}  # the server's structuredContent

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from os import PathLike
from typing import IO, TYPE_CHECKING, Any

from helikon.core.exceptions import ToolError

from ._calls import SessionExpired, call_once, session_expired
from ._connection import Connection, client_session, describe
from ._mcp_tool import McpTool, tool_name
from ._results import tool_output
from ._search_tools import SearchTools
from ._stdio import kill_group
from ._transports import http_options, stdio_options, user_options
from .builder import McpConnectBuilder
from .errors import Connect, McpError, Service

if TYPE_CHECKING:
    from types import TracebackType

    from helikon.core.cancel import CancellationToken
    from helikon.core.context import RunContext
    from helikon.core.tools import Tool, ToolOutput

    from ._options import Options

__all__ = ["McpServerHandle"]

# A server whose cursors never end is a bug; stop rather than loop forever.
_MAX_PAGES = 1000


class _Link:
    """What the background task and the finalizer share, so neither keeps the handle alive."""

    __slots__ = ("connection", "opening", "pids", "tools_stale")

    def __init__(self) -> None:
        self.connection: Connection | None = None
        self.opening: Connection | None = None  # one in its handshake, not yet `connection`
        self.pids: list[int] = []  # the live stdio child, if any
        self.tools_stale = False

    def on_spawn(self, pid: int, running: bool) -> None:
        if running:
            self.pids[:] = [pid]
        elif pid in self.pids:
            self.pids.remove(pid)

    async def on_message(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.tools_stale = True

    def reap(self) -> None:
        """The handle is gone without `close()`: end the connection, kill the child if the loop is gone."""
        connection = self.connection
        if connection is not None:
            connection.abandon()
        loop_alive = connection is not None and connection.loop_running()
        if not loop_alive:
            for pid in self.pids:
                kill_group(pid)


class McpServerHandle:
    """A live connection to one MCP server; its tools, resources and prompts."""

    __slots__ = ("__weakref__", "_finalizer", "_link", "_lock", "_tools", "options")

    def __init__(self, options: Options, link: _Link) -> None:
        self.options = options
        self._link = link
        self._lock = asyncio.Lock()
        self._tools: list[McpTool] = []
        self._finalizer = weakref.finalize(self, link.reap)

    # --- entry points -------------------------------------------------------------------------

    @staticmethod
    def stdio(
        command: str | PathLike[str],
        args: Iterable[str | PathLike[str]] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None,
        stderr: IO[Any] | int | None = None,
    ) -> McpConnectBuilder:
        """A server run as a child process speaking MCP on its stdin/stdout.

        Args:
            command: The executable (looked up on PATH).
            args: Its arguments.
            env: Variables set for it, over this process's environment.
            cwd: Its working directory.
            stderr: Where its stderr goes (a file, or `subprocess.DEVNULL`); this process's by default.
        """
        return McpConnectBuilder(stdio_options(command, args, env, cwd, stderr), McpServerHandle.connect_with)

    @staticmethod
    def streamable_http(
        url: str, *, headers: Mapping[str, str] | None = None, terminate_on_close: bool = True
    ) -> McpConnectBuilder:
        """A server at a streamable-HTTP endpoint (e.g. `http://127.0.0.1:8000/mcp`).

        Args:
            url: The endpoint.
            headers: Sent with every request (e.g. `{"Authorization": "Bearer ..."}`).
            terminate_on_close: Send DELETE to end the server's session on close.
        """
        return McpConnectBuilder(http_options(url, headers, terminate_on_close), McpServerHandle.connect_with)

    @staticmethod
    def transport(factory: Any) -> McpConnectBuilder:
        """A transport you build, called once per connection (again after a dropped one).

        `factory()` returns an async context manager yielding the SDK's `(read_stream,
        write_stream)`, as `mcp.client.stdio.stdio_client(...)` does.
        """
        return McpConnectBuilder(user_options(factory), McpServerHandle.connect_with)

    @classmethod
    async def connect_with(cls, options: Options) -> McpServerHandle:
        """Connect with `options` (what `McpConnectBuilder.connect()` does)."""
        client_session()  # without the `mcp` extra, this says what to install
        handle = cls(options, _Link())
        async with handle._lock:
            await handle._reconnect()
        return handle

    # --- connection ---------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """Which server this is, for messages: `stdio:<command>`, the URL, or `transport:<name>`."""
        return self.options.label

    def __repr__(self) -> str:
        return f"McpServerHandle({self.label})"

    def _session_options(self) -> dict[str, Any]:
        import mcp_types

        from ._sampling import elicitation_callback, sampling_callback

        options = self.options
        session: dict[str, Any] = {
            "message_handler": self._link.on_message,
            "client_info": mcp_types.Implementation(name=options.client_name, version=_version()),
        }
        if options.sampling_model is not None:
            session["sampling_callback"] = sampling_callback(options.sampling_model)
        if options.elicitation_handler is not None:
            session["elicitation_callback"] = elicitation_callback(options.elicitation_handler)
        return session

    async def _reconnect(self) -> Connection:
        """A fresh connection, its tools listed (the lock is held)."""
        link = self._link
        old = link.connection
        if old is not None:
            await old.close()
        factory = self.options.make_transport(link.on_spawn)
        connection = Connection.start(factory, self._session_options(), self.label)
        link.opening = connection  # so that `close()` meanwhile ends it too
        try:
            await connection.handshake(self.options.connect_timeout, self.label)
        finally:
            link.opening = None
        if self._finalizer.alive is False:  # closed as the handshake finished
            await connection.close()
            raise Connect(f"{self.label}: the handle was closed while it connected")
        link.connection = connection
        wait = self.options.connect_timeout
        try:
            async with asyncio.timeout(wait):
                await self._list_into(connection)
        except TimeoutError:
            await connection.close()
            raise Connect(f"{self.label}: no answer to `tools/list` within {wait:g}s") from None
        except (McpError, SessionExpired) as exc:
            await connection.close()
            raise Connect(f"{self.label}: tools/list failed: {exc}") from exc
        return connection

    async def _live(self) -> Connection:
        """The connection, opened anew if the last one dropped."""
        connection = self._link.connection
        if connection is not None and not connection.on_this_loop():
            raise Service(
                f"{self.label}: this handle was connected on another event loop; connect it (and close "
                "it) in the loop that runs the agent"
            )
        if connection is not None and not connection.closed:
            return connection
        if self._finalizer.alive is False:
            raise Service(f"{self.label}: the handle is closed")
        async with self._lock:
            connection = self._link.connection
            if connection is not None and not connection.closed:
                return connection
            return await self._reconnect()

    @property
    def server_info(self) -> Any:
        """The server's `mcp_types.Implementation` (name, version) from `initialize`."""
        connection = self._link.connection
        return None if connection is None else connection.initialize_result.server_info

    @property
    def instructions(self) -> str | None:
        """The server's instructions from `initialize`, if it gave any."""
        connection = self._link.connection
        return None if connection is None else connection.initialize_result.instructions

    async def close(self) -> None:
        """Close the connection (a stdio child is stopped: stdin closed, then SIGTERM, SIGKILL).

        A connection still in its `initialize` handshake (a reconnect) is ended at once.
        """
        link = self._link
        self._finalizer.detach()
        connection, link.connection = link.connection, None
        for each in (link.opening, connection):
            if each is not None:
                await each.close()
        link.pids.clear()

    async def __aenter__(self) -> McpServerHandle:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- tools --------------------------------------------------------------------------------

    async def _list_into(self, connection: Connection) -> None:
        import mcp_types

        remote: list[Any] = []
        cursor: str | None = None
        # Reset before asking: a change announced while the pages arrive makes the next turn ask again.
        self._link.tools_stale = False
        for _ in range(_MAX_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            page = await self._request(connection, "tools/list", connection.session.list_tools(params=params))
            remote.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self._set_tools(remote)

    def _set_tools(self, remote: list[Any]) -> None:
        options = self.options
        taken: set[str] = set()
        tools: list[McpTool] = []
        for spec in remote:
            name = tool_name(options.prefix, spec.name)
            base, n = name, 2
            while name in taken:  # two remote names that differ only in characters providers refuse
                name, n = f"{base[:60]}_{n}", n + 1
            taken.add(name)
            tools.append(
                McpTool(self, spec, name, lazy=options.lazy, assume_destructive=options.assume_destructive)
            )
        self._tools = tools

    def _allowed(self) -> list[McpTool]:
        allow, deny = self.options.allow, self.options.deny
        return [
            t for t in self._tools if t.remote_name not in deny and (allow is None or t.remote_name in allow)
        ]

    def tools(self) -> list[Tool[Any]]:
        """The tools as last listed (at connect, or since), after allow/deny.

        Lazy mode adds `search_tools`. The `tool_filter` predicate is applied by `list_tools(ctx)`.
        """
        found: list[Tool[Any]] = list(self._allowed())
        if self.options.lazy:
            found.append(
                SearchTools(tool_name(self.options.prefix, "search_tools"), self.label, self._allowed)
            )
        return found

    async def refresh_tools(self) -> list[Tool[Any]]:
        """List the server's tools again (every page) and return `tools()`."""
        connection = await self._live()
        async with self._lock:
            try:
                await self._list_into(connection)
            except SessionExpired:
                await self._reconnect()
        return self.tools()

    async def list_tools(self, ctx: RunContext[Any] | None) -> Sequence[Tool[Any]]:
        """The tools to offer now (the `ToolSource` protocol), filtered for `ctx`.

        Listed again when the server said its list changed (or always, with
        `cache_tools_list(False)`).
        """
        connection = self._link.connection
        stale = self._link.tools_stale or not self.options.cache_tools_list
        if stale or connection is None or connection.closed:
            tools = await self.refresh_tools()
        else:
            tools = self.tools()
        predicate = self.options.tool_filter
        if predicate is None:
            return tools
        kept: list[Tool[Any]] = []
        for tool in tools:
            verdict = predicate(ctx, tool)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict:
                kept.append(tool)
        return kept

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        cancel: CancellationToken | None = None,
        label: str | None = None,
    ) -> ToolOutput:
        """Call the server's tool `name` (its own name, without the prefix) as an agent would.

        Structured content comes back as it is, one text block as a string, other content as
        a list. Races `cancel`: once it fires the call is abandoned (the server gets
        `notifications/cancelled`).

        Raises:
            ToolError: The server answered with an error result or a protocol error, the call
                was cancelled or timed out, or the connection dropped during the call (the
                next call connects anew).
        """
        label = label or name
        options = self.options
        for attempt in (1, 2):
            connection = await self._live_for_call(label)
            try:
                result = await call_once(
                    connection,
                    name,
                    arguments or {},
                    cancel=cancel,
                    label=label,
                    limit=options.call_timeout,
                    server=self.label,
                )
            except SessionExpired as exc:
                if attempt == 2:
                    raise ToolError(f"{self.label} refused a fresh session too: {exc}") from exc
                continue
            return tool_output(label, result)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _live_for_call(self, label: str) -> Connection:
        try:
            return await self._live()
        except McpError as exc:
            raise ToolError(f"the MCP tool {label!r} is unreachable: {exc}") from exc

    # --- resources and prompts ----------------------------------------------------------------

    async def _request(self, connection: Connection, what: str, request: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        try:
            return await request
        except MCPError as exc:
            import mcp_types

            if exc.code == mcp_types.CONNECTION_CLOSED or session_expired(exc):
                connection.mark_dropped()
            if session_expired(exc):
                raise SessionExpired(str(exc)) from exc
            raise Service(f"{self.label}: {what} failed: MCP error {exc.code}: {exc.message}") from exc
        except (OSError, RuntimeError) as exc:
            connection.mark_dropped()
            raise Service(f"{self.label}: {what} failed: {describe(exc)}") from exc

    async def _retried(self, what: str, send: Callable[[Any], Awaitable[Any]]) -> Any:
        """`send(session)` on the live connection; once more on a fresh one if the session expired."""
        for attempt in (1, 2):
            connection = await self._live()
            try:
                return await self._request(connection, what, send(connection.session))
            except SessionExpired as exc:
                if attempt == 2:
                    raise Service(f"{self.label}: {what} failed: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _pages(self, what: str, field: str, method: str) -> list[Any]:
        import mcp_types

        found: list[Any] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            page = await self._retried(what, partial(_list_page, method, params))
            found.extend(getattr(page, field))
            cursor = page.next_cursor
            if cursor is None:
                break
        return found

    async def resources(self) -> list[Any]:
        """Every resource the server lists (`mcp_types.Resource`: uri, name, mimeType, ...)."""
        return await self._pages("resources/list", "resources", "list_resources")

    async def resource_templates(self) -> list[Any]:
        """Every resource template the server lists (`mcp_types.ResourceTemplate`)."""
        return await self._pages("resources/templates/list", "resource_templates", "list_resource_templates")

    async def read_resource(self, uri: str) -> list[Any]:
        """The contents of the resource at `uri`.

        Each an `mcp_types.TextResourceContents` or `BlobResourceContents`: `.text` or base64
        `.blob`, with `.uri` and `.mime_type`.
        """
        result = await self._retried(f"resources/read {uri}", lambda session: session.read_resource(uri))
        return list(result.contents)

    async def prompts(self) -> list[Any]:
        """Every prompt the server lists (`mcp_types.Prompt`: name, description, arguments)."""
        return await self._pages("prompts/list", "prompts", "list_prompts")

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> Any:
        """The prompt `name` filled with `arguments` (`mcp_types.GetPromptResult`: `.messages`)."""
        filled = dict(arguments or {})
        return await self._retried(f"prompts/get {name}", lambda session: session.get_prompt(name, filled))


def _list_page(method: str, params: Any, session: Any) -> Awaitable[Any]:
    return getattr(session, method)(params=params)


def _version() -> str:
    from helikon import __version__

    return __version__
