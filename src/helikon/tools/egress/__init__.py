"""Outbound network traffic by name: `EgressPolicy` decides, `EgressProxy` enforces.

The seam is `EgressPolicy` (`policy.py`): which hosts and ports may be reached, each
verdict an `EgressDecision` with its reason. `EgressProxy` (`proxy.py`) is the HTTP forward
proxy on loopback that asks the policy about every connection (`_request.py` reads the
requests it is sent); the OS sandbox and the microVM backend route their commands through it.
"""

from .policy import EgressDecision, EgressPolicy
from .proxy import EgressProxy

__all__ = ["EgressDecision", "EgressPolicy", "EgressProxy"]
