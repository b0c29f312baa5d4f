"""`OsSandboxBackend`: commands confined by the kernel with Landlock and seccomp-bpf (Linux).

Each command runs in a child that can read and write only the sandbox root (and a private
temp directory, its `HOME` and `TMPDIR`), read and run only the system paths a shell needs,
open no network socket unless allowed, and make none of the system calls a contained
command has no use for (`ptrace`, `mount`, namespaces, kernel modules, eBPF, io_uring, ...).
The rules are listed in full in `docs/tools-bash.md`. A violation is an ordinary OS error
(`Permission denied`, `Operation not permitted`) the model reads in the output.

The confinement is applied by a small launcher process, started by `build()`, that forks
each command and confines the child before `exec` (not `preexec_fn`: forking a threaded
program and running Python before `exec` can deadlock). The launcher stays up, so a
command costs a `fork`, not an interpreter start. Where the kernel allows, the commands run
in a pid namespace whose init dies with the launcher, so nothing they start outlives it
(`docs/tools-bash.md` has the tiers). `build()` fails closed: it raises
`OsSandboxUnsupported` unless a probe child was really refused outside the root (and
refused a socket, when the network is closed) on this kernel. Never a silent downgrade.

With `egress_policy(...)`, the network axis is `PROXIED`: the launcher moves into a network
namespace of its own with only loopback, an `EgressProxy` enforcing the policy serves a
socket made there (127.0.0.1:3128 inside), the commands' TCP connects are limited to that
port by Landlock, every other socket kind (UDP, raw, UNIX) fails by seccomp, and
`http_proxy` / `https_proxy` point at the proxy. A command that ignores the proxy reaches
nothing.

Example:
    ```python
    import asyncio
    import tempfile

    from helikon.tools import ExecRequest, Isolation, OsSandboxBackend, Sandbox

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
            with OsSandboxBackend.builder(sandbox).timeout(10).build() as backend:
                assert backend.guarantees().filesystem is Isolation.OS_KERNEL
                out = await backend.run(ExecRequest(("bash", "-c", "echo hi > note; cat /etc/shadow")))
                assert out.exit_code != 0 and "Permission denied" in out.stderr

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import sys
import tempfile
import weakref
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Self

from helikon.core.exceptions import HelikonError, UserError
from helikon.tools.egress.policy import EgressPolicy
from helikon.tools.files._confine import open_dir

from .._local_options import LocalOptions
from ..backend import ExecOutput, ExecRequest, ResourceLimits
from ..guarantees import Isolation, SandboxGuarantees
from ._landlock import LandlockError, abi_version
from ._launcher_client import Launcher, LauncherError
from ._policy import MIN_ABI, PROXY_PORT, NetworkMode, build_ruleset
from ._seccomp import UnsupportedArch, build_filter

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken
    from helikon.tools.files.sandbox import Sandbox

    from ._proxy_thread import ProxyThread

LABEL = "os-sandbox (landlock+seccomp)"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""`PATH` inside the sandbox unless `env_set` gives one: directories the sandbox can run from."""


class OsSandboxError(HelikonError):
    """The OS sandbox cannot run a command (its launcher is gone)."""


class OsSandboxUnsupported(OsSandboxError):
    """This platform or kernel cannot enforce what was asked; raised by `build()`, never a downgrade."""


