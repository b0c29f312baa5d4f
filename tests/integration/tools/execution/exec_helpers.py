"""What the execution-backend tests share: a command line as an `ExecRequest`, this process's children, pids.

Where the OS sandbox runs its commands in a pid namespace of their own, a command's `$$` and
`$!` are that namespace's pids, not this host's: `on_host` translates them, given the
launcher's pid (and leaves them as they are where the commands share this namespace).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

from helikon.tools import ExecRequest, OsSandboxBackend, Sandbox

B = TypeVar("B")
T = TypeVar("T")


def sh(command: str, **kwargs: object) -> ExecRequest:
    """`bash -c command` as a request; `kwargs` are `ExecRequest`'s (stdin, cwd, timeout, ...)."""
    return ExecRequest(("bash", "-c", command), **kwargs)  # type: ignore[arg-type]


def children_of_this_process() -> set[int]:
    """The pids of every thread's children; a thread that ends during the scan is skipped."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found.update(int(pid) for pid in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            # The thread exited between the listing and the read (a loop's worker thread, say);
            # its children, if it had any, were reparented to another thread we read.
            continue
    return found


def launched(build: Callable[[], B]) -> tuple[B, int | None]:
    """`build()`'s backend and the launcher process it started (`None` if it started none)."""
    before = children_of_this_process()
    backend = build()
    added = children_of_this_process() - before
    assert len(added) <= 1, f"building one backend started {len(added)} processes"
    return backend, (added.pop() if added else None)


def own_pid_namespace(launcher: int) -> bool:
    """Whether `launcher`'s commands run in a pid namespace of their own (not this process's)."""
    return os.readlink(f"/proc/{launcher}/ns/pid_for_children") != os.readlink("/proc/self/ns/pid")


def namespace_pid(pid: int) -> int:
    """The pid the process `pid` (a host pid) has in its own pid namespace."""
    return int(_status(pid)["NSpid"].split()[-1])


def on_host(pid: int, launcher: int | None) -> int:
    """The host pid of the process a command of `launcher` calls `pid` (its `$$`, `$!`); 0 if none runs.

    With no launcher (`HostBackend`), or one that shares this pid namespace, that is `pid`.
    """
    if launcher is None or not own_pid_namespace(launcher):
        return pid if running(pid) else 0
    namespace = os.readlink(f"/proc/{launcher}/ns/pid_for_children")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") == namespace and namespace_pid(int(entry.name)) == pid:
                return int(entry.name) if running(int(entry.name)) else 0
        except (FileNotFoundError, ProcessLookupError, KeyError, PermissionError):
            continue  # it exited during the scan, or is not ours to look at
    return 0


