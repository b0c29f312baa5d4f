"""`AgentCoreServer`: one agent behind the container contract of AWS Bedrock AgentCore Runtime.

The HTTP protocol (port 8080): `GET /ping`, `POST /invocations` (a JSON answer, or SSE
with `Accept: text/event-stream`) and the `/ws` WebSocket; `app()` is that ASGI app. The
MCP protocol (port 8000): the agent as one MCP tool at `/mcp`, stateless streamable HTTP;
`mcp_app()`. Runs go through the agent server's machinery (`helikon.server`): one
session's runs in line, a client that leaves cancels its run and the cancelled turn is
still written, a run paused for approval is decided by a later invocation. They run on a
loop of their own (`WorkerLoop`), so `/ping` answers however busy the agent is.

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
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import propagate
from starlette.applications import Starlette
from starlette.routing import Route, WebSocketRoute

from ..core.agent import Agent
from ..core.cancel import CancellationToken
from ..core.context import RunContext
from ..core.exceptions import UserError
from ..core.session.memory import MemorySession
from ..server.context import ContextProvider, DefaultContextProvider, ServerRequest
from ..server.runs import Retention, Runs, ServerRun
from ..server.sessions import InMemorySessionProvider, SessionProvider
from .headers import SESSION_HEADER, USER_ID_HEADER, session_id_of
from .health import Health
from .invocations import Invocations
from .payloads import Decide, InputFrom, Start, prompt_input
from .worker import WorkerLoop

if TYPE_CHECKING:
    from ..core.session import Session

_TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
_KEPT_RUNS = Retention(seconds=60.0, max_runs=64)
"""Finished runs are not read back over this contract: a few are kept, briefly."""


class AgentCoreServer:
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

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        sessions: SessionProvider | None = None,
        contexts: ContextProvider[Any] | None = None,
        input_from: InputFrom = prompt_input,
        health: Health | None = None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise UserError(f"AgentCoreServer({agent!r}): give an agent (an LlmAgent or a workflow agent)")
        if not callable(input_from):
            raise UserError(
                f"AgentCoreServer(input_from={input_from!r}): give a function payload -> RunInput"
            )
        self.agent = agent
        self.sessions: SessionProvider = sessions if sessions is not None else InMemorySessionProvider()
        self.contexts: ContextProvider[Any] = contexts if contexts is not None else DefaultContextProvider()
        self.input_from = input_from
        self.health = health if health is not None else Health()
        self.worker = WorkerLoop()
        self.runs = Runs({agent.name: agent}, self._session_for, self.contexts, _KEPT_RUNS)

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

    def server_request(self, headers: Mapping[str, str], session_id: str | None) -> ServerRequest:
        """What the context provider is told of a request with `headers` (any case)."""
        lowered = {name.lower(): value for name, value in headers.items()}
        return ServerRequest(self.agent.name, session_id, lowered.get(USER_ID_HEADER.lower()), lowered)

    async def begin(self, ask: Start | Decide, request: ServerRequest) -> ServerRun:
        """Start the run `ask` names, on the worker loop; the run (its events in `run.log`).

        The caller's `traceparent` / `baggage` become the run's OpenTelemetry parent
        context, so its spans continue the caller's trace.

        Raises:
            ApprovalError: `Decide` with nothing paused on the session, or a decision that fails its checks.
        """
        self.worker.start()
        return await self.worker.call(self._begin(ask, request))

    async def _begin(self, ask: Start | Decide, request: ServerRequest) -> ServerRun:
        carrier = {name: request.headers[name] for name in _TRACE_HEADERS if name in request.headers}
        token = otel_context.attach(propagate.extract(carrier)) if carrier else None
        try:  # the run's task is created here, and takes this context with it
            if isinstance(ask, Start):
                run = await self.runs.start(self.agent.name, ask.input, request)
            else:
                run = await self.runs.resume_session(
                    self.agent.name, ask.decisions, request, deny_rest=ask.deny_rest
                )
        finally:
            if token is not None:
                otel_context.detach(token)
        if run.task is not None:
            self.health.track(run.task)  # busy until the turn is written, also after a client left
        return run

    def cancel(self, run: ServerRun) -> None:
        """Cancel `run` (its client left): the turn is closed as cancelled and still written."""
        self.worker.submit(self.runs.cancel(run, "interrupt"))

    async def _session_for(self, session_id: str | None) -> Session:
        if session_id is None:
            return MemorySession()  # a fresh session that is never stored
        return await self.sessions.session(session_id)

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

    async def mcp_context(self, headers: Mapping[str, str], durable: bool) -> RunContext[Any]:
        """The context of one MCP call with `headers`: a fresh session, or the header's when `durable`."""
        session_id = session_id_of(headers.get(SESSION_HEADER.lower())) if durable else None
        request = self.server_request(headers, session_id)
        return await self.contexts.build(request, await self._session_for(session_id), CancellationToken())

    # --- serving ----------------------------------------------------------------------------------

    async def serve(self, host: str = "127.0.0.1", port: int = 8080, **uvicorn_options: Any) -> None:
        """Serve the HTTP protocol on `host:port` until cancelled (in a container: `0.0.0.0`, 8080)."""
        await serve_app(self.app(), host, port, uvicorn_options)

    async def serve_mcp(
        self, host: str = "127.0.0.1", port: int = 8000, *, durable: bool = False, **uvicorn_options: Any
    ) -> None:
        """Serve the MCP protocol on `host:port` until cancelled (in a container: `0.0.0.0`, 8000)."""
        await serve_app(self.mcp_app(durable=durable), host, port, uvicorn_options)

    async def aclose(self) -> None:
        """Cancel the runs still going (their turns are written), close the sessions, stop the worker loop."""
        if self.worker.started:
            await self.worker.call(self._close_runs())
            self.worker.stop()

    async def _close_runs(self) -> None:
        await self.runs.aclose()
        close = getattr(self.sessions, "aclose", None)
        if close is not None:
            await close()

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> AsyncGenerator[None]:
        self.worker.start()
        try:
            yield
        finally:
            await self.aclose()


async def serve_app(app: Any, host: str, port: int, options: dict[str, Any]) -> None:
    """Serve the ASGI `app` on `host:port` with uvicorn until cancelled (the app's lifespan runs)."""
    import uvicorn

    settings: dict[str, Any] = {"log_level": "warning", "lifespan": "on", **options}
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, **settings))
    serving = asyncio.get_running_loop().create_task(server.serve())
    try:
        await asyncio.shield(serving)
    except asyncio.CancelledError:  # stopped from outside: shut down cleanly (the lifespan ends)
        server.should_exit = True
        await serving
        raise


__all__ = ["AgentCoreServer"]