class OsSandboxBackendBuilder(LocalOptions):
    """Options of an `OsSandboxBackend`; start with `OsSandboxBackend.builder(sandbox)`.

    `timeout`, `env_allowlist`, `env_set`, `max_output_bytes` and `rlimits` as on
    `HostBackend`; `PATH`, `HOME` and `TMPDIR` are the sandbox's own unless `env_set` sets them.
    """

    __slots__ = ("_egress", "_network", "_read_only", "_sandbox", "_writable")
    _name = "OsSandboxBackend"

    def __init__(self, sandbox: Sandbox) -> None:
        from helikon.tools.files.sandbox import Sandbox

        if not isinstance(sandbox, Sandbox):
            raise UserError(f"OsSandboxBackend.builder(sandbox): give a Sandbox.open(root), not {sandbox!r}")
        super().__init__()
        self._sandbox = sandbox
        self._network = False
        self._egress: EgressPolicy | None = None
        self._read_only: tuple[str, ...] = ()
        self._writable: tuple[str, ...] = ()

    def allow_network(self, allowed: bool = True) -> Self:
        """Let commands open sockets freely (network axis `NONE`); closed by default."""
        if not isinstance(allowed, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"allow_network({allowed!r}): give True or False")
        self._network = allowed
        return self

    def egress_policy(self, egress: EgressPolicy) -> Self:
        """Let commands reach the hosts `egress` allows, through an `EgressProxy` (network axis `PROXIED`)."""
        if not isinstance(egress, EgressPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                "egress_policy(...): give an EgressPolicy, "
                "e.g. EgressPolicy.deny_all().allow_domains(['pypi.org'])"
            )
        self._egress = egress
        return self

    def read_only_paths(self, paths: Iterable[str]) -> Self:
        """More absolute paths commands may read and run (a toolchain, a model cache)."""
        self._read_only = (*self._read_only, *_absolute(paths, "read_only_paths"))
        return self

    def writable_paths(self, paths: Iterable[str]) -> Self:
        """More absolute directories commands may read and write (a build cache)."""
        self._writable = (*self._writable, *_absolute(paths, "writable_paths"))
        return self

    def build(self) -> OsSandboxBackend:
        """Start the launcher and prove the confinement on this kernel (else `OsSandboxUnsupported`)."""
        if self._network and self._egress is not None:
            raise UserError(
                "OsSandboxBackend: allow_network(True) opens the network and egress_policy(...) "
                "filters it; choose one"
            )
        if sys.platform != "linux":
            raise OsSandboxUnsupported(
                f"OsSandboxBackend needs Linux (Landlock and seccomp); this is {sys.platform}. "
                "Use HostBackend under a permission policy, or a ForkdBackend"
            )
        try:
            abi = abi_version()
        except LandlockError as error:
            raise _refused(error) from None
        if abi < MIN_ABI:
            why = "Landlock is not enabled (CONFIG_SECURITY_LANDLOCK, and 'landlock' in the lsm= boot list)"
            raise OsSandboxUnsupported(
                f"OsSandboxBackend needs Landlock ABI {MIN_ABI} (Linux 6.12) or later, which keeps "
                "commands from signalling processes outside the sandbox; "
                + (why if abi == 0 else f"this kernel offers ABI {abi}")
            )
        if self._egress is not None:
            network = NetworkMode.proxied()
        else:
            network = NetworkMode.open() if self._network else NetworkMode.closed()
        try:
            program = build_filter(network.seccomp)
        except UnsupportedArch as error:
            raise OsSandboxUnsupported(f"OsSandboxBackend: {error}") from None
        private = tempfile.mkdtemp(prefix="helikon-os-sandbox-")
        try:
            launcher, listener = self._launch(abi, network, program, private)
            env = self._sandbox_environment(private)
            proxy = None
            if self._egress is not None and listener is not None:
                from ._proxy_thread import ProxyThread

                try:
                    proxy = ProxyThread(self._egress, listener)
                except BaseException:
                    launcher.close()
                    raise
                env.update(_proxy_environment())
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
        return OsSandboxBackend(
            root=str(self._sandbox.root),
            root_fd=os.dup(self._sandbox.fd),  # the backend may outlive the Sandbox's `with`
            env=env,
            timeout=self._timeout,
            max_output_bytes=self._max_output,
            launcher=launcher,
            proxy=proxy,
            private=private,
            guarantees=SandboxGuarantees(Isolation.OS_KERNEL, network.isolation, Isolation.OS_KERNEL, LABEL),
        )

    def _launch(
        self, abi: int, network: NetworkMode, program: bytes, private: str
    ) -> tuple[Launcher, socket.socket | None]:
        """Build the ruleset and start the launcher, which proves it confines a probe child."""
        probe = tempfile.mkdtemp(prefix="helikon-os-sandbox-probe-")
        try:
            ruleset = build_ruleset(
                abi=abi,
                writable=(str(self._sandbox.root), private, *self._writable),
                read_only=self._read_only,
                network=network,
            )
            try:
                return Launcher.start(
                    ruleset_fd=ruleset.fd,
                    seccomp=program,
                    network=network.seccomp,
                    rlimits=_rlimits(self._resource_limits()),
                    probe_dir=probe,
                    proxy_port=PROXY_PORT if self._egress is not None else None,
                )
            finally:
                ruleset.close()  # the launcher holds its own copy
        except LandlockError as error:
            raise _refused(error) from None
        except LauncherError as error:
            raise OsSandboxUnsupported(f"OsSandboxBackend cannot confine commands here: {error}") from None
        finally:
            shutil.rmtree(probe, ignore_errors=True)

    def _sandbox_environment(self, private: str) -> dict[str, str]:
        """The allowlisted variables; PATH, HOME and TMPDIR are the sandbox's unless `env_set` gives them."""
        env = self._environment({"LANG": "C.UTF-8"})
        for name, value in (("PATH", SYSTEM_PATH), ("HOME", private), ("TMPDIR", private)):
            env[name] = self._set.get(name, value)
        return env


