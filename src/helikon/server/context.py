"""The per-request `RunContext`: `ContextProvider`, and the default one behind `.with_default_context()`.

A context provider builds the context each run gets from the request: who the auth layer
said is calling, the headers, the agent and session. That is where a deployment tightens
what network callers may do: a stricter permission mode, an
approval handler that enforces the tenant's rules, hooks for telemetry and policy.

Example:
    ```python
    from helikon import PermissionMode, RunContext
    from helikon.server import ServerRequest

    class TenantContext:
        async def build(self, request: ServerRequest, session, cancel) -> RunContext[str]:
            tenant = str(request.identity or "anonymous")
            return (
                RunContext.ephemeral(tenant)
                .with_session(session)
                .with_cancel(cancel)
                .with_permission_mode(PermissionMode.DONT_ASK)  # only what allow rules permit
            )
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..core._internal.json_value import JsonValue
from ..core.cancel import CancellationToken
from ..core.context import RunContext
from ..core.session import Session

Ctx = TypeVar("Ctx")


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """What a context provider knows of the request that starts or resumes a run."""

    agent: str
    session_id: str | None
    """The `X-Session-Id` header (None: the run is on a fresh session that is never stored)."""
    identity: JsonValue
    """What the auth layer returned for this request (None without an auth layer)."""
    headers: Mapping[str, str]
    """The request's headers, names in lower case."""


@runtime_checkable
class ContextProvider(Protocol[Ctx]):
    """Builds the `RunContext` of each run from its request, on its session, with its cancel token."""

    async def build(
        self, request: ServerRequest, session: Session, cancel: CancellationToken
    ) -> RunContext[Ctx]:
        """The run's context, which must use `session` and `cancel` (the server works through them)."""
        ...


class DefaultContextProvider:
    """`RunContext.ephemeral(None)` on the request's session: every setting at its core default."""

    __slots__ = ()

    async def build(
        self, request: ServerRequest, session: Session, cancel: CancellationToken
    ) -> RunContext[Any]:
        """The default context, on `session`, cancelled through `cancel`."""
        return RunContext.ephemeral(None).with_session(session).with_cancel(cancel)


__all__ = ["ContextProvider", "DefaultContextProvider", "ServerRequest"]
