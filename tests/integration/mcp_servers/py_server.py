"""A small real MCP server (the SDK's MCPServer) for the client tests: `python py_server.py [PORT]`.

Over stdio without a port, over streamable HTTP on 127.0.0.1:PORT/mcp with one. Its tools
let a test watch what the client does: `slow` writes "started" to a marker file and
"cancelled" when the client cancels it; `add_tool` grows the list and says so with
`notifications/tools/list_changed`; `pid` names the process serving. With
PY_SERVER_LINGER set it keeps running after its stdin closes, as a badly behaved server
might. With PY_SERVER_AUTH set, the HTTP server wants a bearer token with the scope
"tools": "Bearer good" has it, "Bearer narrow" does not (403), any other token or none is
refused (401), by the SDK's own auth middleware.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventMessage, EventStore
from pydantic import AnyHttpUrl


class Tokens(TokenVerifier):
    """Two known tokens: "good" has the scope "tools", "narrow" has none."""

    async def verify_token(self, token: str) -> AccessToken | None:
        scopes = {"good": ["tools"], "narrow": []}.get(token)
        return None if scopes is None else AccessToken(token=token, client_id="test", scopes=scopes)


def _auth() -> dict[str, Any]:
    if not os.environ.get("PY_SERVER_AUTH"):
        return {}
    url = f"http://127.0.0.1:{sys.argv[1]}"
    settings = AuthSettings(
        issuer_url=AnyHttpUrl(url),
        resource_server_url=AnyHttpUrl(f"{url}/mcp"),
        required_scopes=["tools"],
        validate_token_resource=False,
    )
    return {"token_verifier": Tokens(), "auth": settings}


server = MCPServer("py-test-server", instructions="A server for helikon's MCP client tests.", **_auth())


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def pid() -> str:
    """The id of the process serving this call."""
    return str(os.getpid())


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of the HTTP request header `name` ("" over stdio or when absent)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool()
async def slow(seconds: float, marker: str) -> str:
    """Sleep, writing 'started' and (if the client cancels) 'cancelled' to the marker file."""
    path = anyio.Path(marker)
    await path.write_text("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await path.write_text("cancelled")
        raise
    await path.write_text("finished")
    return "done"


@server.tool()
async def interrupted(ctx: Context) -> str:
    """Close this call's SSE stream half-way (the client must resume it), then answer."""
    await anyio.sleep(0.2)
    await ctx.close_sse_stream()
    await anyio.sleep(0.5)
    return "answered after the stream was closed"


class MemoryEvents(EventStore):
    """Every event of every stream, so a client that reconnects with Last-Event-ID gets the rest."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []  # (event id, stream id, message or None)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(len(self.events) + 1)
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        index = next((i for i, event in enumerate(self.events) if event[0] == last_event_id), None)
        if index is None:
            return None
        stream = self.events[index][1]
        for event_id, stream_id, message in self.events[index + 1 :]:
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called `name` and tell the client the list changed."""

    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"the added tool {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        # With an event store a closed SSE stream can be resumed (Last-Event-ID).
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[1]),
            event_store=MemoryEvents(),
            retry_interval=100,
        )
    else:
        server.run()
        if os.environ.get("PY_SERVER_LINGER"):
            # A server that outlives its stdin: only the kernel's parent-death signal stops it.
            import time

            time.sleep(600)
