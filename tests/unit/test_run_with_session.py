"""`agent.run(q, session=s)`: a session is read and written by one call, never silently ignored.

The run goes through the thread's default runner (`AsyncioRunner`): the session's history in
front, the events written (durably, with turn markers, on SQLite), and nested runs (handoff
targets, workflow steps, agents as tools) written once, as part of the run that holds them.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from helikon import (
    AgentAsTool,
    LlmAgent,
    MemorySession,
    RunConfig,
    RunContext,
    SequentialAgent,
    SwarmAgent,
    UserError,
)
from helikon.core._internal.sync import run_coroutine
from helikon.core.session import (
    AssistantMessageEvent,
    HandoffOccurred,
    SessionEvent,
    ToolReturned,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)
from helikon.core.session.turn import SessionRunner, default_session_runner, needs_turn
from helikon.runtime import AsyncioRunner
from helikon.sessions.sqlite import SqliteSession, open_session
from helikon.testing import Delay, MockModel, text_turn, tool_call_turn


def agent(*turns: Any, name: str = "a") -> tuple[LlmAgent[None], MockModel]:
    model = MockModel.with_scripts(list(turns))
    return LlmAgent[None](name=name, model=model), model


async def stored(session: Any) -> list[SessionEvent]:
    return [entry.event for entry in await session.events()]


def texts(events: list[SessionEvent]) -> list[str]:
    """The text of each stored message, in order."""
    return [
        "".join(getattr(part, "text", "") for part in e.content)
        for e in events
        if isinstance(e, UserMessageEvent | AssistantMessageEvent)
    ]


def kinds(events: list[SessionEvent], *types: type) -> list[type]:
    return [type(e) for e in events if isinstance(e, types)]


# --- one call ----------------------------------------------------------------------------------


def test_run_sync_with_a_session_keeps_the_conversation() -> None:
    chat, model = agent(text_turn("Hi Ada."), text_turn("You are Ada."))
    session = MemorySession()
    chat.run_sync("I am Ada.", session=session)
    second = chat.run_sync("Who am I?", session=session)
    assert second.final_output == "You are Ada."
    assert [getattr(m, "text", None) for m in model.requests[1].messages] == [
        "I am Ada.",
        "Hi Ada.",
        "Who am I?",
    ]
    events = run_coroutine(stored(session))
    assert kinds(events, UserMessageEvent, AssistantMessageEvent) == [
        UserMessageEvent,
        AssistantMessageEvent,
        UserMessageEvent,
        AssistantMessageEvent,
    ]


async def test_await_run_with_a_sqlite_session_writes_durably(tmp_path: Path) -> None:
    chat, model = agent(text_turn("one"), text_turn("two"))
    async with await open_session("u-42", path=tmp_path / "chat.db") as session:
        assert (await chat.run("first", session=session)).final_output == "one"
        assert (await chat.run("second", session=session)).final_output == "two"
        events = await stored(session)
    assert kinds(events, TurnOpened, TurnClosed) == [TurnOpened, TurnClosed, TurnOpened, TurnClosed]
    assert [getattr(m, "text", None) for m in model.requests[1].messages] == ["first", "one", "second"]


async def test_a_durable_session_on_the_context_is_written_without_session_kw(tmp_path: Path) -> None:
    # Before: a bare run with a SQLite session on its context wrote nothing.
    chat, _ = agent(text_turn("stored"))
    async with await open_session("s", path=tmp_path / "chat.db") as session:
        ctx = RunContext.ephemeral(None).with_session(session)
        await chat.run("hello", context=ctx)
        events = await stored(session)
    assert texts(events) == ["hello", "stored"]


async def test_a_bare_run_on_a_memory_context_stays_bare() -> None:
    chat, _ = agent(text_turn("hi"))
    ctx = RunContext.ephemeral(None)
    assert not needs_turn(ctx, session_given=False)
    result = await chat.run("hello", context=ctx)
    assert result.input is not None  # the bare driver's result (a runner's knows no input)
    assert await ctx.session.events() == []


def test_run_sync_serves_a_loop_bound_session_across_calls(tmp_path: Path) -> None:
    # The session's connection is made on the thread's run_sync loop and serves every call.
    session: SqliteSession = run_coroutine(open_session("s", path=tmp_path / "chat.db"))
    chat, _ = agent(text_turn("one"), text_turn("two"), text_turn("three"))
    try:
        for question in ("a", "b", "c"):
            chat.run_sync(question, session=session)
        events = run_coroutine(stored(session))
    finally:
        run_coroutine(session.aclose())
    assert len(kinds(events, UserMessageEvent)) == 3


def test_each_thread_has_its_own_default_session_runner() -> None:
    runners: list[object] = []

    def grab() -> None:
        runners.append(default_session_runner())
        runners.append(default_session_runner())

    thread = threading.Thread(target=grab)
    thread.start()
    thread.join()
    assert runners[0] is runners[1]
    assert isinstance(runners[0], SessionRunner)
    assert default_session_runner() is not runners[0]


def test_history_and_a_session_with_a_conversation_do_not_mix() -> None:
    chat, _ = agent(text_turn("one"), text_turn("two"))
    session = MemorySession()
    first = chat.run_sync("first", session=session)
    with pytest.raises(UserError, match="history"):
        chat.run_sync("second", session=session, history=first)


# --- nested runs write once ----------------------------------------------------------------------


async def test_a_handoff_is_written_once(tmp_path: Path) -> None:
    billing, _ = agent(text_turn("Refund issued."), name="billing")
    triage = LlmAgent[None](
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_billing", {})]),
        handoffs=[billing],
    )
    async with await open_session("s", path=tmp_path / "chat.db") as session:
        result = await triage.run("Refund me", session=session)
        events = await stored(session)
    assert result.final_output == "Refund issued."
    assert kinds(events, UserMessageEvent, HandoffOccurred, AssistantMessageEvent, TurnOpened) == [
        TurnOpened,
        UserMessageEvent,
        HandoffOccurred,
        AssistantMessageEvent,
    ]


async def test_workflow_steps_and_agent_tools_are_written_once(tmp_path: Path) -> None:
    helper, _ = agent(text_turn("42"), name="helper")
    asker = LlmAgent[None](
        name="asker",
        model=MockModel.with_scripts([tool_call_turn("helper", {"input": "6*7?"}), text_turn("It is 42.")]),
        tools=[AgentAsTool(helper)],
    )
    closer, _ = agent(text_turn("Done."), name="closer")
    flow = SequentialAgent[None]("flow").then(asker).then(closer)
    async with await open_session("s", path=tmp_path / "chat.db") as session:
        result = await flow.run("Go", session=session)
        events = await stored(session)
    assert result.final_output == "Done."
    assert kinds(events, TurnOpened, UserMessageEvent) == [TurnOpened, UserMessageEvent]
    assert texts(events) == [
        "Go",
        "It is 42.",
        "Done.",
    ]  # the helper's own "42" is its tool result, not a turn
    assert len([e for e in events if isinstance(e, ToolReturned)]) == 1


def test_a_swarm_run_on_a_session_is_written_once() -> None:
    support, _ = agent(text_turn("Hello from support."), name="support")
    swarm = SwarmAgent[None](name="desk", members=[support], entry="support")
    session = MemorySession()
    swarm.run_sync("Hi", session=session)
    events = run_coroutine(stored(session))
    assert kinds(events, UserMessageEvent, AssistantMessageEvent) == [UserMessageEvent, AssistantMessageEvent]


async def test_a_run_inside_a_runner_is_not_routed_again(tmp_path: Path) -> None:
    chat, _ = agent(text_turn("once"))
    async with await open_session("s", path=tmp_path / "chat.db") as session:
        ctx = RunContext.ephemeral(None).with_session(session)
        await AsyncioRunner[None]().run(chat, "hello", ctx)
        events = await stored(session)
    assert kinds(events, UserMessageEvent, TurnOpened) == [TurnOpened, UserMessageEvent]


async def test_the_runner_enforces_the_timeout_of_a_run_with_a_session() -> None:
    slow = LlmAgent[None](name="slow", model=MockModel.with_scripts([[Delay(5.0), *text_turn("late")]]))
    events = [e async for e in slow.run("hi", session=MemorySession(), config=RunConfig(timeout=0.05))]
    assert events[-1].error.kind == "timeout"  # type: ignore[attr-defined]


def test_concurrent_runs_on_one_session_queue_behind_each_other() -> None:
    chat, model = agent(text_turn("one"), text_turn("two"))
    session = MemorySession()

    async def both() -> None:
        await asyncio.gather(chat.run("first", session=session), chat.run("second", session=session))

    run_coroutine(both())
    # The second run saw the whole first exchange: the runs did not interleave.
    assert len(model.requests[1].messages) == 3


class _Listening:
    """Another runner's observer, as a context inside that runner's run carries it."""

    def request_sent(self, sent: Any) -> None:
        pass

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        pass

    async def tool_returned(self, output: Any) -> None:
        pass


def test_a_run_given_its_own_session_inside_another_run_is_written_there() -> None:
    # E.g. a tool of a run on one session runs an agent on a session of its own.
    notes, _ = agent(text_turn("noted"), name="notes")
    inside_another_run = RunContext.ephemeral(None).with_observer(_Listening())
    own = MemorySession()
    result = notes.run_sync("remember this", context=inside_another_run, session=own)
    assert result.final_output == "noted"
    assert texts(run_coroutine(stored(own))) == ["remember this", "noted"]


async def test_a_bare_run_on_an_ephemeral_context_makes_no_session() -> None:
    from helikon.core.context import _SessionOnFirstRead  # pyright: ignore[reportPrivateUsage]

    ctx = RunContext.ephemeral(None)
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]))
    assert (await agent.run("hello", context=ctx)).final_output == "hi"
    holder = ctx._session  # pyright: ignore[reportPrivateUsage]
    assert isinstance(holder, _SessionOnFirstRead) and holder._session is None  # pyright: ignore[reportPrivateUsage]
    assert not ctx.session_is_durable
    assert RunContext.ephemeral(None).with_session(MemorySession()).session_is_durable is False


def test_a_run_on_a_session_needs_nothing_outside_core() -> None:
    # The turn a run on a session goes in is core's own: no runner from helikon.runtime,
    # planted into core by the facade, is loaded for it.
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from helikon import LlmAgent, MemorySession\n"
        "from helikon.testing import MockModel, text_turn\n"
        "session = MemorySession()\n"
        "agent = LlmAgent(name='a', model=MockModel.with_scripts([text_turn('hi')]))\n"
        "assert agent.run_sync('hello', session=session).final_output == 'hi'\n"
        "print(sorted(m for m in sys.modules if m.startswith('helikon.runtime')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
