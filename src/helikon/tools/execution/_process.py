"""Run one child process under a timeout and an output cap, killing its whole process group.

Every backend that spawns locally goes through `supervise`: `run_process` spawns with
`subprocess.Popen` (vfork and exec, in the loop's thread, as asyncio's own spawn does) and
learns of the exit from a pidfd; the OS sandbox spawns through its launcher
(`os_sandbox/_launcher_client`), which reports the exit over a socket. The pipes are read
and written by the event loop's own reader and writer callbacks: a command costs no thread,
no task and no transport, which is most of what asyncio's subprocess support adds to a short
command.

The child leads its own session and process group, and everything it starts joins that
group: a timeout, the output cap, a cancelled token or a cancelled task sends `SIGKILL` to
the group, and grandchildren die with their parent. When the child exits, whatever it left
running in the group is killed too, so a backgrounded process cannot hold the output pipes
open (or outlive the call). A process can move to another group of the session (`setpgid`,
as bash's job control does): at the timeout, or when something still holds the output half
a second after the group kill, every process of the session is killed too, with its
descendants (`_kill_session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .backend import ExecOutput

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

_CHUNK = 1 << 16


@functools.cache
def no_input() -> int:
    """A descriptor open on /dev/null: the stdin of a command given no input.

    Opened once for the process and never closed (close-on-exec; a spawn dups it): opening it
    for each command, as `stdin=subprocess.DEVNULL` does, cost 3-6% of a `true` here. The
    commands share its open file description, which carries nothing between them: a read of
    /dev/null is end of file whatever its offset or flags, and it is open read-only.
    """
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


class _Capture:
    """What was read of one stream, up to `cap` bytes; past it, `on_full` kills the group."""

    __slots__ = ("cap", "chunks", "on_full", "size", "truncated")

    def __init__(self, cap: int, on_full: Callable[[], None]) -> None:
        self.cap = cap
        self.on_full = on_full
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    def add(self, chunk: bytes) -> bool:
        """Keep `chunk`, or what fits of it; whether to read on."""
        room = self.cap - self.size
        if len(chunk) > room:
            # Stop reading and stop the writer: a command past the cap is not waited for.
            self.chunks.append(chunk[:room])
            self.size = self.cap
            self.truncated = True
            self.on_full()
            return False
        self.chunks.append(chunk)
        self.size += len(chunk)
        return True

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


class _Pipes:
    """The parent's ends of a child's pipes, served by the loop's callbacks; `close()` closes them all."""

    __slots__ = ("_loop", "_open", "_reading", "drained")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._open: dict[int, bool] = {}  # each open descriptor: whether the loop writes it
        self._reading = 0
        self.drained = Signal()
        """Set once every pipe `read` reads has reached EOF or the cap."""

    def read(self, fd: int, capture: _Capture) -> None:
        """Read `fd` into `capture` until EOF or the cap."""
        self._reading += 1

        def readable() -> None:
            try:
                chunk = os.read(fd, _CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if chunk and capture.add(chunk):
                return
            self._close(fd)  # which stops the callbacks: this line runs once for `fd`
            self._reading -= 1
            if not self._reading:
                self.drained.set()

        self._add(fd, writes=False)
        self._loop.add_reader(fd, readable)

    def write(self, fd: int, data: bytes) -> None:
        """Write `data` to `fd`, then close it; a command that stops reading gets EPIPE, its choice."""
        left = memoryview(data)

        def writable() -> None:
            nonlocal left
            try:
                left = left[os.write(fd, left) :]
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EPIPE: the command did not read all of its input
                left = left[:0]
            if not left:
                self._close(fd)

        self._add(fd, writes=True)
        if data:
            self._loop.add_writer(fd, writable)
        else:
            self._close(fd)

    def close(self) -> None:
        for fd in list(self._open):
            self._close(fd)

    def _add(self, fd: int, *, writes: bool) -> None:
        os.set_blocking(fd, False)
        self._open[fd] = writes

    def _close(self, fd: int) -> None:
        if fd in self._open:
            if self._open.pop(fd):
                self._loop.remove_writer(fd)
            else:
                self._loop.remove_reader(fd)
            os.close(fd)


_DRAIN_GRACE = 0.5
"""Seconds to keep reading after the command exited and its group was killed."""
_REAP_TIMEOUT = 5.0
"""Seconds to wait for a killed command's exit to be reported (SIGKILL takes effect at once)."""


class Signal:
    """A flag the loop's callbacks set once (a command exited, its pipes are drained), to wait for.

    `asyncio.Event` with a timeout on its wait: `wait(seconds)` returns whether it is set. A
    timeout or a cancelled task ends only that wait, never the signal. Waiting with
    `asyncio.timeout` around `Event.wait()`, or `asyncio.wait` on a future, costs a timeout
    object or a second loop turn, which shows on a command as short as `true`.
    """

    __slots__ = ("_is_set", "_waiter")

    def __init__(self) -> None:
        self._is_set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._is_set = True
        if self._waiter is not None:
            _release(self._waiter)

    def is_set(self) -> bool:
        return self._is_set

    async def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for the signal (at once if it is set); whether it is set."""
        if not self._is_set:
            loop = asyncio.get_running_loop()
            self._waiter = waiter = loop.create_future()
            timer = loop.call_later(seconds, _release, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return self._is_set


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pid, signal.SIGKILL)


def _kill_session(leader: int) -> int:
    """SIGKILL every process of the session `leader` started, and their descendants; how many.

    No system call signals a session, so this reads /proc: every process's session, then the
    children of those found (one that started a session of its own is found while its parent
    lives). About a millisecond for a few hundred processes, which is why `supervise` looks
    only at a timeout or when something still holds the output: never for a command that
    leaves nothing behind. Without /proc (macOS) the group kill is all.
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    found = {pid for pid in (int(name) for name in names if name.isdigit()) if _session(pid) == leader}
    unvisited = list(found)
    while unvisited:
        for child in _children(unvisited.pop()):
            if child not in found:
                found.add(child)
                unvisited.append(child)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return len(found)


def _session(pid: int) -> int:
    """The session of `pid` (the fourth field after the name in /proc/PID/stat); -1 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return -1


def _children(pid: int) -> list[int]:
    """The children of every thread of `pid` (none if it is gone, or /proc cannot list them)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found.extend(int(child) for child in listed.read().split())
        except OSError:
            continue
    return found


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes | None,
    time_limit: float,
    max_output_bytes: int,
    cancel: CancellationToken | None,
) -> ExecOutput:
    """Run `argv` to completion (or to its timeout, the cap or `cancel`) and say what it did."""
    started = time.perf_counter()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    in_read, in_write = os.pipe() if stdin is not None else (no_input(), -1)
    # What the child now holds and this process closes once it is spawned.
    theirs = (out_write, err_write) if stdin is None else (out_write, err_write, in_read)
    try:
        # No preexec_fn, so `subprocess` spawns with vfork: the parent's memory is not copied.
        # It returns once the child has exec'd, as asyncio's `subprocess_exec` does.
        proc = subprocess.Popen(  # noqa: ASYNC220
            argv,
            cwd=cwd,
            env=env,
            stdin=in_read,
            stdout=out_write,
            stderr=err_write,
            start_new_session=True,
        )
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        for fd in (out_read, err_read, in_write):
            if fd >= 0:
                os.close(fd)
        # What a shell reports for a command it cannot start (127 not found, 126 not runnable),
        # so the result does not depend on whether a launcher ran first.
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return ExecOutput(exit_code=code, stdout="", stderr=f"cannot start {argv[0]!r}: {exc}\n")
    finally:
        for fd in theirs:
            os.close(fd)
    exited, unwatch = _watch_exit(asyncio.get_running_loop(), proc)
    stdin_end = in_write if stdin is not None else None
    try:
        return await supervise(
            Child(proc.pid, exited, lambda: proc.returncode, out_read, err_read, stdin_end, stdin),
            time_limit=time_limit,
            max_output_bytes=max_output_bytes,
            cancel=cancel,
            started=started,
        )
    finally:
        unwatch()


