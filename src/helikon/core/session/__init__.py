"""Sessions: the append-only event log (`SessionEvent`), the `Session` protocol and `project`.

The log is the source of truth; the conversation a model sees is a projection of it.

Example:
    ```python
    from helikon.core.session import ToolCalled, UserMessageEvent, project
    from helikon.core.items import TextPart

    log = [UserMessageEvent(content=(TextPart(text="hi"),))]
    assert project(log).messages[0].text == "hi"
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import field
from datetime import UTC, datetime
from typing import Literal, NamedTuple, NewType, Protocol, TypeAlias, cast, runtime_checkable

from .._adapter import LazyAdapter
from .._carrier import carrier
from .._json import JsonObject, JsonValue
from ..events import TokenUsage
from ..exceptions import UserError
from ..items import (
    AssistantMessage,
    ContentPart,
    Item,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from ..model import ToolDef
from ._pair_cut import whole_cut
from ._result_order import result_position

SequenceId = NewType("SequenceId", int)
"""A position in one session's log: 0 for the first event, then +1 per event."""


def _now() -> datetime:
    return datetime.now(UTC)


@carrier
class UserMessageEvent:
    """The user said something."""

    type: Literal["user_message"] = "user_message"
    content: tuple[ContentPart, ...]
    ts: datetime = field(default_factory=_now)


@carrier
class AssistantMessageEvent:
    """An agent answered; `usage` is the token count of the model call that produced it, if known."""

    type: Literal["assistant_message"] = "assistant_message"
    content: tuple[ContentPart, ...]
    agent: str | None = None
    ts: datetime = field(default_factory=_now)
    usage: TokenUsage | None = None


@carrier
class ToolCalled:
    """The model called a tool."""

    type: Literal["tool_called"] = "tool_called"
    call_id: str
    name: str
    args: JsonValue
    ts: datetime = field(default_factory=_now)


@carrier
class ToolReturned:
    """A tool answered (or was interrupted, with `is_error`).

    `metadata` is the tool's `ToolOutput.metadata` (what a UI shows of the result), if it
    gave any; it is not conversation: `project` leaves it out of the `ToolResult`.
    """

    type: Literal["tool_returned"] = "tool_returned"
    call_id: str
    content: tuple[ContentPart, ...]
    is_error: bool = False
    name: str | None = None
    ts: datetime = field(default_factory=_now)
    metadata: JsonObject | None = None


@carrier
class HandoffOccurred:
    """Control passed between agents. Audit only: projects to nothing."""

    type: Literal["handoff_occurred"] = "handoff_occurred"
    from_agent: str
    to_agent: str
    ts: datetime = field(default_factory=_now)


@carrier
class Compacted:
    """The `original_count` events before this one are summarized by `summary`.

    With `first_kept_seq` (keep-recent-window compaction) the summary stands only for the
    events before that seq: the messages of the events from `first_kept_seq` up to this
    marker stay, verbatim, after it. `tokens_before` is the size of the conversation it
    compacted; `summary_role` renders the summary as a system item (the default) or as a
    positional user message. Markers written without these fields read as full-history markers.
    Neither edge of the span a summary stands for ever parts a tool call from its result:
    `project` keeps the tool turn it falls inside verbatim (see `project`).
    """

    type: Literal["compacted"] = "compacted"
    summary: str
    original_count: int
    ts: datetime = field(default_factory=_now)
    first_kept_seq: int | None = None
    tokens_before: int | None = None
    summary_role: Literal["system", "user"] = "system"


