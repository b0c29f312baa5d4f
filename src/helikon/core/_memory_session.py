"""`MemorySession`: the in-memory `Session`, for tests and ephemeral runs."""

from __future__ import annotations

from collections.abc import Sequence

from .session import ConversationSnapshot, SequenceId, SessionEntry, SessionEvent, project


class MemorySession:
    """An in-memory session: one instance is one conversation's log.

    Example:
        ```python
        import asyncio

        from helikon import MemorySession
        from helikon.core.items import TextPart
        from helikon.core.session import UserMessageEvent

        async def main() -> None:
            session = MemorySession()
            await session.append([UserMessageEvent(content=(TextPart(text="hi"),))])
            [(seq, event)] = await session.events()
            assert seq == 0 and (await session.snapshot()).messages[0].text == "hi"

        asyncio.run(main())
        ```
    """

    __slots__ = ("_log",)

    def __init__(self, events: Sequence[SessionEvent] = ()) -> None:
        self._log: list[SessionEvent] = list(events)

    def __len__(self) -> int:
        return len(self._log)

    def __repr__(self) -> str:
        return f"MemorySession({len(self._log)} events)"

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Add `events` to the end of the log (no await inside: atomic on the event loop)."""
        self._log.extend(events)

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The log after `since` (exclusive), each event with its sequence number."""
        start = 0 if since is None else max(since + 1, 0)
        return [SessionEntry(SequenceId(i), e) for i, e in enumerate(self._log[start:], start)]

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log."""
        return project(self._log)
