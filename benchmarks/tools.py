"""What the ready-made tools cost next to doing the same thing by hand.

Run with the project venv:

    uv run python benchmarks/tools.py            # ~15 s
    uv run python benchmarks/tools.py --json out.json

Bash on `HostBackend`: one `true` round trip, timed over many calls, median of `--repeats`
blocks (the rows take turns, block by block). Side by side:

- `subprocess.run(["true"])` and `subprocess.run(["bash", "-c", "true"])`: the floor, blocking;
- `HostBackend.run(ExecRequest(("true",)))` with the default rlimits (the bash launcher
  sets them) and with `ResourceLimits()` (no launcher);
- `BashTool.run("true")` (`bash -c true` through the backend, with the default rlimits).

The target (<= 1.3x) compares a backend row with the `subprocess.run` of the command it was
asked to run: the ratio is what the backend adds (the scrubbed environment, the new session,
the asyncio pipes, the group kill and, with rlimits, the bash launcher that sets them).
Other helpers add their rows (Read, Grep, the OS sandbox) to this script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable

from helikon.tools import BashTool, ExecRequest, HostBackend, ResourceLimits, Sandbox

TARGET = 1.3


def _time_sync(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


async def _time_async(fn: Callable[[], Awaitable[object]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - start) / n


async def bash_rows(n: int, repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        limited = HostBackend.builder(sandbox).build()
        unlimited = HostBackend.builder(sandbox).rlimits(ResourceLimits()).build()
        bash = BashTool(limited)
        true = ExecRequest(("true",))
        rows: dict[str, list[float]] = {}
        sync_rows: dict[str, Callable[[], object]] = {
            'subprocess.run(["true"])': lambda: subprocess.run(["true"], check=False),
            'subprocess.run(["bash","-c","true"])': lambda: subprocess.run(
                ["bash", "-c", "true"], check=False
            ),
        }
        async_rows: dict[str, Callable[[], Awaitable[object]]] = {
            "HostBackend true (default rlimits)": lambda: limited.run(true),
            "HostBackend true (no rlimits)": lambda: unlimited.run(true),
            'BashTool "true" (default rlimits)': lambda: bash.run("true"),
        }
        for fn in (*sync_rows.values(),):
            _time_sync(fn, 5)  # warm up
        for fn in async_rows.values():
            await _time_async(fn, 5)
        for _ in range(repeats):
            for name, fn in sync_rows.items():
                rows.setdefault(name, []).append(_time_sync(fn, n))
            for name, fn in async_rows.items():
                rows.setdefault(name, []).append(await _time_async(fn, n))
        return {name: statistics.median(values) for name, values in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    rows = asyncio.run(bash_rows(args.calls, args.repeats))
    true_row, bash_row = 'subprocess.run(["true"])', 'subprocess.run(["bash","-c","true"])'
    against = {
        "HostBackend true (default rlimits)": true_row,
        "HostBackend true (no rlimits)": true_row,
        'BashTool "true" (default rlimits)': bash_row,
    }
    print(f"Bash `true` round trip (median of {args.repeats} blocks of {args.calls} calls)")
    print(f"{'row':44} {'ms':>7} {'ratio':>7}  against")
    for name, seconds in rows.items():
        base = against.get(name)
        ratio = f"{seconds / rows[base]:6.2f}x" if base else "      -"
        print(f"{name:44} {seconds * 1e3:7.2f} {ratio}  {base or ''}")
    print(f"target: <= {TARGET}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"bash_true_seconds": rows, "target_ratio": TARGET}, out, indent=2)


if __name__ == "__main__":
    main()
