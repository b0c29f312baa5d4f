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
command and everything it starts. A bash command line (`bash -c <line>`, what `BashTool`
runs) gets the `ulimit` line in front of it instead, in the same bash. Starting bash
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
from typing import TYPE_CHECKING

from helikon.core.exceptions import UserError

from ._local_options import LocalOptions
from ._process import run_process
from .backend import ExecOutput, ExecRequest, ResourceLimits
from .guarantees import Isolation, SandboxGuarantees

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken
    from helikon.tools.files.sandbox import Sandbox

_HOST = SandboxGuarantees(Isolation.NONE, Isolation.NONE, Isolation.NONE, "host (no containment)")


class HostBackendBuilder(LocalOptions):
    """Options of a `HostBackend`; start with `HostBackend.builder(sandbox)`.

    `timeout`, `env_allowlist`, `env_set`, `max_output_bytes` and `rlimits` as every local
    backend takes them (`ResourceLimits()` sets none and skips the launcher).
    """

    __slots__ = ("_sandbox",)
    _name = "HostBackend"

    def __init__(self, sandbox: Sandbox) -> None:
        from helikon.tools.files.sandbox import Sandbox

        if not isinstance(sandbox, Sandbox):
            raise UserError(f"HostBackend.builder(sandbox): give a Sandbox.open(root), not {sandbox!r}")
        super().__init__()
        self._sandbox = sandbox

    def build(self) -> HostBackend:
        """The backend. The allowlisted variables are read from this process's environment now."""
        return HostBackend(
            root=str(self._sandbox.root),
            env=self._environment({}),
            timeout=self._timeout,
            max_output_bytes=self._max_output,
            limits=_Limits.of(self._resource_limits()),
        )


class HostBackend:
    """The unconfined, cwd-pinned backend; build it with `HostBackend.builder(sandbox)`."""

    __slots__ = ("_env", "_limits", "_max_output", "_root", "_timeout")

    def __init__(
        self,
        *,
        root: str,
        env: dict[str, str],
        timeout: float,
        max_output_bytes: int,
        limits: _Limits | None,
    ) -> None:
        self._root = root
        self._env = env
        self._timeout = timeout
        self._max_output = max_output_bytes
        self._limits = limits

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
            request.argv if self._limits is None else self._limits.wrap(request.argv),
            cwd=cwd,
            env=env,
            stdin=request.stdin,
            time_limit=request.timeout or self._timeout,
            max_output_bytes=request.max_output_bytes or self._max_output,
            cancel=cancel,
        )

    def __repr__(self) -> str:
        return f"HostBackend({self._root!r}, timeout={self._timeout:g})"


class _Limits:
    """The bash that sets a backend's rlimits with `ulimit` before its commands run."""

    __slots__ = ("bash", "steps")

    def __init__(self, bash: str, steps: str) -> None:
        self.bash = bash
        self.steps = steps

    @staticmethod
    def of(limits: ResourceLimits) -> _Limits | None:
        """The launcher for `limits`, or `None` when they set nothing."""
        steps: list[str] = []
        if limits.cpu_seconds is not None:
            # Hard one second above soft: SIGXCPU at the soft limit, SIGKILL if it is ignored.
            steps += [f"ulimit -S -t {limits.cpu_seconds}", f"ulimit -H -t {limits.cpu_seconds + 1}"]
        if limits.file_size_bytes is not None:
            steps.append(f"ulimit -f {-(-limits.file_size_bytes // 1024)}")  # bash counts 1024-byte blocks
        if limits.address_space_bytes is not None:
            steps.append(f"ulimit -v {-(-limits.address_space_bytes // 1024)}")  # KiB
        if not steps:
            return None
        bash = shutil.which("bash")
        if bash is None:
            raise UserError(
                "HostBackend applies its ResourceLimits with bash, which is not on PATH; install bash"
            )
        failed = '{ echo "helikon: cannot apply the resource limits" >&2; exit 126; }'
        return _Limits(bash, f"{' && '.join(steps)} || {failed}")

    def wrap(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """`argv` run under the limits: `exec`ed by the launcher bash, or in it for a bash command line."""
        if len(argv) >= 3 and argv[0] == "bash" and argv[1] == "-c":
            # A bash command line (what BashTool runs): the bash that sets the limits runs it
            # too, on the next line, which saves a second bash start.
            return (argv[0], "-c", f"{self.steps}\n{argv[2]}", *argv[3:])
        return (self.bash, "-c", f'{self.steps}; exec "$@"', "helikon-limits", *argv)


__all__ = ["HostBackend", "HostBackendBuilder"]
