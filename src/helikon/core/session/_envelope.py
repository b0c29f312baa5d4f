"""What every backend's `append` checks before it writes: the ids, `expected_seq`, retries, and v1 ids.

Shared so that the four backends agree on every argument rule and message.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._internal.json_value import JsonValue
from ..exceptions import SessionConflict, UserError
from .codec import decode_event, encode_event

_V1_IDS = uuid.UUID("9b6a4f62-3c1e-5d0a-8e3b-68656c696b6f")
"""The namespace of the ids given to events stored before ids existed (format 1)."""


def check_ids(events: Sequence[Any], ids: Sequence[str] | None) -> list[str] | None:
    """The caller's ids of an append, checked: one non-empty string per event, no repeats.

    None when the caller chose none: a durable backend then stores no id, and the event
    reads with `legacy_event_id(session_id, seq)`: as unique and as stable, and free (an id
    index entry per event costs the SQL backends about a third of their append rate).
    """
    if ids is None:
        return None
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise UserError(f"ids must be a sequence of strings, one per event, not {ids!r}")
    chosen = list(ids)
    if len(chosen) != len(events):
        raise UserError(
            f"ids has {len(chosen)} entries for {len(events)} events: give exactly one id per event"
        )
    for value in chosen:
        if not isinstance(value, str) or not value:
            raise UserError(f"each id must be a non-empty string, not {value!r}")
    if len(set(chosen)) != len(chosen):
        raise UserError(f"ids must be unique within an append: {chosen!r} repeats one")
    return chosen


def check_expected_seq(expected_seq: int | None) -> int | None:
    """`expected_seq` if it is None or an int >= -1 (-1: the writer saw an empty log)."""
    if expected_seq is None:
        return None
    if isinstance(expected_seq, bool) or not isinstance(expected_seq, int) or expected_seq < -1:
        raise UserError(
            f"expected_seq must be the seq of the last event you read (an int >= 0), or -1 for an "
            f"empty log, not {expected_seq!r}"
        )
    return expected_seq


def retry_plan(
    session_id: str | None,
    payloads: Sequence[str | bytes],
    ids: Sequence[str],
    stored: Mapping[str, tuple[int, str | bytes]],
    last: int,
    expected: int | None,
) -> list[int]:
    """Which events of a batch to write when the log may hold some of its `ids` already (a retry).

    Idempotency is per event id: an event whose id is stored with the same content (apart
    from `ts`: a rebuilt event is the same event) was written by an earlier attempt and is
    skipped; the others are written, in their order. With `expected`, the log after it may
    hold this batch's own stored events and nothing else. Run under the append's lock.

    Args:
        session_id: For the messages (None: not known).
        payloads: The batch's events as `encode_event` writes them.
        ids: The batch's ids, one per event.
        stored: Each of `ids` the log holds: its seq and its stored payload.
        last: The log's last seq (-1: empty).
        expected: The append's `expected_seq`, checked.

    Returns:
        The indexes of the events to write; empty when the whole batch is stored (a no-op).

    Raises:
        SessionConflict: The log after `expected` holds another writer's events.
        UserError: An id is stored with other content: ids name events, they are not reusable.
    """
    rest: list[int] = []
    ours_after = 0  # this batch's events stored after `expected`
    changed: tuple[str, int] | None = None
    for index, event_id in enumerate(ids):
        found = stored.get(event_id)
        if found is None:
            rest.append(index)
        elif same_content(found[1], payloads[index]):
            ours_after += expected is not None and found[0] > expected
        elif changed is None:
            changed = (event_id, found[0])
    if not rest and changed is None:
        return []
    if expected is not None and last - expected != ours_after:
        raise SessionConflict(expected_seq=expected, actual_seq=last, session_id=session_id)
    if changed is not None:
        where = f"session {session_id!r}" if session_id is not None else "the session"
        raise UserError(
            f"id {changed[0]!r} is stored in {where} (seq {changed[1]}) for another event; nothing was "
            "written: a retry must repeat each event as it was, and a new event needs a new id"
        )
    return rest


def same_content(stored: str | bytes, given: str | bytes) -> bool:
    """Whether two stored payloads are the same event, apart from `ts` (normalized by a round trip)."""
    return _content(stored) == _content(given)


def _content(payload: str | bytes) -> object:
    data: object = json.loads(encode_event(decode_event(payload)))
    if not isinstance(data, dict):
        return data
    content = dict(cast("dict[str, object]", data))
    content.pop("ts", None)
    return content


def legacy_event_id(session_id: str, seq: int) -> str:
    """The id of an event stored without one (format 1, or no `ids` given): derived from where it is."""
    return str(uuid.uuid5(_V1_IDS, f"{session_id}\x00{seq}"))


def metadata_json(metadata: Mapping[str, JsonValue] | None) -> str | None:
    """`metadata` as the JSON text stored, or None; a clear error when it is not a JSON object."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise UserError(f"metadata must be a mapping of JSON values, not {metadata!r}")
    try:
        return json.dumps(dict(metadata), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UserError(f"metadata must hold JSON values only: {exc}") from exc


def check_page(limit: object, offset: object) -> tuple[int, int]:
    """`limit` and `offset` of a `list_sessions` call, checked."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UserError(f"limit must be a positive int, not {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise UserError(f"offset must be an int >= 0, not {offset!r}")
    return limit, offset


MetadataFilter = tuple[tuple[str, JsonValue], ...]
"""A checked `list_sessions(filter=...)`: each top-level key and the JSON scalar it must equal."""


def check_filter(filter: Mapping[str, JsonValue] | None) -> MetadataFilter:
    """`list_sessions`'s `filter`, checked: top-level metadata keys to JSON scalars (str, number, bool, None).

    Every backend compares by JSON value (1 equals 1.0; True is not 1), so a value that is
    a list or an object is refused rather than compared one way here and another there.
    """
    if filter is None:
        return ()
    if not isinstance(filter, Mapping):
        raise UserError(f"filter must be a mapping of metadata keys to values, not {filter!r}")
    pairs: list[tuple[str, JsonValue]] = []
    for key, value in cast("Mapping[object, object]", filter).items():
        if not isinstance(key, str):
            raise UserError(f"filter keys must be strings (top-level metadata keys), not {key!r}")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise UserError(
                f"filter[{key!r}] must be a JSON scalar (str, int, float, bool or None) to compare the "
                f"metadata value with, not {type(value).__name__}: lists and objects are not compared"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"filter[{key!r}] must be a finite number, not {value!r}")
        pairs.append((key, value))
    return tuple(pairs)


def scalar_kind(value: JsonValue) -> str:
    """A filter value's kind, as the stores' queries tell them apart: null, true, false, text or number."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "text" if isinstance(value, str) else "number"


def matches(metadata: Mapping[str, JsonValue], pairs: MetadataFilter) -> bool:
    """Whether `metadata` holds every key of `pairs` with an equal JSON value (what the stores compute)."""
    for key, want in pairs:
        if key not in metadata:
            return False
        have = metadata[key]
        if isinstance(want, bool) or isinstance(have, bool) or want is None or have is None:
            if have is not want:
                return False
        elif type(want) is str or type(have) is str:
            if have != want:
                return False
        elif not isinstance(have, int | float) or have != want:
            return False
    return True


def check_expected_version(expected_version: object) -> int | None:
    """`set_metadata`'s `expected_version`, checked: None or an int >= 0."""
    if expected_version is None:
        return None
    if isinstance(expected_version, bool) or not isinstance(expected_version, int) or expected_version < 0:
        raise UserError(
            "expected_version must be None or the int >= 0 `(await session.metadata()).version` "
            f"gave, not {expected_version!r}"
        )
    return expected_version
