r"""MCP round trips: helikon's client and tool server next to the raw `mcp` SDK and FastMCP.

Run in the benchmark venv (it has FastMCP; `bash benchmarks/setup_env.sh` makes it) after
`make test-deps` (the npm MCP peers):

    .bench-venv/bin/python benchmarks/mcp_bench.py                 # both groups, ~1 minute
    .bench-venv/bin/python benchmarks/mcp_bench.py --only client --calls 500 --repeats 7

Two groups, each a sequential `tools/call` loop over stdio (one call in flight, so the figure
is the round trip: framing, JSON, validation, the hops through the client's tasks):

- `client`: `@modelcontextprotocol/server-everything`'s `echo` tool, called through helikon's
  `McpServerHandle` tool (`await tool.invoke(ctx, args)`, what an agent's run does) against
  the raw `mcp` client (`ClientSession.call_tool`). Target: helikon >= 90% of raw.
- `server`: an `echo(message) -> str` tool served by helikon's `McpToolServer`, by FastMCP
  (`fastmcp` from PyPI) and, for reference, by the SDK's own `MCPServer` (FastMCP 1.0's
  descendant), each in its own process, all driven by the raw `mcp` client.
  Target: helikon >= FastMCP's rate.

Rows of a group take turns block by block, on connections opened once; each figure is the
median block (round trips per second) and the fastest block. Every row's answer is checked
before anything is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from helikon import RunContext, ToolContext
from helikon.mcp import McpServerHandle

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / "tests" / "npm_peers" / "node_modules" / ".bin" / "mcp-server-everything"
CLIENT_TARGET = 0.90
SERVER_TARGET = 1.0
GROUPS = ["client", "server"]
RAW = "raw mcp ClientSession.call_tool"

Call = Callable[[], Awaitable[str]]

HELIKON_SERVER = '''
import asyncio

from helikon import tool, ToolEffect
from helikon.mcp import McpToolServer


@tool(effect=ToolEffect.READ_ONLY)
def echo(message: str) -> str:
    """Echo the message back."""
    return message


asyncio.run(McpToolServer([echo]).name("bench").serve_stdio())
'''

FASTMCP_SERVER = '''
from fastmcp import FastMCP

mcp = FastMCP("bench")


@mcp.tool
def echo(message: str) -> str:
    """Echo the message back."""
    return message


mcp.run(show_banner=False)
'''

SDK_SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("bench")


@app.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


app.run()
'''


@contextlib.asynccontextmanager
async def raw_session(command: str, args: list[str]) -> AsyncGenerator[ClientSession]:
    """The raw `mcp` client on a stdio server, initialized."""
    params = StdioServerParameters(command=command, args=args)
    with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 (opened once, before anything is timed)
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def raw_echo(session: ClientSession, message: str) -> Call:
    async def call() -> str:
        result = await session.call_tool("echo", {"message": message})
        return result.content[0].text  # type: ignore[union-attr]

    return call


async def _time(call: Call, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return n / (time.perf_counter() - start)


Samples = dict[str, list[float]]
"""Calls per second of each row, one figure a round, the rows in the same order each round."""


async def _rounds(rows: dict[str, Call], n: int, repeats: int) -> Samples:
    """The rows take turns, `n` calls each, `repeats` rounds (after a warm-up)."""
    for call in rows.values():
        for _ in range(20):
            await call()
    samples: Samples = {name: [] for name in rows}
    for _ in range(repeats):
        for name, call in rows.items():
            samples[name].append(await _time(call, n))
    return samples


async def client_rows(n: int, repeats: int) -> Samples:
    if not EVERYTHING.exists():
        raise SystemExit(f"{EVERYTHING} is missing: run `make test-deps` first")
    async with (
        raw_session(str(EVERYTHING), []) as raw,
        McpServerHandle.stdio(str(EVERYTHING)) as handle,
    ):
        [echo] = [tool for tool in handle.tools() if tool.name == "echo"]
        ctx = ToolContext(RunContext.ephemeral(None), call_id="bench", tool_name="echo", max_agent_depth=1)

        async def helikon_call() -> str:
            out = await echo.invoke(ctx, {"message": "hi"})
            assert isinstance(out.value, str)
            return out.value

        rows = {RAW: raw_echo(raw, "hi"), "helikon McpServerHandle tool": helikon_call}
        for name, call in rows.items():
            answer = await call()
            if answer != "Echo: hi":
                raise SystemExit(f"{name} answered {answer!r}, not 'Echo: hi'")
        return await _rounds(rows, n, repeats)


async def server_rows(n: int, repeats: int) -> Samples:
    with tempfile.TemporaryDirectory() as tmp:
        scripts: dict[str, Path] = {}
        servers = (
            ("helikon McpToolServer", HELIKON_SERVER),
            ("FastMCP", FASTMCP_SERVER),
            ("mcp SDK MCPServer", SDK_SERVER),
        )
        for index, (name, source) in enumerate(servers):
            path = Path(tmp) / f"server_{index}.py"
            path.write_text(textwrap.dedent(source))
            scripts[name] = path
        async with contextlib.AsyncExitStack() as stack:
            rows: dict[str, Call] = {}
            for name, path in scripts.items():
                session = await stack.enter_async_context(raw_session(sys.executable, [str(path)]))
                rows[name] = raw_echo(session, "hi")
            for name, call in rows.items():
                answer = await call()
                if answer != "hi":
                    raise SystemExit(f"{name} answered {answer!r}, not 'hi'")
            return await _rounds(rows, n, repeats)


def _report(title: str, samples: Samples, base: str, target: float) -> dict[str, Any]:
    """Each row's median and best round, and its ratio to `base`: the median of the rounds'
    ratios (each row over the base row of the same round, so a burst of load elsewhere on
    the machine hits both sides of a ratio alike)."""
    print(f"\n{title}")
    print(f"  {'row':<36} {'calls/s (median)':>17} {'(best)':>9} {'vs ' + base:>34}")
    figures: dict[str, Any] = {"rows": {}, "base": base, "target": target}
    for name, values in samples.items():
        ratio = statistics.median(v / b for v, b in zip(values, samples[base], strict=True))
        median, best = statistics.median(values), max(values)
        figures["rows"][name] = {"median_calls_per_s": median, "best_calls_per_s": best, "ratio": ratio}
        print(f"  {name:<36} {median:>17.0f} {best:>9.0f} {ratio:>33.2f}x")
    mine = next(name for name in samples if name.startswith("helikon"))
    ratio = figures["rows"][mine]["ratio"]
    verdict = "meets" if ratio >= target else "MISSES"
    print(f"  -> {mine}: {ratio:.2f}x of {base} (target >= {target:.2f}x): {verdict} the target")
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", choices=GROUPS, help="run only these groups")
    parser.add_argument("--calls", type=int, default=300, help="calls a block (default 300)")
    parser.add_argument("--repeats", type=int, default=5, help="blocks a row (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    groups = args.only or GROUPS
    figures: dict[str, Any] = {}
    if "client" in groups:
        figures["client"] = _report(
            "tools/call round trips, server-everything `echo` over stdio",
            await client_rows(args.calls, args.repeats),
            RAW,
            CLIENT_TARGET,
        )
    if "server" in groups:
        figures["server"] = _report(
            "tools/call round trips to an `echo` tool server over stdio (raw mcp client)",
            await server_rows(args.calls, args.repeats),
            "FastMCP",
            SERVER_TARGET,
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