def _watch_exit(
    loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]
) -> tuple[Signal, Callable[[], None]]:
    """An event set once `proc` has exited and been reaped; and what stops watching it.

    A pidfd (Linux 5.3+) becomes readable when the process exits, so the loop itself waits
    for it. Elsewhere a thread waits, as asyncio's default child watcher does.
    """
    exited = Signal()
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd on this platform or kernel
        thread = threading.Thread(target=_wait_in_thread, args=(loop, proc, exited), daemon=True)
        thread.start()
        return exited, _nothing

    def readable() -> None:
        if proc.poll() is not None:  # reaps it
            stop()
            exited.set()

    def stop() -> None:
        if pidfd in open_fds:
            open_fds.clear()
            loop.remove_reader(pidfd)
            os.close(pidfd)

    open_fds = {pidfd}
    loop.add_reader(pidfd, readable)
    return exited, stop


def _wait_in_thread(loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes], exited: Signal) -> None:
    proc.wait()
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(exited.set)


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Child:
    """A started command as `supervise` sees it, however it was spawned.

    `pid` leads the command's process group; `exited` is set when it exits, and `returncode`
    then says how (`-n` for signal `n`, as `subprocess` reports it; `None` while running).
    `stdout` and `stderr` are the read ends of its output pipes, `stdin` the write end of its
    input pipe (or `None`), which `supervise` fills with `feed` and closes; it closes them all.
    """

    pid: int
    exited: Signal
    returncode: Callable[[], int | None]
    stdout: int
    stderr: int
    stdin: int | None
    feed: bytes | None


