"""`RedisSession.events()`'s two ways of reading a stream, each against a real Redis server.

A client whose replies hiredis parses reads plain `XRANGE` pages; one on redis-py's Python
parser reads `READ_SCRIPT` pages. Both must give the same entries for the same stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import hiredis  # noqa: F401  # in the sessions-redis extra: missing fails, never skips
import pytest
import redis.asyncio as aioredis
from redis._parsers import _AsyncRESP2Parser  # pyright: ignore[reportPrivateUsage]
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.typing import EncodableT, FieldT
from session_helpers import say, seqs, texts

from helikon.core.exceptions import (
    MissingSessionEvents,
    SessionBackendError,
    SessionUnavailable,
    UnreadableSessionEvent,
)
from helikon.core.session import SequenceId, UnknownEvent, UserMessageEvent
from helikon.core.session.codec import FORMAT_VERSION, encode_event
from helikon.sessions import _redis_reads
from helikon.sessions import redis as redis_sessions
from helikon.sessions.redis import RedisSession, counter_key, stream_key
from helikon.testing.servers import free_port

pytestmark = pytest.mark.integration

# How each client is built, and whether its session reads plain XRANGE pages.
CLIENTS: dict[str, tuple[dict[str, Any], bool]] = {
    "hiredis": ({}, True),
    "hiredis-decoded": ({"decode_responses": True}, True),
    "hiredis-resp3": ({"protocol": 3}, True),
    "python-parser": ({"parser_class": _AsyncRESP2Parser}, False),
}


@pytest.fixture(params=list(CLIENTS))
async def client(request: pytest.FixtureRequest, redis_url: str) -> AsyncIterator[aioredis.Redis]:
    options, raw = CLIENTS[request.param]
    made = aioredis.Redis.from_url(redis_url, **options)
    assert _redis_reads.parses_in_c(made) is raw
    try:
        yield made
    finally:
        await made.aclose()


async def add(client: aioredis.Redis, session_id: str, entry_id: str, fields: dict[str, Any]) -> None:
    await client.xadd(stream_key(session_id), cast("dict[FieldT, EncodableT]", fields), id=entry_id)  # pyright: ignore[reportUnknownMemberType]


def stored(text: str, seq: int, version: int = FORMAT_VERSION) -> dict[str, Any]:
    """The fields `append` writes for `say(text)` at `seq`."""
    return {"seq": seq, "kind": "user_message", "payload": encode_event(say(text)), "ts": 0, "v": version}


async def test_long_reads_page_and_seek(client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_sessions, "PAGE_SIZE", 7)
    session = RedisSession(client, "long")
    for start in range(0, 40, 9):
        await session.append([say(str(n)) for n in range(start, min(start + 9, 40))], ids=None)
    entries = await RedisSession(client, "long").events()
    assert seqs(entries) == list(range(40)) and texts(entries) == [str(n) for n in range(40)]
    for since in (0, 6, 7, 13, 14, 38, 39):
        assert seqs(await RedisSession(client, "long").events(since=SequenceId(since))) == list(
            range(since + 1, 40)
        )


async def test_foreign_entries_are_skipped_wherever_they_are(client: aioredis.Redis) -> None:
    session = RedisSession(client, "mixed")
    await session.append([say("a"), say("b")])
    # Between ours: one with few fields, and one as long as ours whose names differ.
    await add(client, "mixed", "1-5", {"note": "foreign"})
    await add(client, "mixed", "1-6", {f"f{n}": n for n in range(6)})
    await client.incrby(counter_key("mixed"), 1)  # pyright: ignore[reportUnknownMemberType]
    await add(client, "mixed", "2-1", stored("c", 2))
    for reader in (session, RedisSession(client, "mixed")):
        assert texts(await reader.events()) == ["a", "b", "c"]
    assert seqs(await RedisSession(client, "mixed").events(since=SequenceId(1))) == [2]


async def test_the_seq_field_is_the_truth(client: aioredis.Redis) -> None:
    # A stray copy of seq 0 under a later ID is dropped, and the gap at seq 2 is named.
    for seq, entry_id in ((0, "0-1"), (1, "1-1"), (0, "1-2"), (2, "2-1"), (3, "3-1")):
        await add(client, "odd", entry_id, stored(f"s{seq}", seq))
    after_zero = await RedisSession(client, "odd").events(since=SequenceId(0))
    assert seqs(after_zero) == [1, 2, 3] and texts(after_zero) == ["s1", "s2", "s3"]
    assert seqs(await RedisSession(client, "odd").events()) == [0, 1, 2, 3]
    await client.xdel(stream_key("odd"), "2-1")  # pyright: ignore[reportUnknownMemberType]
    for read in (
        RedisSession(client, "odd").events(since=SequenceId(0)),
        RedisSession(client, "odd").events(),
    ):
        with pytest.raises(MissingSessionEvents) as hole:
            await read
        assert (hole.value.seq, hole.value.next_seq) == (2, 3)


async def test_format_one_entries_read_with_later_ones(client: aioredis.Redis) -> None:
    old = stored("old", 0)
    del old["v"]  # format 1 wrote no `v`
    await add(client, "versions", "0-1", old)
    unknown = {"seq": 1, "kind": "branch_switched", "payload": '{"type":"branch_switched"}', "ts": 0}
    await add(client, "versions", "1-1", unknown)  # format 1 reads an unknown event, ignorable or not
    await add(client, "versions", "2-1", stored("new", 2))
    entries = await RedisSession(client, "versions").events()
    assert seqs(entries) == [0, 1, 2] and texts([entries[0], entries[2]]) == ["old", "new"]
    assert isinstance(entries[1].event, UnknownEvent) and entries[1].event.version == 1


async def test_unknown_events_and_newer_formats(client: aioredis.Redis) -> None:
    note = '{"type":"ui_note","ignorable":true}'
    await add(client, "notes", "0-1", {**stored("", 0), "kind": "ui_note", "payload": note})
    await add(client, "notes", "1-1", stored("after", 1))
    entries = await RedisSession(client, "notes").events()
    assert isinstance(entries[0].event, UnknownEvent) and entries[0].event.version == FORMAT_VERSION
    assert isinstance(entries[1].event, UserMessageEvent)
    await add(client, "newer", "0-1", stored("from the future", 0, FORMAT_VERSION + 1))
    with pytest.raises(UnreadableSessionEvent):
        await RedisSession(client, "newer").events()


async def test_a_damaged_payload_is_isolated(client: aioredis.Redis) -> None:
    await add(client, "damaged", "0-1", stored("first", 0))
    damaged = {"seq": 1, "kind": "user_message", "payload": '{"type": "user_message", "content": [', "ts": 0}
    await add(client, "damaged", "1-1", damaged)  # format 1: read as an unknown event
    await add(client, "damaged", "2-1", stored("last", 2))
    entries = await RedisSession(client, "damaged").events()
    assert seqs(entries) == [0, 1, 2] and texts([entries[0], entries[2]]) == ["first", "last"]
    assert isinstance(entries[1].event, UnknownEvent) and entries[1].event.type == "undecodable"


async def test_errors_are_translated(client: aioredis.Redis) -> None:
    await client.set(stream_key("not-a-stream"), "x")  # pyright: ignore[reportUnknownMemberType]
    with pytest.raises(SessionBackendError, match="WRONGTYPE"):
        await RedisSession(client, "not-a-stream").events()


@pytest.mark.parametrize("kind", list(CLIENTS))
async def test_an_unreachable_server_is_session_unavailable(kind: str) -> None:
    options, raw = CLIENTS[kind]
    gone = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}", retry=Retry(NoBackoff(), 0), **options)
    try:
        assert _redis_reads.parses_in_c(gone) is raw
        with pytest.raises(SessionUnavailable):
            await RedisSession(gone, "any").events()
    finally:
        await gone.aclose()


def test_replies_made_into_mappings_still_read() -> None:
    # What a redis-py that applied XRANGE's response callback anyway would hand over.
    payload = encode_event(say("x")).encode()
    as_dicts: list[Any] = [
        {b"seq": b"4", b"kind": b"user_message", b"payload": payload, b"ts": b"0", b"v": b"2"},
        {"seq": "5", "payload": payload.decode()},
        {b"note": b"foreign"},
    ]
    assert _redis_reads.stream_fields(as_dicts) == ([4, 5], [2, 1], [payload, payload])
    flat: list[Any] = [[b"seq", b"7", b"kind", b"k", b"payload", payload, b"ts", b"0", b"v", b"3"]] * 2
    assert _redis_reads.stream_fields(flat) == ([7, 7], 3, [payload, payload])
