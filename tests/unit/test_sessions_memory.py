"""Sessions in memory: `project`, `MemorySession` and `SessionRecorder`."""

import copy
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helikon import (
    AgentError,
    AgentUpdated,
    AssistantMessage,
    AssistantMessageEvent,
    Compacted,
    ConversationSnapshot,
    HandoffItem,
    HandoffOccurred,
    ImagePart,
    MemorySession,
    MessageOutput,
    ReasoningDelta,
    ReasoningPart,
    RunCompleted,
    RunFailed,
    RunStarted,
    SequenceId,
    Session,
    SessionEntry,
    SessionRecorder,
    SystemMessage,
    TextPart,
    TokenDelta,
    TokenUsage,
    ToolCall,
    ToolCallDelta,
    ToolCalled,
    ToolCallItem,
    ToolOutputItem,
    ToolResult,
    ToolReturned,
    TurnStarted,
    UrlSource,
    UserMessage,
    UserMessageEvent,
    project,
)
from helikon.core.conversation_check import is_provider_valid
from helikon.core.session import event_step, fold
from helikon.core.session._pair_cut import whole_cut
from helikon.core.session.recorder import INTERRUPTED_TOOL_TEXT

TS = datetime(2024, 1, 1, tzinfo=UTC)


def text(value: str) -> tuple[TextPart]:
    return (TextPart(text=value),)


def user(value: str) -> UserMessageEvent:
    return UserMessageEvent(content=text(value), ts=TS)


def assistant(value: str, agent: str | None = "bot") -> AssistantMessageEvent:
    return AssistantMessageEvent(content=text(value), agent=agent, ts=TS)


def texts(snapshot: ConversationSnapshot) -> list[str]:
    """A compact view of a projection: one string per message."""
    out: list[str] = []
    for message in snapshot.messages:
        if isinstance(message, SystemMessage):
            out.append(f"system:{message.text}")
        elif isinstance(message, ToolCall):
            out.append(f"call:{message.call_id}")
        elif isinstance(message, ToolResult):
            out.append(f"result:{message.call_id}")
        else:
            out.append(f"{message.type}:{message.text}")
    return out


# --- project ----------------------------------------------------------------------------------


def test_each_variant_maps_to_its_item() -> None:
    content = (TextPart(text="see"), ImagePart(source=UrlSource(url="https://x/y.png")))
    log = [
        UserMessageEvent(content=content, ts=TS),
        AssistantMessageEvent(
            content=(ReasoningPart(text="r", signature="s"), TextPart(text="ok")), agent="a"
        ),
        ToolCalled(call_id="c1", name="search", args={"q": "x"}),
        ToolReturned(call_id="c1", content=text("found"), is_error=True, name="search"),
    ]
    assert project(log) == ConversationSnapshot(
        (
            UserMessage(content=content),
            AssistantMessage(
                content=(ReasoningPart(text="r", signature="s"), TextPart(text="ok")), agent="a"
            ),
            ToolCall(call_id="c1", name="search", args={"q": "x"}),
            ToolResult(call_id="c1", content=text("found"), is_error=True, name="search"),
        )
    )


def test_an_empty_log_projects_to_an_empty_conversation() -> None:
    assert project([]) == ConversationSnapshot()
    assert project([]).messages == ()


def test_handoffs_project_to_nothing() -> None:
    log = [user("hi"), HandoffOccurred(from_agent="triage", to_agent="billing"), assistant("hello")]
    assert texts(project(log)) == ["user:hi", "assistant:hello"]
    assert project([HandoffOccurred(from_agent="a", to_agent="b")]).messages == ()


def test_compacted_replaces_the_preceding_events_with_a_summary() -> None:
    log = [user("1"), assistant("2"), user("3"), Compacted(summary="S", original_count=3), user("4")]
    snapshot = project(log)
    assert snapshot.messages[0] == SystemMessage(text="S")
    assert texts(snapshot) == ["system:S", "user:4"]


def test_compacted_drops_only_the_original_count_events_before_it() -> None:
    log = [user("1"), assistant("2"), user("3"), assistant("4"), Compacted(summary="S", original_count=2)]
    assert texts(project(log)) == ["user:1", "assistant:2", "system:S"]


def test_original_count_counts_events_not_messages() -> None:
    # the handoff is one of the two summarized events, though it has no message
    log = [
        user("1"),
        assistant("2"),
        HandoffOccurred(from_agent="a", to_agent="b"),
        Compacted(summary="S", original_count=2),
    ]
    assert texts(project(log)) == ["user:1", "system:S"]


