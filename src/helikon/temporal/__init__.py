"""Durable runs on Temporal (`temporal` extra): crash-resume at every model turn and tool call.

- `TemporalRunner(client, TemporalRunnerConfig(...))`: a `Runner` whose runs are workflows;
  `run()` awaits the outcome, `run_streamed()` streams the events from the session log.
- `TemporalAgentWorker.builder()`: the worker that serves the agents' workflow and steps.
- `DurableDriver`: the agent loop stepped for a durable engine, with no engine in it.

Temporal's history holds references, not the conversation: each model step reads the
transcript from the session on the worker, each tool step stores its result there, and
history keeps a digest. See `docs/temporal.md`.

Example:
    ```python
    from helikon.temporal import StepOptions, TemporalRunnerConfig

    config = TemporalRunnerConfig(task_queue="assistants")
    assert config.payload_limit == 2 * 1024 * 1024 and StepOptions().max_attempts == 0
    ```
"""

from helikon.core._internal.extras import missing_extra

try:
    import temporalio.workflow  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as exc:
    raise missing_extra("helikon.temporal needs the Temporal SDK", "temporal") from exc

from .durable_driver import DurableDriver, StepPort
from .refs import RunRef, RunSpec, RunSummary
from .runner import TemporalRunner, TemporalRunnerConfig
from .served import StepOptions
from .worker import TemporalAgentWorker, TemporalAgentWorkerBuilder, WorkerPosture
from .worker_steps import WorkerSteps
from .workflow import AgentRunWorkflow

__all__ = [
    "AgentRunWorkflow",
    "DurableDriver",
    "RunRef",
    "RunSpec",
    "RunSummary",
    "StepOptions",
    "StepPort",
    "TemporalAgentWorker",
    "TemporalAgentWorkerBuilder",
    "TemporalRunner",
    "TemporalRunnerConfig",
    "WorkerPosture",
    "WorkerSteps",
]
