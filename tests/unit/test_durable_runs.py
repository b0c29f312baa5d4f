"""Durable runs: the runner appends a run's events as they settle, with turn markers, and repairs
a turn a crashed writer left open (`helikon.core.session.crash_repair`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from helikon import LlmAgent, MemorySession, RunConfig, RunContext, TextPart, tool
from helikon.core.conversation_check import is_provider_valid
from helikon.core.exceptions import RunError
from helikon.core.governance import GuardrailInput, GuardrailVerdict
from helikon.core.session import (
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)
from helikon.core.session.compaction import CompactingSession
from helikon.core.session.crash_repair import (
    NEVER_STARTED_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    close_interrupted_turn,
    open_turn,
)
from helikon.core.session.turn import is_durable
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


class Recording(MemorySession):
    """A MemorySession that remembers each append's batch (and can fail some)."""

    __slots__ = ("batches", "fail_next")

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []
        self.fail_next = 0

    async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
        if self.fail_next:
            self.fail_next -= 1
            await super().append(events, **kwargs)  # it went through, but the writer hears an error
            raise ConnectionError("the connection dropped after the commit")
        self.batches.append([e.type for e in events])
        await super().append(events, **kwargs)


@tool
async def lookup(city: str) -> str:
    """Look up a city."""
    return f"{city}: 12 C"


def agent(*scripts: Any) -> LlmAgent[None]:
    return LlmAgent[None](name="weather", model=MockModel.with_scripts(list(scripts)), tools=[lookup])


DURABLE = RunConfig(durable=True)


async def test_a_durable_run_appends_before_every_model_call_and_before_tools_start() -> None:
    session = Recording()
    run = agent(tool_call_turn("lookup", {"city": "Oslo"}, call_id="c1"), text_turn("12 C in Oslo."))
    await AsyncioRunner[None]().run(
        run, "Weather in Oslo?", RunContext.ephemeral(None).with_session(session), DURABLE
    )
    assert session.batches == [
        ["turn_opened", "user_message"],  # before the first model call
        ["request_header", "tool_called"],  # the call, once the model asked for it...
        ["tools_started"],  # ...then, once that is stored, the marker: now it may run
        ["tool_returned"],  # before the second model call
        ["assistant_message", "turn_closed"],
    ]
    records = await session.records()
    opened, closed = records[0].event, records[-1].event
    assert isinstance(opened, TurnOpened) and isinstance(closed, TurnClosed)
    assert (closed.run_id, closed.outcome) == (opened.run_id, "completed")
    assert [r.id for r in records] == [f"{opened.run_id}-{n}" for n in range(len(records))]
    assert [m.type for m in (await session.snapshot()).messages] == [
        "user",
        "tool_call",
        "tool_result",
        "assistant",
    ]


async def test_memory_sessions_write_after_the_run_and_durable_stores_as_they_go() -> None:
    session = Recording()
    await AsyncioRunner[None]().run(
        agent(text_turn("hi")), "hello", RunContext.ephemeral(None).with_session(session)
    )
    assert session.batches == [["user_message", "request_header", "assistant_message"]]
    assert not is_durable(MemorySession())
    assert is_durable(CompactingSession(_Durable(), MockModel.with_scripts([]), threshold=100))


class _Durable(MemorySession):
    __slots__ = ()
    durable = True


async def test_a_write_that_failed_is_retried_with_the_same_ids_and_stored_once() -> None:
    session = Recording()
    session.fail_next = 1  # the first flush commits, but the runner hears a failure
    await AsyncioRunner[None]().run(
        agent(text_turn("hi")), "hello", RunContext.ephemeral(None).with_session(session), DURABLE
    )
    kinds = [e.event.type for e in await session.events()]
    assert kinds == ["turn_opened", "user_message", "request_header", "assistant_message", "turn_closed"]


async def test_a_refused_input_is_rewound_out_of_the_conversation_but_kept_in_the_log() -> None:
    class NoSecrets:
        async def check(self, ctx: Any, input: GuardrailInput) -> GuardrailVerdict:
            return (
                GuardrailVerdict.tripwire("input_policy")
                if "password" in input.text
                else GuardrailVerdict.pass_()
            )

    session = MemorySession()
    refusing = LlmAgent[None](
        name="guarded", model=MockModel.with_scripts([text_turn("sure")]), input_guardrails=[NoSecrets()]
    )
    ctx = RunContext.ephemeral(None).with_session(session)
    with pytest.raises(RunError):
        await AsyncioRunner[None]().run(refusing, "my password is hunter2", ctx, DURABLE)
    kinds = [e.event.type for e in await session.events()]
    assert kinds[0] == "turn_opened" and kinds[-2:] == ["rewound", "turn_closed"]
    assert "user_message" in kinds  # kept for the audit...
    assert (await session.snapshot()).messages == ()  # ...but out of the conversation
    closed = (await session.events())[-1].event
    assert isinstance(closed, TurnClosed) and closed.outcome == "refused"


