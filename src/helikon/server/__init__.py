"""The agent server: agents over HTTP, SSE and WebSocket, with replayable runs (`server` extra).

- `AgentServer.builder()`: `.agent(...)`, `.with_default_context()` or `.context_provider(...)`,
  `.session_provider(...)`, `.auth(...)`, retention and limits; `.build()`, then `.app()` (ASGI)
  or `await .serve(host, port)`.
- `SessionProvider`: `X-Session-Id` → a session (`InMemorySessionProvider`,
  `SqliteSessionProvider`, `PostgresSessionProvider`, `RedisSessionProvider`, or your own);
  `session_provider(url)` picks one by URL (`sqlite:///...`, `postgresql://...`, `redis://...`).
- `ContextProvider` / `ServerRequest`: each run's `RunContext` from its request.
- `AuthLayer` / `AuthRejection` / `BearerTokenAuth`: who may call.
- `StreamLimits`: pings, idle timeout and subscriber limits.

See `docs/server.md` for the endpoints.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.server import AgentServer, BearerTokenAuth
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="greeter", model=MockModel.with_scripts([text_turn("Hello!")]))
    server = (
        AgentServer.builder()
        .agent(agent)
        .with_default_context()
        .auth(BearerTokenAuth({"a-long-random-token-for-ada": "ada"}))
        .build()
    )
    app = server.app()
    ```
"""

from helikon.core._internal.extras import missing_extra

try:  # the web stack, checked once here: every module below may import it
    import starlette.applications  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as exc:
    raise missing_extra("helikon.server needs Starlette", "server") from exc

from .app import AgentServer, AgentServerBuilder
from .auth import AuthLayer, AuthRejection, BearerTokenAuth, LocalTokenAuth
from .context import ContextProvider, DefaultContextProvider, ServerRequest
from .runs import RunStatus
from .server_runner import ServerRunner
from .session_urls import session_provider
from .sessions import (
    InMemorySessionProvider,
    PostgresSessionProvider,
    RedisSessionProvider,
    SessionProvider,
    SqliteSessionProvider,
)
from .streams import StreamLimits

__all__ = [
    "AgentServer",
    "AgentServerBuilder",
    "AuthLayer",
    "AuthRejection",
    "BearerTokenAuth",
    "ContextProvider",
    "DefaultContextProvider",
    "InMemorySessionProvider",
    "LocalTokenAuth",
    "PostgresSessionProvider",
    "RedisSessionProvider",
    "RunStatus",
    "ServerRequest",
    "ServerRunner",
    "SessionProvider",
    "SqliteSessionProvider",
    "StreamLimits",
    "session_provider",
]
