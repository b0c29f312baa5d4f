"""`RedisSession`: a session's event log in a Redis stream (redis-py, asyncio).

Each session is two keys: the stream `helikon:session:<id>:events`, one entry per event,
and the counter `helikon:session:<id>:seq`, the number of sequence numbers handed out. An
entry's ID is `<seq>-1` and its fields are

| field | value |
| --- | --- |
| `seq` | the event's `SequenceId`, decimal (0, 1, 2, ...) |
| `kind` | the event's `type` tag, e.g. `user_message` |
| `payload` | the event as `helikon.core.codec.encode_event` writes it (JSON, format `FORMAT_VERSION`) |
| `ts` | the event's `ts` in nanoseconds since the Unix epoch, decimal; `0` when it has none |

`append` is one Lua script, atomic on the server. helikon never trims the stream: run Redis
with `maxmemory-policy noeviction`, since an evicted key is a lost log.

Requires the `sessions-redis` extra: `pip install 'paigasus-helikon[sessions-redis]'`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self, cast

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - the extra is installed for the test suite
    raise ImportError(
        "helikon.sessions.redis needs redis-py: pip install 'paigasus-helikon[sessions-redis]'"
    ) from exc

from helikon.core._log_cache import LogCache
from helikon.core.codec import decode_events, decode_joined, encode_event
from helikon.core.exceptions import SessionError, SessionUnavailable, UserError
from helikon.core.session import ConversationSnapshot, SequenceId, SessionEntry, SessionEvent

KEY_PREFIX = "helikon:session:"
"""Every key of a session starts with this, then the session id."""

PAGE_SIZE = 1000
"""Entries `events()` reads per round trip (one `XRANGE ... COUNT` on the server)."""

PAGE_BYTES = 8 * 1024 * 1024
"""A page also ends once its payloads pass this many bytes (after at least one entry)."""

# KEYS[1] the stream, KEYS[2] the counter; ARGV[1] the number of events n, then kind, payload
# and ts of each. Everything that can fail is checked before the first write, and Redis denies
# an out-of-memory script only at its first write, so the script writes all or nothing.
APPEND_SCRIPT = """
local n = tonumber(ARGV[1])
if n == nil or n < 1 or #ARGV ~= 1 + 3 * n then
  return redis.error_reply('ERR helikon append: malformed arguments')
end
local first = tonumber(redis.call('GET', KEYS[2]) or '0')
if first == nil then
  return redis.error_reply('ERR helikon append: the counter ' .. KEYS[2] .. ' is not an integer')
end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  local last = tonumber(string.match(top[1][1], '^(%d+)-'))
  if last >= first then
    return redis.error_reply('ERR helikon append: ' .. KEYS[1] .. ' holds entry ' .. top[1][1]
      .. ' at or past the counter ' .. KEYS[2] .. ' (' .. first .. '): the counter was lost or changed')
  end
end
redis.call('INCRBY', KEYS[2], n)
for i = 0, n - 1 do
  local seq = string.format('%d', first + i)
  redis.call('XADD', KEYS[1], seq .. '-1', 'seq', seq, 'kind', ARGV[2 + 3 * i],
    'payload', ARGV[3 + 3 * i], 'ts', ARGV[4 + 3 * i])
