"""Shell execution: `BashTool` and the backends that run its commands, one containment tier each.

The seams are in `backend.py`: `ExecutionBackend` runs one `ExecRequest` and returns an
`ExecOutput` (`ResourceLimits` caps it), and `guarantees.py`'s `SandboxGuarantees` says
what a backend contains, axis by axis (`Isolation`). The backends, weakest first:
`HostBackend` (`host.py`, unconfined, in the sandbox root), `OsSandboxBackend`
(`os_sandbox/`, the kernel's Landlock, seccomp and namespaces) and `ForkdBackend`
(`forkd/`, a microVM per command; the `tools-microvm` extra, imported on first use).
`_process.py` supervises a child process for the local backends, `_local_options.py`
holds their shared builder options.
"""

from typing import TYPE_CHECKING, Any

from helikon._lazy_exports import lazy_attribute

from .backend import (
    DEFAULT_ENV_ALLOWLIST,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    ExecOutput,
    ExecRequest,
    ExecutionBackend,
    ResourceLimits,
)
from .bash import BashTool
from .guarantees import Isolation, SandboxGuarantees
from .host import HostBackend, HostBackendBuilder
from .os_sandbox import OsSandboxBackend, OsSandboxBackendBuilder, OsSandboxError, OsSandboxUnsupported

if TYPE_CHECKING:
    from .forkd import ForkdBackend, ForkdBackendBuilder, ForkdError, ReconcileReport

# Names -> their module, imported on first access: forkd needs httpx2 (the tools-microvm
# extra), which importing this package must not load.
_LAZY = {
    "ForkdBackend": "forkd",
    "ForkdBackendBuilder": "forkd",
    "ForkdError": "forkd",
    "ReconcileReport": "forkd",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "BashTool",
    "ExecOutput",
    "ExecRequest",
    "ExecutionBackend",
    "ForkdBackend",
    "ForkdBackendBuilder",
    "ForkdError",
    "HostBackend",
    "HostBackendBuilder",
    "Isolation",
    "OsSandboxBackend",
    "OsSandboxBackendBuilder",
    "OsSandboxError",
    "OsSandboxUnsupported",
    "ReconcileReport",
    "ResourceLimits",
    "SandboxGuarantees",
]
