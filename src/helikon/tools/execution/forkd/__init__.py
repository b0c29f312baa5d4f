"""The microVM backend (experimental): each command in a Firecracker VM forked by a forkd controller.

`ForkdBackend` (`backend.py`) is the `ExecutionBackend`; `_client.py` speaks the
controller's REST contract (`docs/tools-forkd.md`) and `_egress.py` checks the egress proxy
the deployment routes the guests through. Needs the `tools-microvm` extra (httpx2).
"""

from .backend import ForkdBackend, ForkdBackendBuilder, ForkdError, ReconcileReport

__all__ = ["ForkdBackend", "ForkdBackendBuilder", "ForkdError", "ReconcileReport"]
