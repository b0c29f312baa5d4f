"""A stored row helikon cannot decode, in every backend: kept, isolated, never an undocumented error.

Hypothesis writes one damaged payload raw into each store (a SQLite row, a PostgreSQL row, a
Redis stream entry, read both ways) between good events, then reads the session through an
object that had already read the events before it (warm) and through a new one (cold):
`events()`, `snapshot()` and `records()` either read the whole log (the damaged row as an event
or an `UnknownEvent` holding it verbatim) or refuse it with `UnreadableSessionEvent` (a format-2
object of a type this version does not know), naming its seq; the events after it stay readable.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis._parsers import _AsyncRESP2Parser  # pyright: ignore[reportPrivateUsage]
from redis.typing import EncodableT, FieldT
from session_helpers import every_kind, say

from damage import mutate
from helikon.core.exceptions import UnreadableSessionEvent
from helikon.core.session import SequenceId, SessionEvent, ToolCalled, UnknownEvent, project
from helikon.core.session.checkpoint import CHECKPOINT_EVERY
from helikon.core.session.codec import encode_event
from helikon.sessions.postgres import PostgresSession
from helikon.sessions.redis import RedisSession, counter_key, stream_key
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession

pytestmark = pytest.mark.integration

AT = 2  # the damaged row's seq: two good events before it, one after
BEFORE: list[SessionEvent] = [say("first"), ToolCalled(call_id="c1", name="lookup", args={"q": "ü"})]
AFTER: list[SessionEvent] = [say("last")]
GOOD = [encode_event(event) for event in every_kind()]


def _deep(depth: int, inside: str = "") -> str:
    return "[" * depth + inside + "]" * depth


def _tool_called(args: str) -> str:
    return '{"type":"tool_called","call_id":"c9","name":"n","args":' + args + ',"ts":"2026-01-01T00:00:00Z"}'


SPECIAL: list[bytes] = [
    b'{"type":"user_message","content":[{"type":"text","text":"\xff\xfe"}],"ts":"2026-01-01T00:00:00Z"}',
    b"\xed\xa0\x80",  # a surrogate, UTF-8 encoded: not UTF-8
    b"\x00",
    b"",
    b"null",
    b"[]",
    b'"a string"',
    b'{"no":"type tag"}',
    b'{"type":5}',
    b'{"type":"branch_switched","branch":"b2"}',  # a newer writer's event, not ignorable
    b'{"type":"ui_note","ignorable":true}',
    b'{"type":"user_message","content":"not a list","ts":"2026-01-01T00:00:00Z"}',
    _tool_called('"\\ud800"').encode(),  # a lone surrogate, escaped: JSON, but no UTF-8 text
    _tool_called('{"n":1e999}').encode(),
    _tool_called(_deep(400)).encode(),  # parses, but pydantic cannot write it (no checkpoint)
    _tool_called(_deep(1_100)).encode(),  # too deep to parse
    _deep(50_000).encode(),
]


def _reshape(payload: str, field: int, value: Any) -> bytes:
    """`payload` with one field's value replaced by any JSON value: a wrong shape, still JSON."""
    obj = json.loads(payload)
    obj[list(obj)[field % len(obj)]] = value
    return json.dumps(obj, ensure_ascii=False).encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
edits = st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 2), st.binary(min_size=1, max_size=3)),
    min_size=1,
    max_size=4,
)
reshaped = st.builds(_reshape, st.sampled_from(GOOD), st.integers(0, 20), json_values)
damage = st.one_of(
    st.sampled_from(SPECIAL),
    st.binary(max_size=64),
    st.builds(mutate, st.sampled_from(GOOD), edits),
    reshaped,
    json_values.map(lambda value: json.dumps(value).encode()),
)


# --- the stores -------------------------------------------------------------------------------------


