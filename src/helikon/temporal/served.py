"""What a worker serves on its task queue, where its workflows find it.

A workflow class takes no constructor arguments, so a `TemporalAgentWorker` registers its
agents, their `RunConfig` and its step options here under its task queue before it starts,
and takes them back when it stops. Workflows read them deterministically (the same worker
code serves a replay); the table is keyed by task queue, which the worker's code names, so
model input never grows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from helikon.core.context import RunConfig

if TYPE_CHECKING:
    from helikon.core.agent import LlmAgent


@dataclass(frozen=True)
class StepOptions:
    """How the workflow schedules its steps (Temporal activity options).

    Args:
        model_timeout: The longest one model call may take (`start_to_close_timeout`).
        tool_timeout: The longest one tool call may take.
        heartbeat_timeout: Opt-in: steps heartbeat at half this interval, so a dead worker
            is noticed after it (rather than after the step's whole timeout) and a cancel
            reaches a running step.
        max_attempts: How often a step is tried when its worker dies or the session cannot
            be reached (0: until its timeout). A model error is never retried here: wrap
            the model in `RetryingModel` for that.
        tool_attempts: Per tool name, how often its calls are tried: `{"charge_card": 1}`
            runs a call at most once; if its worker dies meanwhile, the model reads that the
            outcome is unknown, and the run goes on.
    """

    model_timeout: timedelta = timedelta(minutes=10)
    tool_timeout: timedelta = timedelta(minutes=10)
    heartbeat_timeout: timedelta | None = None
    max_attempts: int = 0
    tool_attempts: Mapping[str, int] = field(default_factory=lambda: {})
    step_timeout: timedelta = timedelta(seconds=60)
    """The longest the session bookkeeping steps (open, close) may take."""


@dataclass(frozen=True)
class Served:
    """One task queue's agents, their config and the step options."""

    agents: dict[str, LlmAgent[Any, Any]]
    config: RunConfig = field(default_factory=RunConfig)
    options: StepOptions = field(default_factory=StepOptions)


_QUEUES: dict[str, Served] = {}


def serve(task_queue: str, served: Served) -> None:
    """Make `served` what the workflows on `task_queue` run."""
    _QUEUES[task_queue] = served


def unserve(task_queue: str, served: Served) -> None:
    """The worker of `task_queue` stopped: forget what it served (unless another replaced it)."""
    if _QUEUES.get(task_queue) is served:
        del _QUEUES[task_queue]


def served_for(task_queue: str, agent: str) -> Served | None:
    """What serves `agent` on `task_queue` in this process, if anything does.

    A `Replayer` replays on a task queue of its own: there, the one registration serving
    `agent` under any queue is taken.
    """
    served = _QUEUES.get(task_queue)
    if served is not None and agent in served.agents:
        return served
    return next((s for s in _QUEUES.values() if agent in s.agents), None)


__all__ = ["Served", "StepOptions", "serve", "served_for", "unserve"]