def test_original_count_larger_than_the_log_drops_everything_before() -> None:
    log = [user("1"), assistant("2"), Compacted(summary="S", original_count=50), user("3")]
    assert texts(project(log)) == ["system:S", "user:3"]


def test_original_count_zero_drops_nothing() -> None:
    log = [user("1"), assistant("2"), Compacted(summary="S", original_count=0), user("3")]
    assert texts(project(log)) == ["user:1", "assistant:2", "system:S", "user:3"]


def test_a_negative_original_count_drops_nothing() -> None:
    log = [user("1"), Compacted(summary="S", original_count=-4)]
    assert texts(project(log)) == ["user:1", "system:S"]


def test_a_second_compaction_covering_the_first_summary_replaces_it() -> None:
    log = [
        user("1"),
        assistant("2"),
        Compacted(summary="S1", original_count=2),
        user("3"),
        assistant("4"),
        Compacted(summary="S2", original_count=3),  # covers S1, 3 and 4
        user("5"),
    ]
    assert texts(project(log)) == ["system:S2", "user:5"]


def test_a_second_compaction_after_the_first_summary_keeps_it() -> None:
    log = [
        user("1"),
        Compacted(summary="S1", original_count=1),
        user("2"),
        assistant("3"),
        Compacted(summary="S2", original_count=2),
    ]
    assert texts(project(log)) == ["system:S1", "system:S2"]


def test_compacting_the_whole_log_at_the_start() -> None:
    assert texts(project([Compacted(summary="only", original_count=0)])) == ["system:only"]


# --- project: properties ----------------------------------------------------------------------

parts = st.lists(st.builds(TextPart, text=st.text(max_size=6)), max_size=2).map(tuple)
ids = st.sampled_from(["c1", "c2", "c3"])
ts = st.datetimes(timezones=st.just(UTC))
session_event = st.one_of(
    st.builds(UserMessageEvent, content=parts, ts=ts),
    st.builds(AssistantMessageEvent, content=parts, agent=st.none() | st.text(max_size=4), ts=ts),
    st.builds(
        ToolCalled,
        call_id=ids,
        name=st.text(max_size=4),
        args=st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        ts=ts,
    ),
    st.builds(ToolReturned, call_id=ids, content=parts, is_error=st.booleans(), ts=ts),
    st.builds(HandoffOccurred, from_agent=st.text(max_size=4), to_agent=st.text(max_size=4), ts=ts),
    st.builds(Compacted, summary=st.text(max_size=6), original_count=st.integers(-2, 12), ts=ts),
)
logs = st.lists(session_event, max_size=15)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs)
def test_project_is_deterministic_and_pure(log: list[Any]) -> None:
    before = copy.deepcopy(log)
    first = project(log)
    second = project(log)
    assert first == second
    assert log == before  # the input was not touched
    assert project(tuple(log)) == first
    assert isinstance(first.messages, tuple)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs)
def test_projection_without_compaction_is_one_item_per_message_event(log: list[Any]) -> None:
    plain = [e for e in log if not isinstance(e, Compacted)]
    messages = project(plain).messages
    assert len(messages) == sum(1 for e in plain if not isinstance(e, HandoffOccurred))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs, logs)
def test_a_full_compaction_hides_everything_before_it(before: list[Any], after: list[Any]) -> None:
    after = [e for e in after if not isinstance(e, Compacted)]  # later markers could reach back
    marker = Compacted(summary="SUMMARY", original_count=len(before))
    hidden = project(before).messages
    combined = project([*before, marker, *after]).messages
    # A tool turn still open at the marker (a call waiting for its result, reasoning for its
    # call) stays verbatim after the summary: its result must not be orphaned.
    kept = hidden[whole_cut(hidden, len(hidden), -1) :]
    assert all(isinstance(m, ToolCall | ToolResult | AssistantMessage) for m in kept)
    assert not kept or not is_provider_valid(hidden)
    # Everything else before it is hidden: what follows the summary is that turn, then the
    # events after the marker (a result of that turn takes its place in it, in call order).
    assert combined == (SystemMessage(text="SUMMARY"), *fold([*kept, *map(event_step, after)]).messages)


# --- MemorySession ----------------------------------------------------------------------------


async def test_memory_session_is_a_session() -> None:
    assert isinstance(MemorySession(), Session)


async def test_append_and_read_with_sequence_numbers() -> None:
    session = MemorySession()
    first = [user("a"), assistant("b")]
    await session.append(first)
    await session.append([user("c")])
    entries = await session.events()
    assert entries == [
        SessionEntry(SequenceId(0), first[0]),
        SessionEntry(SequenceId(1), first[1]),
        SessionEntry(SequenceId(2), user("c")),
    ]
    assert [entry.seq for entry in entries] == [0, 1, 2]
    assert entries[2].event.content == text("c")  # type: ignore[union-attr]
    assert len(session) == 3


