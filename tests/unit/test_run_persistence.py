"""What the runner does when the session cannot take a run's events, and when another run holds it.

Refused content is stored as a plain copy or a stand-in, never blocking what follows; a store
that cannot be reached is retried with backoff, then reported (`PersistFailed`) and held for
the next run; runs on one session never interleave (queued in a runner, waited for or refused
across runners and processes).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from helikon import LlmAgent, MemorySession, PersistFailed, RunCompleted, RunConfig, RunContext, tool
from helikon.core.exceptions import RunError, SessionBackendError, SessionUnavailable, UserError
from helikon.core.items import TextPart
from helikon.core.session import (
    ConversationSnapshot,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)
from helikon.core.session._run_ids import _machine, new_run_id, writer_gone  # pyright: ignore[reportPrivateUsage]
from helikon.core.session.codec import encode_event
from helikon.core.session.compaction import CompactingSession
from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT, close_interrupted_turn
from helikon.runtime import AsyncioRunner, RetryPolicy
from helikon.testing import MockModel, text_turn, tool_call_turn

DURABLE = RunConfig(durable=True)
FAST = RetryPolicy(max_attempts=3, base_delay=0.001, jitter=0)


class Outage(MemorySession):
    """A MemorySession that cannot be reached while `down` (and counts the appends it refuses)."""

    def __init__(self, events: Sequence[SessionEvent] = ()) -> None:
        super().__init__(events)
        self.down = False
        self.down_for = 0  # refuse this many appends, then come back
        self.refused = 0

    async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
        if self.down or self.down_for:
            self.down_for = max(0, self.down_for - 1)
            self.refused += 1
            raise SessionUnavailable("the store cannot be reached")
        await super().append(events, **kwargs)


class Refusing(MemorySession):
    """A MemorySession that refuses what a real store refuses: a NUL (as `jsonb`), or more words."""

    def __init__(self, *words: str) -> None:
        super().__init__()
        self.words = ("\x00", *words)

    async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
        for event in events:
            texts = strings(json.loads(encode_event(event)))
            if any(word in text for text in texts for word in self.words):
                raise SessionBackendError(f"cannot store {event.type}: it holds what this store refuses")
        await super().append(events, **kwargs)


def strings(value: Any) -> list[str]:
    """Every string (keys too) in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        pairs: dict[str, Any] = value
        return [text for key, item in pairs.items() for text in [key, *strings(item)]]
    if isinstance(value, list):
        items: list[Any] = value
        return [text for item in items for text in strings(item)]
    return []


def weather(session_down: Outage | None = None, *, result: str = "12 C") -> LlmAgent[None]:
    @tool
    async def lookup(city: str) -> str:
        """Look up a city's weather."""
        if session_down is not None:
            session_down.down = True  # the store goes away while the tool runs
        return f"{city}: {result}"

    model = MockModel.with_scripts(
        [tool_call_turn("lookup", {"city": "Oslo"}, call_id="c1"), text_turn("Mild.")]
    )
    return LlmAgent[None](name="weather", model=model, tools=[lookup])


def ctx(session: Any) -> RunContext[None]:
    return RunContext.ephemeral(None).with_session(session)


async def kinds(session: MemorySession) -> list[str]:
    return [entry.event.type for entry in await session.events()]


def turns_of(events: list[SessionEvent]) -> list[list[str]]:
    """The log cut into turns; fails if an event is outside a turn or turns overlap."""
    turns: list[list[str]] = []
    open_run: str | None = None
    for event in events:
        if isinstance(event, TurnOpened):
            assert open_run is None, f"turn {event.run_id} opened inside turn {open_run}"
            open_run = event.run_id
            turns.append([])
        elif isinstance(event, TurnClosed):
            assert event.run_id == open_run, f"turn {event.run_id} closed inside turn {open_run}"
            open_run = None
        else:
            assert open_run is not None, f"{event.type} outside any turn"
            turns[-1].append(event.type)
    assert open_run is None
    return turns


# --- 11: a run that could not be stored says so --------------------------------------------------


async def test_a_run_that_could_not_be_stored_says_what_is_missing_before_it_ends() -> None:
    session = Outage()
    runner = AsyncioRunner[None](persist_retry=FAST)
    events = [e async for e in runner.run_streamed(weather(session), "Weather?", ctx(session), DURABLE)]
    failed, last = events[-2], events[-1]
    assert isinstance(failed, PersistFailed) and isinstance(last, RunCompleted)
    assert failed.unsaved == ("tool_returned", "assistant_message", "turn_closed")
    assert failed.held and "cannot be reached" in failed.error
    result = await runner.run(weather(), "Weather?", ctx(MemorySession()), DURABLE)
    assert result.persisted and result.persist_failure is None  # a run stored whole says so too


