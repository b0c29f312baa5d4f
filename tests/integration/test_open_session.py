"""`open_session(url, session_id)` on real stores: one synchronous call, connected on first use.

The handle serves successive synchronous runs (each on the thread's one `run_sync` loop),
`async with`, a second `asyncio.run` (a new loop: it reopens), and two handles on one stored
session are one log to a runner (they take turns instead of conflicting).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from helikon import LlmAgent, RunContext, SessionMetadata, UserError
from helikon.core._internal.sync import run_coroutine
from helikon.core.items import ToolCall
from helikon.core.session import ConversationSnapshot, CustomEvent, Session, SharedLog, check_session
from helikon.runtime import AsyncioRunner
from helikon.sessions import LazySession, open_session
from helikon.testing import MockModel, text_turn
from helikon.testing import session_conformance as conformance

pytestmark = pytest.mark.integration


def _agent(*answers: str) -> LlmAgent[None]:
    return LlmAgent[None](name="chat", model=MockModel.with_scripts([text_turn(a) for a in answers]))


def _texts(snapshot: ConversationSnapshot) -> list[str]:
    return [m.text for m in snapshot.messages if not isinstance(m, ToolCall)]


def _said(session: Session) -> list[str]:
    async def read() -> list[str]:
        return _texts(await session.snapshot())

    return run_coroutine(read())


def _two_sync_runs(url: str) -> list[str]:
    """The issue's script: two synchronous persisted runs on one handle, then a fresh handle reads them."""
    session = open_session(url, "user-42")
    agent = _agent("Hello!", "Hello again!")
    assert agent.run_sync("Hi", session=session).final_output == "Hello!"
    assert agent.run_sync("Again", session=session).final_output == "Hello again!"
    session.close()
    again = open_session(url, "user-42")
    said = _said(again)
    again.close()
    with pytest.raises(UserError, match="is closed"):
        _said(again)
    return said


def test_sqlite_url_serves_successive_sync_runs(tmp_path: Path) -> None:
    said = _two_sync_runs(f"sqlite:///{tmp_path / 'chat.db'}")  # an absolute path: four slashes
    assert said == ["Hi", "Hello!", "Again", "Hello again!"]


def test_relative_and_bare_sqlite_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _two_sync_runs("sqlite:///chat.db") == ["Hi", "Hello!", "Again", "Hello again!"]
    assert (tmp_path / "chat.db").exists()
    bare = open_session("chat.db", "user-42")  # a bare path is the same file
    assert _said(bare)[:1] == ["Hi"]
    assert bare.log_key[0] is open_session("sqlite:///chat.db", "user-42").log_key[0]
    bare.close()
    path_like = open_session(tmp_path / "other.db", "u")  # an os.PathLike too
    run_coroutine(path_like.append([CustomEvent(kind="k", data=1)]))
    path_like.close()
    assert (tmp_path / "other.db").exists()


def test_postgres_url_serves_successive_sync_runs(postgres_dsn: str) -> None:
    # asyncpg's pool belongs to the loop it was made on: the thread's one run_sync loop.
    assert _two_sync_runs(postgres_dsn) == ["Hi", "Hello!", "Again", "Hello again!"]
    _two_sync_runs_on_other_session(postgres_dsn.replace("postgresql://", "postgres://", 1))


def _two_sync_runs_on_other_session(url: str) -> None:
    session = open_session(url, "user-43")
    agent = _agent("one", "two")
    for question in ("a", "b"):
        run_coroutine(
            AsyncioRunner[None]().run(agent, question, RunContext.ephemeral(None).with_session(session))
        )
    assert _said(session) == ["a", "one", "b", "two"]
    session.close()


def test_redis_url_serves_successive_sync_runs(redis_url: str) -> None:
    assert _two_sync_runs(redis_url) == ["Hi", "Hello!", "Again", "Hello again!"]


