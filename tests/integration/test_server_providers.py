"""Every session provider behind the server: runs on one session share it, and it reads back over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
from server_helpers import answering_agent, serving

from helikon.server import (
    AgentServer,
    InMemorySessionProvider,
    PostgresSessionProvider,
    RedisSessionProvider,
    SqliteSessionProvider,
)


async def two_runs_on_one_session_read_back(provider: Any) -> list[str]:
    """Two runs on session p-1; what its log says the user said."""
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(answering_agent())
        .session_provider(provider)
        .build()
    )
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        for text in ("first", "second"):
            run = await client.post(
                "/agents/echo/runs", json={"input": text}, headers={"X-Session-Id": "p-1"}
            )
            assert run.json()["output"] == f"you said: {text}"
        assert [s["session_id"] for s in (await client.get("/sessions")).json()["sessions"]] == ["p-1"]
        events = (await client.get("/sessions/p-1/events")).json()["events"]
        said = [e["event"]["content"][0]["text"] for e in events if e["event"]["type"] == "user_message"]
        session = (await client.get("/sessions/p-1")).json()
        assert session["event_count"] == len(events) and session["last_seq"] == events[-1]["seq"]
        return said


async def test_in_memory() -> None:
    assert await two_runs_on_one_session_read_back(InMemorySessionProvider()) == ["first", "second"]


async def test_sqlite(tmp_path: Path) -> None:
    provider = SqliteSessionProvider(tmp_path / "sessions.db")
    assert await two_runs_on_one_session_read_back(provider) == ["first", "second"]


async def test_postgres(postgres_pool: Any) -> None:
    assert await two_runs_on_one_session_read_back(PostgresSessionProvider(postgres_pool)) == [
        "first",
        "second",
    ]


async def test_redis(redis_client: Any) -> None:
    assert await two_runs_on_one_session_read_back(RedisSessionProvider(redis_client)) == ["first", "second"]


async def test_the_in_memory_provider_forgets_the_least_recently_used_past_its_cap() -> None:
    provider = InMemorySessionProvider(max_sessions=2)
    first = await provider.session("a")
    await provider.session("b")
    assert await provider.session("a") is first  # "a" is now the most recently used
    await provider.session("c")  # over the cap: "b" goes
    assert await provider.session("a") is first
    assert {info.session_id for info in await provider.list_sessions()} <= {"a", "c"}
    assert provider._store.session_ids() == ["a", "c"]  # pyright: ignore[reportPrivateUsage]
