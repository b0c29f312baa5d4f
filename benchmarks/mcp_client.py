"""tools/call round trips per second: helikon's MCP client vs the raw `mcp` ClientSession.

Both drive the same real server (`@modelcontextprotocol/server-everything`, its `echo` tool)
over stdio, one call at a time, in one run, alternating rounds so drift hits both alike.
helikon's row goes through a tool as an agent calls it (`Tool.invoke`, racing the run's
cancel token), which is the path that matters. Target: helikon >= 90% of raw.

    uv run python benchmarks/mcp_client.py [calls-per-round] [rounds]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from helikon import RunContext, ToolContext
from helikon.mcp import McpServerHandle

SERVER = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "mcp_peers"
    / "node_modules"
    / ".bin"
    / "mcp-server-everything"
)
ARGS = {"message": "hi"}


async def raw_rate(session: ClientSession, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await session.call_tool("echo", ARGS)
    return calls / (time.perf_counter() - start)


async def helikon_rate(handle: McpServerHandle, calls: int) -> float:
    [echo] = [t for t in handle.tools() if t.name == "echo"]
    ctx = ToolContext(RunContext.ephemeral(None), call_id="b", tool_name="echo", max_agent_depth=4)
    start = time.perf_counter()
    for _ in range(calls):
        await echo.invoke(ctx, ARGS)
    return calls / (time.perf_counter() - start)


async def main(calls: int, rounds: int) -> None:
    if not SERVER.exists():
        raise SystemExit(f"{SERVER} is missing: run `bash scripts/test-deps.sh`")
    raw: list[float] = []
    ours: list[float] = []
    params = StdioServerParameters(command=str(SERVER))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        async with McpServerHandle.stdio(SERVER) as handle:
            await raw_rate(session, 50)  # warm both up
            await helikon_rate(handle, 50)
            for _ in range(rounds):
                raw.append(await raw_rate(session, calls))
                ours.append(await helikon_rate(handle, calls))
    r, h = statistics.median(raw), statistics.median(ours)
    print(f"raw mcp ClientSession : {r:8.0f} calls/s (median of {rounds} rounds of {calls})")
    print(f"helikon McpTool.invoke: {h:8.0f} calls/s  = {h / r:.0%} of raw")


if __name__ == "__main__":
    asyncio.run(
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 500, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    )