async def supervise(
    child: Child,
    *,
    time_limit: float,
    max_output_bytes: int,
    cancel: CancellationToken | None,
    started: float,
) -> ExecOutput:
    """Read `child`'s output to its exit, its timeout, the cap or `cancel`; kill its group; report."""
    pid, exited = child.pid, child.exited

    def kill() -> None:
        _kill_group(pid)

    out, err = _Capture(max_output_bytes, kill), _Capture(max_output_bytes, kill)
    pipes = _Pipes(asyncio.get_running_loop())
    remove = None
    timed_out = False
    try:
        pipes.read(child.stdout, out)
        pipes.read(child.stderr, err)
        if child.stdin is not None:
            pipes.write(child.stdin, child.feed or b"")
        remove = cancel.add_callback(kill) if cancel is not None else None
        if await exited.wait(time_limit):
            kill()  # what the command left running in its group
            # A process outside the group may still hold the pipes: it gets a moment to let
            # go, not the rest of the timeout. One still in the command's session (it moved
            # to a group of its own) is killed then; one in a session of its own is left.
            if not await pipes.drained.wait(_DRAIN_GRACE) and await asyncio.to_thread(_kill_session, pid):
                await pipes.drained.wait(_DRAIN_GRACE)
        else:
            timed_out = True
            kill()
            await asyncio.to_thread(_kill_session, pid)
            await exited.wait(_REAP_TIMEOUT)
    finally:
        # Also on a cancelled task: nothing of the command outlives the call.
        if remove is not None:
            remove()
        if child.returncode() is None:
            kill()
            # Reap it before the call returns: its exit could otherwise be reported after
            # the loop is gone, and the process never reaped.
            await exited.wait(_REAP_TIMEOUT)
        pipes.close()  # also the pipes a grandchild outside the group may still hold
    code = child.returncode()
    died_of = -code if code is not None and code < 0 else None
    return ExecOutput(
        exit_code=None if timed_out or died_of is not None else code,
        stdout=out.text(),
        stderr=err.text(),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out=timed_out,
        cancelled=cancel is not None and cancel.is_cancelled(),
        signal=died_of,
        duration=time.perf_counter() - started,
    )