async def test_the_result_says_the_run_was_not_persisted() -> None:
    session = Outage()
    result = await AsyncioRunner[None](persist_retry=FAST).run(
        weather(session), "Weather?", ctx(session), DURABLE
    )
    assert result.final_output == "Mild." and not result.persisted
    assert result.persist_failure is not None and result.persist_failure.unsaved[-1] == "turn_closed"


async def test_the_end_of_a_run_retries_with_bounded_backoff() -> None:
    session = Outage()
    await AsyncioRunner[None](persist_retry=FAST).run(weather(session), "Weather?", ctx(session), DURABLE)
    # One attempt when the tool returned, one before the second model call, then
    # FAST.max_attempts at the end.
    assert session.refused == 2 + FAST.max_attempts


async def test_a_store_back_within_the_retries_loses_nothing() -> None:
    session = Outage()

    @tool
    async def lookup(city: str) -> str:
        """Look up a city's weather."""
        session.down_for = 3  # the next write and two retries fail; the third retry goes through
        return "12 C"

    model = MockModel.with_scripts(
        [tool_call_turn("lookup", {"city": "Oslo"}, call_id="c1"), text_turn("Mild.")]
    )
    agent = LlmAgent[None](name="w", model=model, tools=[lookup])
    retry = RetryPolicy(max_attempts=5, base_delay=0.001, jitter=0)
    result = await AsyncioRunner[None](persist_retry=retry).run(agent, "Weather?", ctx(session), DURABLE)
    assert result.persisted
    assert turns_of([e.event for e in await session.events()]) == [
        [
            "user_message",
            "request_header",
            "tool_called",
            "tools_started",
            "tool_returned",
            "assistant_message",
        ]
    ]


async def test_a_strict_runner_fails_a_run_it_could_not_store() -> None:
    session = Outage()
    runner = AsyncioRunner[None](persist_retry=FAST, strict=True)
    with pytest.raises(RunError) as failed:
        await runner.run(weather(session), "Weather?", ctx(session), DURABLE)
    assert failed.value.kind == "session_error" and failed.value.error.cause == "not_persisted"
    assert "3 of its events are not stored" in str(failed.value)
    assert failed.value.error.final_text == "Mild."  # the answer is not lost to the caller


async def test_the_next_run_writes_the_held_events_first_so_it_reports_no_unknown_outcome() -> None:
    session = Outage()
    runner = AsyncioRunner[None](persist_retry=FAST)
    first = await runner.run(weather(session), "Weather in Oslo?", ctx(session), DURABLE)
    assert not first.persisted
    session.down = False  # the store is back; this process still holds the missing events
    model = MockModel.with_scripts([text_turn("As I said: mild.")])
    second = await runner.run(LlmAgent[None](name="weather", model=model), "And now?", ctx(session), DURABLE)
    assert second.persisted
    log = [e.event for e in await session.events()]
    assert [t[-1] for t in turns_of(log)] == ["assistant_message", "assistant_message"]
    assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["completed", "completed"]
    results = [e for e in log if isinstance(e, ToolReturned)]
    assert [(r.call_id, r.is_error, r.content) for r in results] == [
        ("c1", False, (TextPart(text="Oslo: 12 C"),))
    ]
    sent = model.requests[0].messages
    assert all(OUTCOME_UNKNOWN_TEXT not in getattr(m, "text", "") for m in sent)
    assert [m.type for m in sent] == ["user", "tool_call", "tool_result", "assistant", "user"]


async def test_a_next_run_that_cannot_write_the_held_events_does_not_start() -> None:
    session = Outage()
    runner = AsyncioRunner[None](persist_retry=FAST)
    await runner.run(weather(session), "Weather?", ctx(session), DURABLE)
    model = MockModel.with_scripts([text_turn("never")])
    with pytest.raises(RunError) as failed:
        await runner.run(LlmAgent[None](name="w", model=model), "And now?", ctx(session), DURABLE)
    assert failed.value.kind == "session_error" and "previous run's 3 event(s)" in str(failed.value)
    assert model.requests == []
    session.down = False
    await runner.run(
        LlmAgent[None](name="w", model=MockModel.with_scripts([text_turn("ok")])), "?", ctx(session)
    )
    assert [e.event.outcome for e in await session.events() if isinstance(e.event, TurnClosed)] == [
        "completed"
    ]