async def test_events_since_is_exclusive() -> None:
    session = MemorySession()
    await session.append([user("0"), user("1"), user("2"), user("3")])
    after_one = await session.events(SequenceId(1))
    assert [(e.seq, e.event.content[0].text) for e in after_one] == [(2, "2"), (3, "3")]  # type: ignore[union-attr]
    assert [e.seq for e in await session.events(SequenceId(0))] == [1, 2, 3]
    assert await session.events(SequenceId(3)) == []
    assert [e.seq for e in await session.events(SequenceId(-1))] == [0, 1, 2, 3]


async def test_events_since_beyond_the_end_is_empty() -> None:
    session = MemorySession()
    assert await session.events() == []
    assert await session.events(SequenceId(0)) == []
    await session.append([user("x")])
    assert await session.events(SequenceId(5)) == []
    assert await session.events(SequenceId(1000)) == []


async def test_appending_nothing_changes_nothing() -> None:
    session = MemorySession([user("a")])
    await session.append([])
    assert [e.seq for e in await session.events()] == [0]


async def test_a_session_can_start_from_events() -> None:
    session = MemorySession([user("a"), assistant("b")])
    assert len(session) == 2
    assert repr(session) == "MemorySession(2 events)"
    assert texts(await session.snapshot()) == ["user:a", "assistant:b"]


async def test_the_log_is_not_shared_with_the_caller() -> None:
    seed = [user("a")]
    session = MemorySession(seed)
    seed.append(user("b"))
    entries = await session.events()
    entries.clear()
    assert len(session) == 1
    assert len(await session.events()) == 1


async def test_snapshot_is_the_projection_of_the_whole_log() -> None:
    session = MemorySession()
    await session.append([user("1"), assistant("2"), Compacted(summary="S", original_count=2), user("3")])
    snapshot = await session.snapshot()
    assert snapshot == project([e.event for e in await session.events()])
    assert texts(snapshot) == ["system:S", "user:3"]


async def test_sessions_are_independent() -> None:
    a, b = MemorySession(), MemorySession()
    await a.append([user("only a")])
    assert await b.events() == []


# --- SessionRecorder --------------------------------------------------------------------------


def strip_ts(events: list[Any]) -> list[Any]:
    """Events without their timestamps, for comparisons."""
    out = []
    for event in events:
        fields = {k: getattr(event, k) for k in event.__carrier_fields__ if k not in ("ts", "type")}
        for optional in ("usage", "metadata"):  # recorded only when known
            if fields.get(optional, 0) is None:
                del fields[optional]
        out.append((event.type, fields))
    return out


def test_recorder_seeds_from_the_new_input() -> None:
    recorder = SessionRecorder(
        [
            SystemMessage(text="be nice"),
            UserMessage.from_text("hi"),
            AssistantMessage.from_text("earlier", agent="bot"),
            ToolCall(call_id="c1", name="search", args={"q": "x"}),
            ToolResult(call_id="c1", content=text("found"), name="search"),
        ]
    )
    events = recorder.drain()
    assert strip_ts(events) == [
        ("user_message", {"content": text("hi")}),
        ("assistant_message", {"content": text("earlier"), "agent": "bot"}),
        ("tool_called", {"call_id": "c1", "name": "search", "args": {"q": "x"}}),
        ("tool_returned", {"call_id": "c1", "content": text("found"), "is_error": False, "name": "search"}),
    ]
    assert all(e.ts is not None and e.ts.tzinfo is UTC for e in events)


def test_system_items_are_not_recorded() -> None:
    recorder = SessionRecorder([SystemMessage(text="instructions")])
    assert recorder.drain() == []


def test_observe_maps_the_semantic_events() -> None:
    recorder = SessionRecorder([UserMessage.from_text("weather?")])
    call = ToolCall(call_id="c1", name="weather", args={"city": "Paris"})
    for event in [
        RunStarted(agent="bot"),
        TurnStarted(turn=0),
        ToolCallDelta(call_id="c1", name="weather", args_delta='{"city":'),
        ToolCallItem(item=call),
        ToolOutputItem(item=ToolResult(call_id="c1", content=text("sunny"), name="weather")),
        TurnStarted(turn=1),
        ReasoningDelta(text="hmm"),
        TokenDelta(text="Sun"),
        HandoffItem(from_agent="bot", to_agent="weather-bot"),
        AgentUpdated(agent="weather-bot"),
        MessageOutput(item=AssistantMessage.from_text("Sunny.", agent="weather-bot")),
        RunCompleted(usage=TokenUsage(requests=2)),
    ]:
        recorder.observe(event)
    assert strip_ts(recorder.drain()) == [
        ("user_message", {"content": text("weather?")}),
        ("tool_called", {"call_id": "c1", "name": "weather", "args": {"city": "Paris"}}),
        ("tool_returned", {"call_id": "c1", "content": text("sunny"), "is_error": False, "name": "weather"}),
        ("handoff_occurred", {"from_agent": "bot", "to_agent": "weather-bot"}),
        ("assistant_message", {"content": text("Sunny."), "agent": "weather-bot"}),
    ]


