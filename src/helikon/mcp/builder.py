"""`McpConnectBuilder`: the options of an MCP server handle, then `await .connect()`.

Made by `McpServerHandle.stdio(...)`, `.streamable_http(...)` or `.transport(...)`. Every
option returns the builder; `await builder.connect()` (or `async with builder as handle`)
runs `initialize` and lists the tools.

Example:
    ```python
    from helikon.mcp import McpServerHandle

    builder = (
        McpServerHandle.stdio("mcp-server-filesystem", ["/data"])
        .tool_prefix("fs_")
        .deny_tools(["write_file"])
        .lazy(True)
    )
    assert builder.options.prefix == "fs_" and builder.options.lazy
    ```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from helikon.core.exceptions import UserError

from ._options import Options, ToolFilter

if TYPE_CHECKING:
    from types import TracebackType

    from helikon.core.model import Model

    from ._sampling import ElicitationHandler
    from .client import McpServerHandle

__all__ = ["McpConnectBuilder"]


def _seconds(owner: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"{owner}({value!r}): give positive seconds (or a timedelta), or None for no limit")
    return float(value)


def _names(owner: str, names: object) -> frozenset[str]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise UserError(f"{owner}({names!r}): give a list of tool names, e.g. {owner}(['read_file'])")
    found: list[str] = []
    for name in names:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(name, str) or not name:
            raise UserError(f"{owner}: {name!r} is not a tool name; give the names the server lists")
        found.append(name)
    return frozenset(found)


class McpConnectBuilder:
    """The options of one MCP server connection; `await .connect()` makes the handle."""

    __slots__ = ("_connector", "_handle", "options")

    def __init__(self, options: Options, connector: Callable[[Options], Awaitable[McpServerHandle]]) -> None:
        self.options = options
        self._connector = connector  # `McpServerHandle.connect_with`, passed in so neither imports the other
        self._handle: McpServerHandle | None = None

    def __repr__(self) -> str:
        return f"McpConnectBuilder({self.options.label})"

    def tool_prefix(self, prefix: str) -> McpConnectBuilder:
        """Put `prefix` before every tool's name (and `search_tools`'), e.g. "fs_" -> "fs_read_file"."""
        if not isinstance(prefix, str):
            raise UserError(f"tool_prefix({prefix!r}): give a string such as 'fs_'")
        self.options.prefix = prefix
        return self

    def lazy(self, lazy: bool = True) -> McpConnectBuilder:
        """Advertise placeholder schemas and a `search_tools` meta-tool that returns the real ones."""
        self.options.lazy = _flag("lazy", lazy)
        return self

    def allow_tools(self, names: Iterable[str]) -> McpConnectBuilder:
        """Offer only these tools (the server's names, without the prefix)."""
        self.options.allow = _names("allow_tools", names)
        return self

    def deny_tools(self, names: Iterable[str]) -> McpConnectBuilder:
        """Never offer these tools (the server's names, without the prefix)."""
        self.options.deny = _names("deny_tools", names)
        return self

    def tool_filter(self, predicate: ToolFilter) -> McpConnectBuilder:
        """Offer a tool only while `predicate(ctx, tool)` is true (sync or async).

        `ctx` is the run's `RunContext`, or None when asked at build time; the predicate is
        asked each time the agent lists tools.
        """
        if not callable(predicate):
            raise UserError(f"tool_filter({predicate!r}): give a function (ctx, tool) -> bool")
        self.options.tool_filter = predicate
        return self

    def cache_tools_list(self, cache: bool = True) -> McpConnectBuilder:
        """Keep the tools list between model turns (the default), until it changes.

        The server's `notifications/tools/list_changed` makes the next turn list them again;
        False lists the tools anew every turn.
        """
        self.options.cache_tools_list = _flag("cache_tools_list", cache)
        return self

    def sampling_model(self, model: Model | None) -> McpConnectBuilder:
        """Answer the server's `sampling/createMessage` with `model` (off by default: not advertised)."""
        if model is not None and not callable(getattr(model, "invoke", None)):
            raise UserError(f"sampling_model({model!r}): give a helikon Model (something with invoke())")
        self.options.sampling_model = model
        return self

    def elicitation_handler(self, handler: ElicitationHandler | None) -> McpConnectBuilder:
        """Answer the server's `elicitation/create` with `handler(params)`.

        A dict accepts with that content, None declines. Off by default: not advertised, and
        refused.
        """
        if handler is not None and not callable(handler):
            raise UserError(f"elicitation_handler({handler!r}): give a function (params) -> dict | None")
        self.options.elicitation_handler = handler
        return self

    def connect_timeout(self, seconds: float | timedelta | None) -> McpConnectBuilder:
        """How long `connect()` waits for the handshake (30 s by default)."""
        self.options.connect_timeout = _seconds("connect_timeout", seconds)
        return self

    def call_timeout(self, seconds: float | timedelta | None) -> McpConnectBuilder:
        """How long one tools/call may take before it fails (no limit by default).

        The run's cancel token ends a call in any case.
        """
        self.options.call_timeout = _seconds("call_timeout", seconds)
        return self

    def assume_destructive(self, assume: bool = True) -> McpConnectBuilder:
        """Treat tools the server did not annotate at all as destructive (the MCP spec's default).

        Their calls then need approval; by default only tools annotated destructive do.
        """
        self.options.assume_destructive = _flag("assume_destructive", assume)
        return self

    def client_name(self, name: str) -> McpConnectBuilder:
        """The `clientInfo.name` sent at initialize ("helikon" by default)."""
        if not isinstance(name, str) or not name:
            raise UserError(f"client_name({name!r}): give a non-empty string")
        self.options.client_name = name
        return self

    async def connect(self) -> McpServerHandle:
        """Connect: `initialize`, then every page of `tools/list`.

        Raises:
            McpError.Spawn: The stdio server could not be started.
            McpError.Connect: The handshake (or the first tools/list) failed.
        """
        return await self._connector(self.options)

    async def __aenter__(self) -> McpServerHandle:
        self._handle = await self.connect()
        return self._handle

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            await handle.close()


def _flag(owner: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{owner}({value!r}): give True or False")
    return value