async def test_a_failed_append_after_a_memory_run_is_retried_and_reported() -> None:
    session = Outage()
    session.down = True
    result = await AsyncioRunner[None](persist_retry=FAST).run(weather(), "Weather?", ctx(session))
    assert result.final_output == "Mild." and not result.persisted
    assert session.refused == FAST.max_attempts


# --- 9: content a store refuses never blocks what follows ----------------------------------------


async def test_a_result_the_store_refuses_is_stored_plain_and_the_run_goes_on() -> None:
    session = Refusing()
    result = await AsyncioRunner[None]().run(weather(result="a\x00b"), "Weather?", ctx(session), DURABLE)
    assert result.persisted
    log = [e.event for e in await session.events()]
    assert turns_of(log)[0][-2:] == ["tool_returned", "assistant_message"]
    [returned] = [e for e in log if isinstance(e, ToolReturned)]
    assert returned.content == (TextPart(text="Oslo: a\\u0000b"),) and not returned.is_error


async def test_a_result_refused_even_plain_is_replaced_by_a_stored_error_result() -> None:
    session = Refusing("\\u0000")  # it refuses the plain copy's text too
    result = await AsyncioRunner[None]().run(weather(result="a\x00b"), "Weather?", ctx(session), DURABLE)
    assert result.persisted
    log = [e.event for e in await session.events()]
    [returned] = [e for e in log if isinstance(e, ToolReturned)]
    assert returned.is_error and returned.call_id == "c1" and returned.name == "lookup"
    assert "could not be stored" in returned.content[0].text  # type: ignore[union-attr]
    assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["completed"]


async def test_a_refused_event_with_nothing_awkward_in_it_is_kept_as_if_the_store_were_down() -> None:
    session = Refusing("12 C")  # a store failing on this event: not content a copy could fix
    runner = AsyncioRunner[None](persist_retry=FAST)
    result = await runner.run(weather(), "Weather?", ctx(session), DURABLE)
    failure = result.persist_failure
    assert failure is not None and failure.held
    assert failure.unsaved == ("tool_returned", "assistant_message", "turn_closed")
    assert all(not isinstance(e.event, ToolReturned) for e in await session.events())  # no stand-in


async def test_a_non_utf8_file_name_and_arguments_too_deep_to_encode_are_stored() -> None:
    name = b"report-\xff.txt".decode("utf-8", "surrogateescape")

    @tool
    async def listdir(path: str) -> str:
        """List a directory."""
        return f"{name}\nnotes.md"

    deep: Any = 0
    for _ in range(400):
        deep = [deep]
    model = MockModel.with_scripts(
        [
            tool_call_turn("listdir", {"path": "."}, call_id="c1"),
            tool_call_turn("listdir", {"path": ".", "extra": deep}, call_id="c2"),
            text_turn("Two files."),
        ]
    )
    session = MemorySession()  # stored in memory as given; the codec makes every event encodable
    agent = LlmAgent[None](name="files", model=model, tools=[listdir])
    result = await AsyncioRunner[None]().run(agent, "What is here?", ctx(session), DURABLE)
    assert result.persisted
    for entry in await session.events():
        encode_event(entry.event).encode("utf-8")


# --- 12: runs on one session never interleave ----------------------------------------------------


def gated(gate: asyncio.Event, name: str = "first") -> tuple[LlmAgent[None], MockModel]:
    @tool
    async def wait(city: str) -> str:
        """Wait for the gate."""
        await gate.wait()
        return "done"

    model = MockModel.with_scripts(
        [tool_call_turn("wait", {"city": "x"}, call_id=f"{name}-1"), text_turn("ok")]
    )
    return LlmAgent[None](name=name, model=model, tools=[wait]), model


async def until_tools_started(session: MemorySession) -> None:
    for _ in range(10_000):
        if any(isinstance(e.event, ToolsStarted) for e in await session.events()):
            return
        await asyncio.sleep(0)
    raise AssertionError("the first run's tool never started")