end
return first
"""
"""The Lua script `append` runs (by `EVALSHA`): reserve `n` seqs with `INCRBY`, one `XADD` per event."""

# KEYS[1] the stream; ARGV: the first entry ID, the page size, the byte budget. Returns whether
# more may follow, the last entry ID read, the entries' seqs and payload lengths (comma
# separated) and their payloads joined by commas: five values a page, however long it is, so the
# client parses almost nothing (XRANGE's reply is ~10 values per entry). Entries without a
# `seq` or `payload` field (not written by helikon) are skipped.
READ_SCRIPT = """
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', tonumber(ARGV[2]))
local budget = tonumber(ARGV[3])
local seqs, lengths, payloads = {}, {}, {}
local last, size, more = '', 0, 0
if #entries == tonumber(ARGV[2]) then more = 1 end
for _, entry in ipairs(entries) do
  local fields = entry[2]
  local seq, payload
  for j = 1, #fields, 2 do
    local name = fields[j]
    if name == 'seq' then seq = fields[j + 1] elseif name == 'payload' then payload = fields[j + 1] end
  end
  if seq and payload then
    if size > 0 and size + #payload > budget then
      more = 1
      break
    end
    seqs[#seqs + 1] = seq
    lengths[#lengths + 1] = #payload
    payloads[#payloads + 1] = payload
    size = size + #payload
  end
  last = entry[1]
end
return {more, last, table.concat(seqs, ','), table.concat(lengths, ','), table.concat(payloads, ',')}
"""
"""The read-only Lua script `events()` runs (by `EVALSHA`) for each page of the stream."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNAVAILABLE: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)


def stream_key(session_id: str) -> str:
    """The key of the stream holding `session_id`'s events."""
    return f"{KEY_PREFIX}{session_id}:events"


def counter_key(session_id: str) -> str:
    """The key of `session_id`'s sequence counter (how many seqs were handed out)."""
    return f"{KEY_PREFIX}{session_id}:seq"


def _nanoseconds(ts: datetime | None) -> int:
    if ts is None:
        return 0
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (ts - _EPOCH) // timedelta(microseconds=1) * 1000


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


def _text(value: bytes | str) -> str:
    # Raw clients give bytes; a client built with decode_responses=True gives str.
    return value.decode() if isinstance(value, bytes) else value


def _ints(csv: bytes | str) -> list[int]:
    return [int(part) for part in _text(csv).split(",")]


class RedisSession:
    """A session stored in a Redis stream, one entry per event (see the module for the keys).

    Build it on your own `redis.asyncio.Redis` client (TLS, Sentinel, pooling as you like)
    with `RedisSession(client, session_id)`, or let `RedisSession.connect(url, session_id)`
    make one that the session owns and closes in `aclose()`.

    `append` runs one Lua script: it reserves the next sequence numbers with `INCRBY` on the
    counter and adds one `XADD` entry per event, atomically, so concurrent writers (any
    process) never get a gap or a duplicate, and a failed append writes nothing. `events()`
    reads with paged `XRANGE` from the entry ID after `since`. Nothing is ever trimmed.

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
        "_client",
        "_closed",
        "_counter",
        "_log",
        "_owns_client",
        "_read",
        "_session_id",
        "_stream",
    )

    def __init__(self, client: aioredis.Redis, session_id: str, *, owns_client: bool = False) -> None:
        """A session on `client`.

        Args:
            client: A `redis.asyncio.Redis` client (standalone or Sentinel-managed; not Cluster).
            session_id: The log this instance reads and writes.
            owns_client: Close `client` in `aclose()`.
        """
        self._client = client
        self._session_id = _check_session_id(session_id)
        self._stream = stream_key(session_id)
        self._counter = counter_key(session_id)
        self._owns_client = owns_client
        self._closed = False
        self._log = LogCache()  # what this object has read: later reads fetch only the tail
        self._append = client.register_script(APPEND_SCRIPT)
        self._read = client.register_script(READ_SCRIPT)

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

    # --- the Session protocol ----------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The id of the log this instance reads and writes."""
        return self._session_id

    @property
    def client(self) -> aioredis.Redis:
        """The Redis client this session uses."""
        return self._client

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Write `events` to the end of the log, atomically; an empty list is a no-op.

        Raises:
            SessionUnavailable: The server cannot be reached.
            SessionBackendError: The server refused (e.g. out of memory). Nothing was written.
        """
        self._check_open()
        if not events:
            return
        args: list[str | int] = [len(events)]
        for event in events:
            args += (event.type, encode_event(event), _nanoseconds(event.ts))
        try:
            await self._append(keys=[self._stream, self._counter], args=args)
        except _ERRORS as exc:
            raise _translate(exc, "append") from exc

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The log after `since` (exclusive), in order, each event with its sequence number."""
        await self._refresh("events")
        return self._log.after(since)

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log (folded incrementally: only new events cost)."""
        await self._refresh("snapshot")
        return self._log.snapshot()

    async def _fetch(self, after: int, action: str) -> list[SessionEntry]:
        pages = await self._read_pages(after, action)
        seqs = [seq for page_seqs, _, _ in pages for seq in page_seqs]
        if seqs and seqs == list(range(after + 1, after + 1 + len(seqs))):
            # The usual case: the pages hold exactly the next seqs, so their comma-joined
            # payloads decode in one pass.
            decoded = decode_joined(b",".join(blob for _, _, blob in pages).decode(), len(seqs))
            if decoded is not None:
                return [
                    SessionEntry(SequenceId(seq), event) for seq, event in zip(seqs, decoded, strict=True)
                ]
        kept: list[int] = []
        payloads: list[bytes] = []
        for page_seqs, lengths, blob in pages:  # entry by entry: skips, gaps, a damaged payload
            offset = 0
            for seq, length in zip(page_seqs, lengths, strict=True):
                if seq > after:  # the seq field is the truth, the ID only a way to seek
                    kept.append(seq)
                    payloads.append(blob[offset : offset + length])
                offset += length + 1  # and the comma
        decoded = decode_events(payloads)
        return [SessionEntry(SequenceId(seq), event) for seq, event in zip(kept, decoded, strict=True)]

    async def _refresh(self, action: str) -> None:
        """Fetch and decode what was appended after what this object has already read."""
        if not self._log.extend(await self._fetch(self._log.last_seq, action)):
            self._log.clear()  # the stream no longer continues what we read
            self._log.extend(await self._fetch(-1, action))

    async def _read_pages(self, after: int, action: str) -> list[tuple[list[int], list[int], bytes]]:
        """The entries from seq `after + 1` on: per page, their seqs, payload lengths and joined payloads."""
        self._check_open()
        start = "-" if after < 0 else f"{after + 1}"  # entry IDs are `<seq>-1`: seek, don't scan
        pages: list[tuple[list[int], list[int], bytes]] = []
        try:
            while True:
                reply = await self._read(keys=[self._stream], args=[start, PAGE_SIZE, PAGE_BYTES])
                more, last, page_seqs, lengths, blob = cast("list[Any]", reply)
                if page_seqs:
                    data = blob.encode() if isinstance(blob, str) else blob
                    pages.append((_ints(page_seqs), _ints(lengths), data))
                if not int(more):
                    return pages
                major, _, minor = _text(last).partition("-")
                start = f"{major}-{int(minor) + 1}"
        except _ERRORS as exc:
            raise _translate(exc, action) from exc

    # --- lifecycle -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the client if this session owns it (`connect`); otherwise only this handle."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"RedisSession(session_id={self._session_id!r})"

    def _check_open(self) -> None:
        if self._closed:
            raise UserError(f"{self!r} is closed: open a new session")


async def open_session(session_id: str, *, url: str) -> RedisSession:
    """Open `session_id` on a client of its own (closed by `aclose()`): `RedisSession.connect`.

    Raises:
        SessionUnavailable: The server cannot be reached.
    """
    return await RedisSession.connect(url, session_id)


__all__ = [
    "APPEND_SCRIPT",
    "KEY_PREFIX",
    "PAGE_BYTES",
    "PAGE_SIZE",
    "READ_SCRIPT",
    "RedisSession",
    "counter_key",
    "open_session",
    "stream_key",
]
