"""`RedisSession`: a session's event log in a Redis stream (redis-py, asyncio).

Each session is up to five keys: the stream `helikon:session:<id>:events`, one entry per
event; the counter `helikon:session:<id>:seq`, the number of sequence numbers handed out; the
hash `helikon:session:<id>:ids`, each writer-chosen event id to its seq (what makes a retried
append a no-op); the summary hash `helikon:session:<id>:meta` (`created` in milliseconds
since the Unix epoch, `title`, `metadata` as JSON); and the projection checkpoint hash
`helikon:session:<id>:checkpoint` (`as_of_seq`, `projector`, `fingerprint`: SHA-1 hex of the
`payload` at `as_of_seq`, `state`, `written` in ms; see `helikon.core.session.checkpoint`), which
readers write and which is never the truth: a reader trusts it only as that module says. The sorted set
`helikon:sessions` holds every session id scored by the time of its last append (ms): what
`list_sessions` pages through, taking each one's event count from its counter. An entry's
ID is `<seq>-1` and its fields are

| field | value |
| --- | --- |
| `seq` | the event's `SequenceId`, decimal (0, 1, 2, ...) |
| `kind` | the event's `type` tag, e.g. `user_message` |
| `payload` | the event as `helikon.core.session.codec.encode_event` writes it (JSON) |
| `ts` | the event's `ts` in nanoseconds since the Unix epoch, decimal; `0` when it has none |
| `v` | the payload's format version (`FORMAT_VERSION`); absent in format-1 entries |
| `id` | the id the writer chose for the event; absent if it chose none (and in format 1) |

`append` is one Lua script, atomic on the server. helikon never trims the stream: run Redis
with `maxmemory-policy noeviction`, since an evicted key is a lost log.

Requires the `sessions-redis` extra: `pip install 'paigasus-helikon[sessions-redis]'`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Self, cast

from helikon.core._internal.extras import missing_extra

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - the extra is installed for the test suite
    raise missing_extra("helikon.sessions.redis needs redis-py", "sessions-redis") from exc

from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import (
    MetadataConflict,
    SessionConflict,
    SessionError,
    SessionUnavailable,
    UserError,
)
from helikon.core.session import (
    SessionEntry,
    SessionEvent,
    SessionInfo,
    SessionMetadata,
)
from helikon.core.session._envelope import (
    check_filter,
    check_page,
    retry_plan,
)
from helikon.core.session.checkpoint import PROJECTOR_VERSION, Checkpoint, load
from helikon.core.session.codec import encode_event, stored_version

from ._base import StoredRow, StoredSession
from ._redis_reads import next_id, parses_in_c, script_fields, session_entries, xrange_fields
from ._redis_reads import text as _text
from ._redis_scripts import (
    APPEND_SCRIPT,
    CHECKPOINT_READ_SCRIPT,
    CHECKPOINT_WRITE_SCRIPT,
    FILTER_SCRIPT,
    METADATA_SCRIPT,
    READ_SCRIPT,
)

KEY_PREFIX = "helikon:session:"
"""Every key of a session starts with this, then the session id."""

SESSIONS_KEY = "helikon:sessions"
"""The sorted set of every session id, scored by its last update (ms): what `list_sessions` reads."""

PAGE_SIZE = 1000
"""Entries `events()` reads per round trip (one `XRANGE ... COUNT` on the server)."""

PAGE_BYTES = 8 * 1024 * 1024
"""A page `READ_SCRIPT` reads also ends once its payloads pass this many bytes (after one entry)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNAVAILABLE: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)


def stream_key(session_id: str) -> str:
    """The key of the stream holding `session_id`'s events."""
    return f"{KEY_PREFIX}{session_id}:events"


def counter_key(session_id: str) -> str:
    """The key of `session_id`'s sequence counter (how many seqs were handed out)."""
    return f"{KEY_PREFIX}{session_id}:seq"


