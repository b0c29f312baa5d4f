"""How helikon's carriers travel through Temporal, and how its workflow code is sandboxed.

The loop's carriers are pydantic-readable dataclasses, so the SDK's pydantic data converter
carries them. helikon passes through the workflow sandbox (its modules are deterministic in
what the workflow calls, and re-importing them per run would cost ~100 ms), and the
pydantic schemas the workflow reads are built once on the host before a worker starts:
built lazily inside the sandbox they would resolve their forward references there.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

if TYPE_CHECKING:
    from temporalio.client import Client

PASSTHROUGH = ("helikon", "typing_inspection", "docstring_parser")
"""Modules the workflow sandbox shares with the host instead of importing again."""

DATA_CONVERTER: DataConverter = pydantic_data_converter
"""The data converter of helikon's client and worker: pydantic JSON."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """The SDK's sandbox, with helikon passed through."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
    return dataclasses.replace(SandboxedWorkflowRunner(), restrictions=restrictions)


def prewarm() -> None:
    """Build the schemas the workflow reads, on the host (see the module docstring)."""
    from pydantic import TypeAdapter

    from helikon.core.events import AGENT_EVENT_ADAPTER
    from helikon.core.items import ITEM_ADAPTER
    from helikon.core.loop import LOOP_STATE_ADAPTER, TRANSITION_INPUT_ADAPTER

    from . import refs

    for lazy in (LOOP_STATE_ADAPTER, TRANSITION_INPUT_ADAPTER, AGENT_EVENT_ADAPTER, ITEM_ADAPTER):
        _ = lazy.adapter
    for carrier in (
        refs.RunSpec,
        refs.ModelTurn,
        refs.ToolTurn,
        refs.ToolAnswer,
        refs.CloseRun,
        refs.RunSummary,
    ):
        TypeAdapter(carrier)
    TypeAdapter(refs.ModelAnswer)


__all__ = ["DATA_CONVERTER", "PASSTHROUGH", "prewarm", "workflow_runner"]


def with_converter(client: Client) -> Client:
    """`client`, with helikon's data converter (a new client on the same connection if it had another)."""
    if client.data_converter is DATA_CONVERTER:
        return client
    from temporalio.client import Client

    config = client.config()
    config["data_converter"] = DATA_CONVERTER
    return Client(**config)
