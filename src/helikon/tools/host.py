"""`HostBackend`: commands run on this machine, unconfined, in the sandbox root.

The default backend. It pins the working directory to the sandbox root, scrubs the
environment to an allowlist, kills the whole process group at the timeout, caps the output
and applies `setrlimit` caps (CPU time, file size, address space) in the child before it
runs the command. It is **not** a security boundary: a command can read and write anything
this process can, and reach the network. Gate it with a permission policy, or use
`OsSandboxBackend` for containment.

The rlimits are applied by a launcher, not by `preexec_fn` (which is unsafe in a process
with threads): the child is `bash -c 'ulimit ... && exec "$@"' <argv>`, so the limits are
set by `setrlimit` in a fresh single-threaded process and inherited across `exec` by the
command and everything it starts. Bash is already what `BashTool` runs, and starting it
costs a fraction of a millisecond, where a Python launcher costs an interpreter start
(~12 ms); `prlimit(2)` on the child's pid after the spawn would race the child, which
may run (and fork) before its limits land. A limit the launcher cannot set (above a hard
limit this process already has) fails the command with exit code 126, never runs it unlimited.

Example:
    ```python
    import asyncio
    import tempfile

    from helikon.tools import ExecRequest, HostBackend, Isolation, Sandbox

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
            backend = HostBackend.builder(sandbox).timeout(10).env_allowlist(["PATH", "HOME"]).build()
            assert backend.guarantees().filesystem is Isolation.NONE
            out = await backend.run(ExecRequest(("pwd",)))
            assert out.stdout.strip() == str(sandbox.root)

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

from helikon.core.exceptions import UserError

from ._process import run_process
from .execution import (
    DEFAULT_ENV_ALLOWLIST,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    ExecOutput,
    ExecRequest,
    ResourceLimits,
    check_env,
    check_positive,
)
from .guarantees import Isolation, SandboxGuarantees

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken

    from .sandbox import Sandbox

_CPU_MARGIN = 5  # CPU seconds granted over the wall timeout by the default RLIMIT_CPU backstop
_DEFAULT_FILE_SIZE = 1 << 30
_HOST = SandboxGuarantees(Isolation.NONE, Isolation.NONE, Isolation.NONE, "host (no containment)")


class HostBackendBuilder:
    """Options of a `HostBackend`; start with `HostBackend.builder(sandbox)`."""

    __slots__ = ("_allow", "_limits", "_max_output", "_sandbox", "_set", "_timeout")

    def __init__(self, sandbox: Sandbox) -> None:
        from .sandbox import Sandbox

        if not isinstance(sandbox, Sandbox):
            raise UserError(f"HostBackend.builder(sandbox): give a Sandbox.open(root), not {sandbox!r}")
        self._sandbox = sandbox
        self._timeout = DEFAULT_TIMEOUT
        self._allow: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST
        self._set: dict[str, str] = {}
        self._max_output = DEFAULT_MAX_OUTPUT
        self._limits: ResourceLimits | None = None

    def timeout(self, seconds: float | timedelta) -> HostBackendBuilder:
        """Wall-clock seconds before the command's whole process group is killed (default 30)."""
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        check_positive(seconds, "HostBackend.builder(...).timeout()")
        self._timeout = float(seconds)
        return self

    def env_allowlist(self, names: Iterable[str]) -> HostBackendBuilder:
        """The parent's variables the child receives; replaces `DEFAULT_ENV_ALLOWLIST`.

        A name absent from this process's environment is left out.
        """
        if isinstance(names, str):
            raise UserError(f"env_allowlist({names!r}): give a list of names, e.g. ['PATH', 'HOME']")
        listed = tuple(names)
        check_env(dict.fromkeys(listed, ""), "HostBackend.builder(...).env_allowlist()")
        self._allow = listed
        return self

    def env_set(self, values: Mapping[str, str]) -> HostBackendBuilder:
        """Variables set for every command (over the allowlisted ones)."""
        check_env(values, "HostBackend.builder(...).env_set()")
        self._set.update(values)
        return self

    def max_output_bytes(self, limit: int) -> HostBackendBuilder:
        """Bytes kept of each of stdout and stderr (default 1 MiB); past it the command is killed."""
        check_positive(limit, "HostBackend.builder(...).max_output_bytes()", integer=True)
        self._max_output = limit
        return self

    def rlimits(self, limits: ResourceLimits) -> HostBackendBuilder:
        """Replace the default caps (CPU = timeout + 5 s, file size 1 GiB, address space unset).

        `ResourceLimits()` sets none (and skips the launcher).
        """
        if not isinstance(limits, ResourceLimits):
            raise UserError(f"rlimits({limits!r}): give a ResourceLimits(cpu_seconds=..., ...)")
        self._limits = limits
        return self

    def build(self) -> HostBackend:
        """The backend. The allowlisted variables are read from this process's environment now."""
        limits = self._limits
        if limits is None:
            cpu = int(self._timeout) + _CPU_MARGIN
            limits = ResourceLimits(cpu_seconds=cpu, file_size_bytes=_DEFAULT_FILE_SIZE)
        env = {name: os.environ[name] for name in self._allow if name in os.environ}
        env.update(self._set)
        env.setdefault("PATH", os.defpath)
        return HostBackend(
            root=str(self._sandbox.root),
            env=env,
            timeout=self._timeout,
            max_output_bytes=self._max_output,
            launcher=_launcher(limits),
        )