@carrier
class RequestHeader:
    """The part of the model requests from here on that is not conversation (see `request_log`).

    A runner writes one before a model call only when it differs from the last one in the
    log: `provider`, `model`, `settings` (the `ModelSettings` fields that are set, as JSON),
    the rendered `system` prompt, the `tools` offered, and the system messages hooks
    `injected` for that call. Projects to nothing: it is not conversation.
    """

    type: Literal["request_header"] = "request_header"
    provider: str
    model: str
    settings: dict[str, JsonValue] = field(default_factory=lambda: {})
    system: tuple[str, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    injected: tuple[str, ...] = ()
    ts: datetime = field(default_factory=_now)


@carrier
class Rewound:
    """The session's head moved back to `to_seq` (-1: before the first event); nothing is deleted.

    The events after `to_seq` up to this marker leave the conversation (`project`) but stay
    in the log (`events()`): a branch abandoned, to which a later `Rewound` can switch back
    by naming its last event. Appended by `rewind` (see `helikon.core.session.branches`).
    """

    type: Literal["rewound"] = "rewound"
    to_seq: int
    ts: datetime = field(default_factory=_now)


@carrier
class Forked:
    """This session was forked from `from_session` at its `at_seq` (see `helikon.core.session.branches`).

    `fork` copies the parent's events 0..`at_seq` (same seqs, same ids) and appends this
    marker after them; a fork of a fork so keeps its whole ancestry in its log. Projects to
    nothing.
    """

    type: Literal["forked"] = "forked"
    from_session: str
    at_seq: int
    ts: datetime = field(default_factory=_now)


@carrier
class TurnOpened:
    """A run began writing this session as it goes (a durable run, see `helikon.core.session.crash_repair`).

    Its `TurnClosed` (same `run_id`) follows when the run ends; a turn still open when the
    session is next used was cut short by a crash. Projects to nothing.
    """

    type: Literal["turn_opened"] = "turn_opened"
    run_id: str
    agent: str | None = None
    ts: datetime = field(default_factory=_now)


@carrier
class TurnClosed:
    """The run `run_id` ended, and how (`interrupted`: closed by crash repair). Projects to nothing."""

    type: Literal["turn_closed"] = "turn_closed"
    run_id: str
    outcome: Literal["completed", "failed", "cancelled", "refused", "interrupted"] = "completed"
    ts: datetime = field(default_factory=_now)


@carrier
class ToolsStarted:
    """The tool calls `call_ids` (logged before it) are about to run.

    Written by a durable run: a call without a result before this marker never started;
    after it, its outcome is unknown until its result is logged. Projects to nothing.
    """

    type: Literal["tools_started"] = "tools_started"
    call_ids: tuple[str, ...]
    ts: datetime = field(default_factory=_now)


@carrier
class CustomEvent:
    """A fact of the application's own (an order placed, a UI note), kept in the session's log.

    `kind` names it (your vocabulary: `"order_placed"`), `data` is any JSON value. Stamped
    like every event; stored as `{"type": "custom", "ignorable": true, "kind": ..., "data":
    ..., "ts": ...}` (see docs/session-format.md). It projects to nothing: the model never
    sees it, and compaction, branches and crash repair pass over it. Append it yourself
    (`await session.append([CustomEvent(...)])`) and read it back from `events()`.

    Raises:
        UserError: `kind` is not a non-empty string, or `data` is not JSON.

    Example:
        ```python
        from helikon.core.session import CustomEvent, project

        fact = CustomEvent(kind="order_placed", data={"order": 17, "total": 9.5})
        assert fact.type == "custom" and project([fact]).messages == ()
        ```
    """

    type: Literal["custom"] = "custom"
    kind: str
    data: JsonValue = None
    ts: datetime = field(default_factory=_now)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"CustomEvent kind must be a non-empty string naming the fact, not {self.kind!r}")
        try:
            json.dumps(self.data, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"CustomEvent data must be a JSON value (dict, list, str, int, float, bool or None): {exc}"
            ) from None


