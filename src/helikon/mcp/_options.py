"""What an `McpConnectBuilder` collected: the transport and every option of the handle."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from ._connection import TransportFactory

if TYPE_CHECKING:
    from helikon.core.context import RunContext
    from helikon.core.model import Model
    from helikon.core.tools import Tool

    from ._sampling import ElicitationHandler

__all__ = ["Options", "ToolFilter", "TransportMaker"]

ToolFilter: TypeAlias = "Callable[[RunContext[Any] | None, Tool[Any]], bool | Awaitable[bool]]"
"""A predicate of the run context (None when asked at build time) and a tool: offer it now?"""

TransportMaker: TypeAlias = Callable[[Callable[[int, bool], None]], TransportFactory]
"""Given where to report a spawned child's pid (and its end), the transport factory of one connection."""


@dataclasses.dataclass
class Options:
    """A handle's configuration; the builder fills it, `connect()` reads it."""

    label: str
    make_transport: TransportMaker
    prefix: str = ""
    lazy: bool = False
    allow: frozenset[str] | None = None
    deny: frozenset[str] = frozenset()
    tool_filter: ToolFilter | None = None
    cache_tools_list: bool = True
    sampling_model: Model | None = None
    elicitation_handler: ElicitationHandler | None = None
    connect_timeout: float | None = 30.0
    call_timeout: float | None = None
    assume_destructive: bool = False
    client_name: str = "helikon"
