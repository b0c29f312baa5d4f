r"""The execution-backend seam: `ExecutionBackend`, `ExecRequest`, `ExecOutput`, `ResourceLimits`.

`BashTool` runs every command through an `ExecutionBackend`; swapping the backend changes
the containment tier (`guarantees()`) without touching the agent. A backend runs one
`ExecRequest` (an argv, a working directory inside its sandbox, extra environment,
stdin, a timeout and an output cap) and returns an `ExecOutput`. A non-zero exit, a
timeout and truncated output are ordinary results the model reads, never exceptions.

Example:
    ```python
    import asyncio
    import tempfile

    from helikon.tools import ExecRequest, HostBackend, Sandbox

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
            backend = HostBackend.builder(sandbox).build()
            out = await backend.run(ExecRequest(("bash", "-c", "echo hi; exit 3")))
            assert (out.exit_code, out.stdout) == (3, "hi\n")

    asyncio.run(main())
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from helikon.core.exceptions import UserError

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

    from .guarantees import SandboxGuarantees

DEFAULT_TIMEOUT = 30.0
"""Seconds a command may run before its whole process group is killed."""
DEFAULT_MAX_OUTPUT = 1 << 20
"""Bytes kept of each of stdout and stderr (1 MiB); past it the command is killed."""
DEFAULT_ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
"""The parent's variables a child sees by default; everything else (API keys, tokens) is dropped."""


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """`setrlimit` caps applied to a command and everything it starts; `None` keeps the inherited limit.

    - `cpu_seconds`: `RLIMIT_CPU`. Past it the kernel sends `SIGXCPU`, and `SIGKILL` one second later.
    - `file_size_bytes`: `RLIMIT_FSIZE`, the largest file a write may make (`EFBIG` past it).
    - `address_space_bytes`: `RLIMIT_AS`, the virtual memory a process may map (an allocation
      past it fails). Off by default: threaded and `mmap`-heavy programs reserve far more
      address space than they use.
    """

    cpu_seconds: int | None = None
    file_size_bytes: int | None = None
    address_space_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "file_size_bytes", "address_space_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise UserError(f"ResourceLimits({name}={value!r}): give a positive int, or None for no cap")


@dataclass(frozen=True, slots=True)
class ExecRequest:
    """One command to run.

    - `argv`: the program and its arguments (`("bash", "-c", command)` for a shell line).
    - `cwd`: a directory relative to the sandbox root (`None`: the root itself); absolute
      paths and `..` are refused.
    - `env`: variables set on top of the backend's scrubbed environment.
    - `stdin`: bytes written to the command's standard input (`None`: `/dev/null`).
    - `timeout`, `max_output_bytes`: this call's limits (`None`: the backend's).
    """

    argv: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict[str, str]())
    stdin: bytes | None = None
    timeout: float | None = None
    max_output_bytes: int | None = None

    def __post_init__(self) -> None:
        argv = self.argv
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
            raise UserError(
                f"ExecRequest(argv={argv!r}): give a non-empty tuple of str without NUL, "
                "e.g. ('bash', '-c', 'ls -la')"
            )
        object.__setattr__(self, "argv", tuple(argv))
        cwd = self.cwd
        if cwd is not None and (
            not isinstance(cwd, str) or cwd.startswith("/") or ".." in cwd.split("/") or "\0" in cwd
        ):
            raise UserError(
                f"ExecRequest(cwd={cwd!r}): give a directory relative to the sandbox root, without '..'"
            )
        check_env(self.env, "ExecRequest(env=...)")
        if self.stdin is not None and not isinstance(self.stdin, bytes):
            raise UserError(f"ExecRequest(stdin=...): give bytes, not {type(self.stdin).__name__}")
        if self.timeout is not None:
            check_positive(self.timeout, "ExecRequest(timeout=...)")
        if self.max_output_bytes is not None:
            check_positive(self.max_output_bytes, "ExecRequest(max_output_bytes=...)", integer=True)


@dataclass(frozen=True, slots=True)
class ExecOutput:
    """What a command did. Output is decoded as UTF-8, undecodable bytes replaced.

    `exit_code` is `None` when the command did not exit by itself: it timed out, was
    cancelled, or died of a signal (`signal` names it, e.g. 24 for `SIGXCPU`).
    """

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    cancelled: bool = False
    signal: int | None = None
    duration: float = 0.0
    """Wall-clock seconds from start to the last byte read."""

    @property
    def truncated(self) -> bool:
        """Whether either stream was cut at the output cap."""
        return self.stdout_truncated or self.stderr_truncated


@runtime_checkable
class ExecutionBackend(Protocol):
    """Runs commands under some containment tier; `BashTool` takes one."""

    async def run(self, request: ExecRequest, *, cancel: CancellationToken | None = None) -> ExecOutput:
        """Run `request` to completion; a cancelled `cancel` kills it (and what it started)."""
        ...

    def guarantees(self) -> SandboxGuarantees:
        """What this backend enforces, for docs, traces and the tool description."""
        ...


def check_env(env: object, owner: str) -> None:
    """Refuse an environment mapping a child could not receive."""
    if not isinstance(env, Mapping):
        raise UserError(f"{owner}: give a mapping of variable name to value")
    for name, value in env.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise UserError(f"{owner}: {name!r} is not a variable name (non-empty, no '=' or NUL)")
        if not isinstance(value, str) or "\0" in value:
            raise UserError(f"{owner}: the value of {name} must be a str without NUL")


def check_positive(value: object, owner: str, *, integer: bool = False) -> None:
    """Refuse a limit that is not a positive number (an int where `integer`)."""
    kinds = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0:
        raise UserError(f"{owner}: got {value!r}; give a positive {'int' if integer else 'number'}")


__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "ExecOutput",
    "ExecRequest",
    "ExecutionBackend",
    "ResourceLimits",
]