async def test_concurrent_runs_through_one_runner_take_turns() -> None:
    session = MemorySession()
    runner = AsyncioRunner[None]()

    @tool
    async def lookup(city: str) -> str:
        """Look up."""
        await asyncio.sleep(0)
        return f"{city}: ok"

    def agent(n: int) -> LlmAgent[None]:
        model = MockModel.with_scripts(
            [tool_call_turn("lookup", {"city": str(n)}, call_id=f"c{n}"), text_turn("ok")]
        )
        return LlmAgent[None](name="a", model=model, tools=[lookup])

    await asyncio.gather(*(runner.run(agent(n), f"q{n}", ctx(session), DURABLE) for n in range(20)))
    assert len(turns_of([e.event for e in await session.events()])) == 20


async def test_a_run_on_a_session_busy_in_this_runner_fails_at_once_with_on_busy_fail() -> None:
    gate = asyncio.Event()
    session = MemorySession()
    runner = AsyncioRunner[None](on_busy="fail")
    first, _ = gated(gate)
    task = asyncio.ensure_future(runner.run(first, "one", ctx(session), DURABLE))
    await until_tools_started(session)
    with pytest.raises(RunError) as busy:
        await runner.run(weather(), "two", ctx(session), DURABLE)
    assert busy.value.kind == "session_error" and busy.value.error.cause == "busy"
    assert "another run of this runner is in progress" in str(busy.value)
    gate.set()
    await task
    assert len(turns_of([e.event for e in await session.events()])) == 1


async def test_another_runners_live_turn_is_waited_for_or_refused_per_on_busy() -> None:
    gate = asyncio.Event()
    session = MemorySession()
    first, _ = gated(gate)
    task = asyncio.ensure_future(AsyncioRunner[None]().run(first, "one", ctx(session), DURABLE))
    await until_tools_started(session)
    refused_model = MockModel.with_scripts([text_turn("never")])
    with pytest.raises(RunError) as busy:
        await AsyncioRunner[None](on_busy="fail").run(
            LlmAgent[None](name="b", model=refused_model), "two", ctx(session), DURABLE
        )
    assert busy.value.error.cause == "busy" and "has its turn open" in str(busy.value)
    assert refused_model.requests == []
    waiting_model = MockModel.with_scripts([text_turn("after you")])
    waiting = asyncio.ensure_future(
        AsyncioRunner[None]().run(
            LlmAgent[None](name="c", model=waiting_model), "three", ctx(session), DURABLE
        )
    )
    await asyncio.sleep(0.2)
    assert not waiting.done() and waiting_model.requests == []
    gate.set()
    await asyncio.wait_for(asyncio.gather(task, waiting), timeout=30)
    log = [e.event for e in await session.events()]
    assert len(turns_of(log)) == 2
    assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["completed", "completed"]
    assert [m.type for m in waiting_model.requests[0].messages][-2:] == ["assistant", "user"]


def dead_pid() -> int:
    """The pid of a process of this machine that has exited."""
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    return int(finished.stdout)


def open_turn(run_id: str, *, age: timedelta = timedelta(0)) -> list[SessionEvent]:
    ts = datetime.now(UTC) - age
    return [
        TurnOpened(run_id=run_id, agent="payer", ts=ts),
        UserMessageEvent(content=(TextPart(text="pay invoice 7"),), ts=ts),
        ToolCalled(call_id="p1", name="pay", args={"invoice": 7}, ts=ts),
        ToolsStarted(call_ids=("p1",), ts=ts),
    ]


async def test_an_open_turn_whose_process_is_gone_is_repaired_at_once() -> None:
    run_id = f"{'0' * 16}.{_machine()}.{dead_pid()}.deadbeef"
    assert writer_gone(run_id) and not writer_gone(new_run_id()) and not writer_gone("r1")
    session = MemorySession(open_turn(run_id))  # written just now, by a process that died
    model = MockModel.with_scripts([text_turn("Let me check first.")])
    runner = AsyncioRunner[None](on_busy="fail")  # nothing to wait for: it would fail if it thought so
    await runner.run(LlmAgent[None](name="payer", model=model), "Did it go?", ctx(session), DURABLE)
    closed = [e.event.outcome for e in await session.events() if isinstance(e.event, TurnClosed)]
    assert closed == ["interrupted", "completed"]


