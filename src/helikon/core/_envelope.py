"""What every backend's `append` checks before it writes: the ids, `expected_seq`, and v1 ids.

Shared so that the four backends agree on every argument rule and message.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ._json import JsonValue
from .exceptions import UserError

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
    if isinstance(ids, str) or not isinstance(ids, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"ids must be a sequence of strings, one per event, not {ids!r}")
    chosen = list(ids)
    if len(chosen) != len(events):
        raise UserError(
            f"ids has {len(chosen)} entries for {len(events)} events: give exactly one id per event"
        )
    for value in chosen:
        if not isinstance(value, str) or not value:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"each id must be a non-empty string, not {value!r}")
    if len(set(chosen)) != len(chosen):
        raise UserError(f"ids must be unique within an append: {chosen!r} repeats one")
    return chosen


def check_expected_seq(expected_seq: int | None) -> int | None:
    """`expected_seq` if it is None or an int >= -1 (-1: the writer saw an empty log)."""
    if expected_seq is None:
        return None
    if isinstance(expected_seq, bool) or not isinstance(expected_seq, int) or expected_seq < -1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"expected_seq must be the seq of the last event you read (an int >= 0), or -1 for an "
            f"empty log, not {expected_seq!r}"
        )
    return expected_seq


def partly_stored(session_id: str | None, stored: int, total: int) -> UserError:
    """The error for an append whose ids are stored already for some of its events, not all."""
    where = f"session {session_id!r}" if session_id is not None else "the session"
    return UserError(
        f"{stored} of the {total} ids of this append are already stored in {where}, "
        "so it is neither a new batch nor a retry of one: retry a failed append with exactly the same "
        "events and ids, and give new events new ids"
    )


def legacy_event_id(session_id: str, seq: int) -> str:
    """The id of an event stored without one (format 1, or no `ids` given): derived from where it is."""
    return str(uuid.uuid5(_V1_IDS, f"{session_id}\x00{seq}"))


def metadata_json(metadata: Mapping[str, JsonValue] | None) -> str | None:
    """`metadata` as the JSON text stored, or None; a clear error when it is not a JSON object."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
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
