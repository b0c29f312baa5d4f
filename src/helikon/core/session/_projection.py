"""The projection: the conversation a model sees, folded from a session's log (`project`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeAlias

from .._internal.carrier import carrier
from ..items import AssistantMessage, Item, SystemMessage, ToolCall, ToolResult, UserMessage
from ._events import (
    AssistantMessageEvent,
    Compacted,
    Rewound,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
)
from ._pair_cut import whole_cut
from ._result_order import result_position


@carrier(kw_only=False)
class ConversationSnapshot:
    """The conversation a model sees: the projection of a session's log."""

    messages: tuple[Item, ...] = ()


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


__all__ = ["ConversationSnapshot", "Projection", "Step", "active_path", "event_step", "fold", "project"]