async def test_a_cancelled_durable_run_closes_its_turn_and_answers_its_calls() -> None:
    started = asyncio.Event()

    @tool
    async def slow(city: str) -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    session = MemorySession()
    run = LlmAgent[None](
        name="slow",
        model=MockModel.with_scripts([tool_call_turn("slow", {"city": "Oslo"}, call_id="c1")]),
        tools=[slow],
    )
    ctx = RunContext.ephemeral(None).with_session(session)
    task = asyncio.ensure_future(AsyncioRunner[None]().run(run, "go", ctx, DURABLE))
    await started.wait()
    ctx.cancel.cancel("user pressed stop")
    with pytest.raises(RunError):
        await task
    events = [e.event for e in await session.events()]
    closed = events[-1]
    assert isinstance(closed, TurnClosed) and closed.outcome == "cancelled"
    assert is_provider_valid(list((await session.snapshot()).messages))


def crashed(*, started: bool) -> list[SessionEvent]:
    """What a writer killed an hour ago left behind (a younger open turn may be a live run's)."""
    ts = datetime.now(UTC) - timedelta(hours=1)
    events: list[SessionEvent] = [
        TurnOpened(run_id="r1", agent="payer", ts=ts),
        UserMessageEvent(content=(TextPart(text="pay invoice 7"),), ts=ts),
        ToolCalled(call_id="c1", name="pay", args={"invoice": 7}, ts=ts),
        ToolCalled(call_id="c2", name="notify", args={}, ts=ts),
        ToolReturned(call_id="c2", content=(TextPart(text="sent"),), name="notify", ts=ts),
    ]
    if started:
        events.insert(4, ToolsStarted(call_ids=("c1", "c2"), ts=ts))
    return events


@pytest.mark.parametrize(("started", "text"), [(False, NEVER_STARTED_TEXT), (True, OUTCOME_UNKNOWN_TEXT)])
async def test_crash_repair_says_whether_a_dangling_call_never_started_or_may_have_run(
    started: bool, text: str
) -> None:
    session = MemorySession(crashed(started=started))
    assert open_turn(await session.events()) is not None
    repairs = await close_interrupted_turn(session)
    assert [type(e) for e in repairs] == [ToolReturned, TurnClosed]
    result, closed = repairs
    assert isinstance(result, ToolReturned) and isinstance(closed, TurnClosed)
    assert (result.call_id, result.name, result.is_error) == ("c1", "pay", True)
    assert result.content == (TextPart(text=text),)
    assert (closed.run_id, closed.outcome) == ("r1", "interrupted")
    assert open_turn(await session.events()) is None
    assert await close_interrupted_turn(session) == []  # nothing left to do
    assert is_provider_valid(list((await session.snapshot()).messages))


async def test_two_repairs_at_once_store_one() -> None:
    session = MemorySession(crashed(started=True))
    first, second = await asyncio.gather(close_interrupted_turn(session), close_interrupted_turn(session))
    assert len(first) == 2 and second in ([], first)
    assert [e.event.type for e in await session.events()].count("turn_closed") == 1


async def test_the_runner_repairs_an_open_turn_before_it_runs() -> None:
    session = MemorySession(crashed(started=True))
    model = MockModel.with_scripts([text_turn("It may have been paid; let me check.")])
    await AsyncioRunner[None]().run(
        LlmAgent[None](name="payer", model=model),
        "did it go through?",
        RunContext.ephemeral(None).with_session(session),
    )
    sent = list(model.requests[0].messages)
    assert is_provider_valid(sent)
    assert any(getattr(m, "call_id", None) == "c1" and m.type == "tool_result" for m in sent)
    outcomes = [e.event.outcome for e in await session.events() if isinstance(e.event, TurnClosed)]
    assert outcomes == ["interrupted"]  # the new run on a MemorySession is not durable: no markers


async def test_a_second_run_on_the_session_waits_for_the_first_instead_of_repairing_it() -> None:
    gate = asyncio.Event()

    @tool
    async def wait(city: str) -> str:
        """Wait."""
        await gate.wait()
        return "done"

    session = MemorySession()
    runner = AsyncioRunner[None]()
    ctx = RunContext.ephemeral(None).with_session(session)
    first = LlmAgent[None](
        name="first",
        model=MockModel.with_scripts([tool_call_turn("wait", {"city": "x"}, call_id="w1"), text_turn("ok")]),
        tools=[wait],
    )
    task = asyncio.ensure_future(runner.run(first, "one", ctx, DURABLE))
    for _ in range(1000):  # until the first run's tool is running
        if any(isinstance(e.event, ToolsStarted) for e in await session.events()):
            break
        await asyncio.sleep(0)
    second_model = MockModel.with_scripts([text_turn("two")])
    second = asyncio.ensure_future(runner.run(LlmAgent[None](name="second", model=second_model), "two", ctx))
    for _ in range(50):
        await asyncio.sleep(0)
    assert second_model.requests == [] and not second.done()  # queued behind the first run
    gate.set()
    await asyncio.wait_for(asyncio.gather(task, second), timeout=30)
    outcomes = [e.event.outcome for e in await session.events() if isinstance(e.event, TurnClosed)]
    assert outcomes == ["completed"]  # no repair: the first turn closed as it should
    sent = [m.type for m in second_model.requests[0].messages]
    assert sent == ["user", "tool_call", "tool_result", "assistant", "user"]  # after the whole first run
