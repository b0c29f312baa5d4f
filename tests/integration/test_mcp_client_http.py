"""helikon's MCP client over streamable HTTP, against the SDK's own server (uvicorn) on 127.0.0.1.

The server runs in a child process the test kills and restarts: a call the drop interrupts
fails with a clear `ToolError`, and the next call gets a fresh session, also when the
restarted server no longer knows the old one. A stream the live server closes mid-call is
resumed from its event store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from marker_files import until

from helikon import LlmAgent, ToolError
from helikon.core.items import ToolResult
from helikon.mcp import McpError, McpServerHandle
from helikon.testing import MockModel, text_turn, tool_call_turn

PY_SERVER = Path(__file__).parent / "mcp_servers" / "py_server.py"


class HttpServer:
    """`py_server.py PORT` in a child process, on a port that stays the same across restarts."""

    def __init__(self, env: dict[str, str] | None = None, log: Path | None = None) -> None:
        self.env = None if env is None else {**os.environ, **env}
        self.log = log  # where its stderr (the SDK's session manager logs there) goes; nowhere by default
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") if self.log is not None else open(os.devnull, "wb") as stderr:  # noqa: ASYNC230
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, str(PY_SERVER), str(self.port), stderr=stderr, env=self.env
            )
        for _ in range(600):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            return
        raise AssertionError(f"the MCP server never listened on {self.url}")

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


@pytest.fixture
async def http() -> AsyncIterator[HttpServer]:
    server = HttpServer()
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


@pytest.fixture
async def guarded() -> AsyncIterator[HttpServer]:
    """The server behind the SDK's bearer-token auth (see py_server.py for its tokens)."""
    server = HttpServer(env={"PY_SERVER_AUTH": "1"})
    await server.start()
    try:
        yield server
    finally:
        await server.kill()


async def test_refused_credentials_name_the_status_the_url_and_what_to_check(guarded: HttpServer) -> None:
    async def refusal(headers: dict[str, str] | None) -> str:
        with pytest.raises(McpError.Connect) as caught:
            await McpServerHandle.streamable_http(guarded.url, headers=headers).connect()
        return str(caught.value)

    none, bad = await refusal(None), await refusal({"Authorization": "Bearer bad"})
    narrow = await refusal({"Authorization": "Bearer narrow"})
    for message in (none, bad):
        assert message.startswith(
            f"{guarded.url}: the server refused `initialize` with HTTP 401 Unauthorized"
        )
        assert 'error="invalid_token"' in message  # what the server said, from WWW-Authenticate
    assert none.endswith(
        "no `Authorization` header was sent: pass the credentials, e.g. "
        "McpServerHandle.streamable_http(url, headers={'Authorization': 'Bearer <token>'})"
    )
    assert bad.endswith(
        "check the credentials in the `Authorization` header: is the token valid, unexpired and meant "
        "for this server?"
    )
    assert narrow.startswith(f"{guarded.url}: the server refused `initialize` with HTTP 403 Forbidden")
    assert 'error_description="Required scope: tools"' in narrow
    assert narrow.endswith(
        "the credentials in the `Authorization` header were accepted but lack access: check the "
        "token's scopes or the account's permissions on this server"
    )
    async with McpServerHandle.streamable_http(
        guarded.url, headers={"Authorization": "Bearer good"}
    ) as handle:
        assert (await handle.call_tool("echo", {"text": "in"})).value == {"result": "in"}


async def test_calls_headers_and_an_agent_over_http(http: HttpServer) -> None:
    builder = McpServerHandle.streamable_http(http.url, headers={"X-Tenant": "acme"}).tool_prefix("py_")
    async with builder as handle:
        assert handle.server_info.name == "py-test-server"
        assert (await handle.call_tool("echo", {"text": "hi"})).value == {"result": "hi"}
        assert (await handle.call_tool("header", {"name": "X-Tenant"})).value == {"result": "acme"}
        model = MockModel.with_scripts([tool_call_turn("py_echo", {"text": "over http"}), text_turn("ok")])
        await LlmAgent(name="a", model=model, tool_sources=[handle]).run("go")
        [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResult)]
        assert "over http" in result.text and not result.is_error


async def test_a_server_killed_mid_call_fails_the_call_and_a_restart_serves_the_next(
    http: HttpServer, tmp_path: Path
) -> None:
    async with McpServerHandle.streamable_http(http.url) as handle:
        marker = tmp_path / "marker"
        call = asyncio.ensure_future(handle.call_tool("slow", {"seconds": 600, "marker": str(marker)}))
        await until(marker, "started")
        await http.kill()
        with pytest.raises(ToolError, match="dropped during the call to 'slow', which could not be resumed"):
            await call
        await http.start()
        assert (await handle.call_tool("echo", {"text": "back"})).value == {"result": "back"}


async def test_a_call_whose_stream_the_server_closed_is_resumed(http: HttpServer) -> None:
    # The server closes the call's SSE stream half-way and answers later: only a client that
    # reconnects with Last-Event-ID (the SDK's transport does) gets the answer from its event store.
    async with McpServerHandle.streamable_http(http.url) as handle:
        out = await handle.call_tool("interrupted", {})
        assert out.value == {"result": "answered after the stream was closed"}


async def test_a_restarted_server_that_forgot_the_session_gets_a_fresh_one(http: HttpServer) -> None:
    async with McpServerHandle.streamable_http(http.url) as handle:
        assert (await handle.call_tool("echo", {"text": "one"})).value == {"result": "one"}
        await http.kill()
        await http.start()  # a new process: the old session id means nothing to it
        assert (await handle.call_tool("echo", {"text": "two"})).value == {"result": "two"}
        assert {"echo", "header"} <= {t.name for t in await handle.refresh_tools()}
        await http.kill()
        await http.start()
        assert [p.name for p in await handle.prompts()] == []


async def test_closing_ends_the_session_on_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = HttpServer(log=tmp_path / "server.log")
    await server.start()
    try:
        handle = await McpServerHandle.streamable_http(server.url).connect()
        with caplog.at_level(logging.WARNING):
            await handle.close()
        for _ in range(1000):  # the server's log may lag its answer
            if "Terminating session: " in (tmp_path / "server.log").read_text():
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the server never saw the session's DELETE")
    finally:
        await server.kill()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_closing_after_the_server_restarted_logs_nothing(
    http: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    handle = await McpServerHandle.streamable_http(http.url).connect()
    await http.kill()
    await http.start()  # it no longer knows the handle's session: the DELETE on close is refused
    with caplog.at_level(logging.DEBUG):
        await handle.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "the server no longer knows the session" in caplog.text  # said at DEBUG level only


async def test_an_unreachable_server_is_a_connect_error_and_a_failed_call_a_tool_error(
    http: HttpServer,
) -> None:
    await http.kill()
    with pytest.raises(McpError.Connect, match=str(http.port)):
        await McpServerHandle.streamable_http(http.url).connect_timeout(10).connect()
    await http.start()
    handle = await McpServerHandle.streamable_http(http.url).connect()
    try:
        await http.kill()
        with pytest.raises(ToolError):
            await handle.call_tool("echo", {"text": "nobody home"})
    finally:
        await handle.close()