@dataclass
class Store:
    """A backend under test: how to open a session, and how to write a row as another program would."""

    open: Callable[[str], Any]
    write_raw: Callable[[str, int, bytes, int], Awaitable[bool]]  # False: the store cannot hold it
    name: str = ""


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    path = tmp_path / "sessions.db"
    async with await SqliteDatabase.open(path) as db:
        await SqliteSession.migrate(db)

        async def write_raw(session_id: str, seq: int, payload: bytes, version: int) -> bool:
            with closing(sqlite3.connect(path, isolation_level=None, timeout=10)) as conn:
                conn.execute(
                    "INSERT INTO session_events (session_id, sequence, kind, payload, ts, format) "
                    "VALUES (?, ?, 'damaged', CAST(? AS TEXT), '', ?)",  # the bytes as TEXT, unchecked
                    (session_id, seq, payload, version),
                )
            return True

        yield Store(lambda sid: SqliteSession.open_without_migrate(db, sid), write_raw)


@pytest.fixture
async def postgres_store(postgres_pool: asyncpg.Pool) -> Store:
    await PostgresSession.migrate(postgres_pool)

    async def write_raw(session_id: str, seq: int, payload: bytes, version: int) -> bool:
        try:
            await postgres_pool.execute(  # pyright: ignore[reportUnknownMemberType]
                "INSERT INTO session_events (session_id, sequence, kind, payload, format) "
                "VALUES ($1, $2, 'damaged', $3::json, $4)",
                session_id,
                seq,
                payload.decode(),
                version,
            )
        except (UnicodeDecodeError, asyncpg.PostgresError):  # not JSON text: PostgreSQL refuses it
            return False
        return True

    return Store(lambda sid: PostgresSession.open_without_migrate(postgres_pool, sid), write_raw)


def _redis_store(client: aioredis.Redis) -> Store:
    async def write_raw(session_id: str, seq: int, payload: bytes, version: int) -> bool:
        fields: dict[FieldT, EncodableT] = {"seq": seq, "kind": "damaged", "payload": payload, "ts": 0}
        if version > 1:  # format-1 entries had no `v`
            fields["v"] = version
        await client.incrby(counter_key(session_id), 1)  # pyright: ignore[reportUnknownMemberType]
        await client.xadd(stream_key(session_id), fields, id=f"{seq}-1")  # pyright: ignore[reportUnknownMemberType]
        return True

    return Store(lambda sid: RedisSession(client, sid), write_raw)


@pytest.fixture
async def redis_hiredis_store(redis_client: aioredis.Redis) -> Store:
    return _redis_store(redis_client)  # reads plain XRANGE pages


@pytest.fixture
async def redis_script_store(redis_url: str) -> AsyncIterator[Store]:
    client = aioredis.Redis.from_url(redis_url, parser_class=_AsyncRESP2Parser)  # reads READ_SCRIPT pages
    try:
        yield _redis_store(client)
    finally:
        await client.aclose()


@pytest.fixture(params=["sqlite", "postgres", "redis_hiredis", "redis_script"])
def store(request: pytest.FixtureRequest) -> Store:
    return dataclasses.replace(request.getfixturevalue(f"{request.param}_store"), name=request.param)


# --- the checks -------------------------------------------------------------------------------------

_counter = iter(range(10**9))


async def _damaged_session(store: Store, payload: bytes, version: int) -> tuple[str, Any] | None:
    """A session of good events with `payload` at seq `AT`, and an object that read the ones before it."""
    sid = f"damaged-{next(_counter)}"
    warm = store.open(sid)
    await warm.append(BEFORE)
    assert [e.event for e in await warm.events()] == BEFORE
    await warm.snapshot()
    if not await store.write_raw(sid, AT, payload, version):
        return None
    await warm.append(AFTER)
    return sid, warm