class OsSandboxBackend:
    """The kernel-confined backend; build it with `OsSandboxBackend.builder(sandbox)`, `close()` when done."""

    __slots__ = (
        "__weakref__",
        "_env",
        "_finalizer",
        "_guarantees",
        "_launcher",
        "_max_output",
        "_root",
        "_root_fd",
        "_timeout",
    )

    def __init__(
        self,
        *,
        root: str,
        root_fd: int,
        env: dict[str, str],
        timeout: float,
        max_output_bytes: int,
        launcher: Launcher,
        proxy: ProxyThread | None,
        private: str,
        guarantees: SandboxGuarantees,
    ) -> None:
        self._root = root
        self._root_fd = root_fd
        self._env = env
        self._timeout = timeout
        self._max_output = max_output_bytes
        self._launcher = launcher
        self._guarantees = guarantees
        self._finalizer = weakref.finalize(self, _shutdown, launcher, proxy, private, root_fd)

    @staticmethod
    def builder(sandbox: Sandbox) -> OsSandboxBackendBuilder:
        """Start building a backend whose commands are confined to `sandbox.root`."""
        return OsSandboxBackendBuilder(sandbox)

    @property
    def timeout(self) -> float:
        """The default timeout in seconds."""
        return self._timeout

    def guarantees(self) -> SandboxGuarantees:
        """`OS_KERNEL` on the filesystem and syscall axes; the network axis as built."""
        return self._guarantees

    async def run(self, request: ExecRequest, *, cancel: CancellationToken | None = None) -> ExecOutput:
        """Run `request` confined, in the sandbox root (or `request.cwd` beneath it)."""
        if not self._finalizer.alive:
            raise OsSandboxError("OsSandboxBackend.run(): the backend is closed; build a new one")
        env = self._env
        if request.env:
            env = {**env, **request.env}
        # Opened beneath the root by the kernel (RESOLVE_BENEATH): a symlink made by an
        # earlier command cannot start this one elsewhere.
        cwd_fd = open_dir(self._root_fd, request.cwd or ".")
        try:
            return await self._launcher.run(
                request.argv,
                cwd_fd=cwd_fd,
                env=env,
                stdin=request.stdin,
                time_limit=request.timeout or self._timeout,
                max_output_bytes=request.max_output_bytes or self._max_output,
                cancel=cancel,
            )
        except LauncherError as error:
            raise OsSandboxError(f"OsSandboxBackend.run(): {error}") from None
        finally:
            os.close(cwd_fd)

    def close(self) -> None:
        """Kill what still runs, stop the launcher (and the egress proxy), remove the temp directory."""
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OsSandboxBackend({self._root!r}, network={self._guarantees.network.value})"


def _proxy_environment() -> dict[str, str]:
    """What points HTTP clients (curl, pip, urllib, requests, git) at the egress proxy."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    names = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    return {**dict.fromkeys(names, url), "no_proxy": "", "NO_PROXY": ""}


def _shutdown(launcher: Launcher, proxy: ProxyThread | None, private: str, root_fd: int) -> None:
    launcher.close()
    os.close(root_fd)
    if proxy is not None:
        proxy.close()
    shutil.rmtree(private, ignore_errors=True)


def _refused(error: LandlockError) -> OsSandboxUnsupported:
    """What a Landlock call the kernel refused means for `build()` (fail closed, the documented error)."""
    name = errno.errorcode.get(error.errno or 0, str(error.errno))
    hint = ""
    if error.errno == errno.EPERM:
        hint = "; a container's seccomp profile may block the landlock_* system calls"
    elif error.errno == errno.EINVAL:
        hint = "; the kernel reports a Landlock ABI it does not accept"
    return OsSandboxUnsupported(
        f"OsSandboxBackend: the kernel refused Landlock ({name}: {error.strerror}){hint}"
    )


def _rlimits(limits: ResourceLimits) -> dict[str, tuple[int, int]]:
    caps: dict[str, tuple[int, int]] = {}
    if limits.cpu_seconds is not None:
        # Hard one second above soft: SIGXCPU at the soft limit, SIGKILL if it is ignored.
        caps["RLIMIT_CPU"] = (limits.cpu_seconds, limits.cpu_seconds + 1)
    if limits.file_size_bytes is not None:
        caps["RLIMIT_FSIZE"] = (limits.file_size_bytes, limits.file_size_bytes)
    if limits.address_space_bytes is not None:
        caps["RLIMIT_AS"] = (limits.address_space_bytes, limits.address_space_bytes)
    return caps


def _absolute(paths: Iterable[str], option: str) -> tuple[str, ...]:
    if isinstance(paths, str):
        raise UserError(f"{option}({paths!r}): give a list of paths, e.g. ['/opt/toolchain']")
    listed = tuple(paths)
    for path in listed:
        if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"{option}(...): {path!r} is not an absolute path")
        if not os.path.exists(path):
            raise UserError(f"{option}(...): {path!r} does not exist")
    return listed


__all__ = ["OsSandboxBackend", "OsSandboxBackendBuilder", "OsSandboxError", "OsSandboxUnsupported"]
