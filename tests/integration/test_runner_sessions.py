"""The runner on real stores: awkward content, a server that goes away mid-run, concurrent runs.

A tool output holding a non-UTF-8 file name and model arguments nested hundreds deep are
stored on SQLite, PostgreSQL and Redis without blocking the rest of the run; a Redis server
stopped while a tool runs makes the run say what it could not store, and the next run writes
it first; fifty concurrent runs on one PostgreSQL session take turns, and a second runner on
the same stored session waits for, or refuses, a run in progress.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from helikon import LlmAgent, ModelRequest, PersistFailed, RunCompleted, RunContext, tool
from helikon.core.exceptions import RunError
from helikon.core.items import TextPart
from helikon.core.run.tool_args import DEPTH_CUT
from helikon.core.session import (
    Session,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
)
from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT
from helikon.runtime import AsyncioRunner, RetryPolicy
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
from helikon.testing import FunctionModel, MockModel, text_turn, tool_call_turn
from helikon.testing.servers import RedisServer

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, jitter=0)
NAME = b"report-\xff.txt".decode("utf-8", "surrogateescape")  # as os.listdir gives a non-UTF-8 name


def ctx(session: Session) -> RunContext[None]:
    return RunContext.ephemeral(None).with_session(session)


async def log_of(session: Session) -> list[SessionEvent]:
    return [entry.event for entry in await session.events()]


def turns_of(events: list[SessionEvent]) -> list[tuple[str, list[str]]]:
    """The log cut into turns (run id, event types); fails if an event is outside a turn or turns overlap."""
    turns: list[tuple[str, list[str]]] = []
    open_run: str | None = None
    for event in events:
        if isinstance(event, TurnOpened):
            assert open_run is None, f"turn {event.run_id} opened inside turn {open_run}"
            open_run = event.run_id
            turns.append((event.run_id, []))
        elif isinstance(event, TurnClosed):
            assert event.run_id == open_run, f"turn {event.run_id} closed inside turn {open_run}"
            open_run = None
        else:
            assert open_run is not None, f"{event.type} outside any turn"
            turns[-1][1].append(event.type)
    assert open_run is None, f"turn {open_run} left open"
    return turns


# --- 9: what a tool or a model produces is always stored -----------------------------------------


@tool
async def listdir(path: str, depth: list[Any] | None = None) -> str:
    """List a directory."""
    return f"{NAME}\nnotes.md"


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


async def awkward_run(session: Session) -> tuple[list[SessionEvent], list[Any]]:
    """Two listings (the second with arguments 400 deep), an answer, then a second run; the log and
    what the second run's model was sent."""
    first = MockModel.with_scripts(
        [
            tool_call_turn("listdir", {"path": "."}, call_id="c1"),
            tool_call_turn("listdir", {"path": ".", "depth": deep(400)}, call_id="c2"),
            text_turn("Two files, one with an odd name."),
        ]
    )
    runner = AsyncioRunner[None](persist_retry=FAST)
    result = await runner.run(
        LlmAgent[None](name="files", model=first, tools=[listdir]), "What is here?", ctx(session)
    )
    assert result.persisted, result.persist_failure
    second = MockModel.with_scripts([text_turn("As listed.")])
    await runner.run(LlmAgent[None](name="files", model=second), "And again?", ctx(session))
    return await log_of(session), list(second.requests[0].messages)


def check_awkward(log: list[SessionEvent], sent: list[Any]) -> None:
    turns = turns_of(log)
    assert [kinds[-1] for _, kinds in turns] == ["assistant_message", "assistant_message"]
    assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["completed", "completed"]
    results = [e for e in log if isinstance(e, ToolReturned)]
    assert [r.call_id for r in results] == ["c1", "c2"]
    text = results[0].content[0].text  # type: ignore[union-attr]
    assert text == f"{NAME}\nnotes.md"  # every store keeps the lone surrogate exactly
    [_, deep_call] = [e for e in log if isinstance(e, ToolCalled)]
    # Past the argument depth limit: the call keeps its first characters and says so, and the
    # model was told its arguments were invalid (values too deep to store at all are the codec's
    # test: tests/unit/test_codec_unusual.py).
    assert isinstance(deep_call.args, str) and deep_call.args.endswith(DEPTH_CUT)
    assert results[1].is_error
    assert all(OUTCOME_UNKNOWN_TEXT not in getattr(m, "text", "") for m in sent)
    assert [m.type for m in sent] == [
        "user",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "assistant",
        "user",
    ]


