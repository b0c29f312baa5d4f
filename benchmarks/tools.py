r"""What the ready-made tools cost next to doing the same thing by hand.

Run with the project venv:

    uv run python benchmarks/tools.py                  # every group, ~1 minute
    uv run python benchmarks/tools.py --only read --only grep
    uv run python benchmarks/tools.py --json out.json

Each group runs in a fresh interpreter. Its rows take turns, block by block; each figure is
the median of `--repeats` blocks (for Read and Grep also the fastest block: other load on the
machine only ever adds time). Every tool is called the way an agent's run calls it:
`await tool.invoke(ctx, args)` (the arguments validated, the work in a worker thread).

Bash on `HostBackend` (`--only bash`) and on `OsSandboxBackend` (`--only os-sandbox`): one
`true` round trip, timed over `--calls` calls a block, each row beside the baseline(s) its
target is set against, with the ratio, the target and whether it is met:

- host: `BashTool.run("true")` (`bash -c true` with the default rlimits, which ride in the
  same bash as a `ulimit` line) against `subprocess.run(["bash", "-c", "true"])`, and
  `HostBackend.run(ExecRequest(("true",)))` without rlimits against `subprocess.run(["true"])`:
  target <= 1.3x. For context, `true` as an argv with the default rlimits (a bash launcher runs
  `ulimit` and then `exec`s it) beside its floor, the same launcher under `subprocess.run`.
- OS sandbox: `OsSandboxBackend.run(ExecRequest(("true",)))` and `BashTool.run("true")` on it
  against `bwrap --ro-bind / / true` (Debian's bubblewrap, the containment Anthropic's sandbox
  runtime uses), the BashTool row also against `bwrap --ro-bind / / bash -c true` (the same
  command): target at most bwrap's cost (1.0x).

A ratio is the row's median block over the baseline's median block (the rows take turns
block by block, so a drift of the machine's speed weighs on both); the fastest blocks' ratio
is printed beside it.

Read of a 10 MB file (`--only read`): a text file of this repository's Python sources, repeated
to 10 MiB (about 260,000 lines), in a sandbox of its own. "Read of the file" is one `Read` call
whose `limit` covers every line, so the tool returns the whole file numbered; the target
(<= 1.2x) compares it with plain Python doing the same by hand: `open(path).read()` and the
same `cat -n` numbering (`f"{n:>6}\t{line}"` joined by newlines). A second baseline does it the
way the tool does (the bytes read, decoded, split at newlines) without the tool's checks; both
are checked to give the tool's exact text before anything is timed. For context: the bytes
read alone, the tool's default call (the first 2,000 lines) and the whole file paged the way
the tool tells a model to (2,000 lines a call, each call reading from the top of the file).

Grep over this repository (`--only grep`): the regex `def \w+_tool` over `src`, `tests` and
`docs` by `GrepTool` (one call per directory, `max_results=2000`) against `grep -rnE` over the
same three directories (`-E`: the same regex syntax; the same files, the same lines, checked
before timing); the target is <= 2x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from helikon import RunContext, ToolContext
from helikon.core.items import TextPart
from helikon.core.tools import ToolOutput
from helikon.tools import (
    BashTool,
    ExecRequest,
    GrepTool,
    HostBackend,
    OsSandboxBackend,
    ReadTool,
    ResourceLimits,
    Sandbox,
)

TARGET = 1.3
OS_TARGET = 1.0
READ_TARGET = 1.2
GREP_TARGET = 2.0
REPO = Path(__file__).resolve().parent.parent
READ_BYTES = 10 * 1024 * 1024
GREP_PATTERN = r"def \w+_tool"
GREP_DIRS = ("src", "tests", "docs")
GROUPS = ["bash", "os-sandbox", "read", "grep"]

Rows = dict[str, tuple[Callable[[], Awaitable[object]], int]]
"""Each row: what one call does, and how many calls a block times."""


async def _time_async(fn: Callable[[], Awaitable[object]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - start) / n


Compared = dict[str, list[tuple[str, float | None]]]
"""For each row that is compared: its baselines, each with the target ratio (or None: context)."""

SP_TRUE, SP_BASH = 'subprocess.run(["true"])', 'subprocess.run(["bash","-c","true"])'
SP_LIMITS = "subprocess.run(bash ulimit launcher, true)"
BWRAP, BWRAP_BASH = "bwrap --ro-bind / / true", "bwrap --ro-bind / / bash -c true"


async def bash_rows(n: int, repeats: int) -> tuple[dict[str, list[float]], Compared]:
    """`true` through `HostBackend` and `BashTool` on it, beside `subprocess.run` of the same command."""
    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        limited = HostBackend.builder(sandbox).build()
        unlimited = HostBackend.builder(sandbox).rlimits(ResourceLimits()).build()
        bash = BashTool(limited)
        true = ExecRequest(("true",))
        launcher = list(limited._limits.wrap(("true",)))  # pyright: ignore[reportPrivateUsage, reportOptionalMemberAccess]
        rows: Rows = {
            SP_TRUE: (_sync(lambda: subprocess.run(["true"], check=True)), n),
            SP_BASH: (_sync(lambda: subprocess.run(["bash", "-c", "true"], check=True)), n),
            SP_LIMITS: (_sync(lambda: subprocess.run(launcher, check=True)), n),
            'BashTool "true" (default rlimits)': (lambda: bash.run("true"), n),
            "HostBackend true (no rlimits)": (lambda: unlimited.run(true), n),
            "HostBackend true (default rlimits)": (lambda: limited.run(true), n),
        }
        compared: Compared = {
            'BashTool "true" (default rlimits)': [(SP_BASH, TARGET)],
            "HostBackend true (no rlimits)": [(SP_TRUE, TARGET)],
            "HostBackend true (default rlimits)": [(SP_TRUE, None), (SP_LIMITS, None)],
        }
        return await _samples(rows, repeats), compared


async def os_sandbox_rows(n: int, repeats: int) -> tuple[dict[str, list[float]], Compared]:
    """`true` confined by `OsSandboxBackend` and `BashTool` on it, beside bubblewrap."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        Sandbox.open(tmp) as sandbox,
        OsSandboxBackend.builder(sandbox).build() as confined,
    ):
        bash = BashTool(confined)
        true = ExecRequest(("true",))
        bwrap = ["bwrap", "--ro-bind", "/", "/"]
        rows: Rows = {
            BWRAP: (_sync(lambda: subprocess.run([*bwrap, "true"], check=True)), n),
            BWRAP_BASH: (_sync(lambda: subprocess.run([*bwrap, "bash", "-c", "true"], check=True)), n),
            "OsSandboxBackend true (default rlimits)": (lambda: confined.run(true), n),
            'BashTool "true" on OsSandboxBackend': (lambda: bash.run("true"), n),
        }
        compared: Compared = {
            "OsSandboxBackend true (default rlimits)": [(BWRAP, OS_TARGET)],
            'BashTool "true" on OsSandboxBackend': [(BWRAP, OS_TARGET), (BWRAP_BASH, OS_TARGET)],
        }
        return await _samples(rows, repeats), compared


