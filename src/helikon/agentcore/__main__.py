"""`python -m helikon.agentcore module:agent`: the container's entry point (see `docs/agentcore.md`).

`module:agent` names an `Agent` or an `AgentCoreServer` (as uvicorn names an app). The HTTP
protocol listens on 0.0.0.0:8080 and the MCP protocol (`--protocol mcp`) on 0.0.0.0:8000,
as AgentCore requires. Sessions are kept where `--sessions` (or `$HELIKON_SESSIONS_URL`)
says: `postgresql://...`, `redis://...`, `sqlite:///...`; in memory otherwise, which a
container loses when AgentCore stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, cast

from ..core.agent import Agent
from ..core.exceptions import UserError
from ..server.session_urls import session_provider
from .server import AgentCoreServer, serve_app

SESSIONS_ENV = "HELIKON_SESSIONS_URL"
PORTS = {"http": 8080, "mcp": 8000}


def load(target: str, sessions: str | None) -> AgentCoreServer:
    """The server `target` (`module:attribute`, an agent or a server) names.

    Raises:
        UserError: The target is not `module:attribute`, cannot be imported, or is neither kind.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise UserError(f"{target!r}: name the agent as module:attribute, e.g. my_app.agent:assistant")
    sys.path.insert(0, os.getcwd())  # as uvicorn does: the module may sit in the working directory
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UserError(f"{target!r}: cannot import {module_name!r} ({exc})") from exc
    found: Any = getattr(module, attribute, None)
    if isinstance(found, AgentCoreServer):
        if sessions is not None:
            raise UserError(f"{target!r} is an AgentCoreServer: give its sessions in code, not --sessions")
        return found
    if isinstance(found, Agent):
        agent = cast("Agent[Any, Any]", found)
        provider = session_provider(sessions) if sessions is not None else None
        return AgentCoreServer(agent, sessions=provider)
    what = "nothing" if found is None else type(found).__name__
    raise UserError(f"{target!r} is {what}: it must name an Agent or an AgentCoreServer")


def parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    command = argparse.ArgumentParser(prog="python -m helikon.agentcore", description=__doc__)
    command.add_argument("target", help="module:attribute naming an Agent or an AgentCoreServer")
    command.add_argument("--protocol", choices=("http", "mcp"), default="http", help="default: http")
    command.add_argument("--host", default="0.0.0.0", help="default: 0.0.0.0 (every interface)")
    command.add_argument("--port", type=int, help="default: 8080 for http, 8000 for mcp")
    command.add_argument("--sessions", default=os.environ.get(SESSIONS_ENV), help=f"default: ${SESSIONS_ENV}")
    command.add_argument(
        "--durable-mcp",
        action="store_true",
        help="MCP calls run on the session their AgentCore session header names (default: a fresh one each)",
    )
    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until stopped; 2 with a one-line error for a bad target or option."""
    args = parser().parse_args(argv)
    try:
        server = load(args.target, args.sessions)
        app = server.mcp_app(durable=args.durable_mcp) if args.protocol == "mcp" else server.app()
    except UserError as exc:
        print(f"helikon.agentcore: {exc}", file=sys.stderr)
        return 2
    if args.sessions is None and args.target and not _has_store(server):
        print(
            "helikon.agentcore: sessions live in memory and are lost when the container stops; "
            f"give --sessions postgresql://... or redis://... (or ${SESSIONS_ENV})",
            file=sys.stderr,
        )
    port = args.port if args.port is not None else PORTS[args.protocol]
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: uvicorn has shut down already
        asyncio.run(serve_app(app, args.host, port, {}, on_exit=server.stop_runs))
    return 0


def _has_store(server: AgentCoreServer) -> bool:
    from ..server.sessions import InMemorySessionProvider

    return not isinstance(server.sessions, InMemorySessionProvider)


if __name__ == "__main__":
    sys.exit(main())
