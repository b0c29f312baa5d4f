"""The store under test, as every session conformance check receives it.

Apart from `session_conformance` (which gathers the checks) so that the check modules can
take it without importing the module that imports them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from helikon.core.session import Session, SessionInfo

Damage = Literal["beyond_the_log", "other_projector", "garbage", "other_prefix"]
"""How `ConformanceBackend.damage_checkpoint` spoils a session's stored checkpoint:
`as_of_seq` past the end of the log, another projector version, state that is not JSON, or
a fingerprint of some other event at `as_of_seq`."""

DamageCheckpoint = Callable[[str, Damage], Awaitable[bool]]
"""`damage_checkpoint(session_id, how)`: spoil the stored checkpoint; False if there is none."""


@dataclass
class ConformanceBackend:
    """The store under test. See `helikon.testing.session_conformance`."""

    name: str
    open: Callable[[str], Awaitable[Session]]
    opener: str | None = None
    opener_kwargs: dict[str, Any] = field(default_factory=lambda: {})
    crash_safe: bool = False
    processes: int = 4
    """How many writer processes the multi-process checks start."""
    list_sessions: Callable[..., Awaitable[list[SessionInfo]]] | None = None
    """The store's `list_sessions(limit=..., offset=...)`, if it can list its sessions."""
    damage_checkpoint: DamageCheckpoint | None = None
    """Spoils a session's stored projection checkpoint (see `DamageCheckpoint`), if the store keeps one."""
    branching: bool = True
    """Whether its sessions have `rewind`, `branches` and `fork` (`core.session.branches.Branching`)."""


Check = Callable[[ConformanceBackend], Awaitable[None]]
"""One conformance check: an async function of the backend that raises `AssertionError` on a miss."""

__all__ = ["Check", "ConformanceBackend", "Damage", "DamageCheckpoint"]
