"""helikon's MCP servers as the tests run them: the example server as a real process, or in this one.

`listening(command)` runs a server process on a free port until the block ends;
`example_http(...)` starts `examples/mcp_agent_server.py --http PORT` and yields its URL;
`served_in_process(app)` runs an ASGI app on uvicorn on a free loopback port;
`inspector(...)` runs the real MCP Inspector CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_peers import peer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_agent_server.py"
EXAMPLE_COMMAND = [sys.executable, str(EXAMPLE)]
"""The example server over stdio, as a command line."""


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, process: subprocess.Popen[Any], deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _, err = process.communicate()
            raise RuntimeError(f"the example server exited ({process.returncode}): {err.decode()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the example server did not listen on port {port} within 30 s")


@contextlib.contextmanager
def listening(
    command: Callable[[int], list[str]], cwd: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`command(port)` in a child process until it listens on a free loopback port; its URL and process.

    Stopped with SIGTERM (killed if it has not exited 60 s later) when the block ends; its
    `returncode` says how it ended.
    """
    port = free_port()
    process = subprocess.Popen(command(port), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, process, time.monotonic() + 60)
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@contextlib.contextmanager
def example_http(*flags: str) -> Iterator[str]:
    """The example server over streamable HTTP in a child process; yields its `/mcp` URL."""
    with listening(lambda port: [*EXAMPLE_COMMAND, "--http", str(port), *flags]) as (base, _):
        yield f"{base}/mcp"


@contextlib.asynccontextmanager
async def served_in_process(app: Any) -> AsyncIterator[str]:
    """`app` on uvicorn in this process on a free loopback port; yields `http://127.0.0.1:PORT`."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@contextlib.asynccontextmanager
async def http_client(app: Any, path: str = "/mcp") -> AsyncIterator[ClientSession]:
    """An initialized Python-SDK client session on `app` served in this process, at `path`."""
    async with (
        served_in_process(app) as base,
        streamable_http_client(base + path) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def inspector(*args: str) -> subprocess.CompletedProcess[str]:
    """The MCP Inspector CLI (`mcp-inspector --cli ...`) run to its end."""
    return subprocess.run(
        [str(peer("mcp-inspector")), "--cli", *args], capture_output=True, text=True, timeout=120, check=False
    )
