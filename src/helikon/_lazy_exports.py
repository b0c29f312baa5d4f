"""`lazy_attribute`: a package's names imported from their module on first access.

For names whose module loads an optional dependency (httpx2, the MCP SDK's server stack)
that importing the package must not load. A package hands its table to it from its
module-level `__getattr__`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(package: str, homes: Mapping[str, str], name: str) -> Any:
    """`name` from `package`'s submodule `homes[name]`; AttributeError for a name not in `homes`."""
    module = homes.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", package), name)
