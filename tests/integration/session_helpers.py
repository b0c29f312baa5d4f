"""What the backend test files share: small events, and reading them back."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from helikon.core.items import TextPart
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    HandoffOccurred,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis


def say(text: str) -> UserMessageEvent:
    """A user message with `text`."""
    return UserMessageEvent(content=(TextPart(text=text),))


def texts(entries: Sequence[SessionEntry]) -> list[str]:
    """The texts of entries that must all be `say` messages."""
    out: list[str] = []
    for entry in entries:
        assert isinstance(entry.event, UserMessageEvent), entry
        part = entry.event.content[0]
        assert isinstance(part, TextPart)
        out.append(part.text)
    return out


def seqs(entries: Sequence[SessionEntry]) -> list[int]:
    """The entries' sequence numbers."""
    return [int(entry.seq) for entry in entries]


def every_kind() -> list[SessionEvent]:
    """One event of each of the book's six types, with awkward content."""
    return [
        say("How am I doing on dining?"),
        ToolCalled(call_id="c1", name="budget_status", args={"category": "Dining", "n": [1, 2.5, None]}),
        ToolReturned(call_id="c1", content=(TextPart(text='{"remaining":-62.4}'),), name="budget_status"),
        AssistantMessageEvent(content=(TextPart(text="Over by $62.40 — ünïcödé ✓"),), agent="budget"),
        HandoffOccurred(from_agent="budget", to_agent="advisor"),
        Compacted(summary="dining is over budget", original_count=4),
    ]


async def stream_entries(
    client: aioredis.Redis, key: str, first: str = "-", last: str = "+"
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """A Redis stream's entries, as a client without `decode_responses` returns them.

    (redis's own types allow `str` and None in them, for other clients.)
    """
    return cast("list[tuple[bytes, dict[bytes, bytes]]]", await client.xrange(key, first, last))


async def hash_fields(client: aioredis.Redis, key: str) -> dict[bytes, bytes]:
    """A Redis hash's fields, as a client without `decode_responses` returns them."""
    return cast("dict[bytes, bytes]", await client.hgetall(key))


async def read_line(proc: asyncio.subprocess.Process) -> str:
    """The next line a helper process printed; its stderr as the failure when it printed none."""
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line:
        assert proc.stderr is not None
        raise AssertionError((await proc.stderr.read()).decode())
    return line.decode().strip()
