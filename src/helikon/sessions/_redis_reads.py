"""How `RedisSession` reads a stream's entries and makes them into session entries.

Two ways to page through a stream, one chosen per client:

- plain `XRANGE ... COUNT` pages, when the client parses replies with hiredis (C). They cost
  the server a fraction of a script, and hiredis turns a page's ~12 values per entry into
  Python lists quickly;
- `READ_SCRIPT` pages otherwise: the script copies each entry into Lua tables (most of its
  cost on the server) but replies with six values a page, which redis-py's pure-Python
  parser reads far faster than a plain page's.

Either way the seq field is the truth (the entry ID only a way to seek), and entries without
a `seq` or `payload` field (not written by helikon) are skipped.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, cast

import redis.asyncio as aioredis
from redis._parsers import _AsyncHiredisParser  # pyright: ignore[reportPrivateUsage]
from redis.asyncio.connection import DefaultParser
from redis.commands.core import AsyncScript
from redis.utils import HIREDIS_AVAILABLE

from helikon.core.session import SequenceId, SessionEntry
from helikon.core.session.codec import decode_events, decode_joined, new_entry, upgrade_all

Fields = tuple[list[int], list[int] | int, list[bytes]]
"""The seqs, format versions (one int when all alike) and payloads of a run of entries."""


_LAYOUT = {(b"seq", b"payload", b"v")}  # fields 0, 4 and 8 of every entry `append` writes
_NAMES, _SEQ, _PAYLOAD, _VERSION = itemgetter(0, 4, 8), itemgetter(1), itemgetter(5), itemgetter(9)


def text(value: bytes | str) -> str:
    # Raw clients give bytes; a client built with decode_responses=True gives str.
    return value.decode() if isinstance(value, bytes) else value


def next_id(entry_id: bytes | str) -> str:
    """The stream entry ID right after `entry_id` (where the next page starts)."""
    major, _, minor = text(entry_id).partition("-")
    return f"{major}-{int(minor) + 1}"


def parses_in_c(client: aioredis.Redis) -> bool:
    """Whether `client`'s connections parse replies with hiredis rather than redis-py's Python parser."""
    if not HIREDIS_AVAILABLE:
        return False
    options: dict[str, object] = getattr(client.connection_pool, "connection_kwargs", {})
    parser = options.get("parser_class", DefaultParser)
    return isinstance(parser, type) and issubclass(parser, _AsyncHiredisParser)


async def xrange_fields(client: aioredis.Redis, stream: str, after: int, page_size: int) -> Fields:
    """The entries from seq `after + 1` on, read in plain `XRANGE` pages of `page_size`."""
    start = "-" if after < 0 else f"{after + 1}"  # entry IDs are `<seq>-1`: seek, don't scan
    entries: list[Any] = []
    while True:
        # A bytes command name is not among the client's (str-keyed) response callbacks, so
        # the reply stays as hiredis builds it rather than becoming a dict per entry (a
        # redis-py that applied the callback anyway still reads right, only slower);
        # NEVER_DECODE keeps bytes on a client built with decode_responses=True.
        page = cast(
            "list[Any]",
            await client.execute_command(  # pyright: ignore[reportUnknownMemberType]
                b"XRANGE", stream, start, "+", "COUNT", page_size, NEVER_DECODE=True
            ),
        )
        entries += [fields for _, fields in page]
        if len(page) < page_size:
            return stream_fields(entries)
        start = next_id(page[-1][0])


def stream_fields(entries: list[Any]) -> Fields:
    """The seqs, versions and payloads of `XRANGE` entries' field lists."""
    try:
        layouts = set(map(_NAMES, entries))
    except (IndexError, KeyError):  # a format-1 entry (no `v`), a foreign one, or mappings
        layouts = None
    if layouts == _LAYOUT:  # the usual case: a few passes in C, no dict per entry
        raw_versions = list(map(_VERSION, entries))
        first = raw_versions[0]
        uniform = raw_versions.count(first) == len(raw_versions)
        versions = int(first) if uniform else list(map(int, raw_versions))
        return list(map(int, map(_SEQ, entries))), versions, list(map(_PAYLOAD, entries))
    seqs: list[int] = []
    all_versions: list[int] = []
    payloads: list[bytes] = []
    for raw in entries:
        pairs: Any = (
            cast(Any, raw).items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
        )
        fields = {text(name): value for name, value in pairs}
        if "seq" in fields and "payload" in fields:
            seqs.append(int(fields["seq"]))
            all_versions.append(int(fields.get("v", b"1")))
            payload = fields["payload"]
            payloads.append(payload.encode() if isinstance(payload, str) else payload)
    return seqs, all_versions, payloads


async def script_fields(
    read: AsyncScript, stream: str, after: int, page_size: int, page_bytes: int
) -> Fields:
    """The entries from seq `after + 1` on, read in `READ_SCRIPT` pages (see `_redis_scripts`)."""
    start = "-" if after < 0 else f"{after + 1}"
    seqs: list[int] = []
    versions: list[int] = []
    payloads: list[bytes] = []
    while True:
        reply = await read(keys=[stream], args=[start, page_size, page_bytes])
        more, last, page_seqs, lengths, page_versions, blob = cast("list[Any]", reply)
        if page_seqs:
            data = blob.encode() if isinstance(blob, str) else blob
            seqs += _ints(page_seqs)
            versions += _ints(page_versions)
            offset = 0
            for length in _ints(lengths):  # the script joined the payloads with commas
                payloads.append(data[offset : offset + length])
                offset += length + 1
        if not int(more):
            return seqs, versions, payloads
        start = next_id(last)


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def _ints(csv: bytes | str) -> list[int]:
    return [int(part) for part in text(csv).split(",")]


def session_entries(session_id: str, after: int, fields: Fields) -> list[SessionEntry]:
    """The session entries after seq `after` among the entries read (decoded and upgraded)."""
    seqs, versions, payloads = fields
    count = len(seqs)
    if seqs and seqs == list(range(after + 1, after + 1 + count)):
        # The usual case: exactly the next seqs, so their comma-joined payloads parse at once.
        joined = _utf8(b",".join(payloads))  # None: a payload is not UTF-8 (decoded alone below)
        decoded = None if joined is None else decode_joined(joined, count)
        if decoded is not None:
            decoded = upgrade_all(session_id, seqs, versions, decoded)
            return list(map(new_entry, zip(seqs, decoded, strict=True)))
    # Entry by entry: a damaged payload is isolated, and seqs at or before `after` (an entry
    # whose ID and seq field disagree) or out of order are dealt with one by one.
    if isinstance(versions, int):
        versions = [versions] * count
    kept = [index for index, seq in enumerate(seqs) if seq > after]
    kept_seqs = [SequenceId(seqs[index]) for index in kept]
    payload_list = [payloads[index] for index in kept]
    decoded = upgrade_all(session_id, kept_seqs, [versions[i] for i in kept], decode_events(payload_list))
    return list(map(new_entry, zip(kept_seqs, decoded, strict=True)))


__all__ = [
    "Fields",
    "next_id",
    "parses_in_c",
    "script_fields",
    "session_entries",
    "stream_fields",
    "text",
    "xrange_fields",
]
