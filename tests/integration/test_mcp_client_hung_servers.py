"""Servers that never answer `initialize`: the connect timeout and a cancel end the attempt at once.

The servers are real: a Python child that sleeps instead of answering on stdio, and a socket
on 127.0.0.1 that accepts HTTP connections and never replies. Both graces a live session gets
when it closes (the connection's wait for its task, the stdio server's wait after its stdin
closes) are set to an hour here, so an attempt that waited either one out would not end for an
hour: the guard around each attempt (a minute) only tells that apart from ending at once,
whatever the load.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from marker_files import until

from helikon import ToolError
from helikon.mcp import McpConnectBuilder, McpError, McpServerHandle, _connection, _stdio

pytestmark = pytest.mark.integration

AN_HOUR = 3600.0
# Far beyond what ending at once takes on a loaded machine, far below a grace of an hour.
GUARD = 60.0

# Writes "started" to the marker file in argv[1], then sleeps without reading stdin or answering.
HUNG = textwrap.dedent(
    """
    import pathlib, sys, time
    pathlib.Path(sys.argv[1]).write_text("started")
    time.sleep(3600)
    """
)


@pytest.fixture(autouse=True)
def _graces_of_an_hour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_connection, "_CLOSE_WAIT", AN_HOUR)
    monkeypatch.setattr(_stdio, "_EXIT_GRACE", AN_HOUR)


# Serves (py_server.py) the first time it starts; hangs as HUNG does every time after.
SERVES_ONCE = textwrap.dedent(
    """
    import pathlib, runpy, sys, time
    marker = pathlib.Path(sys.argv[1])
    if marker.exists():
        marker.write_text("started")
        time.sleep(3600)
    marker.write_text("served")
    sys.argv = [sys.argv[2]]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)
PY_SERVER = Path(__file__).parent / "mcp_servers" / "py_server.py"


class HungStdio:
    """A stdio server that starts and never answers; its argv carries a token to find it by."""

    def __init__(self, tmp_path: Path) -> None:
        self.marker = tmp_path / "marker"
        self.token = f"hung-{uuid.uuid4().hex}"

    def builder(self) -> McpConnectBuilder:
        return McpServerHandle.stdio(sys.executable, ["-c", HUNG, str(self.marker), self.token])

    def serving_once(self) -> McpConnectBuilder:
        """A server that answers the first time it starts, and hangs when started again."""
        argv = ["-c", SERVES_ONCE, str(self.marker), str(PY_SERVER), self.token]
        return McpServerHandle.stdio(sys.executable, argv, stderr=subprocess.DEVNULL)

    def running(self) -> list[int]:
        """The pids of its processes still running (a zombie counts as gone)."""
        found: list[int] = []
        for proc in Path("/proc").iterdir():
            try:
                cmdline = (proc / "cmdline").read_bytes()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError, NotADirectoryError, PermissionError):
                continue
            if self.token.encode() in cmdline and state != "Z":
                found.append(int(proc.name))
        return found

    def kill(self) -> None:
        for pid in self.running():
            os.kill(pid, signal.SIGKILL)


class HungHttp:
    """A socket on 127.0.0.1 that accepts connections and never answers on them."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.setblocking(False)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.accepted: list[socket.socket] = []

    async def accept(self) -> None:
        """Wait until a client connects, and keep its connection open (unanswered)."""
        conn, _ = await asyncio.get_running_loop().sock_accept(self.listener)
        self.accepted.append(conn)

    def kill(self) -> None:
        for conn in self.accepted:
            conn.close()
        self.listener.close()


@pytest.fixture
def hung_stdio(tmp_path: Path) -> Iterator[HungStdio]:
    server = HungStdio(tmp_path)
    yield server
    server.kill()  # only a failed test leaves one


@pytest.fixture
def hung_http() -> Iterator[HungHttp]:
    server = HungHttp()
    yield server
    server.kill()


async def ended(attempt: asyncio.Future[Any], server: HungStdio | HungHttp) -> asyncio.Future[Any]:
    """`attempt` once it ended, or a failure once it waited `GUARD` (the server is then killed,
    which ends the attempt, so the failure comes now rather than after a grace of an hour)."""
    done, _ = await asyncio.wait({attempt}, timeout=GUARD)
    if not done:
        server.kill()
        await asyncio.wait({attempt})
        pytest.fail(f"the attempt did not end within {GUARD:g} s: it waited for a grace")
    return attempt


async def test_a_stdio_handshake_timeout_ends_the_attempt_and_the_server_at_once(
    hung_stdio: HungStdio,
) -> None:
    attempt = asyncio.ensure_future(hung_stdio.builder().connect_timeout(0.5).connect())
    error = (await ended(attempt, hung_stdio)).exception()
    assert isinstance(error, McpError.Connect)
    assert str(error) == "stdio:python: no answer to `initialize` within 0.5s"
    assert hung_stdio.running() == []


async def test_an_http_handshake_timeout_ends_the_attempt_at_once(hung_http: HungHttp) -> None:
    accepting = asyncio.ensure_future(hung_http.accept())
    attempt = asyncio.ensure_future(
        McpServerHandle.streamable_http(hung_http.url).connect_timeout(0.5).connect()
    )
    error = (await ended(attempt, hung_http)).exception()
    assert isinstance(error, McpError.Connect)
    assert str(error) == f"{hung_http.url}: no answer to `initialize` within 0.5s"
    await ended(accepting, hung_http)  # the request did reach the server


async def test_cancelling_a_stdio_connect_whose_handshake_hangs_ends_it_at_once(
    hung_stdio: HungStdio,
) -> None:
    attempt = asyncio.ensure_future(hung_stdio.builder().connect())  # the default 30 s timeout
    await until(hung_stdio.marker, "started")
    attempt.cancel()
    assert (await ended(attempt, hung_stdio)).cancelled()
    assert hung_stdio.running() == []


async def test_cancelling_an_http_connect_whose_handshake_hangs_ends_it_at_once(hung_http: HungHttp) -> None:
    attempt = asyncio.ensure_future(McpServerHandle.streamable_http(hung_http.url).connect())
    await hung_http.accept()  # the client is in the handshake: connected, its request unanswered
    attempt.cancel()
    assert (await ended(attempt, hung_http)).cancelled()


async def test_closing_a_handle_while_it_reconnects_to_a_hung_server_ends_the_handshake(
    hung_stdio: HungStdio,
) -> None:
    handle = await hung_stdio.serving_once().connect()
    assert hung_stdio.marker.read_text() == "served"
    hung_stdio.kill()  # the first server dies; the next call starts the server anew, and it hangs
    with pytest.raises(ToolError):
        await handle.call_tool("echo", {"text": "the call the drop fails"})
    call = asyncio.ensure_future(handle.call_tool("echo", {"text": "a call that reconnects"}))
    await until(hung_stdio.marker, "started")
    closing = asyncio.ensure_future(handle.close())
    await ended(closing, hung_stdio)
    error = (await ended(call, hung_stdio)).exception()
    assert isinstance(error, ToolError)
    assert "closed during the `initialize` handshake" in str(error)
    assert hung_stdio.running() == []
