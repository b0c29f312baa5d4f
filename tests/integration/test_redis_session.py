"""`helikon.sessions.redis` against a real Redis server, real clients and real processes."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from datetime import UTC, datetime

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError
from session_helpers import every_kind, hash_fields, say, seqs, stream_entries, texts

from helikon.core.exceptions import SessionBackendError, SessionError, SessionUnavailable, UserError
from helikon.core.session import (
    SequenceId,
    Session,
    UnknownEvent,
    UserMessageEvent,
    project,
)
from helikon.core.session._log_cache import WARM
from helikon.core.session.checkpoint import CHECKPOINT_EVERY, PROJECTOR_VERSION, fingerprint
from helikon.core.session.codec import FORMAT_VERSION, encode_event
from helikon.sessions import redis as redis_sessions
from helikon.sessions.redis import RedisSession, checkpoint_key, counter_key, open_session, stream_key
from helikon.testing import session_conformance as conformance
from helikon.testing.servers import RedisServer, free_port

pytestmark = pytest.mark.integration


def nanoseconds(ts: datetime) -> int:
    return round((ts - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000) * 1000


async def run_writer(script: str, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    async with asyncio.timeout(120):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()[-3000:]
    return out.decode()


# --- the conformance suite -------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    conformance.checks_for(
        conformance.ConformanceBackend(
            name="redis",
            open=lambda session_id: open_session(session_id, url=""),  # never opened: checks_for reads flags
            opener="helikon.sessions.redis:open_session",
            crash_safe=True,
        )
    ),
    ids=lambda check: check.__name__,
)
async def test_conformance(check: conformance.Check, redis_client: aioredis.Redis, redis_url: str) -> None:
    async def open_(session_id: str) -> Session:
        return RedisSession(redis_client, session_id)

    backend = conformance.ConformanceBackend(
        name="redis",
        open=open_,
        opener="helikon.sessions.redis:open_session",
        opener_kwargs={"url": redis_url},
        crash_safe=True,
    )
    await check(backend)


# --- semantics -------------------------------------------------------------------------------


async def test_append_events_since_and_snapshot(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "user-42")
    assert isinstance(session, Session)
    assert session.session_id == "user-42" and session.client is redis_client
    assert await session.events() == [] and (await session.snapshot()).messages == ()

    logged = every_kind()
    await session.append(logged[:1])
    await session.append([])  # a no-op
    await session.append(logged[1:])
    entries = await session.events()
    assert seqs(entries) == [0, 1, 2, 3, 4, 5]
    assert [entry.event for entry in entries] == logged

    assert seqs(await session.events(since=SequenceId(0))) == [1, 2, 3, 4, 5]
    assert seqs(await session.events(since=SequenceId(4))) == [5]
    assert await session.events(since=SequenceId(5)) == []
    assert await session.events(since=SequenceId(99)) == []
    assert seqs(await session.events(since=SequenceId(-7))) == [0, 1, 2, 3, 4, 5]
    assert await session.snapshot() == project(logged)
    assert await RedisSession(redis_client, "user-42").events() == entries


async def test_the_stored_format(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "fmt")
    logged = every_kind()
    await session.append(logged)
    assert (
        stream_key("fmt") == "helikon:session:fmt:events" and counter_key("fmt") == "helikon:session:fmt:seq"
    )
    assert await redis_client.type("helikon:session:fmt:events") == b"stream"
    assert await redis_client.get("helikon:session:fmt:seq") == b"6"
    raw = await stream_entries(redis_client, "helikon:session:fmt:events")
    assert [entry_id for entry_id, _ in raw] == [f"{seq}-1".encode() for seq in range(6)]
    for seq, ((_, fields), event) in enumerate(zip(raw, logged, strict=True)):
        assert list(fields) == [b"seq", b"kind", b"payload", b"ts", b"v"]  # `id` only when chosen
        assert fields[b"v"] == str(FORMAT_VERSION).encode()
        assert fields[b"seq"] == str(seq).encode() and fields[b"kind"] == event.type.encode()
        assert fields[b"payload"] == encode_event(event).encode()
        assert event.ts is not None and int(fields[b"ts"]) == nanoseconds(event.ts)
    assert sorted(await redis_client.keys("*")) == [
        b"helikon:session:fmt:events",
        b"helikon:session:fmt:meta",
        b"helikon:session:fmt:seq",
        b"helikon:sessions",
    ]


async def test_sessions_are_isolated(redis_client: aioredis.Redis) -> None:
    a, b = RedisSession(redis_client, "a"), RedisSession(redis_client, "b")
    await a.append([say("a0")])
    await b.append([say("b0"), say("b1")])
    await a.append([say("a1")])
    assert texts(await a.events()) == ["a0", "a1"] and seqs(await a.events()) == [0, 1]
    assert texts(await b.events()) == ["b0", "b1"] and seqs(await b.events()) == [0, 1]
    assert await RedisSession(redis_client, "a:events").events() == []


async def test_reading_pages_and_seeking(
    redis_client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = RedisSession(redis_client, "long")
    total = redis_sessions.PAGE_SIZE * 2 + 345
    for start in range(0, total, 500):
        await session.append([say(str(n)) for n in range(start, min(start + 500, total))])
    entries = await session.events()
    assert seqs(entries) == list(range(total)) and texts(entries) == [str(n) for n in range(total)]
    for since in (0, 998, 999, 1000, 1999, total - 2):
        assert seqs(await session.events(since=SequenceId(since))) == list(range(since + 1, total))
    # Pages also end on a byte budget (at least one entry per page).
    monkeypatch.setattr(redis_sessions, "PAGE_BYTES", 1)
    assert seqs(await session.events(since=SequenceId(total - 30))) == list(range(total - 29, total))


async def test_a_client_that_decodes_responses_works_too(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        session = RedisSession(client, "decoded")
        logged = every_kind()
        await session.append(logged)
        assert [entry.event for entry in await session.events()] == logged
        assert seqs(await session.events(since=SequenceId(3))) == [4, 5]
    finally:
        await client.aclose()


async def test_twenty_concurrent_writers_get_contiguous_sequences(redis_client: aioredis.Redis) -> None:
    writers, per_writer = 20, 10

    async def writer(index: int) -> None:
        session = RedisSession(redis_client, "busy")
        for n in range(per_writer):
            await session.append([say(f"w{index}:{n}")])

    await asyncio.gather(*(writer(i) for i in range(writers)))
    entries = await RedisSession(redis_client, "busy").events()
    assert seqs(entries) == list(range(writers * per_writer))
    logged = texts(entries)
    for index in range(writers):
        assert [t for t in logged if t.startswith(f"w{index}:")] == [
            f"w{index}:{n}" for n in range(per_writer)
        ]


WRITER = """
import asyncio, sys
from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.sessions.redis import open_session

