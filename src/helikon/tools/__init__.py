"""The ready-made tools: confined file tools, shell execution backends, web tools.

Everything a model may touch on the user's machine goes through a `Sandbox`: a directory
capability the file tools resolve paths beneath, with the kernel's confinement. The web
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

from helikon._lazy import lazy_attribute

from .bash import BashTool
from .edit import EditTool
from .egress_policy import EgressDecision, EgressPolicy
from .egress_proxy import EgressProxy
from .execution import (
    DEFAULT_ENV_ALLOWLIST,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    ExecOutput,
    ExecRequest,
    ExecutionBackend,
    ResourceLimits,
)
from .guarantees import Isolation, SandboxGuarantees
from .host import HostBackend, HostBackendBuilder
from .os_sandbox import OsSandboxBackend, OsSandboxBackendBuilder, OsSandboxError, OsSandboxUnsupported
from .read import ReadTool
from .sandbox import Sandbox
from .search import GlobTool, GrepTool
from .write import WriteTool

if TYPE_CHECKING:
    from .forkd import ForkdBackend, ForkdBackendBuilder, ForkdError, ReconcileReport
    from .web_fetch import WebFetchTool, WebFetchToolBuilder
    from .web_search import (
        BraveBackend,
        SearchBackend,
        SearchResult,
        TavilyBackend,
        WebSearchTool,
        WebSearchToolBuilder,
    )

# Names -> their module, imported on first access: they need httpx2 (the tools-web or
# tools-microvm extra), which `import helikon.tools` must not load.
_LAZY = {
    "BraveBackend": "web_search",
    "ForkdBackend": "forkd",
    "ForkdBackendBuilder": "forkd",
    "ForkdError": "forkd",
    "ReconcileReport": "forkd",
    "SearchBackend": "web_search",
    "SearchResult": "web_search",
    "TavilyBackend": "web_search",
    "WebFetchTool": "web_fetch",
    "WebFetchToolBuilder": "web_fetch",
    "WebSearchTool": "web_search",
    "WebSearchToolBuilder": "web_search",
}


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