def running(pid: int) -> bool:
    """Whether `pid` runs now (absent, or a zombie waiting for its reaper, counts as gone)."""
    try:
        state = _stat(pid)[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def leads_its_session(pid: int) -> bool:
    """Whether `pid` has called `setsid` (it leads a session: its session id is its pid)."""
    try:
        return int(_stat(pid)[3]) == pid
    except (FileNotFoundError, ProcessLookupError):
        return False


def expect_eventually(ready: Callable[[], bool], what: str, within: float = 10.0) -> None:
    """Poll `ready` until it holds; fail saying `what` did not happen (a bound, not a timing)."""
    deadline = time.monotonic() + within
    while not ready():
        assert time.monotonic() < deadline, f"{what} did not happen within {within} s"
        time.sleep(0.02)


def written(path: Path, within: float = 10.0) -> str:
    """What another process wrote to `path`, once it ends with a newline (a whole line)."""
    expect_eventually(
        lambda: path.exists() and path.read_text().endswith("\n"), f"{path.name} being written", within
    )
    return path.read_text()


async def once_started_before_the_timeout(
    run: Callable[[float], Awaitable[T]], started: Callable[[T], bool]
) -> T:
    """`run(limit)` with a timeout of 1 s, then 4, then 16, until `started` says the command got going.

    A test of a timeout needs the command to reach a point (print, start a child) before the
    timeout fires; on a loaded machine a short one can fire first, which proves nothing and
    fails nothing: the same run is then made with a longer timeout.
    """
    for limit in (1.0, 4.0):
        out = await run(limit)
        if started(out):
            return out
    return await run(16.0)


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` stops running within `within` seconds (a bound: a killed process goes at once)."""
    deadline = time.monotonic() + within
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


LEAVES_ITS_SESSION = "setsid bash -c 'echo $$ > stray.pid; exec sleep 60' & "
"""A command line's start that leaves a stray in a session of its own; `stray.pid` names it once it has."""


def stray_in_its_session(pid_file: Path, launcher: int | None) -> int:
    """The host pid of the stray `pid_file` names, once it is written and the stray leads its own session."""
    stray = 0

    def left() -> bool:
        nonlocal stray
        text = pid_file.read_text() if pid_file.exists() else ""
        stray = on_host(int(text), launcher) if text.endswith("\n") else 0
        return stray != 0 and leads_its_session(stray)

    expect_eventually(left, f"the stray named in {pid_file.name} leaving its command's session")
    return stray


def kill_the_launcher_under_a_stray(root: Path) -> tuple[int, bool]:
    """Leave a `setsid` stray of a running OS-sandbox command, then SIGKILL the launcher from outside.

    The kill waits until the stray leads its own session: a kill that lands first finds it
    still in its command's group, where it dies with the group whatever the tier. Returns
    the stray's host pid, and whether the commands had a pid namespace of their own.
    """

    async def scenario() -> tuple[int, bool]:
        with Sandbox.open(root) as sandbox:
            backend, launcher = launched(OsSandboxBackend.builder(sandbox).timeout(60).build)
            assert launcher is not None
            run = asyncio.ensure_future(backend.run(sh(LEAVES_ITS_SESSION + "exec sleep 60")))
            try:
                own = own_pid_namespace(launcher)
                stray = await asyncio.to_thread(stray_in_its_session, root / "stray.pid", launcher)
                os.kill(launcher, signal.SIGKILL)
                await asyncio.gather(run, return_exceptions=True)
            finally:
                backend.close()
            return stray, own

    return asyncio.run(scenario())


def _stat(pid: int) -> list[str]:
    """The fields of /proc/`pid`/stat after the command name (state first, session fourth)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _status(pid: int) -> dict[str, str]:
    fields = (line.partition(":") for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {name: value.strip() for name, _, value in fields}


NOBODY = 65534


@contextlib.contextmanager
def nobodys_directory() -> Iterator[Path]:
    """A fresh directory the user nobody owns (this process must be root), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="helikon-nobody-"))
    try:
        root.chmod(0o755)
        os.chown(root, NOBODY, NOBODY)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_as_nobody(script: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`script` (with `args`) run by Python as the user nobody, importing helikon and these helpers from here.

    This process must be root; the checkout and the interpreter must be readable by others.
    """
    site = next(p for p in sys.path if p.endswith("site-packages"))
    src = str(Path(__file__).parents[4] / "src")
    python = _interpreter_for_others()
    assert shutil.which("setpriv"), "this test runs commands as nobody with setpriv: install util-linux"
    assert python is not None, "no Python of this version that another user may run (/usr/bin/python3)"
    here = str(Path(__file__).parent)
    assert all(_world_readable(Path(p)) for p in (site, src, here)), "the checkout must be readable by others"
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*as_nobody, python, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join([src, site, here])},
    )


def _interpreter_for_others() -> str | None:
    """This Python, or the system's of the same version, if another user can run it."""
    for candidate in (Path(sys.executable).resolve(), Path("/usr/bin/python3").resolve()):
        if not candidate.exists() or not _world_readable(candidate):
            continue
        version = subprocess.run(
            [str(candidate), "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if version == str(sys.version_info[:2]):
            return str(candidate)
    return None


def _world_readable(path: Path) -> bool:
    """Whether `path` and every directory above it let other users in."""
    return all(part.stat().st_mode & 0o005 for part in [path, *path.parents])