@carrier
class UnknownEvent:
    """An event whose `type` this version of helikon does not know (written by a newer one).

    It is kept verbatim, so it round-trips unchanged through `events()` and `append`;
    `project` skips it. `data` is the whole stored JSON object, `type` key included.

    `version` is the stored format version it was read in (see `helikon.core.session.codec`) and
    is written back with it. Format 1 keeps every unknown event; from format 2 on, a reader
    keeps one only when its writer marked it `"ignorable": true` in `data`, and refuses the
    session otherwise (`UnreadableSessionEvent`). A stored payload that is no event at all
    (not UTF-8, not JSON) is kept in every format, as type `"undecodable"` holding it verbatim.

    Example:
        ```python
        from helikon.core.session import UnknownEvent

        note = UnknownEvent(type="ui_note", data={"type": "ui_note", "ignorable": True}, version=2)
        assert note.ignorable
        ```
    """

    type: str
    data: dict[str, JsonValue]
    version: int = 1

    @property
    def ignorable(self) -> bool:
        """Whether its writer marked it `"ignorable": true`: a reader that does not know it may skip it."""
        return self.data.get("ignorable") is True

    @property
    def ts(self) -> datetime | None:
        """The event's timestamp, if it carries a readable one."""
        value = self.data.get("ts")
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                return None
        return None


KnownSessionEvent: TypeAlias = (
    UserMessageEvent
    | AssistantMessageEvent
    | ToolCalled
    | ToolReturned
    | HandoffOccurred
    | Compacted
    | RequestHeader
    | Rewound
    | Forked
    | TurnOpened
    | TurnClosed
    | ToolsStarted
    | CustomEvent
)
"""The six base event variants, helikon's markers (`RequestHeader`, `Rewound`, `Forked`,
`TurnOpened`, `TurnClosed`, `ToolsStarted`) and an application's own facts (`CustomEvent`)."""

SessionEvent: TypeAlias = KnownSessionEvent | UnknownEvent
"""One entry of a session's log. Every known variant carries `ts` (UTC), stamped at construction."""


def _session_event_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[KnownSessionEvent, Field(discriminator="type")]


SESSION_EVENT_ADAPTER: LazyAdapter[KnownSessionEvent] = LazyAdapter(_session_event_type)
"""JSON (de)serialization of the known `SessionEvent` variants (see `helikon.core.session.codec` for all)."""


class SessionEntry(NamedTuple):
    """A stored event and its sequence number."""

    seq: SequenceId
    event: SessionEvent


class SessionRecord(NamedTuple):
    """A stored event with its whole envelope, as the durable backends' `records()` return it.

    `id` is the writer's (a UUID unless `append(..., ids=...)` chose it); an event stored
    before ids existed (format 1) gets a stable one derived from the session id and `seq`.
    `ts` is the event's timestamp (None if it has none); `version` its stored format version.
    """

    seq: SequenceId
    id: str
    ts: datetime | None
    version: int
    event: SessionEvent


@carrier
class SessionInfo:
    """One session as a store lists it (`list_sessions`), read from a summary kept beside the log.

    `created` is when the session began (its first append, or `set_metadata` if earlier),
    `updated` the time of its last append (SQLite: the first and last events' own `ts`),
    `event_count` the number of events, `title` and `metadata` what `set_metadata` stored.
    """

    session_id: str
    created: datetime
    updated: datetime
    event_count: int
    title: str | None = None
    metadata: dict[str, JsonValue] = field(default_factory=lambda: {})


@carrier
class SessionMetadata:
    """One session's title and metadata, as `await session.metadata()` reads them.

    `version` counts the `set_metadata` calls that changed them (0: never set): pass it
    back as `set_metadata(..., expected_version=...)` to write only if no one else wrote
    since you read (compare-and-set; see `MetadataConflict`).
    """

    title: str | None = None
    metadata: dict[str, JsonValue] = field(default_factory=lambda: {})
    version: int = 0


@carrier(kw_only=False)
class ConversationSnapshot:
    """The conversation a model sees: the projection of a session's log."""

    messages: tuple[Item, ...] = ()


