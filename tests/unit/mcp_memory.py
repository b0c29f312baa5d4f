"""A real MCP server (the SDK's low-level `Server`) in this process, reached over memory streams.

`in_memory(server)` is a transport factory for `McpServerHandle.transport`: each connection
runs `server` on a fresh pair of the SDK's in-memory streams.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams


def in_memory(server: Server[Any]) -> Callable[[], AbstractAsyncContextManager[Any]]:
    @contextlib.asynccontextmanager
    async def transport() -> AsyncGenerator[Any]:
        async with (
            create_client_server_memory_streams() as (client, served),
            anyio.create_task_group() as group,
        ):
            group.start_soon(server.run, served[0], served[1], server.create_initialization_options())
            try:
                yield client
            finally:
                group.cancel_scope.cancel()

    return transport