async def test_async_with_closes_what_it_opened(postgres_dsn: str, redis_url: str, tmp_path: Path) -> None:
    for url in (postgres_dsn, redis_url, f"sqlite:///{tmp_path / 'a.db'}", "memory://"):
        async with open_session(url, "u-1") as session:
            assert check_session(session) is session
            assert isinstance(session, SharedLog)
            assert session.durable is (url != "memory://") and session.supports_ids
            await session.append([CustomEvent(kind="x")])
            await session.set_metadata(title="T", expected_version=0)
            assert await session.metadata() == SessionMetadata(title="T", version=1)
            assert [e.event.type for e in await session.events()] == ["custom"]
            inner = session._inner  # pyright: ignore[reportPrivateUsage]
            assert inner is not None
        assert "closed" in repr(session)
        if url != "memory://":
            assert inner._closed  # pyright: ignore[reportPrivateUsage]
        with pytest.raises(UserError, match="is closed"):
            await session.events()
        reopened = open_session(url, "u-2")
        await reopened.events()
        with pytest.raises(UserError, match=r"running event loop: `await session.aclose\(\)`"):
            reopened.close()
        await reopened.aclose()


async def test_await_agent_run_with_a_handle(postgres_dsn: str) -> None:
    async with open_session(postgres_dsn, "u-async") as session:
        agent = _agent("one", "two")
        await agent.run("a", session=session)
        await agent.run("b", session=session)
        assert _texts(await session.snapshot()) == ["a", "one", "b", "two"]
        kinds = [e.event.type for e in await session.events()]
        assert kinds.count("turn_opened") == 2  # durable: written as it went, turn by turn


async def test_two_handles_on_one_session_take_turns(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = open_session(url, "u"), open_session(url, "u")
    assert first.log_key == second.log_key and first.log_key[0] is second.log_key[0]
    assert first.log_key != open_session(url, "v").log_key
    runner = AsyncioRunner[None]()
    agent = _agent("A", "B")
    await asyncio.gather(
        runner.run(agent, "one", RunContext.ephemeral(None).with_session(first)),
        runner.run(agent, "two", RunContext.ephemeral(None).with_session(second)),
    )
    texts = _texts(await first.snapshot())
    assert sorted(texts) == ["A", "B", "one", "two"] and texts[0] in ("one", "two")
    await first.aclose()
    await second.aclose()


def test_a_new_event_loop_reopens_the_handle(tmp_path: Path) -> None:
    session = open_session(f"sqlite:///{tmp_path / 'loops.db'}", "u")
    asyncio.run(session.append([CustomEvent(kind="first")]))
    asyncio.run(session.append([CustomEvent(kind="second")]))  # the first loop is closed: reopened
    kinds = asyncio.run(session.events())
    assert [e.event.kind for e in kinds if isinstance(e.event, CustomEvent)] == ["first", "second"]
    asyncio.run(session.aclose())


def test_bad_urls_and_options_say_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        UserError, match=r"unknown session URL scheme 'mysql://'.*sqlite:///<path>, postgresql://"
    ):
        open_session("mysql://localhost/db", "u")
    with pytest.raises(UserError, match="three slashes"):
        open_session("sqlite://chat.db", "u")
    with pytest.raises(UserError, match="memory:// takes nothing"):
        open_session("memory://x", "u")
    with pytest.raises(UserError, match="takes busy_timeout, not pool"):
        open_session("sqlite:///x.db", "u", pool=3)
    with pytest.raises(UserError, match="takes no options, not max_size"):
        open_session("redis://127.0.0.1:1", "u", max_size=3)
    with pytest.raises(UserError, match="session_id must be a non-empty string"):
        open_session("memory://", "")
    with pytest.raises(UserError, match="url must be a session URL"):
        open_session("", "u")
    # A backend whose driver is not installed: the message names the extra.
    monkeypatch.setitem(sys.modules, "asyncpg", None)
    monkeypatch.delitem(sys.modules, "helikon.sessions.postgres", raising=False)
    with pytest.raises(UserError, match=r"pip install 'paigasus-helikon\[sessions-postgres\]'"):
        open_session("postgresql://127.0.0.1/x", "u")
    assert not os.listdir(tmp_path)  # nothing was opened


# The handle passes the in-process conformance checks itself (over SQLite).
@pytest.mark.parametrize("check", conformance.IN_PROCESS, ids=lambda c: c.__name__)
async def test_lazy_handles_conform(check: conformance.Check, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'conform.db'}"

    async def open_(session_id: str) -> LazySession:
        return open_session(url, session_id)

    await check(conformance.ConformanceBackend(name="lazy sqlite", open=open_))
