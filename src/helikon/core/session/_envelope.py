"""What every backend's `append` checks before it writes: the ids, `expected_seq`, retries, and v1 ids.

Shared so that the four backends agree on every argument rule and message.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._json import JsonValue
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
