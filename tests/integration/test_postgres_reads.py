"""`PostgresSession.events()`: one aggregate row decoded in one pass, or row by row when it must."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from session_helpers import say, seqs, texts

from helikon.core.exceptions import UnreadableSessionEvent
from helikon.core.session import SequenceId, UnknownEvent
from helikon.core.session.codec import FORMAT_VERSION, decode_events, encode_event, upgrade_all
from helikon.sessions.postgres import PostgresSession

pytestmark = pytest.mark.integration


class Spy:
    """The session's pool, recording which of the two read queries ran."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    async def fetchrow(self, query: str, *args: object) -> Any:
        self.reads.append("joined")
        return await self.pool.fetchrow(query, *args)  # pyright: ignore[reportUnknownMemberType]

    async def fetch(self, query: str, *args: object) -> Any:
        self.reads.append("rows" if "ORDER BY sequence" in query else "other")
        return await self.pool.fetch(query, *args)  # pyright: ignore[reportUnknownMemberType]


async def session(pool: asyncpg.Pool, session_id: str) -> tuple[PostgresSession, Spy]:
    await PostgresSession.migrate(pool)
    opened = PostgresSession.open_without_migrate(pool, session_id)
    spy = Spy(pool)
    opened._db = spy  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage]
    return opened, spy


async def insert(
    pool: asyncpg.Pool, session_id: str, seq: int, kind: str, payload: str, version: int
) -> None:
    await pool.execute(  # pyright: ignore[reportUnknownMemberType]
        "INSERT INTO session_events (session_id, sequence, kind, payload, format) "
        "VALUES ($1, $2, $3, $4::jsonb, $5)",
        session_id,
        seq,
        kind,
        payload,
        version,
    )


async def test_a_long_log_is_one_joined_read(postgres_pool: asyncpg.Pool) -> None:
    writer, _ = await session(postgres_pool, "long")
    await writer.append([say(str(n)) for n in range(600)])
    reader, spy = await session(postgres_pool, "long")
    entries = await reader.events()
    assert seqs(entries) == list(range(600)) and texts(entries) == [str(n) for n in range(600)]
    assert spy.reads == ["joined"]
    for since in (0, 298, 598, 599):
        tail_reader, _ = await session(postgres_pool, "long")
        assert seqs(await tail_reader.events(since=SequenceId(since))) == list(range(since + 1, 600))
    empty, spy = await session(postgres_pool, "nothing")
    assert await empty.events() == [] and spy.reads == ["joined"]


async def test_mixed_formats_of_known_events_stay_joined(postgres_pool: asyncpg.Pool) -> None:
    await session(postgres_pool, "mixed")
    await insert(postgres_pool, "mixed", 0, "user_message", encode_event(say("old")), 1)
    await insert(postgres_pool, "mixed", 1, "user_message", encode_event(say("new")), FORMAT_VERSION)
    reader, spy = await session(postgres_pool, "mixed")
    assert texts(await reader.events()) == ["old", "new"] and spy.reads == ["joined"]


async def test_an_unknown_format_one_event_among_later_ones_is_read_row_by_row(
    postgres_pool: asyncpg.Pool,
) -> None:
    # Read with format 2's rules it would be unreadable; its own row says format 1.
    await session(postgres_pool, "old")
    await insert(postgres_pool, "old", 0, "branch_switched", '{"type": "branch_switched", "b": "x, y"}', 1)
    await insert(postgres_pool, "old", 1, "user_message", encode_event(say("new")), FORMAT_VERSION)
    reader, spy = await session(postgres_pool, "old")
    first, second = await reader.events()
    assert isinstance(first.event, UnknownEvent) and first.event.version == 1
    assert texts([second]) == ["new"] and spy.reads == ["joined", "rows"]


async def test_a_gap_is_read_row_by_row(postgres_pool: asyncpg.Pool) -> None:
    writer, _ = await session(postgres_pool, "gap")
    await writer.append([say("a"), say("b"), say("c")])
    await postgres_pool.execute("DELETE FROM session_events WHERE session_id = 'gap' AND sequence = 1")  # pyright: ignore[reportUnknownMemberType]
    reader, spy = await session(postgres_pool, "gap")
    entries = await reader._fetch(-1, "events")  # pyright: ignore[reportPrivateUsage]
    assert seqs(entries) == [0, 2] and texts(entries) == ["a", "c"] and spy.reads == ["joined", "rows"]


async def test_a_newer_format_is_unreadable(postgres_pool: asyncpg.Pool) -> None:
    await session(postgres_pool, "newer")
    await insert(postgres_pool, "newer", 0, "user_message", encode_event(say("x")), FORMAT_VERSION + 1)
    reader, _ = await session(postgres_pool, "newer")
    with pytest.raises(UnreadableSessionEvent):
        await reader.events()


async def test_odd_payloads_read_as_row_by_row_decoding_reads_them(postgres_pool: asyncpg.Pool) -> None:
    payloads = [
        '"a string, with commas"',
        "[1, 2, {}]",
        '{"type": "ui_note", "ignorable": true, "text": "\\\\, \\" and \\n"}',
        encode_event(say("ünïcödé, {braces} [brackets]")),
        "{}",
        "null",
    ]
    await session(postgres_pool, "odd")
    for seq, payload in enumerate(payloads):
        await insert(postgres_pool, "odd", seq, "x", payload, 1)
    reader, _ = await session(postgres_pool, "odd")
    entries = await reader.events()
    rows = await postgres_pool.fetch(  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        "SELECT payload::text FROM session_events WHERE session_id = 'odd' ORDER BY sequence"
    )
    numbers = list(range(len(payloads)))
    expected = upgrade_all("odd", numbers, 1, decode_events([row[0] for row in rows]))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    assert seqs(entries) == numbers and [entry.event for entry in entries] == expected


async def test_rows_stored_out_of_order_join_in_sequence_order(postgres_pool: asyncpg.Pool) -> None:
    await session(postgres_pool, "shuffled")
    for seq in (2, 0, 3, 1):
        await insert(
            postgres_pool, "shuffled", seq, "user_message", encode_event(say(f"s{seq}")), FORMAT_VERSION
        )
    reader, spy = await session(postgres_pool, "shuffled")
    assert texts(await reader.events()) == ["s0", "s1", "s2", "s3"] and spy.reads == ["joined"]
