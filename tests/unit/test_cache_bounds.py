"""The shell reader's and the guards' caches stay small however large the model's commands are.

Each cache keeps only short keys (and a bounded number of them), so long unique commands
add nothing: before that bound, 300 unique commands of ~120 KB sent through `authorize`
kept over 1 GB (the parse of each, its words, the glob tokens of its `find` pattern).
Measured in a fresh interpreter, for a clean resident-set size.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_SCRIPT = textwrap.dedent(
    """
    import asyncio, gc

    from helikon import RunContext, ToolEffect
    from helikon.core.governance.permissions import authorize


    def rss_mb() -> float:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")


    def command(n: int) -> str:
        filler = "x" * 120_000
        kinds = (
            "echo " + " ".join(f"w{n}_{i}" for i in range(14_000)),  # many words
            "echo " + " ".join(f"'w{n} {i}'" for i in range(10_000)),  # many quoted words
            f"find . -path '*{n}{filler}' -delete",  # one long glob
            f"rm -rf .a{n}*{filler}",  # a long glob target
            f"p{n}{filler} arg",  # a long program name
            f"ld-linux{n}{filler}.so ls",  # a long dynamic loader name
            " && ".join(f"echo w{n}_{i} x{i}" for i in range(7_000)),  # many commands
        )
        return kinds[n % len(kinds)]


    async def main() -> None:
        ctx = RunContext.ephemeral(None)
        for n in range(20):  # warm up: imports, first tables
            await authorize(ctx, "Bash", {"command": f"ls {n} && git status"}, ToolEffect.SIDE_EFFECT)
        gc.collect()
        before = rss_mb()
        for n in range(300):
            await authorize(ctx, "Bash", {"command": command(n)}, ToolEffect.SIDE_EFFECT)
        gc.collect()
        print(rss_mb() - before)


    asyncio.run(main())
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_many_large_unique_commands_keep_the_memory_flat() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    growth_mb = float(done.stdout)
    assert growth_mb < 64, f"300 unique ~120 KB commands added {growth_mb:.0f} MB of resident memory"


def test_a_command_too_long_to_keep_is_judged_afresh_each_time() -> None:
    from helikon.core.governance.rules import ToolSubject

    command = "rm -rf / " + " ".join(f"f{i}" for i in range(300))  # past the parse cache's bound
    for _ in range(2):
        assert ToolSubject.of("Bash", {"command": command}).guard("rm_root") == "/"
    assert ToolSubject.of("Bash", {"command": command.replace("/", "build")}).guard("rm_root") is None


def test_a_dynamic_loader_name_no_file_can_have_fails_closed() -> None:
    from helikon.core.governance.shell import parse_command

    name = "ld-linux" + "x" * 300 + ".so"
    assert "longer than a file name can be" in parse_command(f"{name} rm -rf /").error
    assert parse_command("ld-linux-x86-64.so.2 ls").commands[-1].program == "ls"
