"""A tool's metadata is stored with its result on SQLite, PostgreSQL and Redis, and read back.

A run with a real `ReadTool` on a real sandbox goes through the runner into each store; a
fresh session object reads the log back (the store's own rows, decoded): the `ToolReturned`
carries what the run's `ToolOutputItem` carried, and the conversation the next model call is
sent is the same as without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest

from helikon import LlmAgent, RunContext, ToolOutputItem
from helikon.core.session import Session, ToolReturned
from helikon.runtime import AsyncioRunner
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
from helikon.testing import MockModel, text_turn, tool_call_turn
from helikon.tools import ReadTool, Sandbox

pytestmark = pytest.mark.integration

EXPECTED = {
    "path": "log.txt",
    "bytes": 28,
    "start_line": 2,
    "end_line": 3,
    "total_lines": None,
    "truncated": True,
}


@pytest.fixture
def sandbox(tmp_path: Path) -> Any:
    root = tmp_path / "root"
    root.mkdir()
    (root / "log.txt").write_text("line 1\nline 2\nline 3\nline 4\n")
    with Sandbox.open(root) as box:
        yield box


async def run_and_reread(sandbox: Sandbox, session: Session, reopened: Session) -> tuple[object, ...]:
    """Run a Read into `session`, read the log back through `reopened`: what each of them shows."""
    model = MockModel.with_scripts(
        [tool_call_turn("Read", {"file_path": "log.txt", "offset": 2, "limit": 2}), text_turn("read")]
    )
    agent = LlmAgent[None](name="reader", model=model, tools=[ReadTool(sandbox)])
    result = await AsyncioRunner[None]().run(
        agent, "read the log", RunContext.ephemeral(None).with_session(session)
    )
    [streamed] = [e for e in result.events if isinstance(e, ToolOutputItem)]
    [stored] = [e.event for e in await reopened.events() if isinstance(e.event, ToolReturned)]
    # Not conversation: the next run's model is sent the result without it.
    nxt = MockModel.with_scripts([text_turn("again")])
    again = RunContext.ephemeral(None).with_session(reopened)
    await AsyncioRunner[None]().run(LlmAgent[None](name="reader", model=nxt), "and?", again)
    sent: Any = nxt.requests[0].messages
    return (
        result.persisted,
        streamed.metadata,
        stored.metadata,
        stored.content == streamed.item.content,
        [m.type for m in sent],
        sent[2] == streamed.item,
    )


# persisted, streamed, stored, same content, the conversation sent next, its tool result unchanged
WANTED = (True, EXPECTED, EXPECTED, True, ["user", "tool_call", "tool_result", "assistant", "user"], True)


async def test_sqlite(sandbox: Sandbox, tmp_path: Path) -> None:
    async with await SqliteDatabase.open(tmp_path / "s.db") as db:
        session = await SqliteSession.open(db, "meta")
        assert (
            await run_and_reread(sandbox, session, SqliteSession.open_without_migrate(db, "meta")) == WANTED
        )


async def test_postgres(sandbox: Sandbox, postgres_pool: asyncpg.Pool) -> None:
    session = await PostgresSession.open(postgres_pool, "meta")
    reopened = PostgresSession.open_without_migrate(postgres_pool, "meta")
    assert await run_and_reread(sandbox, session, reopened) == WANTED


async def test_redis(sandbox: Sandbox, redis_url: str) -> None:
    async with (
        await RedisSession.connect(redis_url, "meta") as session,
        await RedisSession.connect(redis_url, "meta") as reopened,
    ):
        assert await run_and_reread(sandbox, session, reopened) == WANTED
