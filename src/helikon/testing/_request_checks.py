"""Conformance check: every request of a multi-turn tool run is rebuilt exactly from the stored log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from helikon.core.model import ModelRequest, ModelSettings
from helikon.core.tools import tool

from ._conformance_util import close_session, new_id, require
from ._mock_model import MockModel
from ._scripts import text_turn, tool_call_turn, tool_calls_turn

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend


@tool
async def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"Sunny in {city}."


@tool
async def convert(celsius: float) -> str:
    """Convert Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:.0f}F"


def same_request(rebuilt: ModelRequest, sent: ModelRequest) -> bool:
    """Whether a rebuilt request is the one that was sent (messages, tools, settings)."""
    return (
        list(rebuilt.messages) == list(sent.messages)
        and tuple(rebuilt.tools) == tuple(sent.tools)
        and rebuilt.model_settings == sent.model_settings
    )


async def check_requests_are_rebuilt_from_the_stored_log(backend: ConformanceBackend) -> None:
    """Two tool runs through the runner: a new object's log rebuilds each model request exactly."""
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunContext
    from helikon.core.session.request_log import rebuild_request, rebuild_requests
    from helikon.runtime import AsyncioRunner

    model = MockModel.with_scripts(
        [
            tool_call_turn("lookup", {"city": "Oslo"}),
            tool_calls_turn([("lookup", {"city": "Rome"}), ("convert", {"celsius": 21})]),
            text_turn("Oslo is sunny, Rome is 70F."),
            tool_call_turn("convert", {"celsius": 5}),
            text_turn("41F."),
        ]
    )
    agent = LlmAgent[None](
        name="weather",
        model=model,
        instructions="Answer briefly.",
        tools=[lookup, convert],
        model_settings=ModelSettings(temperature=0.2),
    )
    sid = new_id("requests")
    session = await backend.open(sid)
    try:
        ctx = RunContext.ephemeral(None).with_session(session)
        runner = AsyncioRunner[None]()
        await runner.run(agent, "Weather in Oslo and Rome?", ctx)
        await runner.run(agent, "And 5C?", ctx)
    finally:
        await close_session(session)
    reader = await backend.open(sid)
    try:
        entries = await reader.events()
    finally:
        await close_session(reader)
    rebuilt = rebuild_requests(entries)
    require(len(rebuilt) == len(model.requests) == 5, f"{len(rebuilt)} requests rebuilt, 5 sent")
    for turn, sent in enumerate(model.requests):
        require(
            same_request(rebuilt[turn], sent),
            f"request {turn} rebuilt from the log differs from what was sent",
        )
        require(same_request(rebuild_request(entries, turn), sent), f"rebuild_request({turn}) differs")


__all__ = ["check_requests_are_rebuilt_from_the_stored_log", "convert", "lookup", "same_request"]
