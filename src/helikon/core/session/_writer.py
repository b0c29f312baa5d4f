"""`RunWriter`: how a run's events reach its session, in order, retried, never stuck behind bad content."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from typing import Literal, cast

from .._internal.json_value import JsonValue
from ..exceptions import SessionConflict, SessionUnavailable
from ..items import TextPart, ToolUsePart
from ..retry import RetryPolicy
from . import (
    AssistantMessageEvent,
    Rewound,
    SequenceId,
    Session,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)

logger = logging.getLogger("helikon.runtime")

TurnOutcome = Literal["completed", "failed", "cancelled", "refused", "interrupted", "paused"]

_TRANSIENT = (SessionUnavailable, OSError, TimeoutError)
"""Errors that say the store could not be reached (try again later), not that it refused the events."""

_MAX_ADOPTED = 8
"""How many foreign appends one write adopts before it waits for the next attempt."""


class RunWriter:
    """Appends a run's events to its session in order, each batch with ids derived from the run.

    A batch that fails because the store cannot be reached stays pending, and is retried as
    it was (same events, same ids: a no-op if the failed write went through after all)
    before any later one. A batch the store refuses is written event by event: an event
    holding what stores refuse (a NUL, a lone surrogate: PostgreSQL's `jsonb` takes
    neither) as a copy with its strings made plain, else as a stand-in that says what was
    lost (an error result for a tool's output), so it never blocks the ones after it. An
    event without such content that is refused stays pending, as if the store were down.

    With `end` (the seq the log ends at, -1 for an empty log) every write is checked with
    `expected_seq`: if another writer appended in between, what it appended is read, and a
    turn marker (another run, or a repair that closed this one) stops this writer for good
    (`taken_over`) rather than interleave; anything else (a compaction marker) is stepped over.
    """

    __slots__ = (
        "_count",
        "_end",
        "_ids",
        "_pending",
        "_run_id",
        "_session",
        "_written",
        "error",
        "taken_over",
    )

    def __init__(self, session: Session, run_id: str, end: int | None = None) -> None:
        self._session = session
        self._run_id = run_id
        self._ids = session.supports_ids
        self._end = end if self._ids else None
        self._pending: list[tuple[list[SessionEvent], list[str]]] = []  # batches not yet stored
        self._count = 0
        self._written = 0  # events stored so far
        self.error: str | None = None
        """What the session said to the last failed write (None once everything is stored)."""
        self.taken_over: str | None = None
        """Why this writer stopped for good: another writer's turn came in between."""

    @property
    def run_id(self) -> str:
        """The run whose events this writer stores (its ids derive from it)."""
        return self._run_id

    @property
    def unsaved(self) -> tuple[str, ...]:
        """The `type` of each event not stored yet, in order."""
        return tuple(event.type for batch, _ in self._pending for event in batch)

    def add(self, events: Sequence[SessionEvent]) -> None:
        """Queue `events` as the next batch (written by the next `flush`)."""
        if events:
            start, self._count = self._count, self._count + len(events)
            ids = [f"{self._run_id}-{n}" for n in range(start, self._count)]
            self._pending.append((list(events), ids))

    async def claim(self, events: Sequence[SessionEvent]) -> bool:
        """Write a run's first batch, raising `SessionConflict` if the log moved on since `end`.

        Returns whether it is stored (False: the store could not be reached; it stays pending).
        """
        self.add(events)
        batch, ids = self._pending[0]
        try:
            await self._append(batch, ids)
        except SessionConflict:
            self._pending.clear()
            self._count = 0
            raise
        except _TRANSIENT as exc:
            self._failed(exc, "the run's first events")
            return False
        except Exception:  # refused content: the one-by-one path below decides
            return await self.flush()
        self._stored()
        return True

    async def write(self, events: Sequence[SessionEvent]) -> bool:
        """Queue `events` and write everything pending, once; whether nothing is left pending."""
        self.add(events)
        return await self.flush()

    async def flush(self) -> bool:
        """Write the pending batches in order, one attempt each; whether nothing is left pending."""
        adopted = 0
        while self._pending and self.taken_over is None:
            batch, ids = self._pending[0]
            try:
                await self._append(batch, ids)
            except SessionConflict as conflict:
                adopted += 1
                if adopted > _MAX_ADOPTED or not await self._adopt(conflict):
                    return False
                continue
            except _TRANSIENT as exc:
                self._failed(exc, f"{len(batch)} event(s)")
                return False
            except Exception as exc:
                if not await self._one_by_one(exc):
                    return False
                continue
            self._stored()
        if not self._pending:
            self.error = None
        return not self._pending

    async def settle(self, policy: RetryPolicy) -> bool:
        """Retry what is pending with `policy`'s backoff (the first attempt was the last write's).

        Returns whether everything is stored.
        """
        retry = 1
        while self._pending and self.taken_over is None and retry < policy.max_attempts:
            await asyncio.sleep(policy.delay(retry))
            retry += 1
            await self.flush()
        return not self._pending

    async def close(self, events: list[SessionEvent], outcome: TurnOutcome) -> None:
        """Write the rest and the `TurnClosed`; a refused run's written events are rewound away."""
        if outcome == "refused":
            if not self._written:
                self._pending.clear()  # nothing of it is stored: it leaves no trace
                return
            events = [*events, *await self._rewind_marker()]
        await self.write([*events, TurnClosed(run_id=self._run_id, outcome=outcome)])

    # --- the writes ------------------------------------------------------------------------

    async def _append(self, events: list[SessionEvent], ids: list[str]) -> None:
        if not self._ids:
            await self._session.append(events)
        elif self._end is None:
            await self._session.append(events, ids=ids)
        else:
            await self._session.append(events, ids=ids, expected_seq=self._end)

    def _stored(self) -> None:
        batch, _ = self._pending.pop(0)
        self._written += len(batch)
        if self._end is not None:
            self._end += len(batch)

    def _failed(self, exc: BaseException, what: str) -> None:
        self.error = _plain(f"{type(exc).__name__}: {exc}")
        logger.warning("could not append %s to the session (kept, to retry)", what, exc_info=exc)

    async def _adopt(self, conflict: SessionConflict) -> bool:
        """Step over what another writer appended, unless it is a turn: then stop for good."""
        assert self._end is not None
        try:
            entries = await self._session.events(SequenceId(self._end))
        except Exception as exc:
            self._failed(exc, "the events another writer appended (to read them)")
            return False
        turns = [entry for entry in entries if isinstance(entry.event, TurnOpened | TurnClosed)]
        if turns:
            first = turns[0]
            what = "closed this run's turn" if isinstance(first.event, TurnClosed) else "opened its own turn"
            self.taken_over = self.error = (
                f"another writer {what} at seq {int(first.seq)} while this run was in progress (run "
                f"{self._run_id}): the rest of the run is not stored, so that the turns do not interleave"
            )
            logger.warning("%s", self.taken_over)
            return False
        self._end = conflict.actual_seq
        return True

    async def _one_by_one(self, refusal: Exception) -> bool:
        """Store the first pending batch event by event, replacing what the store refuses.

        Returns whether to go on writing (False: the rest stays pending).
        """
        batch, ids = self._pending[0]
        while batch:
            outcome = await self._store_one(batch[0], ids[0], refusal)
            if outcome != "stored":
                return outcome == "again"  # again: the rest is retried, as a batch
            batch, ids = batch[1:], ids[1:]
            self._pending[0] = (batch, ids)
        self._pending.pop(0)
        return True

    async def _store_one(
        self, event: SessionEvent, event_id: str, refusal: Exception
    ) -> Literal["stored", "again", "stop"]:
        """Store `event`; refused, and holding what stores refuse, its plain copy, else a stand-in.

        All under the event's own id. A refused event without such content says the store is
        failing, not the content: it stays pending (a stand-in written the moment the store
        is back would lose it).
        """
        candidates: list[SessionEvent] = [event]
        plain = plain_copy(event)
        if plain is not event:
            replacement = stand_in(event, refusal)
            candidates += [plain] if replacement is None else [plain, replacement]
        for candidate in candidates:
            try:
                await self._append([candidate], [event_id])
            except SessionConflict as conflict:
                return "again" if await self._adopt(conflict) else "stop"
            except _TRANSIENT as exc:
                self._failed(exc, "events")
                return "stop"
            except Exception as exc:
                refusal = exc
                continue
            self._written += 1
            if self._end is not None:
                self._end += 1
            if candidate is not event:
                logger.warning(
                    "the session refused a %s event of run %s (%s): stored %s instead",
                    event.type,
                    self._run_id,
                    _plain(f"{type(refusal).__name__}: {refusal}"),
                    "a copy with its strings made plain" if candidate is plain else "a stand-in",
                )
            return "stored"
        # Everything was refused, the plainest form too: the store is failing, not the content.
        self._failed(refusal, "events")
        return "stop"

    async def _rewind_marker(self) -> list[SessionEvent]:
        # The refused input is already in the log: a rewind to just before the turn takes it
        # out of the conversation (the log keeps it, for the audit).
        try:
            entries = await self._session.events()
        except Exception:
            logger.warning("could not read the session to take back a refused input", exc_info=True)
            return []
        for entry in entries:
            if type(entry.event) is TurnOpened and entry.event.run_id == self._run_id:  # pyright: ignore[reportAttributeAccessIssue]
                return [Rewound(to_seq=int(entry.seq) - 1)]
        return []


# --- what stands in for refused content ----------------------------------------------------------


def plain_copy(event: SessionEvent) -> SessionEvent:
    r"""`event` with each NUL and lone surrogate in its strings written out as text (`\u0000`, `\udcff`).

    What any store takes; the event itself when it has none.
    """
    return _plain_value(event, 0)  # pyright: ignore[reportReturnType]


def stand_in(event: SessionEvent, refusal: Exception) -> SessionEvent | None:
    """What is stored for an event the store refused even plain, saying so; None: nothing can."""
    why = _plain(f"{type(refusal).__name__}: {refusal}")[:300]
    if isinstance(event, ToolReturned):
        text = f"This tool's result could not be stored in the session ({why}); it is lost."
        return ToolReturned(
            call_id=_plain(event.call_id),
            name=None if event.name is None else _plain(event.name),
            content=(TextPart(text=text),),
            is_error=True,
            ts=event.ts,
        )
    if isinstance(event, ToolCalled):
        args: JsonValue = {"unstored": f"the arguments could not be stored in the session ({why})"}
        return ToolCalled(call_id=_plain(event.call_id), name=_plain(event.name), args=args, ts=event.ts)
    if isinstance(event, UserMessageEvent | AssistantMessageEvent):
        note = TextPart(text=f"[This message could not be stored in the session ({why}).]")
        calls = tuple(
            ToolUsePart(call_id=_plain(part.call_id), name=_plain(part.name), args={"unstored": why})
            for part in event.content
            if isinstance(part, ToolUsePart)
        )
        return dataclasses.replace(event, content=(note, *calls))
    return None


_MAX_PLAIN_DEPTH = 128  # deeper values are the codec's to replace


def _plain(text: str) -> str:
    if text.isascii() and "\x00" not in text:
        return text
    plain = text.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")
    return text if plain == text else plain


def _plain_value(value: object, depth: int) -> object:
    """`value` with its strings `_plain`; the very object when nothing changed."""
    if isinstance(value, str):
        return _plain(value)
    if depth > _MAX_PLAIN_DEPTH:
        return value
    if isinstance(value, dict):
        old = cast("dict[str, object]", value)
        pairs = [(_plain(key), _plain_value(item, depth + 1)) for key, item in old.items()]
        if all(k is key and v is item for (k, v), (key, item) in zip(pairs, old.items(), strict=True)):
            return old
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = cast("list[object] | tuple[object, ...]", value)
        changed = [_plain_value(item, depth + 1) for item in items]
        if all(a is b for a, b in zip(changed, items, strict=True)):
            return items
        return changed if isinstance(items, list) else tuple(changed)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: dict[str, object] = {}
        for field in dataclasses.fields(value):
            old_field = getattr(value, field.name)
            new_field = _plain_value(old_field, depth + 1)
            if new_field is not old_field:
                changes[field.name] = new_field
        return dataclasses.replace(value, **changes) if changes else value
    return value
