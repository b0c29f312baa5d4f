"""The life of an MCP connection: cancelled calls, closing, garbage collection, a killed parent.

The server is the SDK's own `MCPServer` in a child process (`mcp_servers/py_server.py`),
whose `slow` tool writes to a marker file when it starts and when the client cancels it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from marker_files import until
from mcp_peers import peer

from helikon import CancellationToken, LlmAgent, RunContext, ToolError
from helikon.core.exceptions import RunCancelled
from helikon.core.items import ToolResult
from helikon.mcp import McpConnectBuilder, McpError, McpServerHandle
from helikon.testing import MockModel, text_turn, tool_call_turn

PY_SERVER = Path(__file__).parent / "mcp_servers" / "py_server.py"


def py_server() -> McpConnectBuilder:
    return McpServerHandle.stdio(sys.executable, [str(PY_SERVER)], stderr=subprocess.DEVNULL)


@pytest.fixture
async def server() -> AsyncIterator[McpServerHandle]:
    async with py_server() as handle:
        yield handle


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for a reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def gone(pid: int) -> bool:
    """Wait (bounded) for `pid` to exit; whether it did."""
    for _ in range(500):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


async def server_pid(handle: McpServerHandle) -> int:
    value = (await handle.call_tool("pid")).value
    assert isinstance(value, dict)
    result = value["result"]
    assert isinstance(result, str)
    return int(result)


async def test_a_cancel_token_abandons_the_call_and_the_server_is_told(
    server: McpServerHandle, tmp_path: Path
) -> None:
    marker, token = tmp_path / "marker", CancellationToken()
    call = asyncio.ensure_future(
        server.call_tool("slow", {"seconds": 600, "marker": str(marker)}, cancel=token)
    )
    await until(marker, "started")
    token.cancel("the user pressed stop")
    with pytest.raises(ToolError, match="cancelled: the user pressed stop"):
        await call
    await until(marker, "cancelled")  # the SDK sent notifications/cancelled, and the server stopped
    assert (await server.call_tool("echo", {"text": "still here"})).value == {"result": "still here"}


async def test_a_cancelled_agent_run_cancels_the_in_flight_call(
    server: McpServerHandle, tmp_path: Path
) -> None:
    marker, token = tmp_path / "marker", CancellationToken()
    model = MockModel.with_scripts(
        [tool_call_turn("slow", {"seconds": 600, "marker": str(marker)}), text_turn("never reached")]
    )
    agent = LlmAgent(name="waiter", model=model, tool_sources=[server])
    run = asyncio.ensure_future(agent.run("wait", context=RunContext.ephemeral(None).with_cancel(token)))
    await until(marker, "started")
    token.cancel()
    with pytest.raises(RunCancelled):
        await run
    await until(marker, "cancelled")


async def test_a_call_timeout_fails_the_call_not_the_connection(tmp_path: Path) -> None:
    async with py_server().call_timeout(0.5) as handle:
        with pytest.raises(ToolError, match="timed out"):
            await handle.call_tool("slow", {"seconds": 600, "marker": str(tmp_path / "m")})
        await until(tmp_path / "m", "cancelled")
        assert (await handle.call_tool("echo", {"text": "ok"})).value == {"result": "ok"}


async def test_close_from_another_task_stops_the_child() -> None:
    handle = await asyncio.create_task(py_server().connect())  # the connection outlives that task
    pid = await server_pid(handle)
    assert alive(pid)
    await asyncio.create_task(handle.close())
    assert await gone(pid)
    with pytest.raises(ToolError, match=r"unreachable|closed"):
        await handle.call_tool("echo", {"text": "x"})


async def test_a_dropped_handle_is_collected_and_its_child_stopped() -> None:
    handle = await py_server().connect()
    pid = await server_pid(handle)
    tools = handle.tools()
    del handle
    gc.collect()
    assert alive(pid)  # the tools still hold the handle
    del tools
    gc.collect()
    assert await gone(pid)


async def test_a_dead_child_fails_the_call_and_the_next_call_starts_a_new_one(
    server: McpServerHandle,
) -> None:
    first = await server_pid(server)
    os.kill(first, signal.SIGKILL)
    assert await gone(first)
    with pytest.raises(ToolError, match=r"dropped|connects anew"):
        await server.call_tool("echo", {"text": "x"})
    second = await server_pid(server)
    assert second != first


async def test_the_list_changed_notification_refreshes_the_cached_list(server: McpServerHandle) -> None:
    before = [t.name for t in await server.list_tools(None)]
    assert "greet" not in before
    await server.call_tool("add_tool", {"name": "greet"})
    after = {t.name: t for t in await server.list_tools(None)}
    assert "greet" in after and after["greet"].description == "the added tool greet"
    model = MockModel.with_scripts([tool_call_turn("greet", {}), text_turn("ok")])
    await LlmAgent(name="a", model=model, tool_sources=[server]).run("hi")
    [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResult)]
    assert "I am greet" in result.text


async def test_spawn_and_handshake_failures_are_mcp_errors(tmp_path: Path) -> None:
    with pytest.raises(McpError.Spawn, match="cannot start the MCP server"):
        await McpServerHandle.stdio(str(tmp_path / "no-such-server")).connect()
    with pytest.raises(McpError.Connect, match="handshake failed"):
        await McpServerHandle.stdio(sys.executable, ["-c", "pass"]).connect()
    with pytest.raises(McpError.Connect, match="no answer to `initialize` within"):
        await (
            McpServerHandle.stdio(sys.executable, ["-c", "import time; time.sleep(600)"])
            .connect_timeout(0.5)
            .connect()
        )


_PARENT = textwrap.dedent(
    """
    import asyncio, sys, time
    from helikon.mcp import McpServerHandle

    async def main():
        handle = await McpServerHandle.stdio(sys.argv[1], sys.argv[2:]).connect()
        print(handle._link.pids[0], flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([sys.executable, str(PY_SERVER)], id="python"),
        pytest.param(["env", "PY_SERVER_LINGER=1", sys.executable, str(PY_SERVER)], id="ignores-stdin-eof"),
        pytest.param(None, id="server-everything"),
    ],
)
async def test_killing_the_parent_kills_the_server(argv: list[str] | None) -> None:
    command = argv or [str(peer("mcp-server-everything"))]
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _PARENT, *command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert parent.stdout is not None
        child = int(await parent.stdout.readline())
        assert alive(child)
        parent.kill()  # SIGKILL: no finalizer, no atexit, nothing of the parent runs
        await parent.wait()
        assert await gone(child)
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()