Timed = tuple[dict[str, float], dict[str, float]]
"""Seconds per call of each row: the median block, and the fastest block."""


async def _samples(rows: Rows, repeats: int) -> dict[str, list[float]]:
    """The rows take turns block by block: each row's seconds per call in each round."""
    for fn, _ in rows.values():
        await fn()  # warm up
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(repeats):
        for name, (fn, n) in rows.items():
            samples[name].append(await _time_async(fn, n))
    return samples


async def _blocks(rows: Rows, repeats: int) -> Timed:
    """Each row's median block and its fastest block."""
    samples = await _samples(rows, repeats)
    return (
        {name: statistics.median(values) for name, values in samples.items()},
        {name: min(values) for name, values in samples.items()},
    )


def _ctx(tool_name: str) -> ToolContext[None]:
    return ToolContext(RunContext.ephemeral(None), call_id="bench", tool_name=tool_name, max_agent_depth=1)


def _text(out: ToolOutput) -> str:
    (part,) = out.to_parts()
    assert isinstance(part, TextPart)
    return part.text


def _numbered(text: str) -> str:
    """`cat -n` by hand: what Read returns for a whole file."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))


def _sync(fn: Callable[[], object]) -> Callable[[], Awaitable[object]]:
    """A blocking baseline as a row: called as is, in the loop's thread."""

    async def call() -> object:
        return fn()

    return call


