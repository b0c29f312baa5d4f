"""Projection checkpoints: a session's projection as of one seq, stored beside its log.

A durable backend keeps one checkpoint per session: `as_of_seq` (the last event it folds),
the projector version that built it, a fingerprint of the stored event at `as_of_seq`, and
the state (`encode_state`: the conversation items, encoded by the item adapter, and the log
position each came from, which a later `Compacted` marker needs). `snapshot()` on a session
object that has read nothing yet loads the checkpoint and folds only the events after it,
so a cold read costs the tail, not the whole log.

A checkpoint is only ever an optimization, never the truth: the log stays the source, and
the checkpoint describes an immutable prefix of it (a seq is never reused or rewritten), so
it stays true however late it is written. A reader trusts one only when

- its projector version is this version's `PROJECTOR_VERSION` (a change to what `project`
  does, or to the event types it knows, changes the version and so retires old checkpoints),
- the log still holds an event at `as_of_seq` and that event's stored payload has the
  recorded fingerprint (a log that was cut back or replaced under the same id fails this),
- and the state decodes to exactly `as_of_seq + 1` folded events.

Otherwise it is ignored: the reader folds the whole log and writes a new checkpoint over
it. Folding resumes at `as_of_seq + 1` exactly, so no event is applied twice or skipped.

Example:
    ```python
    from helikon.core.session.checkpoint import decode_state, encode_state, restored_projection
    from helikon.core.items import TextPart
    from helikon.core.session import UserMessageEvent, event_step, project

    log = [UserMessageEvent(content=(TextPart(text=f"m{i}"),)) for i in range(3)]
    projection = restored_projection()
    for event in log[:2]:
        projection.add(event_step(event))
    restored = decode_state(encode_state(projection), as_of_seq=1)
    assert restored is not None
    restored.add(event_step(log[2]))
    assert restored.snapshot() == project(log)
    ```
"""

from __future__ import annotations

import hashlib
import json
import typing
from collections.abc import Sequence
from typing import Any, Final, NamedTuple, cast

from .._internal.adapter import LazyAdapter
from ..items import Item
from . import KnownSessionEvent, Projection

CHECKPOINT_EVERY: Final = 128
"""Events folded past a session's checkpoint before a reader writes a newer one.

It bounds the tail a cold `snapshot()` folds to about this many events, and costs one
write of the encoded conversation per that many events (amortized: a fraction of one
event's append).
"""

_STATE_FORMAT: Final = 2  # the layout `encode_state` writes; bump on any change to it
_RULES: Final = 2  # what `project` makes of the events; bump on any change (2: tool turns kept whole)


def _projector_version() -> str:
    # The event types `project` knows are part of what it computes: an event stored while a
    # type was unknown (an ignorable `UnknownEvent`, skipped) projects to something once a
    # later version knows it, so a checkpoint built before must not be reused after.
    kinds = sorted(
        typing.get_type_hints(cls)["type"].__args__[0] for cls in typing.get_args(KnownSessionEvent)
    )
    digest = hashlib.sha1(",".join(kinds).encode(), usedforsecurity=False).hexdigest()[:12]
    return f"{_STATE_FORMAT}-{_RULES}-{digest}"


PROJECTOR_VERSION: Final = _projector_version()
"""This version's projector: the state layout, the projection rules and the event types `project` folds."""


class Checkpoint(NamedTuple):
    """A stored checkpoint, as a backend reads it (nothing validated yet)."""

    as_of_seq: int
    projector: str
    fingerprint: str
    state: str | bytes


class _Projection(Projection):
    """`Projection` with access to its parts: what a checkpoint saves and restores."""

    __slots__ = ()

    def parts(self) -> tuple[int, list[Item], list[int], int]:
        if self._stale:
            raise ValueError("a stale projection has no state to save: refold it first")
        return self._count, self._messages, self._origins, self._barrier

    def restore(self, count: int, messages: list[Item], origins: list[int], barrier: int) -> None:
        self._count, self._messages, self._origins, self._barrier = count, messages, origins, barrier


