"""The ready-made tools, one folder a family: `files/`, `execution/`, `egress/`, `web/`.

Everything a model may touch on the user's machine goes through a `Sandbox`: a directory
capability the file tools (`files/`: Read, Write, Edit, Glob, Grep) resolve paths beneath,
with the kernel's confinement. `execution/` runs shell commands (`BashTool`) on a backend of
a chosen containment tier (host, `os_sandbox/`, `forkd/`); `egress/` decides and enforces
which hosts a sandbox's commands may reach. Every name is importable from here. The web
tools (`WebFetchTool`, `WebSearchTool`, `tools-web` extra) load httpx2 and trafilatura only
when first used, and so does the experimental microVM backend (`ForkdBackend`,
`tools-microvm` extra).

Example:
    ```python
    import tempfile

    from helikon.tools import Sandbox

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        assert not sandbox.closed
    ```
"""

from typing import TYPE_CHECKING, Any

from helikon._lazy_exports import lazy_attribute
from helikon.core._internal.moved import install as _install_moved

from ._moved import MOVED as _MOVED
from .egress import EgressDecision, EgressPolicy, EgressProxy
from .execution import _LAZY as _EXECUTION_LAZY
from .execution import (
    DEFAULT_ENV_ALLOWLIST,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    BashTool,
    ExecOutput,
    ExecRequest,
    ExecutionBackend,
    HostBackend,
    HostBackendBuilder,
    Isolation,
    OsSandboxBackend,
    OsSandboxBackendBuilder,
    OsSandboxError,
    OsSandboxUnsupported,
    ResourceLimits,
    SandboxGuarantees,
)
from .files import EditTool, GlobTool, GrepTool, ReadTool, Sandbox, WriteTool
from .web import _LAZY as _WEB_LAZY

# The flat paths of before the families (helikon.tools.bash and the like) still import.
_install_moved(_MOVED)

if TYPE_CHECKING:
    from .execution.forkd import ForkdBackend, ForkdBackendBuilder, ForkdError, ReconcileReport
    from .web import (
        BraveBackend,
        SearchBackend,
        SearchResult,
        TavilyBackend,
        WebFetchTool,
        WebFetchToolBuilder,
        WebSearchTool,
        WebSearchToolBuilder,
    )

# Names imported on first access, from the family that keeps them lazy: they need httpx2 (the
# tools-web or tools-microvm extra), which `import helikon.tools` must not load.
_LAZY = dict.fromkeys(_EXECUTION_LAZY, "execution") | dict.fromkeys(_WEB_LAZY, "web")


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "BashTool",
    "BraveBackend",
    "EditTool",
    "EgressDecision",
    "EgressPolicy",
    "EgressProxy",
    "ExecOutput",
    "ExecRequest",
    "ExecutionBackend",
    "ForkdBackend",
    "ForkdBackendBuilder",
    "ForkdError",
    "GlobTool",
    "GrepTool",
    "HostBackend",
    "HostBackendBuilder",
    "Isolation",
    "OsSandboxBackend",
    "OsSandboxBackendBuilder",
    "OsSandboxError",
    "OsSandboxUnsupported",
    "ReadTool",
    "ReconcileReport",
    "ResourceLimits",
    "Sandbox",
    "SandboxGuarantees",
    "SearchBackend",
    "SearchResult",
    "TavilyBackend",
    "WebFetchTool",
    "WebFetchToolBuilder",
    "WebSearchTool",
    "WebSearchToolBuilder",
    "WriteTool",
]
