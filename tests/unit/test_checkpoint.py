"""Projection checkpoints: checkpoint + tail is exactly the projection of the whole log.

A property test over random logs (every event kind, both compaction modes and summary roles,
ignorable unknown events) and random checkpoint positions, through the stored state; then
what a reader must refuse (`load`), and `LogCache` started from a checkpoint.
"""

from __future__ import annotations

from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from helikon.core.items import ImagePart, ReasoningPart, TextPart, UrlSource, UserMessage
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    HandoffOccurred,
    Projection,
    SequenceId,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    UnknownEvent,
    UserMessageEvent,
    event_step,
    project,
)
from helikon.core.session._log_cache import LogCache
from helikon.core.session.checkpoint import (
    PROJECTOR_VERSION,
    Checkpoint,
    decode_state,
    encode_state,
    fingerprint,
    load,
    restored_projection,
)

_text = st.text(max_size=8)
_parts = st.lists(
    st.one_of(
        _text.map(lambda t: TextPart(text=t)),
        _text.map(lambda t: ReasoningPart(text=t, signature="sig")),
        st.just(ImagePart(source=UrlSource(url="https://example.com/a.png"))),
    ),
    min_size=1,
    max_size=3,
).map(tuple)
_json_args = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _text,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_text, inner, max_size=2),
    max_leaves=4,
)


@st.composite
def _event(draw: st.DrawFn, index: int) -> SessionEvent:
    kind = draw(st.integers(0, 8))
    if kind == 0:
        return UserMessageEvent(content=draw(_parts))
    if kind == 1:
        return AssistantMessageEvent(content=draw(_parts), agent=draw(st.none() | _text))
    if kind == 2:
        return ToolCalled(call_id=draw(_text), name=draw(_text), args=draw(_json_args))
    if kind == 3:
        return ToolReturned(
            call_id=draw(_text),
            content=draw(_parts),
            is_error=draw(st.booleans()),
            name=draw(st.none() | _text),
        )
    if kind == 4:
        return HandoffOccurred(from_agent="a", to_agent="b")
    if kind == 5:
        return UnknownEvent(type="ui_note", data={"type": "ui_note", "ignorable": True}, version=2)
    role: Literal["system", "user"] = draw(st.sampled_from(["system", "user"]))
    if kind == 6:  # the book's: summarize the `original_count` events before
        return Compacted(
            summary=draw(_text), original_count=draw(st.integers(-1, index + 2)), summary_role=role
        )
    # keep-recent window, including out-of-range first_kept_seq values a damaged marker could hold
    first_kept = draw(st.integers(-2, index + 2))
    return Compacted(summary=draw(_text), original_count=0, first_kept_seq=first_kept, summary_role=role)


@st.composite
def _log(draw: st.DrawFn) -> list[SessionEvent]:
    size = draw(st.integers(0, 40))
    return [draw(_event(i)) for i in range(size)]


def _folded(events: list[SessionEvent]) -> Projection:
    projection = restored_projection()
    for event in events:
        projection.add(event_step(event))
    return projection


@settings(max_examples=300, deadline=None)
@given(log=_log(), data=st.data())
def test_checkpoint_plus_tail_is_the_full_projection(log: list[SessionEvent], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(log)) if log else st.just(0))
    if cut == 0:
        return
    state = encode_state(_folded(log[:cut]))
    restored = decode_state(state, as_of_seq=cut - 1)
    assert restored is not None
    assert restored.count == cut
    for event in log[cut:]:
        restored.add(event_step(event))
    assert restored.snapshot() == project(log)
    # And a checkpoint of a checkpoint: saved again at the end, it still round-trips.
    again = decode_state(encode_state(restored), as_of_seq=len(log) - 1)
    assert again is not None and again.snapshot() == project(log)


def _log_of(n: int) -> list[SessionEvent]:
    return [UserMessageEvent(content=(TextPart(text=f"m{i}"),)) for i in range(n)]


def test_load_refuses_what_it_cannot_trust() -> None:
    state = encode_state(_folded(_log_of(5)))
    good = Checkpoint(as_of_seq=4, projector=PROJECTOR_VERSION, fingerprint="f", state=state)
    assert load(good, "f") is not None
    assert load(None, "f") is None
    assert load(good, None) is None  # the log no longer reaches as_of_seq
    assert load(good, "g") is None  # another event stands at as_of_seq
    assert load(good._replace(projector="0-other"), "f") is None
    assert load(good._replace(state="{not json"), "f") is None
    assert load(good._replace(as_of_seq=3), "f") is None  # the state folds a different count
    assert load(good._replace(as_of_seq=-1), "f") is None
    for bad in (
        '{"count":5,"origins":[0],"items":[]}',
        '{"count":5,"origins":[9],"items":[{"type":"user"}]}',
    ):
        assert decode_state(bad, 4) is None
    assert decode_state('{"count":1,"origins":[0],"items":[{"type":"nope"}]}', 0) is None
    assert decode_state("[]", 0) is None


def test_fingerprint_is_of_the_stored_bytes() -> None:
    assert fingerprint('{"a":1}') == fingerprint(b'{"a":1}') != fingerprint('{"a": 1}')


def test_a_new_item_field_falls_back_to_pydantic() -> None:
    # An item with a field the fast path does not know is decoded by the item adapter.
    state = '{"count":1,"origins":[0],"items":[{"type":"user","content":[{"type":"text","text":"x"}],"z":1}]}'
    restored = decode_state(state, 0)
    assert restored is not None and restored.snapshot().messages == (UserMessage.from_text("x"),)


def test_log_cache_started_from_a_checkpoint() -> None:
    log = _log_of(10)
    cache = LogCache()
    decoded = decode_state(encode_state(_folded(log[:6])), 5)
    assert decoded is not None
    cache.start_at(decoded, 5)
    assert (len(cache), cache.last_seq, cache.base, cache.checkpoint_seq) == (6, 5, 6, 5)
    entries = [SessionEntry(SequenceId(i), e) for i, e in enumerate(log)]
    assert cache.extend(entries[6:])
    assert cache.snapshot() == project(log)
    assert cache.after(SequenceId(7)) == entries[8:]
    assert cache.after(None) is None  # the prefix is in the projection only
    assert not cache.fill_prefix(entries[1:6])
    assert cache.fill_prefix(entries)
    assert cache.after(None) == entries and cache.base == 0
    assert cache.snapshot() == project(log)
    assert not cache.extend([SessionEntry(SequenceId(12), log[0])])  # a gap: the caller clears
