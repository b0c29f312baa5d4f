"""The MCP protocol: the agent as one MCP tool at `/mcp`, stateless streamable HTTP (port 8000).

AgentCore's MCP protocol wants a stateless server: any container may get any request, and
the platform adds its own `Mcp-Session-Id`, which a stateless server accepts and does not
check. Each call runs on a fresh in-memory session; `durable=True` runs a call that
carries `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id` on that session of the server's
`SessionProvider`, so one AgentCore session's calls share a conversation.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from helikon.core._internal.extras import missing_extra

try:
    from mcp.server.transport_security import TransportSecuritySettings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("AgentCore's MCP protocol needs the official MCP SDK", "agentcore") from exc

from helikon.core.context import RunContext
from helikon.mcp import McpAgentServer, call_headers

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from .host import AgentHost

MCP_PATH = "/mcp"


def mcp_app(server: AgentHost, *, durable: bool) -> Starlette:
    """The stateless streamable-HTTP app of `server`'s agent at `/mcp` (see the module)."""

    async def ctx_factory() -> RunContext[Any]:
        return await server.mcp_context(call_headers(), durable)

    tool = McpAgentServer[Any](server.agent, ctx_factory=ctx_factory)
    # The platform's load balancer names the container by an address of its own: the
    # Host check that guards a loopback dev server against DNS rebinding does not apply.
    app = tool.lowlevel_server().streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    sdk_lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncGenerator[Any]:
        async with sdk_lifespan(app) as state:
            yield state
        close = getattr(server.sessions, "aclose", None)
        if close is not None:  # the calls ran on this loop: their pool or file closes on it
            await close()

    app.router.lifespan_context = lifespan
    return app


__all__ = ["MCP_PATH", "mcp_app"]
