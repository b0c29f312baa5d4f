"""Run one child process under a timeout and an output cap, killing its whole process group.

Every backend that spawns locally goes through `supervise`: `run_process` spawns with
asyncio's subprocess support, the OS sandbox through its launcher (`_launcher_client`).
The child leads its own process group, and everything it starts joins that group: a
timeout, the output cap, a cancelled token or a cancelled task sends `SIGKILL` to the
group, and grandchildren die with their parent. When the child exits, whatever it left
running in the group is killed too, so a backgrounded process cannot hold the output pipes
open (or outlive the call).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .execution import ExecOutput

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

_CHUNK = 1 << 16


class _Capture:
    """What was read of one stream, up to `cap` bytes; past it, `on_full` kills the group."""

    __slots__ = ("cap", "chunks", "on_full", "size", "truncated")

    def __init__(self, cap: int, on_full: Callable[[], None]) -> None:
        self.cap = cap
        self.on_full = on_full
        self.chunks: list[bytes] = []
        self.size = 0
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_CHUNK):
            room = self.cap - self.size
            if len(chunk) > room:
                # Stop reading and stop the writer: a command past the cap is not waited for.
                self.chunks.append(chunk[:room])
                self.size = self.cap
                self.truncated = True
                self.on_full()
                return
            self.chunks.append(chunk)
            self.size += len(chunk)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


_DRAIN_GRACE = 0.5
"""Seconds to keep reading after the command exited and its group was killed."""
_REAP_TIMEOUT = 5.0
"""Seconds to wait for a killed command's exit to be reported (SIGKILL takes effect at once)."""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pid, signal.SIGKILL)


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
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(loop, exited),
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        # What a shell reports for a command it cannot start (127 not found, 126 not runnable),
        # so the result does not depend on whether a launcher ran first.
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return ExecOutput(exit_code=code, stdout="", stderr=f"cannot start {argv[0]!r}: {exc}\n")
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    return await supervise(
        Child(proc.pid, exited, lambda: proc.returncode, proc.stdout, proc.stderr, _feed(proc, stdin)),
        time_limit=time_limit,
        max_output_bytes=max_output_bytes,
        cancel=cancel,
        started=started,
        release=transport.close,  # the pipes a grandchild outside the group may still hold
    )


@dataclass(frozen=True, slots=True)
class Child:
    """A started command as `supervise` sees it, however it was spawned.

    `pid` leads the command's process group; `exited` is set when it exits, and `returncode`
    then says how (`-n` for signal `n`, as `asyncio` reports it; `None` while running).
    """

    pid: int
    exited: asyncio.Future[None]
    returncode: Callable[[], int | None]
    stdout: asyncio.StreamReader | None
    stderr: asyncio.StreamReader | None
    feed: Coroutine[Any, Any, None]


async def supervise(
    child: Child,
    *,
    time_limit: float,
    max_output_bytes: int,
    cancel: CancellationToken | None,
    started: float,
    release: Callable[[], None],
) -> ExecOutput:
    """Read `child`'s output to its exit, its timeout, the cap or `cancel`; kill its group; report."""
    pid, exited = child.pid, child.exited

    def kill() -> None:
        _kill_group(pid)

    out, err = _Capture(max_output_bytes, kill), _Capture(max_output_bytes, kill)
    remove = cancel.add_callback(kill) if cancel is not None else None
    reads = asyncio.gather(out.drain(child.stdout), err.drain(child.stderr), child.feed)
    timed_out = False
    try:
        try:
            async with asyncio.timeout(time_limit):
                # `wait`, not `await exited`: a timeout must not cancel the exit future.
                await asyncio.wait((exited,))
                kill()  # what the command left running in its group
                # A process that left the group (setsid) may still hold the pipes: it gets a
                # moment to let go, not the rest of the timeout.
                await asyncio.wait((reads,), timeout=_DRAIN_GRACE)
        except TimeoutError:
            timed_out = True
            kill()
            await asyncio.wait((exited,), timeout=_REAP_TIMEOUT)
    finally:
        # Also on a cancelled task: nothing of the command outlives the call.
        if remove is not None:
            remove()
        if child.returncode() is None:
            kill()
            # Reap it before the call returns: left to the child watcher, its exit could be
            # reported after the loop is gone, and the process never reaped.
            await asyncio.wait((exited,), timeout=_REAP_TIMEOUT)
        reads.cancel()
        reads.add_done_callback(_retrieve)
        release()
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


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol, plus a future set when the process exits.

    `Process.wait()` (before Python 3.12) also waits for the pipes to close, which a
    grandchild holding them delays; the exit alone is what tells us to kill the group.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, exited: asyncio.Future[None]) -> None:
        super().__init__(limit=_CHUNK, loop=loop)
        self._exited = exited

    def process_exited(self) -> None:
        super().process_exited()
        if not self._exited.done():
            self._exited.set_result(None)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # read, so asyncio does not log it as never retrieved


async def _feed(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    pipe = proc.stdin
    if data is None or pipe is None:
        return
    try:
        pipe.write(data)
        await pipe.drain()
        pipe.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read all of its input: its choice
