"""What the benchmarks that start servers share: stopping a process group, its CPU, the versions run.

The children are started with `start_new_session=True` (a process group of their own), so a
server and whatever it spawned stop as one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process's group, SIGKILL it after 10 s; waits for the process either way."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def cpu_seconds(stat: str) -> float:
    """User + system CPU in a `/proc/.../stat` file (a process, all its threads; or one task)."""
    fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def versions(names: Iterable[str]) -> str:
    """`name version, ...` of the distributions installed here (the missing ones left out)."""
    found = []
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found.append(f"{name} {metadata.version(name)}")
    return ", ".join(found)
