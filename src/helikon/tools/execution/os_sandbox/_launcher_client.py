"""The parent's side of the OS-sandbox launcher (`_launcher.py`): start it, send it commands.

`Launcher.start` runs the launcher with the ruleset descriptor and the seccomp program and
waits until it reports that a probe child was really confined. `Launcher.run` then makes the
command's pipes and a reply socket, sends them with the request, and supervises the command
like any other child (`_process.supervise`): the launcher tells its pid, then its exit status.

Each command has a reply socket of its own, and sending a request is one `sendmsg` under a
lock, so a backend can be used from several threads and event loops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._process import Child, Signal, no_input, supervise
from ..backend import ExecOutput

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

_SCRIPT = str(Path(__file__).with_name("_launcher.py"))
_START_TIMEOUT = 30.0
_KILL_TIMEOUT = 5.0
"""Seconds a cancelled run waits for its command's pid, to kill it (the launcher answers at once)."""


class LauncherError(Exception):
    """The launcher could not start, could not confine its probe, or is gone."""


class Launcher:
    """A running launcher process; `close()` kills what it still runs and stops it."""

    __slots__ = ("_control", "_lock", "_proc")

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket) -> None:
        self._proc = proc
        self._control = control
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls,
        *,
        ruleset_fd: int,
        seccomp: bytes,
        network: str,
        rlimits: Mapping[str, tuple[int, int]],
        probe_dir: str,
        proxy_port: int | None,
    ) -> tuple[Launcher, socket.socket | None]:
        """Start a launcher; with `proxy_port`, also the listening socket it made in its network namespace."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = {
            "control_fd": theirs.fileno(),
            "ruleset_fd": ruleset_fd,
            "seccomp": seccomp.hex(),
            "network": network,
            "rlimits": {name: list(pair) for name, pair in rlimits.items()},
            "probe_dir": probe_dir,
            "proxy_port": proxy_port,
        }
        with theirs:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _SCRIPT, json.dumps(config)],
                pass_fds=(theirs.fileno(), ruleset_fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={},  # it holds none of this process's secrets; each command gets its own env
                start_new_session=True,  # no controlling terminal for anything it starts
            )
        launcher = cls(proc, ours)
        try:
            ours.settimeout(_START_TIMEOUT)
            data, fds, _, _ = socket.recv_fds(ours, 1 << 16, 1)
            ours.settimeout(None)
        except OSError as error:
            launcher.close()
            raise LauncherError(f"the launcher did not start: {error}{launcher._stderr()}") from None
        message = json.loads(data) if data else {"error": f"the launcher exited{launcher._stderr()}"}
        if "error" in message:
            for fd in fds:
                os.close(fd)
            launcher.close()
            raise LauncherError(str(message["error"]))
        listener = socket.socket(fileno=fds[0]) if fds else None
        return launcher, listener

    def _stderr(self) -> str:
        if self._proc.poll() is None or self._proc.stderr is None:
            return ""
        text = self._proc.stderr.read().decode("utf-8", "replace").strip()
        return f": {text.splitlines()[-1]}" if text else ""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd_fd: int,
        env: Mapping[str, str],
        stdin: bytes | None,
        time_limit: float,
        max_output_bytes: int,
        cancel: CancellationToken | None,
    ) -> ExecOutput:
        """Run `argv` confined in the directory `cwd_fd`, as `_process.run_process` runs it unconfined."""
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        in_read, in_write = os.pipe() if stdin is not None else (no_input(), None)
        reply, reply_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = _request_file({"argv": list(argv), "env": dict(env)})
        ours = [out_read, err_read, *([] if in_write is None else [in_write])]
        # Sent to the launcher, then closed here (not the shared /dev/null).
        sent = [out_write, err_write, request, *([] if in_write is None else [in_read])]
        try:
            with self._lock:
                fds = [in_read, out_write, err_write, reply_theirs.fileno(), cwd_fd, request]
                socket.send_fds(self._control, [b"run"], fds)
        except OSError as error:
            _close(reply, ours)
            raise LauncherError(f"the os-sandbox launcher is gone ({error}); build a new backend") from None
        finally:
            for fd in sent:
                os.close(fd)
            reply_theirs.close()
        reply.setblocking(False)
        try:
            first = await loop.sock_recv(reply, 4096)
        except BaseException:
            # The launcher may have started it already: a command cancelled here would
            # otherwise run on unsupervised, past its timeout, until the backend closes.
            await _kill_once_started(loop, reply)
            _close(reply, ours)
            raise
        if not first:
            _close(reply, ours)
            raise LauncherError(
                "the os-sandbox launcher exited before starting the command; build a new backend"
            )
        started_as = json.loads(first)
        if "error" in started_as:  # the launcher runs on: a later command may start
            _close(reply, ours)
            raise LauncherError(f"the os-sandbox launcher {started_as['error']}")
        pid = int(started_as["pid"])
        exited = Signal()
        status: list[int] = []

        def replied() -> None:
            try:
                data = reply.recv(4096)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if data:
                status.append(os.waitstatus_to_exitcode(int(json.loads(data)["status"])))
            # EOF without a status: the launcher died; `returncode` stays None and the group is killed.
            loop.remove_reader(reply.fileno())
            exited.set()

        loop.add_reader(reply.fileno(), replied)

        def returncode() -> int | None:
            return status[0] if status else None

        try:
            return await supervise(
                Child(pid, exited, returncode, out_read, err_read, in_write, stdin),
                time_limit=time_limit,
                max_output_bytes=max_output_bytes,
                cancel=cancel,
                started=started,
            )
        finally:
            if not exited.is_set():
                loop.remove_reader(reply.fileno())
            reply.close()

    def close(self) -> None:
        """Stop the launcher; it kills every command it still runs (idempotent)."""
        self._control.close()
        proc = self._proc
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


async def _kill_once_started(loop: asyncio.AbstractEventLoop, reply: socket.socket) -> None:
    """Wait (briefly, once more) for the pid of a command whose run was cancelled, and kill its group."""
    try:
        async with asyncio.timeout(_KILL_TIMEOUT):
            data = await loop.sock_recv(reply, 4096)
        pid = int(json.loads(data)["pid"]) if data else 0
    except (Exception, asyncio.CancelledError):  # cancelled again, timed out, or no pid to kill
        return
    if pid > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _request_file(request: dict[str, object]) -> int:
    """A memfd holding `request` as JSON, from its start.

    Argv and env can be megabytes (`exec` takes up to ARG_MAX), where one socket message
    holds ~200 KiB (`net.core.wmem_default`).
    """
    data = json.dumps(request).encode()
    fd = os.memfd_create("helikon-request", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        raise
    return fd


def _close(reply: socket.socket, fds: list[int]) -> None:
    """Close what `run` made for a command that never got to `supervise`."""
    reply.close()
    for fd in fds:
        os.close(fd)