async def test_awkward_content_is_stored_on_sqlite(tmp_path: Path) -> None:
    async with await SqliteDatabase.open(tmp_path / "s.db") as db:
        check_awkward(*await awkward_run(await SqliteSession.open(db, "files")))


async def test_awkward_content_is_stored_on_redis(redis_url: str) -> None:
    async with await RedisSession.connect(redis_url, "files") as session:
        check_awkward(*await awkward_run(session))


async def test_awkward_content_is_stored_on_postgres(postgres_pool: asyncpg.Pool) -> None:
    # The json column keeps the codec's text, lone-surrogate escapes included.
    check_awkward(*await awkward_run(await PostgresSession.open(postgres_pool, "files")))


# --- 11: a run that could not be saved says so ---------------------------------------------------


@pytest.fixture
async def outage() -> AsyncIterator[tuple[RedisServer, RedisSession]]:
    """A Redis server of the test's own (to stop and start), and a session on it."""
    async with RedisServer() as server, await RedisSession.connect(server.url, "outage") as session:
        yield server, session


def stopping(server: RedisServer) -> LlmAgent[None]:
    """An agent whose tool stops the server while it runs."""

    @tool
    async def pay(invoice: int) -> str:
        """Pay an invoice."""
        await asyncio.to_thread(server.stop, keep_data=True)  # SHUTDOWN SAVE: the data survives
        return f"invoice {invoice} paid"

    model = MockModel.with_scripts([tool_call_turn("pay", {"invoice": 7}, call_id="p1"), text_turn("Paid.")])
    return LlmAgent[None](name="payer", model=model, tools=[pay])


