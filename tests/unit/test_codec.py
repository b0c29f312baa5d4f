"""The stored-event codec: exact round trips through the one adapter, tolerance of what it cannot read."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from damage import mutate
from helikon import UnknownEvent
from helikon.core.items import (
    AudioPart,
    Base64Source,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolUsePart,
    UrlSource,
)
from helikon.core.session import (
    SESSION_EVENT_ADAPTER,
    AssistantMessageEvent,
    Compacted,
    Forked,
    HandoffOccurred,
    KnownSessionEvent,
    Rewound,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)
from helikon.core.session.codec import (
    FORMAT_VERSION,
    UNKNOWN_TIME,
    decode_event,
    decode_events,
    encode_event,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
sources = st.builds(UrlSource, url=st.text()) | st.builds(Base64Source, media_type=st.text(), data=st.text())
parts = st.one_of(
    st.builds(TextPart, text=st.text()),
    st.builds(ReasoningPart, text=st.text(), signature=st.none() | st.text(), provider=st.none() | st.text()),
    st.builds(ImagePart, source=sources, detail=st.none() | st.text()),
    st.builds(AudioPart, source=sources),
    st.builds(ToolUsePart, call_id=st.text(), name=st.text(), args=json_values),
)
content = st.lists(parts, max_size=3).map(tuple)
stamps = st.datetimes(timezones=st.just(UTC))
events: st.SearchStrategy[KnownSessionEvent] = st.one_of(
    st.builds(UserMessageEvent, content=content, ts=stamps),
    st.builds(AssistantMessageEvent, content=content, agent=st.none() | st.text(), ts=stamps),
    st.builds(ToolCalled, call_id=st.text(), name=st.text(), args=json_values, ts=stamps),
    st.builds(
        ToolReturned,
        call_id=st.text(),
        content=content,
        is_error=st.booleans(),
        name=st.none() | st.text(),
        ts=stamps,
    ),
    st.builds(HandoffOccurred, from_agent=st.text(), to_agent=st.text(), ts=stamps),
    st.builds(Compacted, summary=st.text(), original_count=st.integers(min_value=0), ts=stamps),
    st.builds(TurnOpened, run_id=st.text(), agent=st.none() | st.text(), ts=stamps),
    st.builds(
        TurnClosed,
        run_id=st.text(),
        outcome=st.sampled_from(["completed", "failed", "cancelled", "refused", "interrupted"]),
        ts=stamps,
    ),
    st.builds(ToolsStarted, call_ids=st.lists(st.text(), max_size=3).map(tuple), ts=stamps),
    st.builds(Forked, from_session=st.text(), at_seq=st.integers(min_value=-1), ts=stamps),
)


@settings(max_examples=300)
@given(events)
def test_every_known_event_round_trips(event: KnownSessionEvent) -> None:
    stored = encode_event(event)
    assert decode_event(stored) == event
    assert decode_events([stored, stored]) == [event, event]


def test_the_markers_of_durable_runs_and_forks_are_ignorable_to_older_readers() -> None:
    for event in (
        TurnOpened(run_id="r"),
        TurnClosed(run_id="r", outcome="interrupted"),
        ToolsStarted(call_ids=("c",)),
        Forked(from_session="s", at_seq=3),
    ):
        stored = json.loads(encode_event(event))
        assert stored["type"] == event.type and stored["ignorable"] is True
        assert decode_event(encode_event(event)) == event
    assert '"ignorable"' not in encode_event(Rewound(to_seq=1))  # skipping it would change the conversation


def test_irregular_objects_fall_back_and_unknown_ones_are_kept() -> None:
    base = {"type": "user_message", "content": [{"type": "text", "text": "hi"}], "ts": "2026-11-30T07:00:00Z"}
    assert isinstance(decode_event(json.dumps(base)), UserMessageEvent)
    naive = {**base, "ts": "2026-11-30T07:00:00"}  # no timezone: the adapter decides
    decode_event(json.dumps(naive))  # whatever it makes of it, it does not raise
    future = {"type": "tool_progress", "call_id": "c1", "percent": 50}
    decoded = decode_event(json.dumps(future))
    assert decoded == UnknownEvent(type="tool_progress", data=future)
    assert json.loads(encode_event(decoded)) == future
    mixed = decode_events([json.dumps(base), json.dumps(future), "{broken"])
    assert [type(e).__name__ for e in mixed] == ["UserMessageEvent", "UnknownEvent", "UnknownEvent"]
    broken = {"type": "undecodable", "ignorable": True, "error": "not JSON", "raw": "{broken"}
    assert mixed[2] == UnknownEvent(type="undecodable", data=broken)
    assert decode_events([]) == []
    assert FORMAT_VERSION == 2


def test_encoded_events_are_compact_json_with_the_books_tags() -> None:
    event = ToolCalled(call_id="c1", name="lookup", args={"q": "é"})
    stored = encode_event(event)
    assert stored.startswith('{"type":"tool_called","call_id":"c1","name":"lookup","args":{"q":"é"},"ts":"')
    assert stored.endswith('Z"}')


irregular = st.dictionaries(
    st.sampled_from(
        ["type", "content", "ts", "call_id", "name", "args", "agent", "summary", "original_count"]
    ),
    json_values,
).map(lambda d: json.dumps({**d, "type": d.get("type") if isinstance(d.get("type"), str) else "tool_called"}))


@settings(max_examples=200)
@given(st.lists(events.map(encode_event) | irregular | st.just("not json"), max_size=12))
def test_the_snapshot_of_payloads_equals_decode_then_project(payloads: list[str]) -> None:
    from helikon.core.session import project
    from helikon.core.session.codec import snapshot_from_payloads

    assert snapshot_from_payloads(payloads) == project(decode_events(payloads))


def test_the_snapshot_of_payloads_honours_compaction() -> None:
    from helikon.core.items import SystemMessage, UserMessage
    from helikon.core.session.codec import snapshot_from_payloads

    log = [
        UserMessageEvent(content=(TextPart(text="old"),)),
        Compacted(summary="S", original_count=1),
        UserMessageEvent(content=(TextPart(text="new"),)),
    ]
    snapshot = snapshot_from_payloads([encode_event(e) for e in log])
    assert snapshot.messages == (SystemMessage(text="S"), UserMessage.from_text("new"))


def test_payloads_that_are_not_exactly_one_json_value_are_decoded_one_by_one() -> None:
    from helikon.core.session.codec import snapshot_from_payloads

    good = encode_event(UserMessageEvent(content=(TextPart(text="hi"),)))
    odd = ["", good + "," + good, good]
    decoded = decode_events(odd)
    assert [type(e).__name__ for e in decoded] == ["UnknownEvent", "UnknownEvent", "UserMessageEvent"]
    assert [m.type for m in snapshot_from_payloads(odd).messages] == ["user"]


def test_joined_payloads_decode_like_rows_or_ask_for_rows() -> None:
    from helikon.core.session.codec import decode_joined

    log = [
        UserMessageEvent(content=(TextPart(text="a, b"),)),
        ToolCalled(call_id="c1", name="t", args={"x": [1, "2,3"]}),
        AssistantMessageEvent(content=(TextPart(text="}{"), ReasoningPart(text="r", signature="s"))),
    ]
    payloads = [encode_event(e) for e in log]
    future = '{"type":"branch_switched","ts":"2030-01-01T00:00:00Z"}'
    assert decode_joined(",".join([*payloads, future]), 4) == [*log, decode_event(future)]
    assert decode_joined("", 0) == []
    assert decode_joined(",".join(payloads), 2) is None  # count mismatch: the caller reads rows
    assert decode_joined(",".join([*payloads, "[1]"]), 4) is None  # not an object
    assert decode_joined(",".join([*payloads, "{"]), 4) is None  # damaged
    many = [encode_event(UserMessageEvent(content=(TextPart(text=str(i)),))) for i in range(300)]
    assert decode_joined(",".join(many), 300) == decode_events(many)


def test_json_with_nan_and_integers_past_64_bits_decodes_as_json_reads_it() -> None:
    import math

    from helikon.core.session.codec import decode_joined

    good = encode_event(UserMessageEvent(content=(TextPart(text="hi"),)))
    odd = '{"type":"measured","value":NaN,"big":123456789012345678901234567890}'
    decoded = decode_joined(",".join([good, odd]), 2)
    assert decoded is not None
    unknown = decoded[1]
    assert isinstance(unknown, UnknownEvent) and unknown.type == "measured"
    assert math.isnan(unknown.data["value"]) and unknown.data["big"] == 123456789012345678901234567890  # pyright: ignore[reportArgumentType]
    assert decode_events([good, odd])[1].type == "measured"


def test_upgrade_reads_each_format_by_its_own_rules() -> None:
    from helikon.core.exceptions import UnreadableSessionEvent
    from helikon.core.session.codec import stored_version, upgrade, upgrade_all

    unknown = decode_event('{"type":"merged","to_seq":3}')
    ignorable = decode_event('{"type":"ui_note","ignorable":true}')
    known = UserMessageEvent(content=(TextPart(text="hi"),))
    # Format 1: tolerant; the unknown event keeps its format, so it is written back as format 1.
    old = upgrade(4, 1, unknown)
    assert old == UnknownEvent(type="merged", data={"type": "merged", "to_seq": 3}, version=1)
    assert stored_version(old) == 1 and stored_version(known) == FORMAT_VERSION
    # Format 2: only an ignorable unknown event is kept.
    assert upgrade(5, 2, ignorable) == UnknownEvent(type="ui_note", data=ignorable.data, version=2)  # type: ignore[union-attr]
    with pytest.raises(UnreadableSessionEvent, match="event 6 of session 's' has type 'merged'") as info:
        upgrade(6, 2, unknown, "s")
    assert (info.value.seq, info.value.version, info.value.kind, info.value.session_id) == (
        6,
        2,
        "merged",
        "s",
    )
    # A newer format is refused, whatever the event.
    with pytest.raises(UnreadableSessionEvent, match="format version 3, newer than the 2"):
        upgrade(7, 3, known)
    assert upgrade(8, 2, known) is known
    # Many at once: one version for all, or one each.
    assert upgrade_all("s", [0, 1], 2, [known, ignorable]) == [known, upgrade(1, 2, ignorable)]
    assert upgrade_all("s", [0, 1], [1, 2], [unknown, known]) == [upgrade(0, 1, unknown), known]
    with pytest.raises(UnreadableSessionEvent, match="event 1 "):
        upgrade_all("s", [0, 1], [2, 2], [known, unknown])
    with pytest.raises(UnreadableSessionEvent, match="event 0 "):
        upgrade_all("s", [0], 9, [known])


def test_integers_past_64_bits_stay_exact_in_batch_decoding() -> None:
    for value in (-9223372036854775809, 2**64, 10**30):
        event = ToolCalled(call_id="c", name="t", args={"n": value})
        stored = encode_event(event)
        assert decode_events([stored, stored]) == [event, event]


@settings(max_examples=200)
@given(st.lists(events.map(encode_event) | irregular, max_size=12))
def test_the_batch_path_decodes_each_payload_as_decode_event_does(payloads: list[str]) -> None:
    from helikon.core.session.codec import decode_joined

    assert decode_joined(",".join(payloads), len(payloads)) == [decode_event(p) for p in payloads]


def test_decoded_carriers_are_ordinary_frozen_instances() -> None:
    import dataclasses
    import pickle

    from helikon.core.session.codec import decode_joined

    original = AssistantMessageEvent(content=(TextPart(text="hi"), ReasoningPart(text="r")), agent="a")
    [event] = decode_joined(encode_event(original), 1) or []
    assert type(event) is AssistantMessageEvent and type(event.content[0]) is TextPart
    assert event == original and hash(event) == hash(original)
    assert (
        event.ts == original.ts and event.ts.utcoffset() == original.ts.utcoffset()
    )  # the same instant, UTC
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.agent = "b"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(event)) == original
    assert dataclasses.replace(event, agent="b").agent == "b"


@settings(max_examples=500)
@given(
    st.lists(st.text() | st.sampled_from(["", '"\\\n\t\x00\x1f\x7f\u2028é😀', "\ud800"]), max_size=3),
    st.datetimes(timezones=st.just(UTC) | st.timezones()),
)
def test_the_user_message_encoder_writes_what_pydantic_writes(texts: list[str], ts: Any) -> None:
    event = UserMessageEvent(content=tuple(TextPart(text=t) for t in texts), ts=ts)
    try:
        expected = SESSION_EVENT_ADAPTER.dump_json(event).decode()
    except Exception:  # a lone surrogate: pydantic refuses; encode_event escapes it
        stored = encode_event(event)
        stored.encode()
        if ts.tzinfo is UTC:
            assert decode_event(stored) == event
        return
    assert encode_event(event) == expected
    if ts.tzinfo is UTC:
        assert decode_event(expected) == event


# --- payloads that are no event at all: kept, never refused, never an undocumented error ------------


def test_a_payload_that_is_no_json_object_is_kept_verbatim_in_every_format() -> None:
    import base64

    from helikon.core.session import project
    from helikon.core.session.codec import snapshot_from_payloads, upgrade, upgrade_all

    good = encode_event(UserMessageEvent(content=(TextPart(text="hi"),))).encode()
    not_utf8 = b'{"type":"user_message","content":[{"type":"text","text":"\xff\xfe"}]}'
    cases = {
        not_utf8: ("not UTF-8", "raw_base64", base64.b64encode(not_utf8).decode()),
        b"{broken": ("not JSON", "raw", "{broken"),
        b"[1, 2]": ("a JSON array, not an object", "raw", "[1, 2]"),
        b'"text"': ("a JSON string, not an object", "raw", '"text"'),
    }
    for stored, (why, key, raw) in cases.items():
        event = decode_event(stored)
        assert isinstance(event, UnknownEvent) and event.type == "undecodable"
        assert event.data == {"type": "undecodable", "ignorable": True, "error": why, key: raw}
        kept = upgrade(1, 2, event, "s")  # no writer wrote it: kept even in format 2, not refused
        assert kept == UnknownEvent(type="undecodable", data=event.data, version=2)
        assert decode_event(encode_event(kept)) == event  # written back as that object
        batch = decode_events([good, stored, good])
        assert batch[1] == event and [type(e) for e in batch[::2]] == [UserMessageEvent] * 2
        assert upgrade_all("s", [0, 1, 2], 2, batch)[1] == kept
        assert [m.type for m in snapshot_from_payloads([good, stored, good]).messages] == ["user", "user"]
        assert snapshot_from_payloads([good, stored]) == project(batch[:2])
    typeless = decode_event('{"content": "no type tag"}')  # an object, but no writer's event
    assert upgrade(0, 2, typeless) == UnknownEvent(type="unknown", data={"content": "no type tag"}, version=2)


@pytest.mark.parametrize("depth", [1_100, 5_000, 200_000])
def test_payloads_nested_too_deeply_to_parse_are_kept_not_raised(depth: int) -> None:
    from helikon.core.session.codec import decode_joined, snapshot_from_payloads

    good = encode_event(UserMessageEvent(content=(TextPart(text="hi"),)))
    deep = (
        '{"type":"tool_called","call_id":"c","name":"n","args":'
        + "[" * depth
        + "]" * depth
        + ',"ts":"2026-01-01T00:00:00Z"}'
    )
    event = decode_event(deep)
    assert isinstance(event, UnknownEvent) and event.data["error"] == "nested too deeply to parse"
    assert decode_event(deep.encode()) == event
    assert decode_events([good, deep, good])[1] == event
    assert decode_joined(",".join([good, deep, good]), 3) is None  # the caller reads row by row
    assert [m.type for m in snapshot_from_payloads([good, deep, good]).messages] == ["user", "user"]
    bare = "[" * depth + "]" * depth
    assert decode_event(bare).type == "undecodable" and decode_events([bare, good])[0].type == "undecodable"


def _mutations() -> st.SearchStrategy[bytes]:
    """Valid stored payloads with a few bytes replaced, inserted or cut: what damage looks like."""

    edit = st.tuples(st.integers(0, 10_000), st.integers(0, 2), st.binary(min_size=1, max_size=3))
    return st.builds(mutate, events.map(encode_event), st.lists(edit, min_size=1, max_size=4))


good_payloads = st.lists(events.map(lambda e: encode_event(e).encode()), max_size=5)


@settings(max_examples=300, deadline=None)
@given(good_payloads, st.binary(max_size=40) | _mutations(), st.integers(0, 5))
def test_decoding_any_bytes_gives_events_or_a_documented_refusal(
    good: list[bytes], damaged: bytes, at: int
) -> None:
    """One damaged payload among good ones (each read path isolates it; the good ones decode)."""
    at = min(at, len(good))
    payloads = [*good[:at], damaged, *good[at:]]
    _check_read_paths(good, payloads, damaged, at)


_PINNED = datetime(2026, 1, 2, tzinfo=UTC)


def _pinned(events: list[Any] | None, at: int) -> list[Any] | None:
    """`events` with the damaged one's `ts` pinned: a payload that lost its "ts" decodes to "now"."""
    if events is None or "ts" not in {f.name for f in dataclasses.fields(events[at])}:
        return events
    return [*events[:at], dataclasses.replace(events[at], ts=_PINNED), *events[at + 1 :]]


