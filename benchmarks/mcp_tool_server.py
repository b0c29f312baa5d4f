r"""helikon's MCP tool server against the official SDK's own (`MCPServer`, formerly FastMCP).

Run with the project venv:

    uv run python benchmarks/mcp_tool_server.py              # ~30 s
    uv run python benchmarks/mcp_tool_server.py --calls 5000 --repeats 7

Both servers serve the same `echo_tool(text: str) -> str` over stdio in a child process,
and both are driven by the raw `mcp` client (`ClientSession.call_tool`), one call at a time:
the figure is tools/call round trips per second, client and transport included. The rows take
turns, block by block; each figure is the median of `--repeats` blocks (the best block too:
other load on the machine only ever adds time). Target: helikon >= the SDK's rate (1.0x).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mcp_agent_server.py"

SDK_SERVER = """
from mcp.server.mcpserver import MCPServer

app = MCPServer("Echo Server")


@app.tool()
def echo_tool(text: str) -> str:
    \"\"\"Echo the input text\"\"\"
    return text


app.run()
"""

OURS, SDK = "helikon McpToolServer", "mcp MCPServer (FastMCP)"
SERVERS = {OURS: [str(EXAMPLE), "--tools"], SDK: ["-c", SDK_SERVER]}


@asynccontextmanager
async def session(args: list[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=args)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def block(client: ClientSession, calls: int) -> float:
    """Round trips per second over `calls` sequential calls."""
    start = time.perf_counter()
    for i in range(calls):
        result = await client.call_tool("echo_tool", {"text": f"hi {i}"})
        if result.is_error:
            raise RuntimeError(f"the echo call failed: {result.content}")
    return calls / (time.perf_counter() - start)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per block")
    parser.add_argument("--repeats", type=int, default=5, help="blocks per server")
    options = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name in SERVERS}
    async with session(SERVERS[OURS]) as ours, session(SERVERS[SDK]) as sdk:
        clients = {OURS: ours, SDK: sdk}
        for client in clients.values():
            await block(client, 200)  # warm up: imports, first-call caches
        for _ in range(options.repeats):
            for name, client in clients.items():
                rates[name].append(await block(client, options.calls))
    baseline = statistics.median(rates[SDK])
    print(f"tools/call round trips per second over stdio ({options.calls} calls x {options.repeats} blocks)")
    print(f"{'server':<26}{'median':>10}{'best':>10}{'vs SDK':>9}")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:<26}{median:>10.0f}{max(values):>10.0f}{median / baseline:>8.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