class FirstFailedWrite(logging.Handler):
    """Sets `seen` when the runner logs its first failed write."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "could not append" in record.getMessage():
            self.seen.set()


async def test_a_run_whose_server_went_down_says_what_was_not_stored_and_the_next_run_writes_it_first(
    outage: tuple[RedisServer, RedisSession],
) -> None:
    server, session = outage
    runner = AsyncioRunner[None](persist_retry=FAST)
    events = [e async for e in runner.run_streamed(stopping(server), "Pay invoice 7.", ctx(session))]
    failed, done = events[-2], events[-1]
    assert isinstance(done, RunCompleted)  # the run did what it was asked...
    assert isinstance(failed, PersistFailed)  # ...and says what of it is not in the session
    assert failed.unsaved == ("tool_returned", "assistant_message", "turn_closed") and failed.held
    assert "Redis is unavailable" in failed.error
    await asyncio.to_thread(server.start)
    model = MockModel.with_scripts([text_turn("It went through.")])
    second = await runner.run(LlmAgent[None](name="payer", model=model), "Did it go through?", ctx(session))
    assert second.persisted
    log = await log_of(session)
    assert [kinds for _, kinds in turns_of(log)] == [
        [
            "user_message",
            "request_header",
            "tool_called",
            "tools_started",
            "tool_returned",
            "assistant_message",
        ],
        ["user_message", "request_header", "assistant_message"],  # a new header: this agent has no tools
    ]
    [paid] = [e for e in log if isinstance(e, ToolReturned)]
    assert paid.content == (TextPart(text="invoice 7 paid"),) and not paid.is_error  # not "outcome unknown"
    assert all(OUTCOME_UNKNOWN_TEXT not in getattr(m, "text", "") for m in model.requests[0].messages)


async def test_a_strict_runner_fails_a_run_it_could_not_store(
    outage: tuple[RedisServer, RedisSession],
) -> None:
    server, session = outage
    with pytest.raises(RunError) as failed:
        await AsyncioRunner[None](persist_retry=FAST, strict=True).run(stopping(server), "Pay.", ctx(session))
    assert failed.value.kind == "session_error" and failed.value.error.cause == "not_persisted"
    assert failed.value.error.final_text == "Paid."


async def test_a_server_back_within_the_retries_loses_nothing(
    outage: tuple[RedisServer, RedisSession],
) -> None:
    server, session = outage
    failed_write = FirstFailedWrite()
    logger = logging.getLogger("helikon.runtime")
    logger.addHandler(failed_write)

    async def restart_once_a_write_failed() -> None:
        await failed_write.seen.wait()
        await asyncio.to_thread(server.start)

    patient = RetryPolicy(max_attempts=400, base_delay=0.05, max_delay=0.05, jitter=0)  # a hang guard only
    restart = asyncio.ensure_future(restart_once_a_write_failed())
    try:
        result = await AsyncioRunner[None](persist_retry=patient).run(stopping(server), "Pay.", ctx(session))
        await asyncio.wait_for(restart, timeout=60)
    finally:
        logger.removeHandler(failed_write)
        restart.cancel()
    assert result.persisted
    assert [e.outcome for e in await log_of(session) if isinstance(e, TurnClosed)] == ["completed"]


# --- 12: concurrent runs on one session take turns -----------------------------------------------


def lookup_agent() -> LlmAgent[None]:
    calls = itertools.count()

    @tool
    async def lookup(city: str) -> str:
        """Look up a city."""
        await asyncio.sleep(0.001)
        return f"{city}: 12 C"

    def script(request: ModelRequest) -> Any:
        if request.messages[-1].type == "tool_result":
            return text_turn("Mild.")
        return tool_call_turn("lookup", {"city": "Oslo"}, call_id=f"call-{next(calls)}")

    return LlmAgent[None](name="weather", model=FunctionModel(script), tools=[lookup])


async def test_fifty_concurrent_runs_on_one_postgres_session_never_interleave(
    postgres_pool: asyncpg.Pool,
) -> None:
    await PostgresSession.migrate(postgres_pool)
    agent = lookup_agent()
    runner = AsyncioRunner[None]()
    # Each run opens its own session object, as a server does per request: one stored session.
    runs = [
        runner.run(agent, f"question {n}", ctx(PostgresSession.open_without_migrate(postgres_pool, "shared")))
        for n in range(50)
    ]
    results = await asyncio.wait_for(asyncio.gather(*runs), timeout=300)
    assert all(r.persisted for r in results)
    turns = turns_of(await log_of(PostgresSession.open_without_migrate(postgres_pool, "shared")))
    assert len(turns) == 50 and len({run for run, _ in turns}) == 50
    for _, kinds in turns:
        assert kinds[0] == "user_message"
        assert kinds[-4:] == ["tool_called", "tools_started", "tool_returned", "assistant_message"]


def gated(gate: asyncio.Event) -> LlmAgent[None]:
    @tool
    async def wait(city: str) -> str:
        """Wait for the gate."""
        await gate.wait()
        return "done"

    model = MockModel.with_scripts([tool_call_turn("wait", {"city": "x"}, call_id="w1"), text_turn("ok")])
    return LlmAgent[None](name="first", model=model, tools=[wait])


async def test_a_second_runner_on_the_stored_session_waits_or_fails_per_on_busy(postgres_dsn: str) -> None:
    # Two pools, two runners, a session object each: as two processes on one stored session.
    async with (
        asyncpg.create_pool(postgres_dsn, min_size=1, max_size=2) as one,
        asyncpg.create_pool(postgres_dsn, min_size=1, max_size=2) as other,
    ):
        first = await PostgresSession.open(one, "busy")
        gate = asyncio.Event()
        running = asyncio.ensure_future(AsyncioRunner[None]().run(gated(gate), "one", ctx(first)))
        for _ in range(3000):  # until the first run's tool is running
            if any(isinstance(e, ToolsStarted) for e in await log_of(first)):
                break
            await asyncio.sleep(0.01)

        refused = MockModel.with_scripts([text_turn("never")])
        with pytest.raises(RunError) as busy:
            await AsyncioRunner[None](on_busy="fail").run(
                LlmAgent[None](name="b", model=refused),
                "two",
                ctx(PostgresSession.open_without_migrate(other, "busy")),
            )
        assert busy.value.kind == "session_error" and busy.value.error.cause == "busy"
        assert "has its turn open" in str(busy.value) and refused.requests == []

        waiting_model = MockModel.with_scripts([text_turn("after you")])
        waiting = asyncio.ensure_future(
            AsyncioRunner[None]().run(
                LlmAgent[None](name="c", model=waiting_model),
                "three",
                ctx(PostgresSession.open_without_migrate(other, "busy")),
            )
        )
        await asyncio.sleep(0.3)
        assert not waiting.done() and waiting_model.requests == []  # it waits its turn
        gate.set()
        await asyncio.wait_for(asyncio.gather(running, waiting), timeout=60)
        log = await log_of(first)
        assert [kinds[-1] for _, kinds in turns_of(log)] == ["assistant_message", "assistant_message"]
        assert [e.outcome for e in log if isinstance(e, TurnClosed)] == ["completed", "completed"]
        assert [m.type for m in waiting_model.requests[0].messages] == [
            "user",
            "tool_call",
            "tool_result",
            "assistant",
            "user",
        ]