def test_deltas_and_control_events_record_nothing() -> None:
    recorder = SessionRecorder()
    for event in [
        RunStarted(agent="a"),
        TurnStarted(turn=0),
        TokenDelta(text="x"),
        ReasoningDelta(text="y"),
        ToolCallDelta(call_id="c", name="n"),
        AgentUpdated(agent="b"),
        RunFailed(error=AgentError(kind="cancelled", message="stop")),
    ]:
        recorder.observe(event)
    assert recorder.drain() == []


def test_drain_answers_every_unanswered_call_and_resets() -> None:
    recorder = SessionRecorder([UserMessage.from_text("go")])
    recorder.observe(ToolCallItem(item=ToolCall(call_id="c1", name="slow", args={})))
    recorder.observe(ToolCallItem(item=ToolCall(call_id="c2", name="fast", args={})))
    recorder.observe(ToolCallItem(item=ToolCall(call_id="c3", name="other", args={})))
    recorder.observe(ToolOutputItem(item=ToolResult(call_id="c2", content=text("done"), name="fast")))
    events = recorder.drain()
    assert strip_ts(events) == [
        ("user_message", {"content": text("go")}),
        ("tool_called", {"call_id": "c1", "name": "slow", "args": {}}),
        ("tool_called", {"call_id": "c2", "name": "fast", "args": {}}),
        ("tool_called", {"call_id": "c3", "name": "other", "args": {}}),
        ("tool_returned", {"call_id": "c2", "content": text("done"), "is_error": False, "name": "fast"}),
        (
            "tool_returned",
            {"call_id": "c1", "content": text(INTERRUPTED_TOOL_TEXT), "is_error": True, "name": "slow"},
        ),
        (
            "tool_returned",
            {"call_id": "c3", "content": text(INTERRUPTED_TOOL_TEXT), "is_error": True, "name": "other"},
        ),
    ]
    # drained: a second drain is empty, and old calls are not answered again
    assert recorder.drain() == []
    recorder.observe(MessageOutput(item=AssistantMessage.from_text("later")))
    assert strip_ts(recorder.drain()) == [("assistant_message", {"content": text("later"), "agent": None})]


def test_a_call_answered_in_the_seed_is_not_interrupted() -> None:
    recorder = SessionRecorder(
        [ToolCall(call_id="c1", name="t", args=None), ToolResult(call_id="c1", content=text("r"))]
    )
    assert [e.type for e in recorder.drain()] == ["tool_called", "tool_returned"]


def test_a_seeded_unanswered_call_is_interrupted() -> None:
    recorder = SessionRecorder([ToolCall(call_id="c9", name="t", args=None)])
    events = recorder.drain()
    assert [e.type for e in events] == ["tool_called", "tool_returned"]
    assert events[1].is_error is True  # type: ignore[union-attr]
    assert events[1].call_id == "c9"  # type: ignore[union-attr]


