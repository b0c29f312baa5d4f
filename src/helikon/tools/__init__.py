"""The ready-made tools: confined file tools, shell execution backends, web tools.

Everything a model may touch on the user's machine goes through a `Sandbox`: a directory
capability the file tools resolve paths beneath, with the kernel's confinement.

Example:
    ```python
    import tempfile

    from helikon.tools import Sandbox

    with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
        assert not sandbox.closed
    ```
"""

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
from .read import ReadTool
from .sandbox import Sandbox
from .search import GlobTool, GrepTool
from .write import WriteTool

__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "BashTool",
    "EditTool",
    "EgressDecision",
    "EgressPolicy",
    "EgressProxy",
    "ExecOutput",
    "ExecRequest",
    "ExecutionBackend",
    "GlobTool",
    "GrepTool",
    "HostBackend",
    "HostBackendBuilder",
    "Isolation",
    "ReadTool",
    "ResourceLimits",
    "Sandbox",
    "SandboxGuarantees",
    "WriteTool",
]