async def test_an_unknown_writers_open_turn_counts_as_live_until_it_is_silent_for_stale_turn_after() -> None:
    recent = MemorySession(open_turn("r1"))
    with pytest.raises(RunError) as busy:
        await AsyncioRunner[None](on_busy="fail").run(weather(), "?", ctx(recent), DURABLE)
    assert busy.value.error.cause == "busy" and "stale_turn_after=30 s" in str(busy.value)
    stale = MemorySession(open_turn("r1", age=timedelta(seconds=31)))
    await AsyncioRunner[None](on_busy="fail").run(weather(), "?", ctx(stale), DURABLE)
    quick = MemorySession(open_turn("r1"))
    await AsyncioRunner[None](on_busy="fail", stale_turn_after=0).run(weather(), "?", ctx(quick), DURABLE)
    for session in (stale, quick):
        outcomes = [e.event.outcome for e in await session.events() if isinstance(e.event, TurnClosed)]
        assert outcomes == ["interrupted", "completed"]


async def test_a_waiting_run_gives_up_when_its_timeout_expires() -> None:
    session = MemorySession(open_turn("r1"))
    with pytest.raises(RunError) as timed_out:
        await AsyncioRunner[None]().run(weather(), "?", ctx(session), RunConfig(durable=True, timeout=0.2))
    assert timed_out.value.kind == "timeout"
    assert await kinds(session) == ["turn_opened", "user_message", "tool_called", "tools_started"]


async def test_a_writer_that_appends_after_the_snapshot_is_seen_before_the_run_starts() -> None:
    class Racing(MemorySession):
        """Another writer appends right after this run read the history."""

        raced = False

        async def snapshot(self) -> ConversationSnapshot:
            snapshot = await super().snapshot()
            if not self.raced:
                self.raced = True
                await self.append([UserMessageEvent(content=(TextPart(text="(from another writer)"),))])
            return snapshot

    session = Racing()
    model = MockModel.with_scripts([text_turn("seen")])
    await AsyncioRunner[None]().run(LlmAgent[None](name="a", model=model), "hi", ctx(session), DURABLE)
    sent = [getattr(m, "text", None) for m in model.requests[0].messages]
    assert sent == ["(from another writer)", "hi"]  # read again: the model sees what came first
    assert await kinds(session) == [
        "user_message",
        "turn_opened",
        "user_message",
        "request_header",
        "assistant_message",
        "turn_closed",
    ]


async def test_a_run_whose_turn_another_writer_closed_stops_writing_instead_of_interleaving() -> None:
    session = MemorySession()

    @tool
    async def lookup(city: str) -> str:
        """Look up."""
        await close_interrupted_turn(session)  # another process took the run for crashed
        return "12 C"

    model = MockModel.with_scripts(
        [tool_call_turn("lookup", {"city": "Oslo"}, call_id="c1"), text_turn("Mild.")]
    )
    agent = LlmAgent[None](name="w", model=model, tools=[lookup])
    result = await AsyncioRunner[None](persist_retry=FAST).run(agent, "Weather?", ctx(session), DURABLE)
    failure = result.persist_failure
    assert failure is not None and not failure.held and "closed this run's turn" in failure.error
    assert failure.unsaved == ("tool_returned", "assistant_message", "turn_closed")
    log = [e.event for e in await session.events()]
    assert turns_of(log) == [
        ["user_message", "request_header", "tool_called", "tools_started", "tool_returned"]
    ]
    assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["interrupted"]


async def test_a_compaction_marker_appended_by_the_session_itself_is_stepped_over() -> None:
    summarizer = MockModel.with_scripts([text_turn("earlier: weather talk")] * 4)
    session = CompactingSession(MemorySession(), summarizer, threshold=1)
    result = await AsyncioRunner[None]().run(weather(), "Weather?", ctx(session), DURABLE)
    assert result.persisted
    log = [e.event for e in await session.events()]
    assert log[2].type == "compacted"  # right after the run's first write: the next one steps over it
    assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["completed"]


async def test_a_run_key_names_the_turn_in_the_log() -> None:
    session = MemorySession()
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]))
    ctx = RunContext.ephemeral(None).with_session(session)
    await AsyncioRunner().run_streamed(agent, "go", ctx, RunConfig(durable=True), run_key="srv-42").collect()
    [opened] = [e.event for e in await session.events() if isinstance(e.event, TurnOpened)]
    assert opened.run_id.startswith("srv-42.") and not writer_gone(opened.run_id)
    for bad in ("a.b", "", "x" * 65, "sp ace"):
        with pytest.raises(UserError, match="a run key is"):
            new_run_id(bad)