def _check_read_paths(good: list[bytes], payloads: list[bytes], damaged: bytes, at: int) -> None:
    from helikon.core.exceptions import UnreadableSessionEvent
    from helikon.core.session import project
    from helikon.core.session.codec import decode_joined, snapshot_from_payloads, upgrade_all

    one_by_one = [decode_event(p) for p in payloads]
    assert [*one_by_one[:at], *one_by_one[at + 1 :]] == [decode_event(p) for p in good]
    assert _pinned(decode_events(payloads), at) == _pinned(one_by_one, at)
    assert snapshot_from_payloads(payloads) == project(one_by_one)
    if _is_utf8(damaged):
        joined = decode_joined(b",".join(payloads).decode(), len(payloads))
        assert joined is None or _pinned(joined, at) == _pinned(one_by_one, at)
    for version in (1, 2):
        refused: UnreadableSessionEvent | None = None
        try:
            upgraded = upgrade_all("s", list(range(len(payloads))), version, list(one_by_one))
        except UnreadableSessionEvent as exc:  # a format-2 object of a type it does not know
            refused = exc
        else:
            assert len(upgraded) == len(payloads)
        if refused is not None:
            event = one_by_one[refused.seq]
            assert version == 2 and isinstance(event, UnknownEvent) and refused.seq == at
            assert isinstance(event.data.get("type"), str)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_a_stored_event_without_its_time_reads_the_same_each_time() -> None:
    stored = '{"type":"user_message","content":[{"type":"text","text":"hi"}]}'  # its "ts" lost
    first, again = decode_event(stored), decode_event(stored)
    assert first == again  # the carriers' default (now) would differ from read to read
    assert first.ts == datetime.fromisoformat(UNKNOWN_TIME)
    assert decode_events([stored, stored]) == [first, first]


@pytest.mark.parametrize(
    "stored",
    [
        # Each also has a value the adapter reads leniently (a time without its zone, a string
        # for a bool): a malformed usage or metadata still reads as absent, the event is kept.
        '{"type":"assistant_message","content":[{"type":"text","text":"x"}],"agent":null,'
        '"ts":"2026-01-01T00:00:00","usage":{"input_tokens":"many"}}',
        '{"type":"tool_returned","call_id":"c1","content":[{"type":"text","text":"x"}],"is_error":"false",'
        '"name":"t","ts":"2026-01-01T00:00:00Z","metadata":[1, 2]}',
    ],
)
def test_a_malformed_usage_or_metadata_never_costs_its_event(stored: str) -> None:
    event = decode_event(stored)
    assert isinstance(event, AssistantMessageEvent | ToolReturned) and event.content == (TextPart(text="x"),)
    assert getattr(event, "usage", None) is None and getattr(event, "metadata", None) is None
    assert decode_events([stored, stored]) == [event, event]
