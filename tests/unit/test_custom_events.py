"""`CustomEvent`: an application's own facts in a session's log, stored in a stable form and
skipped by everything that folds the log (projection, checkpoints, compaction, branches,
crash repair)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from helikon import CustomEvent, MemorySession, MemoryStore, TextPart, UserError
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    SessionEvent,
    ToolCalled,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UnknownEvent,
    UserMessageEvent,
    project,
)
from helikon.core.session.codec import (
    decode_event,
    decode_events,
    encode_event,
    snapshot_from_payloads,
    upgrade,
)
from helikon.core.session.compaction import CompactingSession
from helikon.core.session.crash_repair import close_interrupted_turn
from helikon.testing import MockModel, text_turn

WHEN = datetime(2026, 5, 1, 12, 30, 15, 250000, tzinfo=UTC)


def _user(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


def _assistant(text: str) -> AssistantMessageEvent:
    return AssistantMessageEvent(content=(TextPart(text=text),))


def test_the_stored_form_is_stable() -> None:
    event = CustomEvent(kind="order_placed", data={"order": 17, "items": ["tea"]}, ts=WHEN)
    assert encode_event(event) == (
        '{"type":"custom","ignorable":true,"kind":"order_placed","data":{"order":17,"items":["tea"]},'
        '"ts":"2026-05-01T12:30:15.250000Z"}'
    )
    assert decode_event(encode_event(event)) == event
    # A reader that does not know `custom` keeps it as an ignorable unknown event and skips it.
    unknown = UnknownEvent(type="custom", data=json.loads(encode_event(event)), version=2)
    assert unknown.ignorable and upgrade(0, 2, unknown) == unknown


@pytest.mark.parametrize("data", [None, True, 0, -1.5, "ü ✓", [1, None, "x"], {"a": {"b": [1, 2.5]}}])
def test_every_json_value_round_trips(data: Any) -> None:
    event = CustomEvent(kind="k", data=data, ts=WHEN)
    text = encode_event(event)
    assert decode_event(text) == event
    assert decode_events([text, text]) == [event, event]  # the batch (fast) path too
    loose = json.loads(text)
    del loose["ignorable"]  # the careful path: pydantic reads the same event
    loose["extra"] = 1
    assert decode_event(json.dumps(loose)) == event


def test_a_stored_custom_event_without_ts_reads_as_the_epoch() -> None:
    event = decode_event('{"type":"custom","ignorable":true,"kind":"k","data":1}')
    assert isinstance(event, CustomEvent) and event.ts == datetime(1970, 1, 1, tzinfo=UTC)


def test_a_new_event_is_stamped_now() -> None:
    before = datetime.now(UTC)
    assert before <= CustomEvent(kind="k").ts <= datetime.now(UTC)


@pytest.mark.parametrize("kind", ["", None, 3, b"k"])
def test_a_bad_kind_is_refused(kind: Any) -> None:
    with pytest.raises(UserError, match="kind must be a non-empty string"):
        CustomEvent(kind=kind, data=1)


@pytest.mark.parametrize("data", [{1, 2}, float("nan"), float("inf"), object(), {"when": WHEN}])
def test_data_that_is_not_json_is_refused(data: Any) -> None:
    with pytest.raises(UserError, match="data must be a JSON value"):
        CustomEvent(kind="k", data=data)


def test_a_stored_payload_with_a_bad_kind_is_kept_not_misread() -> None:
    event = decode_event('{"type":"custom","kind":"","data":1,"ts":"2026-05-01T00:00:00Z"}')
    assert isinstance(event, UnknownEvent) and event.type == "custom"


LOG: list[SessionEvent] = [
    _user("hi"),
    CustomEvent(kind="signed_in", data={"plan": "pro"}),
    _assistant("hello"),
    CustomEvent(kind="ui_note", data="pinned"),
    _user("again"),
]


def test_projections_skip_it() -> None:
    snapshot = project(LOG)
    assert [m.text for m in snapshot.messages] == ["hi", "hello", "again"]  # type: ignore[union-attr]
    payloads = [encode_event(e) for e in LOG]
    assert snapshot_from_payloads(payloads) == snapshot
    # A summary's count includes the custom events it stands for.
    compacted = project([*LOG[:4], Compacted(summary="S", original_count=4), LOG[4]])
    assert [m.text for m in compacted.messages] == ["S", "again"]  # type: ignore[union-attr]


async def test_events_show_it_and_a_store_lists_its_time() -> None:
    store = MemoryStore()
    session = await store.open("u")
    await session.append([CustomEvent(kind="created", data={"by": "app"}, ts=WHEN)])
    [(seq, event)] = await session.events()
    assert seq == 0 and isinstance(event, CustomEvent) and event.ts == WHEN
    [record] = await session.records()
    assert record.ts == WHEN  # not the epoch, as an UnknownEvent without `ts` read
    [info] = await store.list_sessions()
    assert info.event_count == 1


async def test_branches_and_forks_carry_it() -> None:
    session = MemorySession(LOG)
    await session.rewind(2)  # back to "hello": the custom event before it stays on the branch
    assert [m.text for m in (await session.snapshot()).messages] == ["hi", "hello"]  # type: ignore[union-attr]
    branches = await session.branches()
    assert len(branches) == 2
    child = await session.fork(3)
    copied = [e.event for e in await child.events()]
    assert copied[:4] == LOG[:4] and isinstance(copied[3], CustomEvent)


async def test_crash_repair_passes_over_it() -> None:
    session = MemorySession()
    await session.append(
        [
            TurnOpened(run_id="r1"),
            _user("pay"),
            CustomEvent(kind="audit", data={"step": "before tool"}),
            ToolCalled(call_id="c1", name="pay", args={}),
            ToolsStarted(call_ids=("c1",)),
            CustomEvent(kind="audit", data={"step": "tool running"}),
        ]
    )
    repairs = await close_interrupted_turn(session)
    assert [type(e).__name__ for e in repairs] == ["ToolReturned", "TurnClosed"]
    assert isinstance(repairs[-1], TurnClosed) and repairs[-1].outcome == "interrupted"


async def test_compaction_passes_over_it() -> None:
    model = MockModel.with_scripts([text_turn("They talked.")])
    session = CompactingSession(MemorySession(), model, threshold=10)
    await session.append([_user("budget " * 40), CustomEvent(kind="k", data="x" * 50), _assistant("ok")])
    snapshot = await session.snapshot()
    assert snapshot.messages[0].text == "They talked."  # type: ignore[union-attr]
    kinds = [e.event.type for e in await session.events()]
    assert kinds[:3] == ["user_message", "custom", "assistant_message"] and "compacted" in kinds
