"""The codec writes every event: lone surrogates as escapes read back exactly, too-deep values as a note."""

from __future__ import annotations

import itertools
import json
from datetime import UTC
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helikon.core.items import TextPart, ToolUsePart
from helikon.core.model import ToolDef
from helikon.core.session import (
    AssistantMessageEvent,
    RequestHeader,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    TurnOpened,
    UnknownEvent,
    UserMessageEvent,
    codec,
)
from helikon.core.session.codec import MAX_STORED_DEPTH, decode_event, decode_events, encode_event


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def no_pairs(text: str) -> bool:
    """A high surrogate right before a low one reads back as the one character they encode."""
    return not any(
        "\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in itertools.pairwise(text)
    )


# Any code point, lone surrogates included (hypothesis leaves them out by default).
awkward = st.text(st.characters() | st.characters(categories=["Cs"]), max_size=12).filter(no_pairs)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | awkward,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(awkward, inner, max_size=3),
    max_leaves=6,
)
stamps = st.datetimes(timezones=st.just(UTC))
awkward_events: st.SearchStrategy[SessionEvent] = st.one_of(
    st.builds(
        UserMessageEvent,
        content=st.lists(st.builds(TextPart, text=awkward), max_size=2).map(tuple),
        ts=stamps,
    ),
    st.builds(
        AssistantMessageEvent,
        content=st.lists(
            st.builds(TextPart, text=awkward)
            | st.builds(ToolUsePart, call_id=awkward, name=awkward, args=json_values),
            max_size=2,
        ).map(tuple),
        agent=st.none() | awkward,
        ts=stamps,
    ),
    st.builds(ToolCalled, call_id=awkward, name=awkward, args=json_values, ts=stamps),
    st.builds(
        ToolReturned,
        call_id=awkward,
        content=st.lists(st.builds(TextPart, text=awkward), max_size=2).map(tuple),
        name=st.none() | awkward,
        ts=stamps,
        metadata=st.none() | st.dictionaries(awkward, json_values, max_size=3),
    ),
    st.builds(TurnOpened, run_id=awkward, agent=st.none() | awkward, ts=stamps),
    st.builds(
        RequestHeader, provider=awkward, model=awkward, system=st.lists(awkward, max_size=2).map(tuple)
    ),
)


@settings(max_examples=300)
@given(awkward_events)
def test_every_event_is_stored_as_utf8_json_that_reads_back_exactly(event: SessionEvent) -> None:
    stored = encode_event(event)
    stored.encode("utf-8")  # no lone surrogate left: every store takes the text
    json.loads(stored)
    assert decode_event(stored) == event
    assert decode_events([stored, stored]) == [event, event]


def test_a_file_name_that_is_not_utf8_is_kept_exactly() -> None:
    name = b"report-\xff.txt".decode("utf-8", "surrogateescape")  # as os.listdir gives it
    result = ToolReturned(call_id="c1", content=(TextPart(text=f"{name}\nnotes.md"),), name="ls")
    stored = encode_event(result)
    assert "report-\\udcff.txt" in stored  # a JSON escape, in the stored text
    assert decode_event(stored) == result
    part = decode_event(stored).content[0]  # type: ignore[union-attr]
    assert isinstance(part, TextPart)
    assert part.text.split("\n")[0].encode("utf-8", "surrogateescape") == b"report-\xff.txt"
    unknown = UnknownEvent(type="x", data={"type": "x", "name": name})
    assert decode_event(encode_event(unknown)) == unknown


@settings(max_examples=100)
@given(
    st.one_of(
        st.builds(ToolCalled, call_id=st.text(), name=st.text(), args=st.dictionaries(st.text(), st.text())),
        st.builds(
            ToolReturned,
            call_id=st.text(),
            content=st.lists(st.builds(TextPart, text=st.text())).map(tuple),
            metadata=st.none() | st.dictionaries(st.text(), st.text() | st.integers() | st.booleans()),
        ),
        st.builds(AssistantMessageEvent, content=st.lists(st.builds(TextPart, text=st.text())).map(tuple)),
        st.builds(TurnOpened, run_id=st.text(), agent=st.none() | st.text()),
        st.builds(
            RequestHeader, provider=st.text(), model=st.text(), injected=st.lists(st.text()).map(tuple)
        ),
    )
)
def test_the_escaping_writer_writes_what_pydantic_writes_for_ordinary_events(event: SessionEvent) -> None:
    assert codec._json_of(event) == encode_event(event)  # pyright: ignore[reportPrivateUsage]


def test_values_nested_deeper_than_the_serializer_writes_are_stored_as_a_note() -> None:
    for depth in (300, 999):  # json.loads parses these: a model's arguments can be this deep
        call = ToolCalled(call_id="c1", name="lookup", args={"q": nested(depth)})
        stored = decode_event(encode_event(call))
        assert isinstance(stored, ToolCalled) and (stored.call_id, stored.name) == ("c1", "lookup")
        assert stored.args == {
            "unstored": f"this value nested more than {MAX_STORED_DEPTH} levels deep; it was not stored"
        }


def test_only_the_values_too_deep_are_replaced_and_shallow_events_are_untouched() -> None:
    shallow = ToolCalled(call_id="c1", name="t", args={"q": nested(100)})
    assert decode_event(encode_event(shallow)) == shallow
    message = AssistantMessageEvent(
        content=(
            TextPart(text="two calls"),
            ToolUsePart(call_id="a", name="t", args={"q": nested(400)}),
            ToolUsePart(call_id="b", name="t", args={"q": 1}),
        )
    )
    stored = decode_event(encode_event(message))
    assert isinstance(stored, AssistantMessageEvent)
    deep, kept = stored.content[1], stored.content[2]
    assert isinstance(deep, ToolUsePart) and isinstance(kept, ToolUsePart)
    assert list(deep.args) == ["unstored"]  # type: ignore[arg-type]
    assert kept.args == {"q": 1} and stored.content[0] == TextPart(text="two calls")
    header = RequestHeader(
        provider="p",
        model="m",
        settings={"extra": nested(400), "temperature": 0.5},
        tools=(ToolDef(name="t", description="d", parameters={"type": "object", "x": nested(400)}),),
    )
    read = decode_event(encode_event(header))
    assert isinstance(read, RequestHeader) and read.settings["temperature"] == 0.5
    assert list(read.settings["extra"]) == ["unstored"]  # type: ignore[arg-type]
    assert list(read.tools[0].parameters) == ["unstored"]


@pytest.mark.parametrize("key", [chr(0xD800), chr(0xFFFD), "a" + chr(0xDCFF) + chr(0xFFFD) + "b"])
def test_a_key_with_a_lone_surrogate_or_a_replacement_character_reads_back_exactly(key: str) -> None:
    # pydantic writes a lone surrogate in a mapping's key as U+FFFD, silently: never stored so.
    event = ToolReturned(call_id="c", content=(), metadata={key: 1})
    assert decode_event(encode_event(event)) == event
