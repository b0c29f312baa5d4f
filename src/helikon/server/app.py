"""`AgentServer`: agents over HTTP, SSE and WebSocket; built with `AgentServer.builder()`.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.server import AgentServer
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="greeter", model=MockModel.with_scripts([text_turn("Hello!")]))
    server = AgentServer.builder().with_default_context().agent(agent).build()
    app = server.app()  # an ASGI app: mount it, or `await server.serve("127.0.0.1", 8000)`
    assert server.agents["greeter"] is agent
    ```
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Iterable, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute

from ..core.agent import Agent
from ..core.exceptions import UserError
from ..core.session.memory import MemorySession
from .auth import AuthLayer, LocalTokenAuth
from .console import Console
from .context import ContextProvider, DefaultContextProvider
from .errors import INTERNAL, ApiError, error_response
from .eval_routes import EvalRoutes
from .gate import LOOPBACK_HOSTS, Gate
from .routes import Api
from .runs import Retention, Runs
from .server_runner import ServerRunner
from .sessions import InMemorySessionProvider, SessionProvider
from .streams import StreamLimits

logger = logging.getLogger("helikon.server")


class AgentServer:
    """Agents served over HTTP (see the module and `docs/server.md`); built by `AgentServer.builder()`."""

    def __init__(
        self,
        agents: Mapping[str, Agent[Any, Any]],
        contexts: ContextProvider[Any],
        sessions: SessionProvider,
        auth: AuthLayer | None,
        retention: Retention,
        sweep_every: float,
        limits: StreamLimits,
        body_limit: int,
        cors_origins: tuple[str, ...],
        allowed_hosts: tuple[str, ...],
        local: LocalTokenAuth | None = None,
        console: bool = True,
        evals: tuple[Path | None, Path | None] = (None, None),
        runner: ServerRunner | None = None,
    ) -> None:
        self.agents = agents
        self.sessions = sessions
        self.auth = auth
        self.limits = limits
        self.body_limit = body_limit
        self.sweep_every = sweep_every
        self.cors_origins = cors_origins
        self.allowed_hosts = allowed_hosts
        self.local = local
        self.console = console
        self.evals = evals
        self.runs = Runs(agents, self._session_for, contexts, retention, runner)
        self.background: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._recovery: asyncio.Task[Any] | None = None
        self._recovery_logged = False

    @staticmethod
    def builder() -> AgentServerBuilder:
        """A builder: `.agent(...)`, `.with_default_context()`, then `.build()`."""
        return AgentServerBuilder()

    async def _session_for(self, session_id: str | None) -> Any:
        if session_id is None:
            return MemorySession()  # a fresh session that is never stored
        return await self.sessions.session(session_id)

    def app(self) -> Any:
        """The server as an ASGI app, to serve or mount under a prefix in a larger application."""
        api = Api(self)
        run = "/agents/{name}/runs/{run_id}"
        routes = [
            Route("/agents", api.agents, methods=["GET"]),
            Route("/agents/{name}/runs", api.start_run, methods=["POST"]),
            Route(run, api.get_run, methods=["GET"]),
            Route(f"{run}/wait", api.wait_run, methods=["GET"]),
            Route(f"{run}/stream", api.stream_run, methods=["GET"]),
            WebSocketRoute(f"{run}/events", api.run_events),
            Route(f"{run}/cancel", api.cancel_run, methods=["POST"]),
            Route(f"{run}/approvals", api.decide, methods=["POST"]),
            Route("/sessions", api.sessions, methods=["GET"]),
            Route("/sessions/{session_id}", api.session, methods=["GET"]),
            Route("/sessions/{session_id}/events", api.session_events, methods=["GET"]),
            Route("/sessions/{session_id}/runs", api.session_runs, methods=["GET"]),
            Route("/sessions/{session_id}/requests", api.session_requests, methods=["GET"]),
            Route("/sessions/{session_id}/rewind", api.rewind_session, methods=["POST"]),
            Route("/sessions/{session_id}/fork", api.fork_session, methods=["POST"]),
            Route("/openapi.json", self._openapi, methods=["GET"]),
        ]
        evals = EvalRoutes(self, *self.evals)
        routes += [
            Route("/sessions/{session_id}/eval-case", evals.save_case, methods=["POST"]),
            Route("/evals", evals.list_reports, methods=["GET"]),
            Route("/evals/{name}", evals.show_report, methods=["GET"]),
        ]
        if self.console:
            console = Console(self.local)
            routes += [
                Route("/ui", console.index, methods=["GET"], name="console"),
                Route("/ui/static/{name}", console.asset, methods=["GET"]),
                Route("/favicon.ico", console.favicon, methods=["GET"]),
            ]
        app = Starlette(
            routes=routes,
            exception_handlers={
                ApiError: _api_error,
                404: _not_found,
                405: _not_allowed,
                Exception: _internal,
            },
            lifespan=self._lifespan,
        )
        app.add_middleware(_Sweeping, server=self)
        if self.cors_origins:
            app.add_middleware(
                CORSMiddleware,
                allow_origins=list(self.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "x-session-id", "last-event-id"],
                expose_headers=["x-run-id"],
            )
        return Gate(app, self.allowed_hosts, self.auth or self.local, self.cors_origins)

    async def serve(
        self, host: str = "127.0.0.1", port: int = 8000, *, console_token: bool = True, **uvicorn_options: Any
    ) -> None:
        """Bind `host:port` and serve until stopped (uvicorn); the sweeper runs meanwhile.

        Without an auth layer, the server guards itself with a `LocalTokenAuth` (unless
        `console_token=False`) and prints the console's URL with its token. Asked to stop
        (SIGINT, SIGTERM, or this coroutine cancelled), it cancels the runs still going, so
        their streams end and uvicorn does not wait on them.
        """
        import uvicorn

        from .uvicorn_exit import StoppingServer

        if self.auth is None and self.local is None and console_token:
            self.local = LocalTokenAuth()
        config = uvicorn.Config(self.app(), host=host, port=port, log_level="warning", **uvicorn_options)
        loop = asyncio.get_running_loop()
        server = StoppingServer(config, on_exit=lambda: loop.call_soon_threadsafe(self._stop_runs))
        serving = loop.create_task(server.serve())
        while not server.started:  # uvicorn tells that it listens by a flag only
            if serving.done():
                serving.result()  # it could not bind: raise why
            await asyncio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
        name = f"[{host}]" if ":" in host else host
        if self.local is not None and self.console:
            print(f"helikon console: http://{name}:{bound}/ui?token={self.local.token}", flush=True)
        else:
            print(f"helikon server: http://{name}:{bound}", flush=True)
        try:
            await asyncio.shield(serving)
        except asyncio.CancelledError:  # stopped from outside: shut down cleanly, sockets closed
            server.should_exit = True
            server.stopping()
            await serving
            raise

    def _stop_runs(self) -> None:
        """The server stops: cancel the runs still going (in the background; their turns are written)."""
        task = asyncio.get_running_loop().create_task(self.runs.aclose())
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def _openapi(self, request: Request) -> Response:
        from .openapi import openapi_document

        return JSONResponse(openapi_document(self))

    def start_sweeper(self) -> None:
        """Start the background tasks (once; `serve` and the first request do it).

        One looks for the runs a stopped server left open (`Runs.recover`), one lets
        expired runs go.
        """
        loop = asyncio.get_running_loop()
        if self._recovery is None:
            self._recovery = loop.create_task(self.runs.recover(self.sessions))
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep())

    async def ready(self) -> None:
        """Wait until the runs a stopped server left are found (the run endpoints wait for it)."""
        if self._recovery is None:
            self.start_sweeper()
        assert self._recovery is not None
        try:
            await asyncio.shield(self._recovery)
        except Exception:  # a provider that cannot be read: serve anyway, and say so once
            if not self._recovery_logged:
                self._recovery_logged = True
                logger.exception("looking for runs a stopped server left open failed")

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_every)
            try:
                self.runs.sweep()
            except Exception:  # the sweeper never dies of one bad pass
                logger.exception("sweeping expired runs failed")

    async def aclose(self) -> None:
        """Stop the sweeper, cancel the runs still going (their turns are written), close the provider."""
        for task in (self._sweeper, self._recovery):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._sweeper = None
        await self.runs.aclose()
        close = getattr(self.sessions, "aclose", None)
        if close is not None:
            await close()

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> AsyncGenerator[None]:
        self.start_sweeper()
        try:
            yield
        finally:
            await self.aclose()


class _Sweeping:
    """Starts the sweeper on the first request (a mounted app gets no lifespan of its own)."""

    def __init__(self, app: Any, server: AgentServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            self.server.start_sweeper()
        await self.app(scope, receive, send)


class AgentServerBuilder:
    """Configures an `AgentServer` (see each method); `.build()` checks it all."""

    def __init__(self) -> None:
        self._agents: dict[str, Agent[Any, Any]] = {}
        self._source: Mapping[str, Agent[Any, Any]] | None = None
        self._contexts: ContextProvider[Any] | None = None
        self._sessions: SessionProvider | None = None
        self._auth: AuthLayer | None = None
        self._retention = Retention()
        self._sweep_every = 60.0
        self._limits = StreamLimits()
        self._body_limit = 1 << 20
        self._cors: tuple[str, ...] = ()
        self._hosts: tuple[str, ...] = LOOPBACK_HOSTS
        self._local: LocalTokenAuth | None = None
        self._console = True
        self._evals: tuple[Path | None, Path | None] = (None, None)
        self._runner: ServerRunner | None = None

    def agent(self, agent: Agent[Any, Any], *, name: str | None = None) -> AgentServerBuilder:
        """Serve `agent` at `/agents/<name>` (its own name by default); call once per agent."""
        key = name or agent.name
        if key in self._agents:
            raise UserError(f"AgentServer: two agents are named {key!r}; give one name=...")
        self._agents[key] = agent
        return self

    def agents(self, source: Mapping[str, Agent[Any, Any]]) -> AgentServerBuilder:
        """Serve the agents of `source`, looked up at each request (instead of `.agent(...)`).

        A mapping that changes changes what the server runs: `helikon web` serves a sidecar
        this way, and a save of the sidecar reaches the next run (one in flight keeps its agent).
        """
        self._source = source
        return self

    def with_default_context(self) -> AgentServerBuilder:
        """Every run gets `RunContext.ephemeral(None)` on its session (see `DefaultContextProvider`)."""
        self._contexts = DefaultContextProvider()
        return self

    def context_provider(self, provider: ContextProvider[Any]) -> AgentServerBuilder:
        """Build each run's `RunContext` from its request (the auth → context bridge)."""
        self._contexts = provider
        return self

    def session_provider(self, provider: SessionProvider) -> AgentServerBuilder:
        """Where `X-Session-Id` sessions live (default: in memory)."""
        self._sessions = provider
        return self

    def local_token(self, token: str | None = None) -> AgentServerBuilder:
        """Guard the server with a `LocalTokenAuth` (a fresh token unless given): for a local dev server."""
        self._local = LocalTokenAuth(token)
        return self

    def evals(
        self, *, dataset: str | Path | None = None, reports: str | Path | None = None
    ) -> AgentServerBuilder:
        """Where sessions are saved as eval cases (a JSONL file), and the eval reports shown (a folder)."""
        if reports is not None and not Path(reports).is_dir():
            raise UserError(f"AgentServer.evals: reports={str(reports)!r} is not a folder")
        if dataset is not None and not Path(dataset).parent.is_dir():
            raise UserError(f"AgentServer.evals: the folder of dataset={str(dataset)!r} does not exist")
        self._evals = (None if dataset is None else Path(dataset), None if reports is None else Path(reports))
        return self

    def runner(self, runner: ServerRunner) -> AgentServerBuilder:
        """Run the agents with `runner` (default: an `AsyncioRunner` in the server's process).

        A `helikon.temporal.TemporalRunner` makes every run a durable Temporal workflow, and the
        approvals endpoint its `helikon.decide` update (its sessions must be in a store the
        workers reach: `.session_provider(session_provider("sqlite:///..."))`).
        """
        self._runner = runner
        return self

    def console(self, enabled: bool = True) -> AgentServerBuilder:
        """Serve the web console at `/ui` (the default), or not."""
        self._console = enabled
        return self

    def auth(self, layer: AuthLayer) -> AgentServerBuilder:
        """Authenticate every request (e.g. `BearerTokenAuth`); without it every request is admitted."""
        self._auth = layer
        return self

    def retention(
        self, *, seconds: float = 3600.0, max_runs: int = 1000, sweep_every: float = 60.0
    ) -> AgentServerBuilder:
        """Keep finished runs `seconds`, at most `max_runs`; the sweeper looks every `sweep_every` seconds."""
        if seconds <= 0 or max_runs < 1 or sweep_every <= 0:
            raise UserError("AgentServer.retention: seconds and sweep_every must be > 0, max_runs >= 1")
        self._retention = Retention(seconds, max_runs)
        self._sweep_every = sweep_every
        return self

    def stream_limits(self, limits: StreamLimits) -> AgentServerBuilder:
        """Pings, idle timeout, per-subscriber backlog and subscriber counts (see `StreamLimits`)."""
        self._limits = limits
        return self

    def body_limit(self, size: int) -> AgentServerBuilder:
        """The largest request body accepted, in bytes (default 1 MiB; larger: 413)."""
        if size < 1024:
            raise UserError(
                f"AgentServer.body_limit: {size} bytes is too small to carry a run; give 1024 or more"
            )
        self._body_limit = size
        return self

    def cors(self, origins: Iterable[str]) -> AgentServerBuilder:
        """Allow browsers on `origins` to call the server (CORS is off without this)."""
        self._cors = tuple(origins)
        return self

    def allowed_hosts(self, hosts: Iterable[str]) -> AgentServerBuilder:
        """The `Host` names the server answers to (default: loopback only; `["*"]`: any)."""
        self._hosts = tuple(hosts)
        if not self._hosts:
            raise UserError("AgentServer.allowed_hosts: give at least one host name, or ['*']")
        return self

    def build(self) -> AgentServer:
        """The server.

        Raises:
            UserError: No agent, or no context (call `.with_default_context()` or `.context_provider(...)`).
        """
        if self._source is not None and self._agents:
            raise UserError("AgentServer: give agents with .agent(...) or .agents(source), not both")
        if not self._agents and self._source is None:
            raise UserError("AgentServer: add at least one agent with .agent(...)")
        if self._contexts is None:
            raise UserError("AgentServer: call .with_default_context() or .context_provider(...)")
        return AgentServer(
            self._source if self._source is not None else dict(self._agents),
            self._contexts,
            self._sessions or InMemorySessionProvider(),
            self._auth,
            self._retention,
            self._sweep_every,
            self._limits,
            self._body_limit,
            self._cors,
            self._hosts,
            self._local,
            self._console,
            self._evals,
            self._runner,
        )


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_response(
        404, "not_found", f"no endpoint at {request.url.path}; GET /openapi.json lists them"
    )


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return error_response(405, "method_not_allowed", f"{request.method} is not allowed on {request.url.path}")


async def _internal(request: Request, exc: Exception) -> Response:
    logger.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal", INTERNAL)


__all__ = ["AgentServer", "AgentServerBuilder"]