def copy_projection(projection: Projection) -> Projection:
    """A copy of `projection` (from `restored_projection`) that folds on independently of it."""
    if not isinstance(projection, _Projection):
        raise TypeError("copy_projection needs a projection built by restored_projection()")
    count, messages, origins, barrier = projection.parts()
    copy = _Projection()
    copy.restore(count, list(messages), list(origins), barrier)
    return copy


def restored_projection() -> Projection:
    """An empty `Projection` that `encode_state` can save (every `LogCache` uses one)."""
    return _Projection()


def _items_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return list[Annotated[Item, Field(discriminator="type")]]


_ITEMS_ADAPTER: LazyAdapter[list[Item]] = LazyAdapter(_items_type)


def encode_state(projection: Projection) -> str:
    """The stored state of `projection` (from `restored_projection`): JSON text.

    `{"count": events folded, "barrier": seq of the last marker folded, "origins": [seq of
    each item's event], "items": [...]}`, the items as `helikon.core.items.ITEM_ADAPTER`
    writes each.
    """
    if not isinstance(projection, _Projection):
        raise TypeError("encode_state needs a projection built by restored_projection()")
    count, messages, origins, barrier = projection.parts()
    items = _ITEMS_ADAPTER.dump_json(messages).decode()
    origins_json = json.dumps(origins, separators=(",", ":"))
    return f'{{"count":{count},"barrier":{barrier},"origins":{origins_json},"items":{items}}}'


def decode_state(state: str | bytes, as_of_seq: int) -> Projection | None:
    """The projection `state` saved, if it is well formed and folds exactly events 0..`as_of_seq`.

    None for anything else (damaged JSON, a wrong count, items that do not decode): the
    caller then folds the whole log instead.
    """
    from pydantic import ValidationError

    try:
        parsed: Any = json.loads(state)
    except (ValueError, RecursionError):
        return None
    if type(parsed) is not dict:
        return None
    obj = cast("dict[str, Any]", parsed)
    count, origins, raw_items = obj.get("count"), obj.get("origins"), obj.get("items")
    if type(count) is not int or count != as_of_seq + 1:
        return None
    if type(origins) is not list or type(raw_items) is not list:
        return None
    origins, raw_items = cast("list[Any]", origins), cast("list[Any]", raw_items)
    if len(raw_items) != len(origins) or not _valid_origins(origins, count):
        return None
    try:
        items = _ITEMS_ADAPTER.validate_python(raw_items)
    except (ValidationError, RecursionError):
        return None
    projection = _Projection()
    # The last marker folded (a rewind cannot be undone in place behind it); unknown: all of it.
    barrier = obj.get("barrier", count - 1)
    if type(barrier) is not int or not -1 <= barrier < count:
        return None
    projection.restore(count, items, cast("list[int]", origins), barrier)
    return projection


def _valid_origins(origins: Sequence[object], count: int) -> bool:
    # Each item came from an event before `count`, in log order (a window summary's origin
    # is the event before the first kept one, so -1 is possible).
    previous = -2
    for origin in origins:
        if type(origin) is not int or origin < previous or origin >= count:
            return False
        previous = origin
    return True


def fingerprint(payload: str | bytes) -> str:
    """What a checkpoint records of the stored payload at its `as_of_seq`: its SHA-1, hex.

    Computed over the payload exactly as the store returns it (Redis computes the same
    with `redis.sha1hex` in its scripts).
    """
    data = payload.encode() if isinstance(payload, str) else payload
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def load(checkpoint: Checkpoint | None, stored_fingerprint: str | None) -> Projection | None:
    """The projection `checkpoint` holds, if a reader may resume from it (see the module).

    `stored_fingerprint`: `fingerprint` of the payload the log holds at `as_of_seq` now
    (None when the log does not reach that far).
    """
    if checkpoint is None or checkpoint.as_of_seq < 0:
        return None
    if checkpoint.projector != PROJECTOR_VERSION:
        return None
    if stored_fingerprint is None or stored_fingerprint != checkpoint.fingerprint:
        return None
    return decode_state(checkpoint.state, checkpoint.as_of_seq)


__all__ = [
    "CHECKPOINT_EVERY",
    "PROJECTOR_VERSION",
    "Checkpoint",
    "decode_state",
    "encode_state",
    "fingerprint",
    "load",
    "restored_projection",
]