def _big_file(root: str) -> tuple[Path, int]:
    """`root`/big.txt: this repository's Python sources repeated to `READ_BYTES`; and its lines."""
    sources = "".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "src").rglob("*.py")))
    body = (sources * (READ_BYTES // len(sources) + 1))[:READ_BYTES]
    body = body[: body.rindex("\n") + 1]
    path = Path(root, "big.txt")
    path.write_text(body, encoding="utf-8")
    return path, body.count("\n")


async def read_rows(repeats: int) -> Timed:
    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        path, lines = _big_file(tmp)
        read = ReadTool[None](sandbox)
        ctx = _ctx("Read")

        def plain_bytes() -> bytes:
            with open(path, "rb") as f:
                return f.read()

        def plain_text() -> str:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()

        def plain_numbered() -> str:
            with open(path, encoding="utf-8", errors="replace") as f:
                return _numbered(f.read())

        def bytes_numbered() -> str:
            with open(path, "rb") as f:
                return _numbered(f.read().decode("utf-8", errors="replace"))

        async def whole() -> ToolOutput:
            return await read.invoke(ctx, {"file_path": "big.txt", "limit": lines})

        async def first_page() -> ToolOutput:
            return await read.invoke(ctx, {"file_path": "big.txt"})

        async def paged() -> int:
            offset, calls = 1, 0
            while True:
                out = await read.invoke(ctx, {"file_path": "big.txt", "offset": offset})
                calls += 1
                if not out.metadata or not out.metadata["truncated"]:
                    return calls
                offset = int(str(out.metadata["end_line"])) + 1

        expected = plain_numbered()
        if expected != bytes_numbered() or _text(await whole()) != expected:
            raise SystemExit("Read: the tool's text differs from the plain-Python numbering")
        pages = await paged()
        rows: Rows = {
            "open(p, 'rb').read() (bytes only)": (_sync(plain_bytes), 20),
            "open(p).read() (text, no numbering)": (_sync(plain_text), 2),
            "open(p).read() + numbering": (_sync(plain_numbered), 2),
            "bytes read, decoded, split + numbering": (_sync(bytes_numbered), 2),
            f"Read whole file (1 call, limit={lines})": (whole, 2),
            "Read default call (first 2000 lines)": (first_page, 20),
            f"Read paged, 2000 lines a call ({pages} calls)": (paged, 1),
        }
        return await _blocks(rows, repeats)


def _grep_lines() -> list[str]:
    done = subprocess.run(["grep", "-rnE", GREP_PATTERN, *GREP_DIRS], cwd=REPO, capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"grep -rnE failed: {done.stderr.decode()}")
    return done.stdout.decode("utf-8", errors="replace").splitlines()


def _searched() -> tuple[int, int, int]:
    """The files grep and Grep search, their bytes, and how many are `.pyc` files.

    Neither follows symlinks. grep reads `.pyc` files and Grep skips them as binary: compare
    runs over like trees.
    """
    files = size = compiled = 0
    for d in GREP_DIRS:
        for parent, _, names in os.walk(REPO / d):
            for name in names:
                path = Path(parent, name)
                if not path.is_symlink():
                    files, size = files + 1, size + path.stat().st_size
                    compiled += name.endswith(".pyc")
    return files, size, compiled


async def grep_rows(repeats: int) -> Timed:
    with Sandbox.open(REPO) as sandbox:
        grep = GrepTool[None](sandbox)
        ctx = _ctx("Grep")

        async def tool() -> list[ToolOutput]:
            args: dict[str, Any] = {"pattern": GREP_PATTERN, "max_results": 2000}
            return [await grep.invoke(ctx, args | {"path": d}) for d in GREP_DIRS]

        outs = [out for out in await tool() if out.metadata and out.metadata["matches"]]
        found = [line for out in outs for line in _text(out).split("\n\n")[0].splitlines()]
        if sorted(found) != sorted(_grep_lines()):
            raise SystemExit("Grep: the tool's lines differ from grep -rnE's")
        rows: Rows = {
            f"grep -rnE '{GREP_PATTERN}' {' '.join(GREP_DIRS)}": (_sync(_grep_lines), 10),
            f"Grep '{GREP_PATTERN}', 1 call per dir ({len(found)} lines)": (tool, 10),
        }
        return await _blocks(rows, repeats)


def _table(
    title: str,
    rows: dict[str, float],
    against: dict[str, str],
    target: float,
    best: dict[str, float] | None = None,
) -> None:
    print(title)
    extra = f" {'best ms':>9} {'best':>7}" if best else ""
    print(f"{'row':48} {'ms':>9} {'ratio':>7}{extra}  against")
    for name, seconds in rows.items():
        base = against.get(name)
        ratio = f"{seconds / rows[base]:6.2f}x" if base else "      -"
        if best:
            extra = f" {best[name] * 1e3:9.2f} " + (f"{best[name] / best[base]:6.2f}x" if base else "      -")
        print(f"{name:48} {seconds * 1e3:9.2f} {ratio}{extra}  {base or ''}")
    print(f"target: <= {target}x\n")


def _compared_table(title: str, samples: dict[str, list[float]], compared: Compared) -> dict[str, object]:
    """Each row's median and fastest block; a compared row also each baseline, the ratios and the target.

    The ratio is the median over rounds of the row's block over the baseline's block of the
    same round (so a drift of the machine's speed weighs on both); `best` is the fastest
    block's over the baseline's fastest block.
    """
    print(title)
    print(f"{'row':42} {'ms':>7} {'best':>7}  {'against':42} {'ratio':>6} {'best':>6}  target")
    figures: dict[str, object] = {}
    for name, blocks in samples.items():
        median, fastest = statistics.median(blocks), min(blocks)
        lead = f"{name:42} {median * 1e3:7.2f} {fastest * 1e3:7.2f}"
        against: list[dict[str, object]] = []
        figures[name] = {"median_seconds": median, "fastest_seconds": fastest, "against": against}
        if name not in compared:
            print(lead)
        for base, target in compared.get(name, []):
            ratio = statistics.median(a / b for a, b in zip(blocks, samples[base], strict=True))
            best = fastest / min(samples[base])
            met = "met" if target is not None and ratio <= target else "NOT MET"
            verdict = "(context)" if target is None else f"<= {target}x {met}"
            print(f"{lead}  {base:42} {ratio:5.2f}x {best:5.2f}x  {verdict}")
            lead = " " * len(lead)
            against.append({"baseline": base, "ratio": ratio, "best_ratio": best, "target": target})
    print()
    return figures


def _group(group: str, calls: int, repeats: int) -> dict[str, object]:
    """Time one group of rows and print its table; its figures, for `--json`."""
    if group in ("bash", "os-sandbox"):
        if group == "bash":
            samples, compared = asyncio.run(bash_rows(calls, repeats))
            title = "Bash `true` round trip on HostBackend"
        else:
            if shutil.which("bwrap") is None:
                raise SystemExit("the os-sandbox rows compare with bubblewrap: apt-get install bubblewrap")
            samples, compared = asyncio.run(os_sandbox_rows(calls, repeats))
            title = "Bash `true` round trip on OsSandboxBackend"
        title += f" (median and fastest of {repeats} blocks of {calls} calls)"
        return {f"{group}_true": _compared_table(title, samples, compared)}
    if group == "read":
        rows, best = asyncio.run(read_rows(repeats))
        plain, by_bytes = "open(p).read() + numbering", "bytes read, decoded, split + numbering"
        against = {name: plain for name in rows if name.startswith("Read ") and "default" not in name}
        title = f"Read of a 10 MiB file (median and fastest of {repeats} blocks)"
        _table(title, rows, against, READ_TARGET, best)
        whole = next(name for name in rows if name.startswith("Read whole"))
        print(
            f"Read whole file against {by_bytes!r}: {rows[whole] / rows[by_bytes]:.2f}x "
            f"(fastest blocks: {best[whole] / best[by_bytes]:.2f}x)\n"
        )
        return {"read_10mib_seconds": rows, "read_10mib_best_seconds": best, "read_target_ratio": READ_TARGET}
    rows, best = asyncio.run(grep_rows(repeats))
    base = next(iter(rows))
    against = {name: base for name in rows if name != base}
    files, size, compiled = _searched()
    tree = f"{files} files ({compiled} .pyc), {size / 1e6:.1f} MB"
    title = f"Grep over {tree} (median and fastest of {repeats} blocks)"
    _table(title, rows, against, GREP_TARGET, best)
    return {"grep_seconds": rows, "grep_best_seconds": best, "grep_target_ratio": GREP_TARGET}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", choices=GROUPS, help="one group (repeatable)")
    parser.add_argument("--calls", type=int, default=100, help="Bash calls a block")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    groups = list(dict.fromkeys(args.only or GROUPS))
    figures: dict[str, object] = {}
    if len(groups) == 1:
        figures = _group(groups[0], args.calls, args.repeats)
    else:
        # Each group in a fresh interpreter (as loop_overhead.py runs each framework): what one
        # group left in memory and caches (Read's 10 MiB strings) does not weigh on the next.
        for group in groups:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp, "figures.json")
                flags = ["--calls", str(args.calls), "--repeats", str(args.repeats), "--json", str(out)]
                subprocess.run([sys.executable, __file__, "--only", group, *flags], check=True)
                figures |= json.loads(out.read_text(encoding="utf-8"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
