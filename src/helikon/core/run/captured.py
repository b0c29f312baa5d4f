"""Where `helikon.testing.capture_requests` collects what runs send their models.

The driver hands each request to `capture` while a capture is open in the run's context;
otherwise this costs a call and one context-variable read per model call.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .._internal.carrier import carrier
from ..model import ModelRequest

if TYPE_CHECKING:
    from ..agent import LlmAgent


@carrier
class CapturedRequest:
    """One model request a run sent: which agent sent it, to which model, and the request."""

    agent: str
    provider: str
    model: str
    request: ModelRequest


CAPTURING: ContextVar[tuple[list[CapturedRequest], ...]] = ContextVar("helikon.capturing", default=())
"""The lists of the open `capture_requests` blocks of this context, outermost first."""


def capture(agent: LlmAgent[Any, Any], model: Any, request: ModelRequest) -> None:
    """Add `request`, as `agent` sends it to `model`, to every open capture (if any)."""
    sinks = CAPTURING.get()
    if not sinks:
        return
    record = CapturedRequest(
        agent=agent.name,
        provider=getattr(model, "provider", "unknown"),
        model=getattr(model, "model_name", ""),
        request=request,
    )
    for sink in sinks:
        sink.append(record)


__all__ = ["CAPTURING", "CapturedRequest", "capture"]
