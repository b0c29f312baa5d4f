"""The `RunObserver` a runner gives its run: told of requests and tool starts; stream, config untouched."""

from __future__ import annotations

import asyncio
from typing import Any

from helikon import LlmAgent, MemorySession, RunConfig, RunContext, tool
from helikon.core.events import RequestSent, ToolOutputItem
from helikon.core.input import RunInput
from helikon.core.observer import RunObserver
from helikon.core.result import RunStream
from helikon.core.workflows import ParallelAgent
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
async def look(q: str) -> str:
    """Look something up."""
    await asyncio.sleep(0)  # the other branch runs meanwhile
    return q


def looker(name: str) -> LlmAgent[None]:
    script = [tool_call_turn("look", {"q": name}, call_id=f"c-{name}"), text_turn(f"{name} done")]
    return LlmAgent(name=name, model=MockModel.with_scripts(script), tools=[look])


class Notes:
    """An observer that writes down what it is told, in order."""

    def __init__(self) -> None:
        self.told: list[str] = []

    def request_sent(self, sent: RequestSent) -> None:
        self.told.append(f"request {sent.model}")

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        self.told.append(f"tools {','.join(call_ids)}")

    async def tool_returned(self, output: ToolOutputItem) -> None:
        self.told.append(f"returned {output.item.call_id}")


async def test_the_driver_tells_the_observer_and_streams_what_it_always_did() -> None:
    notes = Notes()
    assert isinstance(notes, RunObserver)
    ctx = RunContext.ephemeral(None).with_observer(notes)
    observed = [e.type async for e in looker("a").run("go", context=ctx)]
    plain = [e.type async for e in looker("a").run("go")]
    assert observed == plain
    assert notes.told == ["request mock-model", "tools c-a", "returned c-a", "request mock-model"]


async def test_the_runner_passes_the_callers_config_as_it_is_and_its_observer_in_the_context() -> None:
    seen: list[tuple[RunConfig | None, object]] = []

    class Probe:
        name = "probe"
        description = "Runs an LlmAgent, noting what it was given."

        def __init__(self) -> None:
            self.inner = looker("a")

        def run(
            self, input: RunInput, *, context: RunContext[Any] | None = None, config: RunConfig | None = None
        ) -> RunStream:
            seen.append((config, None if context is None else context.observer))
            return self.inner.run(input, context=context, config=config)

    config = RunConfig(max_turns=4)
    ctx = RunContext.ephemeral(None).with_session(MemorySession())
    await AsyncioRunner[None]().run(Probe(), "go", ctx, config)
    [(given, observer)] = seen
    assert given is config
    assert isinstance(observer, RunObserver)
    assert ctx.observer is None  # the caller's context is not changed either


async def test_parallel_branches_report_in_stream_order_to_a_durable_runner() -> None:
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    fan = ParallelAgent[None]("fan").add(looker("a")).add(looker("b"))
    await AsyncioRunner[None]().run(fan, "go", ctx, RunConfig(durable=True))
    stored = [
        (e.type, getattr(e, "call_id", None) or getattr(e, "call_ids", None))
        for _, e in await session.events()
    ]
    # Each branch's calls are stored before its ToolsStarted marker, one header for the same request.
    assert stored == [
        ("turn_opened", None),
        ("user_message", None),
        ("request_header", None),
        ("tool_called", "c-a"),
        ("tools_started", ("c-a",)),
        ("tool_called", "c-b"),
        ("tools_started", ("c-b",)),
        ("tool_returned", "c-a"),
        ("assistant_message", None),
        ("tool_returned", "c-b"),
        ("assistant_message", None),
        ("assistant_message", None),
        ("turn_closed", None),
    ]