async def main(url, session_id, tag, count):
    async with await open_session(session_id, url=url) as session:
        for n in range(int(count)):
            await session.append([UserMessageEvent(content=(TextPart(text=f"{tag}:{n}"),))])

asyncio.run(main(*sys.argv[1:]))
"""


async def test_four_processes_write_one_session(redis_url: str, redis_client: aioredis.Redis) -> None:
    await asyncio.gather(*(run_writer(WRITER, redis_url, "shared", f"p{i}", "50") for i in range(4)))
    entries = await RedisSession(redis_client, "shared").events()
    assert seqs(entries) == list(range(200))
    logged = texts(entries)
    for i in range(4):
        assert [t for t in logged if t.startswith(f"p{i}:")] == [f"p{i}:{n}" for n in range(50)]


BATCHES = """
import asyncio, sys
from helikon.core.items import TextPart
from helikon.core.session import UserMessageEvent
from helikon.sessions.redis import open_session

async def main(url, session_id):
    session = await open_session(session_id, url=url)
    number = 0
    while True:
        batch = [UserMessageEvent(content=(TextPart(text=f"b{number}:{i}"),)) for i in range(200)]
        await session.append(batch)
        print(number, flush=True)
        number += 1

asyncio.run(main(*sys.argv[1:]))
"""


async def clients_named(client: aioredis.Redis, name: str) -> int:
    return sum(1 for found in await client.client_list() if found.get("name") == name)


async def wait_until_disconnected(client: aioredis.Redis, name: str) -> None:
    """Until the server lists no client named `name` (a killed one's connection).

    The server may not have read the killed client's last script call yet; it runs every
    command it reads before it drops the connection, so once that is gone the log is final.
    """
    async with asyncio.timeout(60):
        while True:
            if not await clients_named(client, name):
                return
            await asyncio.sleep(0.01)


async def test_a_writer_killed_mid_append_leaves_whole_batches(
    redis_url: str, redis_client: aioredis.Redis
) -> None:
    name = "helikon-crash-writer"
    url = f"{redis_url}?client_name={name}"  # redis-py names each connection (CLIENT SETNAME)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", BATCHES, url, "crash", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    try:
        for _ in range(3):
            async with asyncio.timeout(120):
                assert await process.stdout.readline()
        await asyncio.sleep(0.01)
        assert await clients_named(redis_client, name), "the writer's connection is not named"
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
    await wait_until_disconnected(redis_client, name)
    session = RedisSession(redis_client, "crash")
    entries = await session.events()
    assert len(entries) >= 600 and len(entries) % 200 == 0, len(entries)
    assert texts(entries) == [f"b{s // 200}:{s % 200}" for s in range(len(entries))]
    assert seqs(entries) == list(range(len(entries)))
    await session.append([say("after the crash")])
    assert seqs(await session.events(since=SequenceId(len(entries) - 1))) == [len(entries)]


# --- failures --------------------------------------------------------------------------------


async def test_out_of_memory_fails_the_whole_append(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "oom")
    await session.append([say("before")])
    await redis_client.config_set("maxmemory", 1)  # every write is now over the limit (noeviction)
    try:
        with pytest.raises(SessionBackendError, match="maxmemory"):
            await session.append([say("lost 1"), say("lost 2"), say("lost 3")])
        assert texts(await session.events()) == ["before"]  # reads still work
    finally:
        await redis_client.config_set("maxmemory", 0)
    assert (
        await redis_client.xlen(stream_key("oom")) == 1 and await redis_client.get(counter_key("oom")) == b"1"
    )
    await session.append([say("after")])
    assert seqs(await session.events()) == [0, 1]


async def test_a_failing_script_writes_nothing(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "broken")
    await session.append([say("zero"), say("one")])
    # The counter was lost (evicted, deleted): reusing seqs 0.. would collide, so the script refuses.
    await redis_client.delete(counter_key("broken"))
    with pytest.raises(SessionBackendError, match="at or past the counter"):
        await session.append([say("lost")])
    assert await redis_client.xlen(stream_key("broken")) == 2
    assert await redis_client.get(counter_key("broken")) is None  # not even the counter moved
    # A counter that is not a number.
    await redis_client.set(counter_key("broken"), "many")
    with pytest.raises(SessionBackendError, match="not an integer"):
        await session.append([say("lost")])
    await redis_client.set(counter_key("broken"), 2)
    await session.append([say("two")])
    assert seqs(await session.events()) == [0, 1, 2]
    # A key of another type.
    await redis_client.set(stream_key("other"), "a string")
    with pytest.raises(SessionBackendError, match="WRONGTYPE"):
        await RedisSession(redis_client, "other").append([say("lost")])
    assert await redis_client.get(counter_key("other")) is None


async def test_a_bad_session_id_or_a_closed_session_is_a_user_error(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        for bad in ("", 42):
            with pytest.raises(UserError, match="session_id"):
                RedisSession(client, bad)  # type: ignore[arg-type]
        session = RedisSession(client, "closing")
        async with session:
            await session.append([say("hi")])
        with pytest.raises(UserError, match="closed"):
            await session.events()
        assert await client.xlen(stream_key("closing")) == 1  # the client was ours: still open
    finally:
        await client.aclose()


async def test_connect_owns_its_client(redis_url: str) -> None:
    async with await RedisSession.connect(redis_url, "owned") as session:
        await session.append([say("hi")])
    with pytest.raises(UserError, match="closed"):
        await session.append([say("again")])
    async with await open_session("owned", url=redis_url) as reopened:
        assert texts(await reopened.events()) == ["hi"]


async def test_an_unreachable_server_is_session_unavailable() -> None:
    with pytest.raises(SessionUnavailable, match="Redis is unavailable, connect did not complete"):
        await RedisSession.connect(f"redis://127.0.0.1:{free_port()}/0", "nowhere")


async def test_server_down_then_back_loses_nothing() -> None:
    async with RedisServer() as server, await open_session("outage", url=server.url) as session:
        await session.append([say("one"), say("two")])
        await asyncio.to_thread(server.stop, keep_data=True)  # SHUTDOWN SAVE: the data survives
        with pytest.raises(
            SessionUnavailable, match="Redis is unavailable, append did not complete"
        ) as failed:
            await session.append([say("while down")])
        assert isinstance(failed.value, SessionError)
        with pytest.raises(SessionUnavailable, match="events did not complete"):
            await session.events()
        await asyncio.to_thread(server.start)
        assert texts(await session.events()) == ["one", "two"]
        await session.append([say("three")])
        assert seqs(await session.events()) == [0, 1, 2]


# --- unknown events ----------------------------------------------------------------------------


async def test_an_unknown_event_round_trips(redis_client: aioredis.Redis) -> None:
    # Written by a newer helikon (or another program), with its own spacing and key order.
    stored = (
        '{"type": "branch_switched", "ts": "2026-11-30T07:00:01Z", "branch": "b2", "nested": {"k": [1, "x"]}}'
    )
    ts = nanoseconds(datetime(2026, 11, 30, 7, 0, 1, tzinfo=UTC))
    await redis_client.incrby(counter_key("old"), 1)
    fields = {"seq": 0, "kind": "branch_switched", "payload": stored, "ts": ts}
    await redis_client.xadd(stream_key("old"), fields, id="0-1")  # type: ignore[arg-type]
    old = RedisSession(redis_client, "old")
    await old.append([say("after it")])
    [(seq, event), (next_seq, _)] = await old.events()
    assert (seq, next_seq) == (0, 1)
    assert isinstance(event, UnknownEvent) and event.type == "branch_switched"
    assert event.data == json.loads(stored)
    assert event.ts == datetime(2026, 11, 30, 7, 0, 1, tzinfo=UTC)

    copy = RedisSession(redis_client, "copy")
    await copy.append([event])
    [(_, fields_back)] = await stream_entries(redis_client, stream_key("copy"))
    assert fields_back[b"kind"] == b"branch_switched" and int(fields_back[b"ts"]) == ts
    assert json.loads(fields_back[b"payload"]) == json.loads(stored)
    assert [entry.event for entry in await copy.events()] == [event]


async def test_entries_without_helikon_fields_are_skipped(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "mixed")
    await session.append([say("ours")])
    await redis_client.xadd(stream_key("mixed"), {"note": "a foreign entry"}, id="5-0")
    assert texts(await session.events()) == ["ours"]
    # Its ID is past our counter, so appending would go backwards: refused, nothing written.
    with pytest.raises(SessionBackendError, match="at or past the counter"):
        await session.append([say("lost")])
    assert await redis_client.xlen(stream_key("mixed")) == 2


async def test_a_damaged_payload_between_good_ones_is_isolated(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "damaged")
    await session.append([say("ünïcödé, {first}")])
    await redis_client.incrby(counter_key("damaged"), 1)
    fields = {"seq": 1, "kind": "user_message", "payload": '{"type": "user_message", "content": [', "ts": 0}
    await redis_client.xadd(stream_key("damaged"), fields, id="1-1")  # type: ignore[arg-type]
    await session.append([say("last")])
    entries = await RedisSession(redis_client, "damaged").events()  # a cold read: all three pages
    assert [entry.seq for entry in entries] == [0, 1, 2]
    first, damaged, last = (entry.event for entry in entries)
    assert isinstance(damaged, UnknownEvent) and damaged.type == "undecodable"
    assert texts([entries[0], entries[2]]) == ["ünïcödé, {first}", "last"]
    assert isinstance(first, UserMessageEvent) and isinstance(last, UserMessageEvent)


# --- listing and the envelope --------------------------------------------------------------------


async def test_list_sessions_pages_and_metadata_updates(redis_client: aioredis.Redis) -> None:
    empty = RedisSession(redis_client, "titled-before-any-event")
    await empty.set_metadata(title="Draft")
    for name in ("a", "b", "c"):
        await RedisSession(redis_client, name).append([say(name), say(name)])
        await asyncio.sleep(0.002)  # `updated` has millisecond resolution
    listed = await RedisSession.list_sessions(redis_client)
    assert [info.session_id for info in listed] == ["c", "b", "a", "titled-before-any-event"]
    assert (listed[-1].event_count, listed[-1].title, listed[-1].metadata) == (0, "Draft", {})
    a = RedisSession(redis_client, "a")
    await a.set_metadata(metadata={"k": [1]})
    await a.set_metadata(title="A")  # None leaves the other field as it is
    [info] = [i for i in await RedisSession.list_sessions(redis_client) if i.session_id == "a"]
    assert (info.title, info.metadata, info.event_count) == ("A", {"k": [1]}, 2)
    page = await RedisSession.list_sessions(redis_client, limit=2, offset=1)
    assert [i.session_id for i in page] == ["b", "a"]  # metadata is not activity: the order stays
    with pytest.raises(UserError, match="offset must be an int >= 0"):
        await RedisSession.list_sessions(redis_client, offset=-1)


async def test_chosen_ids_are_stored_and_a_retry_appends_only_the_rest(redis_client: aioredis.Redis) -> None:
    session = RedisSession(redis_client, "ids")
    await session.append([say("a"), say("b")], ids=["id-a", "id-b"])
    await session.append([say("c")])
    entries = await stream_entries(redis_client, stream_key("ids"))
    assert [fields.get(b"id") for _, fields in entries] == [b"id-a", b"id-b", None]
    assert await redis_client.hgetall("helikon:session:ids:ids") == {b"id-a": b"0", b"id-b": b"1"}
    with pytest.raises(UserError, match=r"id 'id-b' is stored in session 'ids' \(seq 1\) for another event"):
        await session.append([say("x"), say("not b")], ids=["id-x", "id-b"])
    assert len(await session.records()) == 3
    await session.append([say("x"), say("b")], ids=["id-x", "id-b"])  # "b" is stored: only "x" is new
    records = await session.records()
    assert [r.id for r in records][:2] == ["id-a", "id-b"] and records[3].id == "id-x" and len(records) == 4
    assert await redis_client.hget("helikon:session:ids:ids", "id-x") == b"3"


async def test_the_append_script_writes_a_retry_only_as_the_client_checked_it(
    redis_client: aioredis.Redis,
) -> None:
    session = RedisSession(redis_client, "checked")
    await session.append([say("a")], ids=["id-a"])
    keys = [stream_key("checked"), counter_key("checked"), "helikon:session:checked:ids", "m", "s"]
    script = redis_client.register_script(redis_sessions.APPEND_SCRIPT)
    batch: list[str | int] = [2, "", 1, "checked", FORMAT_VERSION, "2"]
    for event in (say("a"), say("b")):
        batch += (event.type, encode_event(event), nanoseconds(event.ts))
    batch += ["id-a", "id-b"]
    with pytest.raises(ResponseError, match=r"HELIKON_STORED 0,$"):  # not checked at all
        await script(keys=keys, args=[*batch[:5], "1", *batch[6:]])
    await session.append([say("b")], ids=["id-b"])  # meanwhile another writer stores "b" too
    with pytest.raises(ResponseError, match=r"HELIKON_STORED 0,1$"):  # checked, but not "b"
        await script(keys=keys, args=[*batch, "0,"])
    assert texts(await session.events()) == ["a", "b"]  # nothing written twice
    assert await script(keys=keys, args=[*batch, "0,1"]) == -1  # checked, and all of it stored


# --- projection checkpoints ------------------------------------------------------------------


async def test_a_reader_writes_a_checkpoint_a_new_object_starts_from(redis_client: aioredis.Redis) -> None:
    writer = RedisSession(redis_client, "cp")
    logged = [say(f"m{i}") for i in range(CHECKPOINT_EVERY + 10)]
    await writer.append(logged)
    assert await writer.snapshot() == project(logged)
    key = checkpoint_key("cp")
    assert key == "helikon:session:cp:checkpoint" and await redis_client.type(key) == b"hash"
    stored = await hash_fields(redis_client, key)
    assert sorted(stored) == [b"as_of_seq", b"fingerprint", b"projector", b"state", b"written"]
    as_of_seq = len(logged) - 1
    assert stored[b"as_of_seq"] == str(as_of_seq).encode()
    assert stored[b"projector"] == PROJECTOR_VERSION.encode()
    [(_, fields)] = await stream_entries(redis_client, stream_key("cp"), f"{as_of_seq}-1", f"{as_of_seq}-1")
    assert stored[b"fingerprint"] == fingerprint(fields[b"payload"]).encode()  # what the docs promise

    # A new object folds only the tail onto the checkpoint's state: an edit of that state
    # (kept well formed) shows in its snapshot, so the events before it were not folded again.
    await redis_client.hset(key, "state", stored[b"state"].replace(b'"m0"', b'"M0"'))
    more = [say("tail")]
    await writer.append(more)
    WARM.clear()  # as in another process: nothing this one built is reused
    reader = RedisSession(redis_client, "cp")
    snapshot = await reader.snapshot()
    assert snapshot == project([say("M0"), *logged[1:], *more])
    assert texts(await reader.events())[:2] == ["m0", "m1"]  # the log itself, read when asked for
    assert await reader.snapshot() == snapshot


async def test_the_checkpoint_only_moves_forward(redis_client: aioredis.Redis) -> None:
    writer = RedisSession(redis_client, "fwd")
    await writer.append([say(f"m{i}") for i in range(2 * CHECKPOINT_EVERY)])
    late = RedisSession(redis_client, "fwd")
    await late.snapshot()
    await writer.append([say(f"n{i}") for i in range(CHECKPOINT_EVERY)])
    await RedisSession(redis_client, "fwd").snapshot()
    newest = await redis_client.hgetall(checkpoint_key("fwd"))
    assert newest[b"as_of_seq"] == str(3 * CHECKPOINT_EVERY - 1).encode()
    # The late reader writes its older checkpoint again: the compare-and-set refuses it.
    late._log.checkpoint_seq = -1  # pyright: ignore[reportPrivateUsage]
    await late._write_checkpoint()  # pyright: ignore[reportPrivateUsage]
    assert await redis_client.hgetall(checkpoint_key("fwd")) == newest
    cold = RedisSession(redis_client, "fwd")
    assert await cold.snapshot() == project([entry.event for entry in await writer.events()])


async def test_a_checkpoint_that_cannot_be_written_does_not_fail_the_snapshot(
    redis_client: aioredis.Redis,
) -> None:
    session = RedisSession(redis_client, "full")
    logged = [say(f"m{i}") for i in range(CHECKPOINT_EVERY + 1)]
    await session.append(logged)
    await redis_client.config_set("maxmemory", 1)  # every write is refused (noeviction)
    try:
        assert await RedisSession(redis_client, "full").snapshot() == project(logged)
    finally:
        await redis_client.config_set("maxmemory", 0)
    assert not await redis_client.exists(checkpoint_key("full"))
    assert await RedisSession(redis_client, "full").snapshot() == project(logged)
    assert await redis_client.exists(checkpoint_key("full"))
