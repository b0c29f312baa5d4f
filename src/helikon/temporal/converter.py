"""How helikon's carriers travel through Temporal, and how its workflow code is sandboxed.

The loop's carriers are pydantic-readable dataclasses, so the SDK's pydantic data converter
carries them. helikon passes through the workflow sandbox (its modules are deterministic in
what the workflow calls, and re-importing them per run would cost ~100 ms), and the
pydantic schemas the workflow reads are built once on the host before a worker starts:
built lazily inside the sandbox they would resolve their forward references there.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

if TYPE_CHECKING:
    from temporalio.client import Client

PASSTHROUGH = ("helikon", "typing_inspection", "docstring_parser")
"""Modules the workflow sandbox shares with the host instead of importing again."""

_ADAPTERS: Any = functools.lru_cache(maxsize=64)(TypeAdapter)
"""The pydantic schemas of the steps' carriers, by type: built once per process.

The SDK's pydantic converter keeps its schemas per converter, and a workflow makes a converter
per run: each run would build them again (~50 ms each, on its first steps). The types are
helikon's own carriers, a handful: the cache cannot grow with what models say.
"""


class _SharedSchemas(PydanticJSONPlainPayloadConverter):
    """The SDK's pydantic JSON converter, on the process's schemas."""

    def __init__(self) -> None:
        super().__init__()
        self._type_adapter = _ADAPTERS


class PayloadConverter(CompositePayloadConverter):
    """The SDK's default converters, JSON by pydantic on schemas built once per process."""

    def __init__(self) -> None:
        json = _SharedSchemas()
        defaults = DefaultPayloadConverter.default_encoding_payload_converters
        super().__init__(*(json if isinstance(c, JSONPlainPayloadConverter) else c for c in defaults))


DATA_CONVERTER = DataConverter(payload_converter_class=PayloadConverter)
"""The data converter of helikon's client and worker: pydantic JSON."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """The SDK's sandbox, with helikon passed through."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
    return dataclasses.replace(SandboxedWorkflowRunner(), restrictions=restrictions)


def prewarm() -> None:
    """Build the schemas the workflow reads, on the host (see the module docstring)."""
    from helikon.core.events import AGENT_EVENT_ADAPTER
    from helikon.core.items import ITEM_ADAPTER
    from helikon.core.loop import LOOP_STATE_ADAPTER, TRANSITION_INPUT_ADAPTER

    from . import refs

    for lazy in (LOOP_STATE_ADAPTER, TRANSITION_INPUT_ADAPTER, AGENT_EVENT_ADAPTER, ITEM_ADAPTER):
        _ = lazy.adapter
    carriers: tuple[object, ...] = (
        refs.RunSpec, refs.ModelTurn, refs.ToolTurn, refs.ToolAnswer, refs.CloseRun, refs.RunSummary,
        refs.Opened, refs.Guarded, refs.Resumed, refs.DecideAnswer, refs.DecideRequest,
        refs.ModelAnswer, refs.CheckAnswer, refs.HandoffAnswer,
    )  # fmt: skip
    for carrier in carriers:  # the schemas a step's answer is read with, in the workflow
        _ADAPTERS(carrier)


def with_converter(client: Client) -> Client:
    """`client`, with helikon's data converter (a new client on the same connection if it had another)."""
    if client.data_converter is DATA_CONVERTER:
        return client
    from temporalio.client import Client

    config = client.config()
    config["data_converter"] = DATA_CONVERTER
    return Client(**config)


__all__ = [
    "DATA_CONVERTER",
    "PASSTHROUGH",
    "PayloadConverter",
    "prewarm",
    "with_converter",
    "workflow_runner",
]
