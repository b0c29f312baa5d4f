"""`Isolation` and `SandboxGuarantees`: what an execution backend really enforces.

A backend reports one `Isolation` per axis (filesystem, network, syscalls) and a short
label; `BashTool` puts the label and the axes in its description, so the model knows
the tier it works under. These describe *containment* only: approval (a permission
policy) and resource caps (`ResourceLimits`) are separate axes.

Example:
    ```python
    from helikon.tools import Isolation, SandboxGuarantees

    host = SandboxGuarantees(Isolation.NONE, Isolation.NONE, Isolation.NONE, "host (no containment)")
    assert host.network is Isolation.NONE
    assert "no containment" in host.describe()
    ```
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Isolation(enum.Enum):
    """How one axis is enforced.

    - `NONE`: not at all; the command has the access this process has.
    - `OS_KERNEL`: by a kernel mechanism (Landlock, seccomp-bpf); a violation is an OS error.
    - `VIRTUALIZED`: behind a VM boundary (a microVM's own guest kernel).
    - `PROXIED`: network egress filtered by domain at a proxy (`EgressProxy`).
    """

    NONE = "none"
    OS_KERNEL = "os_kernel"
    VIRTUALIZED = "virtualized"
    PROXIED = "proxied"


@dataclass(frozen=True, slots=True)
class SandboxGuarantees:
    """What a backend enforces on each axis, and a short human label for the tier."""

    filesystem: Isolation
    network: Isolation
    syscalls: Isolation
    label: str

    def describe(self) -> str:
        """One line for a tool description: the label and each axis."""
        return (
            f"{self.label}; filesystem: {self.filesystem.value}, network: {self.network.value}, "
            f"syscalls: {self.syscalls.value}"
        )


__all__ = ["Isolation", "SandboxGuarantees"]