def _check_kept(event: SessionEvent, payload: bytes) -> None:
    """A row that did not decode is an `UnknownEvent` that holds it verbatim."""
    if not isinstance(event, UnknownEvent):
        return  # it decoded as an event (damage inside a text, say)
    data: dict[str, Any] = event.data
    if event.type == "undecodable" and "raw_base64" in data:
        assert base64.b64decode(data["raw_base64"]) == payload
    elif event.type == "undecodable":
        assert data["raw"] == payload.decode()
    else:
        assert data == json.loads(payload)


async def _check_reads(store: Store, reader: Any, payload: bytes, version: int) -> None:
    """`events`, `records` and `snapshot` on `reader`: the whole log, or the documented refusal."""
    sid = reader.session_id
    refused: UnreadableSessionEvent | None = None
    entries: Any = None
    try:
        entries = await reader.events()
    except UnreadableSessionEvent as exc:
        refused = exc
    if refused is not None:
        assert (refused.seq, refused.version, refused.session_id) == (AT, 2, sid) and version == 2
        after = await store.open(sid).events(since=SequenceId(AT))  # the rest stays readable
        assert [(int(e.seq), e.event) for e in after] == [(AT + 1, AFTER[0])]
        for call in (reader.snapshot, reader.records, store.open(sid).snapshot):
            with pytest.raises(UnreadableSessionEvent, match=f"event {AT} of session"):
                await call()
        return
    assert [int(e.seq) for e in entries] == [0, 1, 2, 3]
    events = [e.event for e in entries]
    assert events[:AT] == BEFORE and events[AT + 1 :] == AFTER
    _check_kept(events[AT], payload)
    records = await reader.records()
    assert [r.event for r in records] == events and records[AT].version == version
    snapshot = await reader.snapshot()
    assert snapshot == project(events)
    if isinstance(events[AT], UnknownEvent):  # skipped by projections; a mutation may also be a valid event
        assert [type(m).__name__ for m in snapshot.messages][:2] == ["UserMessage", "ToolCall"]


async def _check_store(store: Store, payload: bytes, version: int) -> None:
    made = await _damaged_session(store, payload, version)
    if made is None:
        return
    sid, warm = made
    await _check_reads(store, warm, payload, version)
    await _check_reads(store, store.open(sid), payload, version)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=damage, version=st.sampled_from([1, 2]))
async def test_a_damaged_row_is_kept_or_refused_never_an_other_error(
    store: Store, payload: bytes, version: int
) -> None:
    await _check_store(store, payload, version)


@pytest.mark.parametrize("payload", SPECIAL, ids=lambda p: repr(p[:24]))
async def test_each_special_row_in_each_format(store: Store, payload: bytes) -> None:
    for version in (1, 2):
        await _check_store(store, payload, version)


@pytest.mark.parametrize(
    "payload",
    [SPECIAL[0], _tool_called(_deep(400)).encode(), _tool_called('"\\ud800"').encode()],
    ids=["not-utf8", "nested-400", "lone-surrogate"],
)
async def test_a_snapshot_that_writes_a_checkpoint_over_a_damaged_row(store: Store, payload: bytes) -> None:
    """Past `CHECKPOINT_EVERY` events a snapshot writes a checkpoint: its fingerprint and state cope."""
    sid = f"checkpointed-{next(_counter)}"
    writer = store.open(sid)
    logged = [say(str(n)) for n in range(CHECKPOINT_EVERY + 5)]
    await writer.append(logged)
    if not await store.write_raw(sid, len(logged), payload, 2):
        # Only PostgreSQL refuses a row outright (its json column takes UTF-8 JSON text only):
        # such a row cannot be there to read, and the log stays as it was.
        assert payload == SPECIAL[0] and store.name == "postgres"
        assert [e.event for e in await store.open(sid).events()] == logged
        return
    await writer.append(AFTER)
    expected = await writer.snapshot()  # folds all of them: writes a checkpoint (or skips it)
    for _ in range(2):  # a cold object (from the checkpoint, if one was written), twice
        cold = store.open(sid)
        assert await cold.snapshot() == expected
        assert expected == project([e.event for e in await cold.events()])
