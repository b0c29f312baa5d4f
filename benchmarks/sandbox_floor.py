r"""The floor under an OS-sandbox `true`: what `exec` costs from a forked, confined child.

`OsSandboxBackend` keeps a child forked from its launcher (a small `python -I -S` process)
and confined ahead of each command; a command then costs a message, that child's `exec`, and
the exit report. This times the `exec` part on its own, in a process like the launcher
(the same interpreter flags, the launcher's own module loaded), from the moment the child
is told to go until it is reaped:

- `vfork+exec true`: `os.posix_spawn` (glibc's vfork-like clone), the cheapest spawn there is;
- `fork+exec true`: a forked child that was ready and waiting, unconfined;
- `fork+confine+exec true`: the same child, confined first with the backend's own Landlock
  ruleset and seccomp filter (as the launcher's spare child is);
- `bwrap --ro-bind / / true`: the whole bubblewrap run, from this benchmark's own process.

Run with the project venv (Linux, Landlock ABI 6; bubblewrap for the last row):

    uv run python benchmarks/sandbox_floor.py
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAUNCHER = (
    Path(__file__).resolve().parents[1]
    / "src"
    / "helikon"
    / "tools"
    / "execution"
    / "os_sandbox"
    / "_launcher.py"
)
RUNS = 300
TRUE = shutil.which("true") or "/bin/true"


def _child_side(ruleset_fd: int, program_hex: str) -> None:
    """In a `python -I -S` process: time each way of running `true`; print the medians as JSON."""
    spec = importlib.util.spec_from_file_location("launcher", LAUNCHER)
    assert spec is not None
    assert spec.loader is not None
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    program = ctypes.create_string_buffer(bytes.fromhex(program_hex))
    launcher._drop_capabilities()  # as the launcher does once

    def forked(confine: bool) -> float:
        go_read, go_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_write)
            if confine:
                launcher._confine(ruleset_fd, program)
            os.read(go_read, 1)
            os.execv(TRUE, ["true"])
        os.close(go_read)
        time.sleep(0.002)  # it is ready and waiting, as the spare child is
        start = time.perf_counter()
        os.write(go_write, b"x")
        os.waitpid(pid, 0)
        elapsed = time.perf_counter() - start
        os.close(go_write)
        return elapsed

    def spawned() -> float:
        time.sleep(0.002)
        start = time.perf_counter()
        os.waitpid(os.posix_spawn(TRUE, ["true"], {}), 0)
        return time.perf_counter() - start

    names = ("vfork+exec true", "fork+exec true", "fork+confine+exec true")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(RUNS):  # taking turns, so a drift of the machine's speed weighs on all
        samples["vfork+exec true"].append(spawned())
        samples["fork+exec true"].append(forked(confine=False))
        samples["fork+confine+exec true"].append(forked(confine=True))
    print(json.dumps({name: [statistics.median(v), min(v)] for name, v in samples.items()}))


def main() -> None:
    from helikon.tools.execution.os_sandbox._landlock import abi_version
    from helikon.tools.execution.os_sandbox._policy import NetworkMode, build_ruleset
    from helikon.tools.execution.os_sandbox._seccomp import build_filter

    network = NetworkMode.closed()
    with tempfile.TemporaryDirectory() as root:
        ruleset = build_ruleset(abi=abi_version(), writable=(root,), read_only=(), network=network)
        program = build_filter(network.seccomp).hex()
        done = subprocess.run(
            [sys.executable, "-I", "-S", __file__, "--child", str(ruleset.fd), program],
            pass_fds=(ruleset.fd,),
            capture_output=True,
            check=True,
        )
        ruleset.close()
    figures: dict[str, list[float]] = json.loads(done.stdout)
    if shutil.which("bwrap"):
        bwrap: list[float] = []
        for _ in range(RUNS // 3):
            time.sleep(0.002)
            start = time.perf_counter()
            subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], check=True)
            bwrap.append(time.perf_counter() - start)
        figures["bwrap --ro-bind / / true"] = [statistics.median(bwrap), min(bwrap)]
    print(f"`true` from the go signal to its reap (median and fastest of {RUNS} runs)")
    print(f"{'row':28} {'ms':>7} {'fastest':>8}")
    for name, (median, fastest) in figures.items():
        print(f"{name:28} {median * 1e3:7.3f} {fastest * 1e3:8.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child_side(int(sys.argv[2]), sys.argv[3])
    else:
        main()