def ids_key(session_id: str) -> str:
    """The key of the hash from each of `session_id`'s event ids to its seq."""
    return f"{KEY_PREFIX}{session_id}:ids"


def meta_key(session_id: str) -> str:
    """The key of `session_id`'s summary hash (what `list_sessions` shows)."""
    return f"{KEY_PREFIX}{session_id}:meta"


def checkpoint_key(session_id: str) -> str:
    """The key of `session_id`'s projection checkpoint hash (see `helikon.core.session.checkpoint`)."""
    return f"{KEY_PREFIX}{session_id}:checkpoint"


def _millis() -> int:
    return time.time_ns() // 1_000_000


def _from_millis(value: bytes | str | int | None) -> datetime:
    return datetime.fromtimestamp(int(value or 0) / 1000, UTC)


def _entry_millis(entries: list[tuple[bytes, dict[bytes, bytes]]]) -> int:
    """The `ts` of the first of `entries` in milliseconds (0: none)."""
    fields = {_text(k): v for k, v in entries[0][1].items()} if entries else {}
    return int(fields.get("ts", b"0") or 0) // 1_000_000


def _from_nanoseconds(value: int) -> datetime | None:
    return None if value == 0 else _EPOCH + timedelta(microseconds=value // 1000)


def _nanoseconds(ts: datetime | None) -> int:
    if ts is None:
        return 0
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (ts - _EPOCH) // timedelta(microseconds=1) * 1000


def _payload_of(page: list[tuple[bytes, dict[bytes, bytes]]], seq: int) -> bytes | str | None:
    """The payload of the entry in `page` whose `seq` field is `seq` (None: there is none)."""
    for _, raw in page:
        fields = {_text(k): v for k, v in raw.items()}
        if fields.get("seq") is not None and int(fields["seq"]) == seq and "payload" in fields:
            return fields["payload"]
    return None


def _translate(exc: BaseException, action: str) -> SessionError:
    if isinstance(exc, _UNAVAILABLE):
        hint = " (it may or may not have been applied: read events() to check)"
        hint = hint if action == "append" else ""
        return SessionUnavailable(
            f"Redis is unavailable, {action} did not complete{hint}: {type(exc).__name__}: {exc}"
        )
    return SessionError.backend(exc)


def _check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise UserError(f"session_id must be a non-empty string, got {session_id!r}")
    return session_id


class RedisSession(StoredSession):
    """A session stored in a Redis stream, one entry per event (see the module for the keys).

    Build it on your own `redis.asyncio.Redis` client (TLS, Sentinel, pooling as you like)
    with `RedisSession(client, session_id)`, or let `RedisSession.connect(url, session_id)`
    make one that the session owns and closes in `aclose()`.

    `append` runs one Lua script: it reserves the next sequence numbers with `INCRBY` on the
    counter and adds one `XADD` entry per event, atomically, so concurrent writers (any
    process) never get a gap or a duplicate, and a failed append writes nothing. `events()`
    reads pages from the entry ID after `since`: plain `XRANGE` when the client parses
    replies with hiredis (`pip install hiredis`, part of the extra), else a read-only
    script that sends each page in six values. Nothing is ever trimmed.

    Example:
        ```python
        import asyncio

        from helikon.core.items import TextPart
        from helikon.core.session import SequenceId, UserMessageEvent
        from helikon.sessions.redis import RedisSession
        from helikon.testing.servers import RedisServer


        async def main() -> None:
            async with RedisServer() as server:
                async with await RedisSession.connect(server.url, "user-42") as session:
                    await session.append([UserMessageEvent(content=(TextPart(text="hi"),))])
                    [(seq, event)] = await session.events()
                    assert seq == 0 and (await session.snapshot()).messages[0].text == "hi"
                    assert await session.events(since=SequenceId(0)) == []


        asyncio.run(main())
        ```
    """

    __slots__ = (
        "_append",
        "_checkpoint",
        "_client",
        "_counter",
        "_ids",
        "_meta",
        "_metadata",
        "_raw_reads",
        "_read",
        "_read_checkpoint",
        "_stream",
        "_write_checkpoint_script",
    )

    def __init__(self, client: aioredis.Redis, session_id: str, *, owns_client: bool = False) -> None:
        """A session on `client`.

        Args:
            client: A `redis.asyncio.Redis` client (standalone or Sentinel-managed; not Cluster).
            session_id: The log this instance reads and writes.
            owns_client: Close `client` in `aclose()`.
        """
        super().__init__(_check_session_id(session_id), owns_store=owns_client)
        self._client = client
        self._stream = stream_key(session_id)
        self._counter = counter_key(session_id)
        self._ids = ids_key(session_id)
        self._meta = meta_key(session_id)
        self._checkpoint = checkpoint_key(session_id)
        self._append = client.register_script(APPEND_SCRIPT)
        self._read = client.register_script(READ_SCRIPT)
        self._raw_reads = parses_in_c(client)  # read plain XRANGE pages, not READ_SCRIPT's
        self._metadata = client.register_script(METADATA_SCRIPT)
        self._read_checkpoint = client.register_script(CHECKPOINT_READ_SCRIPT)
        self._write_checkpoint_script = client.register_script(CHECKPOINT_WRITE_SCRIPT)

    @classmethod
    async def connect(cls, url: str, session_id: str) -> Self:
        """Connect to `url` (`redis://`, `rediss://` or `unix://`) with a client this session owns.

        The client does not retry commands on its own (a retried `append` whose reply was lost
        would be applied twice); a failure is a `SessionUnavailable` for the caller to handle.

        Raises:
            SessionUnavailable: The server cannot be reached.
        """
        _check_session_id(session_id)
        client = aioredis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
            url, retry=Retry(NoBackoff(), 0), socket_connect_timeout=10
        )
        try:
            await client.ping()  # pyright: ignore[reportUnknownMemberType]
        except _ERRORS as exc:
            await client.aclose()
            raise _translate(exc, "connect") from exc
        return cls(client, session_id, owns_client=True)

    # --- the store's part of the Session (see StoredSession) -----------------------------------

    @property
    def client(self) -> aioredis.Redis:
        """The Redis client this session uses."""
        return self._client

    async def _write(
        self, events: Sequence[SessionEvent], ids: list[str] | None, expected: int | None
    ) -> None:
        # One Lua script reserves the seqs and adds the entries (see the class); a retry of
        # stored ids compares them first.
        versions = [stored_version(e) for e in events]
        uniform = versions.count(versions[0]) == len(versions)
        args: list[str | int] = [
            len(events),
            "" if expected is None else expected,
            _millis(),
            self._session_id,
            versions[0] if uniform else "*",
            "0" if ids is None else "1",
        ]
        for event in events:
            args += (event.type, encode_event(event), _nanoseconds(event.ts))
        if not uniform:
            args += versions
        if ids is not None:
            args += ids
        found = await self._run_append(args, expected)
        if found is None or ids is None:  # written (only ids ids are ever found stored)
            return
        # A retry: some ids are stored already. Compare those events with this batch's, then
        # have the script write the rest if the ids it finds stored are still the ones checked.
        # Ids are never deleted, so each round finds more of them: at most one round per id.
        payloads = [str(args[7 + 3 * i]) for i in range(len(events))]  # encode_event's, above
        args[5] = "2"
        for _ in range(len(ids)):
            if not await self._plan_retry(payloads, ids, found, expected):
                return  # all of it is stored
            found = await self._run_append([*args, found], expected)
            if found is None:
                return
        raise SessionError.backend(RuntimeError(f"the ids in {self._ids} kept changing during the append"))

    async def _run_append(self, args: list[str | int], expected: int | None) -> str | None:
        """Run the append script; the stored seqs it reports for a retry, or None once it wrote."""
        keys = [self._stream, self._counter, self._ids, self._meta, SESSIONS_KEY]
        try:
            await self._append(keys=keys, args=args)
        except ResponseError as exc:
            reason, _, value = str(exc).partition(" ")
            if reason == "HELIKON_STORED":
                return value
            if reason == "HELIKON_CONFLICT":
                actual = int(value)
                raise SessionConflict(
                    expected_seq=cast(int, expected), actual_seq=actual, session_id=self._session_id
                ) from None
            raise _translate(exc, "append") from exc
        except _ERRORS as exc:
            raise _translate(exc, "append") from exc
        return None

    async def _plan_retry(
        self, payloads: list[str], ids: list[str], found: str, expected: int | None
    ) -> list[int]:
        """`retry_plan` for a batch whose ids the script found stored at `found` (its seqs)."""
        seqs = found.split(",")
        at = {ids[i]: int(seq) for i, seq in enumerate(seqs) if seq}
        pipe = self._client.pipeline(transaction=False)
        for seq in at.values():
            pipe.xrange(self._stream, str(seq), str(seq))  # pyright: ignore[reportUnknownMemberType]
        pipe.get(self._counter)  # pyright: ignore[reportUnknownMemberType]
        try:
            replies: list[Any] = await pipe.execute()  # pyright: ignore[reportUnknownMemberType]
        except _ERRORS as exc:
            raise _translate(exc, "append") from exc
        stored: dict[str, tuple[int, bytes | str]] = {}
        for (event_id, seq), page in zip(at.items(), replies, strict=False):
            payload = _payload_of(cast("list[tuple[bytes, dict[bytes, bytes]]]", page), seq)
            if payload is None:
                raise SessionError.backend(
                    RuntimeError(f"{self._ids} maps id {event_id!r} to seq {seq}, which {self._stream} lacks")
                )
            stored[event_id] = (seq, payload)
        last = int(replies[-1] or 0) - 1
        return retry_plan(self._session_id, payloads, ids, stored, last, expected)

    async def _read_records(self, after: int) -> list[StoredRow]:
        start = "-" if after < 0 else f"{after + 1}"
        found: list[StoredRow] = []
        try:
            while True:
                page = cast(
                    "list[tuple[bytes, dict[bytes, bytes]]]",
                    await self._client.xrange(self._stream, start, "+", count=PAGE_SIZE),  # pyright: ignore[reportUnknownMemberType]
                )
                for _, raw in page:
                    fields = {_text(k): v for k, v in raw.items()}
                    if "seq" not in fields or "payload" not in fields:
                        continue  # not written by helikon
                    event_id = _text(fields["id"]) if "id" in fields else None
                    stamp = _from_nanoseconds(int(fields.get("ts", b"0") or 0))
                    payload = fields["payload"]
                    data = payload.encode() if isinstance(payload, str) else payload
                    found.append((int(fields["seq"]), event_id, stamp, int(fields.get("v", b"1")), data))
                if len(page) < PAGE_SIZE:
                    break
                start = next_id(page[-1][0])
        except _ERRORS as exc:
            raise _translate(exc, "records") from exc
        return found

    async def _store_metadata(self, title: str | None, metadata: str | None, expected: int | None) -> None:
        args: list[str | int] = [
            _millis(),
            self._session_id,
            "0" if title is None else "1",
            title or "",
            metadata or "",
            "" if expected is None else expected,
        ]
        try:
            await self._metadata(keys=[self._meta, SESSIONS_KEY], args=args)
        except ResponseError as exc:
            reason, _, value = str(exc).partition(" ")
            if reason == "HELIKON_METADATA_CONFLICT" and expected is not None:
                raise MetadataConflict(
                    expected_version=expected, actual_version=int(value), session_id=self._session_id
                ) from None
            raise _translate(exc, "set_metadata") from exc
        except _ERRORS as exc:
            raise _translate(exc, "set_metadata") from exc

    async def _read_metadata(self) -> SessionMetadata:
        try:
            title, metadata, version = cast(
                "list[bytes | None]",
                await self._client.hmget(self._meta, ["title", "metadata", "version"]),  # pyright: ignore[reportUnknownMemberType]
            )
        except _ERRORS as exc:
            raise _translate(exc, "metadata") from exc
        return SessionMetadata(
            title=None if title is None else _text(title),
            metadata=json.loads(metadata) if metadata else {},
            version=int(version or 0),
        )

    @staticmethod
    async def list_sessions(
        client: aioredis.Redis,
        *,
        limit: int = 100,
        offset: int = 0,
        filter: Mapping[str, JsonValue] | None = None,
    ) -> list[SessionInfo]:
        """The sessions on `client`'s server, most recently updated first, from their summary hashes.

        No log is read: one `ZREVRANGE` on `helikon:sessions` and one `HGETALL` per session,
        pipelined. `offset` skips that many first (the next page: `offset + limit`). Sessions
        written before format 2 are listed once `RedisSession.migrate(client)` ran.

        `filter`: only the sessions whose metadata has each of its top-level keys with an
        equal JSON scalar (see `SqliteSession.list_sessions`). Redis has no query over hash
        contents, so one Lua script (`FILTER_SCRIPT`) walks the index in the server, newest
        first, and stops once it has the page: one round trip, no metadata sent to the client.

        Example:
            `[info.session_id for info in await RedisSession.list_sessions(client, filter={"user": "u1"})]`
        """
        limit, offset = check_page(limit, offset)
        pairs = check_filter(filter)
        try:
            if pairs:
                found = cast(
                    "list[bytes | str]",
                    await client.register_script(FILTER_SCRIPT)(  # pyright: ignore[reportUnknownMemberType]
                        keys=[SESSIONS_KEY], args=[KEY_PREFIX, offset, limit, json.dumps(dict(pairs))]
                    ),
                )
                scored = [(found[i], float(found[i + 1])) for i in range(0, len(found), 2)]
            else:
                top = client.zrevrange(SESSIONS_KEY, offset, offset + limit - 1, withscores=True)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                scored = cast("list[tuple[bytes | str, float]]", await top)
            async with client.pipeline(transaction=False) as pipe:
                for name, _ in scored:
                    pipe.hgetall(meta_key(_text(name)))  # pyright: ignore[reportUnknownMemberType]
                    pipe.get(counter_key(_text(name)))  # pyright: ignore[reportUnknownMemberType]
                replies: list[Any] = await pipe.execute()  # pyright: ignore[reportUnknownMemberType]
        except _ERRORS as exc:
            raise _translate(exc, "list_sessions") from exc
        out: list[SessionInfo] = []
        for (name, score), raw, count in zip(scored, replies[::2], replies[1::2], strict=True):
            fields = {_text(k): _text(v) for k, v in cast("dict[bytes | str, bytes | str]", raw).items()}
            out.append(
                SessionInfo(
                    session_id=_text(name),
                    created=_from_millis(fields.get("created")),
                    updated=_from_millis(int(score)),
                    event_count=int(count or 0),
                    title=fields.get("title"),
                    metadata=json.loads(fields["metadata"]) if fields.get("metadata") else {},
                )
            )
        return out

    @staticmethod
    async def migrate(client: aioredis.Redis) -> int:
        """Give every session written before format 2 its summary hash, so `list_sessions` shows it.

        Scans for session streams (`SCAN`), and for each without a summary hash reads its
        first and last entries (their `ts` become `created` and the listing's `updated`); no
        entry is rewritten. Idempotent; returns how many sessions it added. Run it once after
        upgrading from format 1.
        """
        added = 0
        suffix = ":events"
        try:
            async for key in client.scan_iter(match=f"{KEY_PREFIX}*{suffix}", _type="stream"):  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                name = _text(cast("bytes | str", key))
                session_id = name[len(KEY_PREFIX) : -len(suffix)]
                if await client.exists(meta_key(session_id)):  # pyright: ignore[reportUnknownMemberType]
                    continue
                first = cast("list[tuple[bytes, dict[bytes, bytes]]]", await client.xrange(name, count=1))  # pyright: ignore[reportUnknownMemberType]
                last = cast("list[tuple[bytes, dict[bytes, bytes]]]", await client.xrevrange(name, count=1))  # pyright: ignore[reportUnknownMemberType]
                now = _millis()
                created, updated = _entry_millis(first) or now, _entry_millis(last) or now
                async with client.pipeline(transaction=True) as pipe:
                    pipe.hsetnx(meta_key(session_id), "created", created)  # pyright: ignore[reportUnknownMemberType]
                    pipe.zadd(SESSIONS_KEY, {session_id: updated}, nx=True)  # pyright: ignore[reportUnknownMemberType]
                    await pipe.execute()  # pyright: ignore[reportUnknownMemberType]
                added += 1
        except _ERRORS as exc:
            raise _translate(exc, "migrate") from exc
        return added

    async def _start_from_checkpoint(self) -> None:
        try:
            reply = cast("list[Any]", await self._read_checkpoint(keys=[self._checkpoint, self._stream]))
        except _ERRORS as exc:
            raise _translate(exc, "snapshot") from exc
        if not reply:
            return
        raw_seq, projector, stored = (_text(value) for value in reply[:3])
        projection = None
        if raw_seq.isdigit():  # anything else is a damaged hash: rebuild it
            checkpoint = Checkpoint(int(raw_seq), projector, stored, reply[3])
            projection = load(checkpoint, _text(reply[4]) or None)
        if projection is None:
            self._stale_checkpoint = True  # rebuilt from the whole log and replaced below
            return
        self._log.start_at(projection, int(raw_seq))

    async def _store_checkpoint(self, as_of_seq: int, state: str) -> bool:
        stale = "1" if self._stale_checkpoint else "0"
        args: list[str | int] = [as_of_seq, PROJECTOR_VERSION, state, stale, _millis()]
        try:
            await self._write_checkpoint_script(keys=[self._checkpoint, self._stream], args=args)
        except _ERRORS:
            return False  # only an optimization (e.g. maxmemory reached): the snapshot is read already
        return True

    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        self._check_open()
        try:
            if not self._raw_reads:
                fields = await script_fields(self._read, self._stream, after, PAGE_SIZE, PAGE_BYTES)
                return session_entries(self._session_id, after, fields)
            fields = await xrange_fields(self._client, self._stream, after, PAGE_SIZE)
            return session_entries(self._session_id, after, fields)
        except _ERRORS as exc:
            raise _translate(exc, action) from exc

    # --- lifecycle -----------------------------------------------------------------------------

    async def _close_store(self) -> None:
        await self._client.aclose()

    @property
    def _store(self) -> object:
        return self._client

    async def _sibling(self, session_id: str) -> Self:
        return type(self)(self._client, session_id)

    def __repr__(self) -> str:
        return f"RedisSession(session_id={self._session_id!r})"


async def open_session(session_id: str, *, url: str) -> RedisSession:
    """Open `session_id` on a client of its own (closed by `aclose()`): `RedisSession.connect`.

    Raises:
        SessionUnavailable: The server cannot be reached.
    """
    return await RedisSession.connect(url, session_id)


__all__ = [
    "APPEND_SCRIPT",
    "CHECKPOINT_READ_SCRIPT",
    "CHECKPOINT_WRITE_SCRIPT",
    "KEY_PREFIX",
    "METADATA_SCRIPT",
    "PAGE_BYTES",
    "PAGE_SIZE",
    "READ_SCRIPT",
    "SESSIONS_KEY",
    "RedisSession",
    "checkpoint_key",
    "counter_key",
    "ids_key",
    "meta_key",
    "open_session",
    "stream_key",
]
