"""The stdio transport: an MCP server as a child process that can never outlive this one.

Built on the SDK's stream types (anyio memory streams of `SessionMessage`), so the SDK's
`ClientSession` runs on it unchanged. It differs from `mcp.client.stdio.stdio_client` in
one way that matters: the child is tied to this process. It runs in its own session (so
closing kills its whole process group) and, on Linux, with `PR_SET_PDEATHSIG` = SIGKILL,
so a parent killed outright (SIGKILL, OOM) takes the server down with it. Elsewhere a
dead parent closes the server's stdin, which MCP servers take as the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import IO, Any

from .errors import Spawn

__all__ = ["kill_group", "stdio_transport"]

# Long lines are normal (a tool list, a file's content); asyncio's default is 64 KiB.
_LINE_LIMIT = 64 * 1024 * 1024
# How long a server may take to exit once its stdin closes, then after SIGTERM.
_EXIT_GRACE = 2.0
_POLL = 0.01

_libc: Any = None


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A `preexec_fn` that sets PR_SET_PDEATHSIG in the child (Linux), or None elsewhere."""
    global _libc
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    if _libc is None:  # loaded before the fork: the child only calls into it
        _libc = ctypes.CDLL(None, use_errno=True)
    libc = _libc
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os._exit(1)

    return hook


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the child's process group (the child and anything it started); gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _spawn(
    command: str,
    args: tuple[str, ...],
    env: Mapping[str, str] | None,
    cwd: Path | None,
    stderr: IO[Any] | int | None,
) -> asyncio.subprocess.Process:
    child_env = None if env is None else {**os.environ, **env}
    try:
        return await asyncio.create_subprocess_exec(
            command,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=child_env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent_hook(),
            limit=_LINE_LIMIT,
        )
    except OSError as exc:
        where = f" in {cwd}" if cwd is not None else ""
        raise Spawn(f"cannot start the MCP server {command!r}{where}: {exc.strerror or exc}") from exc


async def _exited(process: asyncio.subprocess.Process, seconds: float) -> bool:
    # Polled, not `process.wait()`: that also waits for pipe EOF, which a grandchild holding
    # the pipe would delay.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while process.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


async def _stop(process: asyncio.subprocess.Process, *, answered: bool) -> None:
    """The MCP shutdown sequence: close stdin, wait, SIGTERM, wait, SIGKILL the group.

    A server that never `answered` gets no wait after its stdin closes: it has no session to
    end, and one hung before its first answer is not reading stdin either.
    """
    stdin = process.stdin
    if stdin is not None:
        with contextlib.suppress(OSError):
            stdin.close()
    if not (answered and await _exited(process, _EXIT_GRACE)):
        kill_group(process.pid, signal.SIGTERM)
        if not await _exited(process, _EXIT_GRACE):
            kill_group(process.pid)
            await _exited(process, _EXIT_GRACE)
    # Whatever the server started and left behind goes too.
    kill_group(process.pid)


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: tuple[str, ...],
    *,
    env: Mapping[str, str] | None,
    cwd: Path | None,
    stderr: IO[Any] | int | None,
    on_spawn: Callable[[int, bool], None],
) -> AsyncGenerator[tuple[Any, Any]]:
    """Spawn the server and yield the SDK's (read_stream, write_stream) pair over its pipes.

    `on_spawn(pid, True)` once it runs, `on_spawn(pid, False)` once it is stopped (so nobody
    signals a pid the system may have given to another process since).
    """
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    process = await _spawn(command, args, env, cwd, stderr)
    on_spawn(process.pid, True)
    stdout, stdin = process.stdout, process.stdin
    assert stdout is not None  # spawned with pipes
    assert stdin is not None
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    answered = False

    async def read() -> None:
        nonlocal answered
        async with read_writer:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                while line := await stdout.readline():
                    answered = True
                    if not line.strip():
                        continue
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:  # the session reports it; the connection goes on
                        message = exc
                    await read_writer.send(message)

    async def write() -> None:
        try:
            async with write_reader:
                async for item in write_reader:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server stopped reading: end the session's read side, so a request
            # waiting for an answer fails as "connection closed" instead of hanging.
            await read_writer.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            # Bounded, and shielded: a cancelled caller must not leave the server running.
            with anyio.CancelScope(shield=True):
                write_stream.close()
                await _stop(process, answered=answered)
                on_spawn(process.pid, False)
            group.cancel_scope.cancel()