@runtime_checkable
class Session(Protocol):
    """Conversation persistence as an append-only event log.

    `events(since)` is exclusive: `since=SequenceId(n)` returns the events after `n`.

    Besides the three methods, a session declares two flags, `durable` and `supports_ids`
    (class attributes will do), so that a runner reads what it is instead of guessing. Every
    helikon backend declares both; a session of your own must too: a runner refuses one that
    does not (`check_session`), and pyright reports it missing where a `Session` is expected.

    Example:
        ```python
        from helikon import MemorySession
        from helikon.core.session import check_session

        session = check_session(MemorySession())  # the memory backend declares both flags
        assert (session.durable, session.supports_ids) == (False, True)
        ```
    """

    __slots__ = ()

    durable: bool
    """Whether a run writes its events as they settle, by default (`RunConfig.durable=None`).

    True for a store that outlives the process (SQLite, PostgreSQL, Redis): a crash then
    loses nothing settled, and the next run repairs the turn it cut short. False for
    `MemorySession`, whose runs are written once they end. A wrapper declares its inner one's.
    """

    supports_ids: bool
    """Whether `append` honours `ids` and `expected_seq` (idempotent retries, conflict checks).

    False: `append(events)` is all it takes, and a runner calls it so; a retried write may
    then store an event twice, and a run cannot tell that another writer appended meanwhile.
    """

    async def append(
        self,
        events: Sequence[SessionEvent],
        *,
        ids: Sequence[str] | None = None,
        expected_seq: int | None = None,
    ) -> None:
        """Write `events` to the end of the log, atomically: all of them or none.

        Args:
            events: The events, in order. An empty list writes nothing (and checks nothing).
            ids: One unique id per event, chosen by the writer; default: a fresh UUID each.
                Idempotency is per event id: an event whose id is stored already is skipped
                and the rest are appended, in order, so retrying a failed or timed-out append
                with the same ids never duplicates an event (and a batch whose ids are all
                stored is a no-op). A stored id must come with the same event (`ts` aside):
                one with other content is a `UserError` (a `SessionConflict` if it was stored
                after `expected_seq`: another writer's), never an overwrite.
            expected_seq: The seq of the last event the writer saw (-1: an empty log). If
                the log ends elsewhere, the append raises `SessionConflict` and writes nothing;
                the batch's own events stored by an earlier attempt do not count as moving it.
        """
        ...

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """Read the log (after `since`, when given), each event with its sequence number."""
        ...

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the whole log."""
        ...


@runtime_checkable
class SharedLog(Protocol):
    """A session object over a store that other objects share: one stored log, many objects.

    A server opens a new session object per request; a runner knows the objects of one
    stored log as one by their `log_key` (the store, the session id), so they share its
    queue of turns and what it knows of the log. helikon's durable backends declare it, and
    `CompactingSession` declares its inner session's. A session that does not is known by
    the object itself.

    Example:
        ```python
        from helikon import MemorySession
        from helikon.core.session import SharedLog

        assert not isinstance(MemorySession(), SharedLog)  # one object, one log
        ```
    """

    __slots__ = ()

    @property
    def log_key(self) -> tuple[object, str]:
        """The store and the session id: objects with the same store and id share one log."""
        ...


_DECLARED = ("durable", "supports_ids")


def check_session(session: object) -> Session:
    """`session`, checked to declare the flags the `Session` protocol asks for (`durable`, `supports_ids`).

    Raises:
        UserError: A flag is missing or not a bool; the message names it and says what to declare.

    Example:
        ```python
        from helikon import UserError
        from helikon.core.session import check_session

        class Notes:  # a log with no flags declared
            async def append(self, events): ...
            async def events(self, since=None): return []
            async def snapshot(self): ...

        message = ""
        try:
            check_session(Notes())
        except UserError as exc:
            message = str(exc)
        assert message.startswith("Notes does not declare durable and supports_ids")
        ```
    """
    missing = [name for name in _DECLARED if not isinstance(getattr(session, name, None), bool)]
    if missing:
        raise UserError(
            f"{type(session).__name__} does not declare {' and '.join(missing)} as a bool, as every "
            "Session must: add class attributes, e.g. `durable = False` (its runs are written when "
            "they end; True: as they go, for a store that outlives the process) and `supports_ids = "
            "True` (its `append` honours `ids` and `expected_seq`; False: it takes only the events). "
            "See docs/sessions.md, 'A backend of your own'."
        )
    return cast("Session", session)


def project(events: Sequence[SessionEvent]) -> ConversationSnapshot:
    """Fold a log into the conversation a model sees.

    Each message variant maps to one `Item`; `HandoffOccurred` yields nothing; `Compacted`
    drops the messages of the `original_count` events before it and stands in their
    place as a `SystemMessage` holding the summary; `Rewound` takes the conversation back
    to what it was at its `to_seq` (the events in between stay in the log, on an abandoned
    branch). Deterministic: the same log always projects to the same conversation.

    A turn's tool results stand in the order of their calls, whatever order they were logged
    in (a durable run logs each as its call returns).

    A summary never orphans a tool call or result: where an edge of its span falls inside a
    tool turn (between a call and its result, or reasoning and its call), the span shrinks
    to keep that turn verbatim. A count starting inside a turn starts after it; a marker
    inside a turn still waiting for results goes before the turn; a window starting inside
    a turn starts before it.
    """
    return fold(event_step(event) for event in events)


Step: TypeAlias = "Item | Compacted | Rewound | None"
"""What one event contributes to the projection: an item, a marker to apply, or nothing."""


def event_step(event: SessionEvent) -> Item | Compacted | Rewound | None:
    """The projection step of one event."""
    if isinstance(event, UserMessageEvent):
        return UserMessage(content=event.content)
    if isinstance(event, AssistantMessageEvent):
        return AssistantMessage(content=event.content, agent=event.agent)
    if isinstance(event, ToolCalled):
        return ToolCall(call_id=event.call_id, name=event.name, args=event.args)
    if isinstance(event, ToolReturned):
        return ToolResult(
            call_id=event.call_id, content=event.content, is_error=event.is_error, name=event.name
        )
    if isinstance(event, Compacted | Rewound):
        return event
    # HandoffOccurred is audit only, a RequestHeader describes requests (not conversation),
    # a CustomEvent is the application's, an UnknownEvent means nothing to this version.
    return None


class Projection:
    """`project`, one event at a time: feed it the log in order, read the conversation any time.

    Lets a reader that already holds the first n events fold only the ones after them.

    A `Rewound` marker is applied in place when it goes back no further than the last
    marker folded (the usual "undo the last turns"); one that reaches behind a compaction
    or an earlier rewind needs events this projection no longer holds: it then turns
    `stale`, and its holder refolds the whole log (`refold`).
    """

    __slots__ = ("_barrier", "_count", "_messages", "_origins", "_stale")

    def __init__(self) -> None:
        self._messages: list[Item] = []
        self._origins: list[int] = []  # index of the event each message came from
        self._count = 0
        self._barrier = -1  # the last marker folded: a rewind before it cannot be undone in place
        self._stale = False

    @property
    def count(self) -> int:
        """How many events have been folded."""
        return self._count

    @property
    def stale(self) -> bool:
        """Whether a rewind reached behind what this projection holds: `refold` it from the log."""
        return self._stale

    def add(self, step: Step) -> None:
        """Fold the next event's projection step (see `event_step`)."""
        index = self._count
        self._count += 1
        if step is None or self._stale:
            return
        messages, origins = self._messages, self._origins
        if isinstance(step, Rewound):
            target = min(max(step.to_seq, -1), index - 1)
            if target < self._barrier:
                self._stale = True
                return
            popped: Item | None = None
            while origins and origins[-1] > target:  # origins ascend: the branch left is a suffix
                origins.pop()
                popped = messages.pop()
            if type(popped) is ToolResult and messages and type(messages[-1]) is ToolResult:
                # It goes back to the middle of a turn's results, which are in call order, not
                # log order: which of them were logged by then, the log says.
                self._stale = True
                return
            self._barrier = index
            return
        if isinstance(step, Compacted):
            self._barrier = index
            summary = UserMessage.from_text(step.summary) if step.summary_role == "user" else None
            first_kept = step.first_kept_seq
            if first_kept is not None:
                # Keep-recent window: the summary replaces the messages of the events before
                # `first_kept` (an earlier summary included) and goes in front of the rest. Its
                # origin is the last event it stands for, so origins stay in log order.
                first_kept = min(max(first_kept, 0), index)
                drop = 0
                while drop < len(origins) and origins[drop] < first_kept:
                    drop += 1
                # A window starting inside a tool turn starts before it: the turn stays whole.
                drop = whole_cut(messages, drop, -1)
                origin = first_kept - 1 if drop == len(origins) else min(first_kept, origins[drop]) - 1
                del messages[:drop], origins[:drop]
                messages.insert(0, summary or SystemMessage(text=step.summary))
                origins.insert(0, max(origin, -1))
                return
            # The summary replaces the messages of the `original_count` events before it, except
            # a tool turn either edge of that span falls inside: it stays verbatim, whole (the
            # span shrinks past it), so the summary never orphans a call or a result.
            cutoff = index - max(step.original_count, 0)
            keep = len(origins)
            while keep and origins[keep - 1] >= cutoff:
                keep -= 1
            end = whole_cut(messages, len(messages), -1)  # before a turn still waiting for results
            keep = min(whole_cut(messages, keep, 1), end)
            # Before that turn, the summary takes the turn's origin: it goes with it when a later
            # marker reaches back (origins stay in log order).
            origin = origins[end] if end < len(origins) else index
            messages[keep:end] = [summary or SystemMessage(text=step.summary)]
            origins[keep:end] = [origin]
            return
        if type(step) is ToolResult and messages and type(messages[-1]) is ToolResult:
            # A durable run logs results as their calls finish; the conversation keeps call order.
            messages.insert(result_position(messages, step.call_id), step)
        else:
            messages.append(step)
        origins.append(index)  # origins stay ascending: a turn's results hold its seqs, in order

    def refold(self, steps: Sequence[Step]) -> None:
        """Start over from the whole log's steps (one per event, in order), along its current branch."""
        self._messages, self._origins = [], []
        self._barrier, self._stale = -1, False
        for index in active_path(steps):
            self._count = index
            self.add(steps[index])
        self._count = len(steps)

    def snapshot(self) -> ConversationSnapshot:
        """The conversation so far."""
        return ConversationSnapshot(tuple(self._messages))