def test_the_drained_log_projects_to_a_valid_conversation() -> None:
    recorder = SessionRecorder([UserMessage.from_text("plan a trip")])
    for call_id in ("a", "b", "c"):
        recorder.observe(ToolCallItem(item=ToolCall(call_id=call_id, name="lookup", args={"id": call_id})))
    recorder.observe(ToolOutputItem(item=ToolResult(call_id="b", content=text("ok"), name="lookup")))
    # the run is cancelled here: a and c never return
    messages = project(recorder.drain()).messages
    calls = [m for m in messages if isinstance(m, ToolCall)]
    results = {m.call_id: (i, m) for i, m in enumerate(messages) if isinstance(m, ToolResult)}
    assert [c.call_id for c in calls] == ["a", "b", "c"]
    for call in calls:
        index, result = results[call.call_id]
        assert index > messages.index(call)
        assert result.name == "lookup"
    assert results["a"][1].is_error and results["c"][1].is_error
    assert not results["b"][1].is_error


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["call", "result", "message"]), st.integers(0, 4)),
        max_size=20,
    )
)
def test_every_recorded_call_is_answered_after_drain(steps: list[tuple[str, int]]) -> None:
    recorder = SessionRecorder([UserMessage.from_text("go")])
    called: set[str] = set()
    for kind, n in steps:
        call_id = f"c{n}"
        if kind == "call" and call_id not in called:
            called.add(call_id)
            recorder.observe(ToolCallItem(item=ToolCall(call_id=call_id, name="t", args={})))
        elif kind == "result" and call_id in called:
            recorder.observe(ToolOutputItem(item=ToolResult(call_id=call_id, content=text("r"))))
        elif kind == "message":
            recorder.observe(MessageOutput(item=AssistantMessage.from_text(str(n))))
    messages = project(recorder.drain()).messages
    call_positions = {m.call_id: i for i, m in enumerate(messages) if isinstance(m, ToolCall)}
    answered = {m.call_id: i for i, m in enumerate(messages) if isinstance(m, ToolResult)}
    assert set(call_positions) == called
    for call_id, position in call_positions.items():
        assert call_id in answered
        assert answered[call_id] > position


# --- the envelope: ids, expected_seq, versions -------------------------------------------------


async def test_append_arguments_are_checked_before_anything_is_written() -> None:
    import pytest

    from helikon import MemorySession, UserError

    session = MemorySession()
    one = [UserMessageEvent(content=(TextPart(text="x"),))]
    bad: list[tuple[dict[str, Any], str]] = [
        ({"ids": "abc"}, "ids must be a sequence of strings"),
        ({"ids": ["a", "b"]}, "ids has 2 entries for 1 events"),
        ({"ids": [""]}, "each id must be a non-empty string"),
        ({"ids": [7]}, "each id must be a non-empty string"),
        ({"expected_seq": -2}, "expected_seq must be the seq of the last event you read"),
        ({"expected_seq": True}, "expected_seq must be"),
        ({"expected_seq": "0"}, "expected_seq must be"),
    ]
    for kwargs, message in bad:
        with pytest.raises(UserError, match=message):
            await session.append(one, **kwargs)
    with pytest.raises(UserError, match="ids must be unique within an append"):
        await session.append(one * 2, ids=["a", "a"])
    assert len(session) == 0
    await session.append([], expected_seq=41)  # an empty append checks nothing
    await session.append(one, ids=["a"], expected_seq=-1)
    other = UserMessageEvent(content=(TextPart(text="not x"),))
    with pytest.raises(UserError, match=r"id 'a' is stored in the session \(seq 0\) for another event"):
        await session.append([*one, other], ids=["b", "a"])
    assert len(session) == 1
    await session.append(one * 2, ids=["b", "a"])  # "a" is stored as it is: only "b" is new
    assert [r.id for r in await session.records()] == ["a", "b"]


async def test_records_carry_the_envelope_and_unreadable_events_are_refused_on_read() -> None:
    import pytest

    from helikon import MemorySession, UnknownEvent, UnreadableSessionEvent

    first = UserMessageEvent(content=(TextPart(text="x"),))
    session = MemorySession([first])
    [record] = await session.records()
    assert (record.seq, record.ts, record.version, record.event) == (0, first.ts, 2, first)
    assert len(record.id) == 36  # a UUID: a MemorySession has no session id to derive one from
    newer = UnknownEvent(type="user_message", data={"type": "user_message"}, version=3)
    await session.append([newer])  # as a newer helikon would have written it
    for read in (session.events, session.snapshot, session.records):
        with pytest.raises(
            UnreadableSessionEvent, match="event 1 of the session is stored in format version 3"
        ):
            await read()


async def test_a_forks_copy_of_a_rewind_is_not_taken_for_a_stale_rewind_of_its_own() -> None:
    import pytest

    from helikon import MemoryStore, SessionConflict

    said = user
    store = MemoryStore()
    parent = await store.open("parent")
    await parent.append([said("u0"), said("u1"), said("u2"), said("u3")])
    await parent.rewind(1, expected_seq=3)  # the marker is seq 4
    await parent.append([said("u4")])
    child = await parent.fork(5, session_id="child")  # copies seqs 0..5, the marker included
    # The same rewind from the same stale view: in the child it is a conflict, not a retry.
    with pytest.raises(SessionConflict) as raised:
        await child.rewind(1, expected_seq=3)
    assert (raised.value.expected_seq, raised.value.actual_seq) == (3, 6)
    await parent.rewind(1, expected_seq=3)  # in the parent it is a retry: a no-op
    assert len(await parent.events()) == 6 and len(await child.events()) == 7
