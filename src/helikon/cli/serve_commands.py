"""`helikon web` and `helikon mcp serve`: the sidecar's agents served, reloaded on every save."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from ..core.exceptions import UserError
from .live import LiveAgent, LiveAgents, LiveRegistry
from .store import store_path


def serve_web(agents: Path, host: str, port: int, store: Path | None) -> int:
    """Serve the sidecar's agents with the web console; its URL (with the token) is printed."""
    from ..server import AgentServer, SqliteSessionProvider

    live = LiveRegistry(agents)
    if not live.current.names():
        raise UserError(f"no agent in {agents.name} can run here: {live.current.why_disabled()}")
    for name, why in live.current.disabled.items():
        print(f"helikon web: agent {name!r} is disabled: {why}", file=sys.stderr)
    sessions = store_path(agents, store)
    sessions.parent.mkdir(parents=True, exist_ok=True)
    server = (
        AgentServer.builder()
        .with_default_context()
        .agents(LiveAgents(live))
        .session_provider(SqliteSessionProvider(sessions))
        .build()
    )
    return _until_stopped(server.serve(host, port), live)


def serve_mcp(agents: Path, agent: str | None, http: str | None) -> int:
    """Serve one agent as an MCP tool: over stdio, or streamable HTTP at `http` (`HOST:PORT`)."""
    from ..mcp import McpAgentServer

    live = LiveRegistry(agents)
    name = agent or live.current.default()
    server = McpAgentServer.with_default_ctx(LiveAgent(live, name))
    if http is None:
        return _until_stopped(server.serve_stdio(), live)
    host, _, port = http.rpartition(":")
    if not port.isdigit():
        raise UserError(f"--http {http!r}: give HOST:PORT, e.g. 127.0.0.1:8765")
    print(
        f"helikon mcp: serving {name!r} at http://{host or '127.0.0.1'}:{port}/mcp",
        file=sys.stderr,
        flush=True,
    )
    return _until_stopped(server.serve_streamable_http(host or "127.0.0.1", int(port)), live)


def _until_stopped(serving: Awaitable[Any], live: LiveRegistry) -> int:
    async def main() -> None:
        watcher = asyncio.ensure_future(live.watch())
        try:
            await serving
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


__all__ = ["serve_mcp", "serve_web"]