def active_path(steps: Sequence[Step | SessionEvent]) -> list[int]:
    """The indexes of the events on the log's current branch, in order (markers included).

    Walks back from the last event; a `Rewound` marker jumps to its `to_seq`, skipping the
    branch it abandoned.
    """
    path: list[int] = []
    index = len(steps) - 1
    while index >= 0:
        path.append(index)
        step = steps[index]
        index = min(step.to_seq, index - 1) if isinstance(step, Rewound) else index - 1
    path.reverse()
    return path


def fold(steps: Iterable[Step]) -> ConversationSnapshot:
    """Fold one projection step per event (in log order) into the conversation."""
    steps = list(steps)
    projection = Projection()
    for step in steps:
        projection.add(step)
    if projection.stale:
        projection.refold(steps)
    return projection.snapshot()


__all__ = [
    "SESSION_EVENT_ADAPTER",
    "KnownSessionEvent",
    "UnknownEvent",
    "RequestHeader",
    "AssistantMessageEvent",
    "Compacted",
    "ConversationSnapshot",
    "CustomEvent",
    "Forked",
    "Rewound",
    "Step",
    "active_path",
    "SharedLog",
    "check_session",
    "HandoffOccurred",
    "SequenceId",
    "Session",
    "SessionEntry",
    "SessionEvent",
    "SessionInfo",
    "SessionMetadata",
    "SessionRecord",
    "ToolCalled",
    "ToolReturned",
    "ToolsStarted",
    "TurnClosed",
    "TurnOpened",
    "UserMessageEvent",
    "project",
]
