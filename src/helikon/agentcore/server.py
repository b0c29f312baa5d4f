"""`AgentCoreServer`: one agent behind the container contract of AWS Bedrock AgentCore Runtime.

The HTTP protocol (port 8080): `GET /ping`, `POST /invocations` (a JSON answer, or SSE
with `Accept: text/event-stream`) and the `/ws` WebSocket; `app()` is that ASGI app. The
MCP protocol (port 8000): the agent as one MCP tool at `/mcp`, stateless streamable HTTP;
`mcp_app()`. The runs are its `AgentHost`'s: they go through the agent server's machinery
(`helikon.server`): one session's runs in line, a client that leaves cancels its run and
the cancelled turn is still written, a run paused for approval is decided by a later
invocation. They run on a loop of their own (`WorkerLoop`), so `/ping` answers however busy
the agent is.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.agentcore import AgentCoreServer
    from helikon.server import SqliteSessionProvider
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="assistant", model=MockModel.with_scripts([text_turn("Hello!")]))
    server = AgentCoreServer(agent, sessions=SqliteSessionProvider(":memory:"))
    app = server.app()  # uvicorn serves it on 0.0.0.0:8080; `python -m helikon.agentcore` does that
    assert server.health.ping()["status"] == "Healthy"
    ```
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute

from ..core.exceptions import UserError
from ..server.sessions import InMemorySessionProvider
from .host import AgentHost
from .invocations import Invocations


class AgentCoreServer(AgentHost):
    """One agent served as AgentCore expects (see the module); `app()` and `mcp_app()` are the two protocols.

    Args:
        agent: The agent every invocation runs.
        sessions: Where `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id` sessions live. The
            default keeps them in memory, which a container loses when AgentCore stops it:
            in production give a durable one (PostgreSQL or Redis; see `docs/agentcore.md`).
            A request without the header runs on a fresh session that is never stored.
        contexts: Builds each run's `RunContext` from its request (`ServerRequest`: the
            user id header as `identity`, every header by lower-case name); default
            `RunContext.ephemeral(None)` on the session.
        input_from: Maps an invocation's payload to the run's input (default: `{"prompt": "<text>"}`).
        health: What `/ping` answers (a fresh `Health` by default); register background work on it.
    """

    # --- the HTTP protocol ------------------------------------------------------------------------

    def app(self) -> Starlette:
        """The HTTP protocol's ASGI app: `/ping`, `/invocations`, `/ws` (serve it on port 8080)."""
        handlers = Invocations(self)
        routes = [
            Route("/ping", handlers.ping, methods=["GET"]),
            Route("/invocations", handlers.invoke, methods=["POST"]),
            WebSocketRoute("/ws", handlers.websocket),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    # --- the MCP protocol -------------------------------------------------------------------------

    def mcp_app(self, *, durable: bool = False) -> Starlette:
        """The MCP protocol's ASGI app: the agent as one tool at `/mcp`, stateless (serve it on port 8000).

        Each call runs on a fresh in-memory session. With `durable=True` a call that
        carries `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id` runs on that session of
        `sessions` instead, so calls of one AgentCore session share a conversation.

        Raises:
            UserError: `durable=True` with sessions in memory (give SQLite, PostgreSQL or Redis).
        """
        from .mcp_mode import mcp_app

        if durable and isinstance(self.sessions, InMemorySessionProvider):
            raise UserError(
                "AgentCoreServer.mcp_app(durable=True) keeps each AgentCore session's conversation in "
                "`sessions`, which are in memory: give sessions=session_provider('postgresql://...') "
                "(or redis://..., sqlite:///...)"
            )

        return mcp_app(self, durable=durable)

    # --- serving ----------------------------------------------------------------------------------

    async def serve(self, host: str = "127.0.0.1", port: int = 8080, **uvicorn_options: Any) -> None:
        """Serve the HTTP protocol on `host:port` until cancelled (in a container: `0.0.0.0`, 8080).

        Asked to stop (SIGINT, SIGTERM, or cancelled), it cancels the runs still going: their
        turns are written and their streams end, so uvicorn does not wait on them.
        """
        await serve_app(self.app(), host, port, uvicorn_options, on_exit=self.stop_runs)

    async def serve_mcp(
        self, host: str = "127.0.0.1", port: int = 8000, *, durable: bool = False, **uvicorn_options: Any
    ) -> None:
        """Serve the MCP protocol on `host:port` until cancelled (in a container: `0.0.0.0`, 8000)."""
        await serve_app(self.mcp_app(durable=durable), host, port, uvicorn_options)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> AsyncGenerator[None]:
        self.worker.start()
        try:
            yield
        finally:
            await self.aclose()


async def serve_app(
    app: Any, host: str, port: int, options: dict[str, Any], on_exit: Callable[[], object] = lambda: None
) -> None:
    """Serve the ASGI `app` on `host:port` with uvicorn until cancelled (the app's lifespan runs).

    `on_exit` is told when the server is asked to stop, before uvicorn waits for open responses.
    """
    import uvicorn

    from ..server.uvicorn_exit import StoppingServer

    settings: dict[str, Any] = {"log_level": "warning", "lifespan": "on", **options}
    server = StoppingServer(uvicorn.Config(app, host=host, port=port, **settings), on_exit)
    serving = asyncio.get_running_loop().create_task(server.serve())
    try:
        await asyncio.shield(serving)
    except asyncio.CancelledError:  # stopped from outside: shut down cleanly (the lifespan ends)
        server.should_exit = True
        server.stopping()
        await serving
        raise


__all__ = ["AgentCoreServer"]