class HostBackend:
    """The unconfined, cwd-pinned backend; build it with `HostBackend.builder(sandbox)`."""

    __slots__ = ("_env", "_launcher", "_max_output", "_root", "_timeout")

    def __init__(
        self,
        *,
        root: str,
        env: dict[str, str],
        timeout: float,
        max_output_bytes: int,
        launcher: tuple[str, ...],
    ) -> None:
        self._root = root
        self._env = env
        self._timeout = timeout
        self._max_output = max_output_bytes
        self._launcher = launcher

    @staticmethod
    def builder(sandbox: Sandbox) -> HostBackendBuilder:
        """Start building a backend whose commands run in `sandbox.root`."""
        return HostBackendBuilder(sandbox)

    @property
    def timeout(self) -> float:
        """The default timeout in seconds."""
        return self._timeout

    def guarantees(self) -> SandboxGuarantees:
        """`NONE` on every axis: "host (no containment)"."""
        return _HOST

    async def run(self, request: ExecRequest, *, cancel: CancellationToken | None = None) -> ExecOutput:
        """Run `request` in the sandbox root (or `request.cwd` beneath it)."""
        env = self._env
        if request.env:
            env = {**env, **request.env}
        cwd = self._root if request.cwd is None else os.path.join(self._root, request.cwd)
        return await run_process(
            (*self._launcher, *request.argv),
            cwd=cwd,
            env=env,
            stdin=request.stdin,
            time_limit=request.timeout or self._timeout,
            max_output_bytes=request.max_output_bytes or self._max_output,
            cancel=cancel,
        )

    def __repr__(self) -> str:
        return f"HostBackend({self._root!r}, timeout={self._timeout:g})"


def _launcher(limits: ResourceLimits) -> tuple[str, ...]:
    """The argv prefix that sets `limits` with `setrlimit` and then execs the command (empty: none)."""
    steps: list[str] = []
    if limits.cpu_seconds is not None:
        # Hard one second above soft: SIGXCPU at the soft limit, SIGKILL if it is ignored.
        steps += [f"ulimit -S -t {limits.cpu_seconds}", f"ulimit -H -t {limits.cpu_seconds + 1}"]
    if limits.file_size_bytes is not None:
        steps.append(f"ulimit -f {-(-limits.file_size_bytes // 1024)}")  # bash counts 1024-byte blocks
    if limits.address_space_bytes is not None:
        steps.append(f"ulimit -v {-(-limits.address_space_bytes // 1024)}")  # KiB
    if not steps:
        return ()
    bash = shutil.which("bash")
    if bash is None:
        raise UserError(
            "HostBackend applies its ResourceLimits with bash, which is not on PATH; install bash"
        )
    script = (
        " && ".join(steps)
        + ' || { echo "helikon: cannot apply the resource limits" >&2; exit 126; }; exec "$@"'
    )
    return (bash, "-c", script, "helikon-limits")


__all__ = ["HostBackend", "HostBackendBuilder"]
