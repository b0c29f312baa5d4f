"""Crash repair: close a turn its writer never closed, so the session projects to a valid conversation.

A durable run (`RunConfig.durable`) writes its events as they settle, between a
`TurnOpened` and a `TurnClosed` marker, and logs a `ToolsStarted` marker right before its
tool calls run. A process killed mid-run leaves the turn open: the calls it logged may
have no results, and providers refuse such a conversation. `close_interrupted_turn` finds
the open turn and appends, in one write, an error `ToolReturned` for each dangling call —
saying the call *never started* (no `ToolsStarted` covers it) or that its *outcome is
unknown* (it may have run: check before repeating anything with side effects) — and a
`TurnClosed(outcome="interrupted")`. `AsyncioRunner` does this before a durable run on a
session whose last turn is open; a UI may call it when it opens a session.

A turn that is open because its run is still going (in another process) looks the same:
`close_interrupted_turn` does not tell them apart. `AsyncioRunner` does before it calls it
(it waits for a turn whose writer may still be running; see `docs/runner.md`).

Example:
    ```python
    import asyncio

    from helikon import MemorySession, TextPart, ToolCalled, UserMessageEvent
    from helikon.core.session.crash_repair import close_interrupted_turn
    from helikon.core.session import ToolReturned, ToolsStarted, TurnClosed, TurnOpened

    async def main() -> None:
        session = MemorySession()
        await session.append([
            TurnOpened(run_id="r1"),
            UserMessageEvent(content=(TextPart(text="pay the invoice"),)),
            ToolCalled(call_id="c1", name="pay", args={"invoice": 7}),
            ToolsStarted(call_ids=("c1",)),
        ])  # ... and the process died
        repairs = await close_interrupted_turn(session)
        assert [type(e) for e in repairs] == [ToolReturned, TurnClosed]
        assert "outcome is unknown" in repairs[0].content[0].text
        assert await close_interrupted_turn(session) == []  # closed now

    asyncio.run(main())
    ```
"""

from __future__ import annotations

from collections.abc import Sequence

from ..exceptions import SessionConflict
from ..items import TextPart, ToolUsePart
from . import (
    AssistantMessageEvent,
    SequenceId,
    Session,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
)

NEVER_STARTED_TEXT = (
    "This tool call never started: the run was interrupted (its process stopped) before the "
    "tools ran. Nothing was executed."
)
OUTCOME_UNKNOWN_TEXT = (
    "This tool call's outcome is unknown: the run was interrupted (its process stopped) while the "
    "tool was running. It may or may not have taken effect; check before repeating it."
)


def open_turn(entries: Sequence[SessionEntry]) -> SessionEntry | None:
    """The `TurnOpened` entry of the last turn in `entries` if no `TurnClosed` closed it."""
    closed: set[str] = set()
    for entry in reversed(entries):
        event = entry.event
        if isinstance(event, TurnClosed):
            closed.add(event.run_id)
        elif isinstance(event, TurnOpened):
            return None if event.run_id in closed else entry
    return None


def repairs_for(events: Sequence[SessionEvent], run_id: str) -> list[SessionEvent]:
    """What closes the turn whose events (from its `TurnOpened` on) are `events`: results, then the marker."""
    calls: dict[str, str | None] = {}  # call id -> tool name, in the order they were logged
    started: dict[str, None] = {}  # in the order they started
    returned: set[str] = set()
    for event in events:
        if isinstance(event, ToolCalled):
            calls[event.call_id] = event.name
        elif isinstance(event, AssistantMessageEvent):
            for part in event.content:
                if isinstance(part, ToolUsePart):
                    calls[part.call_id] = part.name
        elif isinstance(event, ToolReturned):
            calls.pop(event.call_id, None)
            returned.add(event.call_id)
        elif isinstance(event, ToolsStarted):
            started.update(dict.fromkeys(event.call_ids))
    # A resumed turn runs calls logged before it (a paused run's, see `helikon.core.approvals`).
    for call_id in started:
        if call_id not in calls and call_id not in returned:
            calls[call_id] = None
    repairs: list[SessionEvent] = [
        ToolReturned(
            call_id=call_id,
            content=(TextPart(text=OUTCOME_UNKNOWN_TEXT if call_id in started else NEVER_STARTED_TEXT),),
            is_error=True,
            name=name,
        )
        for call_id, name in calls.items()
    ]
    repairs.append(TurnClosed(run_id=run_id, outcome="interrupted"))
    return repairs


async def close_interrupted_turn(session: Session, *, since: SequenceId | None = None) -> list[SessionEvent]:
    """Close the session's last turn if it was left open; the events appended (empty: nothing to do).

    `since` limits the read to the events after it (the caller knows the turn began later).
    The write names its ids after the turn and expects the log to end where it was read, so
    two processes repairing at once store one repair, and a writer that appended meanwhile
    (the turn was not dead after all) wins.
    """
    entries = await session.events(since)
    opened = open_turn(entries)
    if opened is None or not isinstance(opened.event, TurnOpened):
        return []
    run_id = opened.event.run_id
    start = next(i for i, entry in enumerate(entries) if entry.seq == opened.seq)
    repairs = repairs_for([entry.event for entry in entries[start:]], run_id)
    ids = [f"helikon-repair-{run_id}-{index}" for index in range(len(repairs))]
    try:
        await session.append(repairs, ids=ids, expected_seq=entries[-1].seq)
    except SessionConflict:
        return []
    return repairs


__all__ = [
    "NEVER_STARTED_TEXT",
    "OUTCOME_UNKNOWN_TEXT",
    "close_interrupted_turn",
    "open_turn",
    "repairs_for",
]
