"""A compaction marker never orphans a tool call: where its span's edge falls inside a tool turn
(between a call and its result, between reasoning and its call, or where the marker itself
sits inside the turn), the turn stays verbatim, whole, and the summary stands beside it.
A property test over random logs (any marker anywhere, rewinds, branches) proves every
projection provider-valid, its pairs verbatim, and nothing outside a summary's span dropped.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from log_events import THINKING, call, result, said, user

from helikon.core.conversation_check import is_provider_valid
from helikon.core.items import (
    AssistantMessage,
    Item,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UserMessage,
)
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    SessionEvent,
    active_path,
    event_step,
    project,
)
from helikon.testing._compaction_checks import random_log, settled

S = SystemMessage(text="S")


def steps(*events: SessionEvent) -> list[Item]:
    return [step for step in map(event_step, events) if isinstance(step, Item)]


def projected(log: list[SessionEvent]) -> list[Item]:
    messages = list(project(log).messages)
    assert is_provider_valid(messages), messages
    return messages


def test_a_count_landing_between_a_call_and_its_result_keeps_the_pair() -> None:
    # The book's count: the summary stands for the 2 events before it (the result, "done").
    log = [user("q"), call("c1"), result("c1"), said("done"), Compacted(summary="S", original_count=2)]
    assert projected(log) == [*steps(user("q"), call("c1"), result("c1")), S]


@pytest.mark.parametrize("count", [3, 4, 5, 6, 7])
def test_a_count_landing_inside_parallel_calls_keeps_the_whole_turn(count: int) -> None:
    turn = [THINKING, call("c1"), call("c2"), call("c3"), result("c2"), result("c1"), result("c3")]
    log = [user("q"), *turn, said("done"), Compacted(summary="S", original_count=count)]
    # Whether the span starts after a result, between results, between calls or at a call
    # after the reasoning: the turn stays whole before the summary (its results in call order).
    in_call_order = [*turn[:4], result("c1"), result("c2"), result("c3")]
    assert projected(log) == [*steps(user("q"), *in_call_order), S]


@pytest.mark.parametrize("count", [0, 1, 6, 7])
def test_a_count_at_a_turn_edge_is_kept(count: int) -> None:
    turn = [THINKING, call("c1"), call("c2"), result("c1"), result("c2")]
    log = [user("q"), *turn, said("done"), Compacted(summary="S", original_count=count)]
    kept = {0: [user("q"), *turn, said("done")], 1: [user("q"), *turn], 6: [user("q")], 7: []}[count]
    assert projected(log) == [*steps(*kept), S]


def test_a_marker_between_a_call_and_its_result_goes_before_the_turn() -> None:
    log = [user("q"), call("c1"), Compacted(summary="S", original_count=2), result("c1")]
    assert projected(log) == [S, *steps(call("c1"), result("c1"))]
    none = [user("q"), call("c1"), Compacted(summary="S", original_count=0), result("c1")]
    assert projected(none) == [*steps(user("q")), S, *steps(call("c1"), result("c1"))]


def test_a_marker_between_parallel_results_goes_before_the_turn() -> None:
    turn = [THINKING, call("c1"), call("c2"), result("c1")]
    log = [user("q"), *turn, Compacted(summary="S", original_count=6), result("c2")]
    assert projected(log) == [S, *steps(*turn, result("c2"))]


def test_a_marker_after_reasoning_goes_before_it() -> None:
    log = [user("q"), THINKING, Compacted(summary="S", original_count=3), call("c1"), result("c1")]
    assert projected(log) == [S, *steps(THINKING, call("c1"), result("c1"))]


def test_calls_as_parts_are_kept_with_their_results() -> None:
    parts = AssistantMessageEvent(
        content=(
            ReasoningPart(text="thinking", signature="sig"),
            ToolUsePart(call_id="p1", name="lookup", args={}),
            ToolUsePart(call_id="p2", name="lookup", args={}),
        )
    )
    log = [user("q"), parts, result("p1"), result("p2"), Compacted(summary="S", original_count=1)]
    assert projected(log) == [*steps(user("q"), parts, result("p1"), result("p2")), S]


@pytest.mark.parametrize("first_kept", [2, 3])
def test_a_window_starting_inside_a_tool_turn_starts_before_it(first_kept: int) -> None:
    turn = [THINKING, call("c1"), result("c1")]  # seqs 1-3
    log = [
        user("q"),
        *turn,
        user("more"),
        Compacted(summary="S", original_count=5, first_kept_seq=first_kept),
    ]
    assert projected(log) == [S, *steps(*turn, user("more"))]


def test_a_user_role_summary_keeps_the_pair_too() -> None:
    log = [user("q"), call("c1"), result("c1"), Compacted(summary="S", original_count=1, summary_role="user")]
    assert projected(log) == [*steps(user("q"), call("c1"), result("c1")), UserMessage.from_text("S")]


def test_a_summary_placed_before_a_turn_goes_with_it() -> None:
    # S could not stand after the call: it went before the turn, and goes with it from then on.
    log = [user("q"), call("c1"), Compacted(summary="S", original_count=2), result("c1"), said("done")]
    assert projected(log) == [S, *steps(call("c1"), result("c1"), said("done"))]
    t = SystemMessage(text="T")
    # A later marker whose span starts inside the turn keeps the turn, and S before it...
    assert projected([*log, Compacted(summary="T", original_count=3)]) == [
        S,
        *steps(call("c1"), result("c1")),
        t,
    ]
    # ... and one reaching the turn's call replaces S with the turn.
    assert projected([*log, Compacted(summary="T", original_count=4)]) == [t]


# --- the property ------------------------------------------------------------------------------


def _covered(log: list[SessionEvent], path: list[int], index: int) -> bool:
    """Whether a `Compacted` marker after event `index` on the branch stands for it (may drop it)."""
    for later in path:
        marker = log[later]
        if later <= index or not isinstance(marker, Compacted):
            continue
        if marker.first_kept_seq is None and later - marker.original_count <= index:
            return True
        if marker.first_kept_seq is not None and index < marker.first_kept_seq:
            return True
    return False


def check_projection(log: list[SessionEvent]) -> None:
    messages = list(project(log).messages)
    if settled(log):
        assert is_provider_valid(messages), messages
    path = active_path(log)
    # Every call and result projected is the logged one, verbatim (call ids are unique).
    logged = {(type(step), id_): step for step in steps(*log) for id_ in _ids(step)}
    for item in messages:
        for id_ in _ids(item):
            assert item == logged[type(item), id_], item
    # A summary only ever drops what it stands for: every other message of the branch stays.
    for index in path:
        step = event_step(log[index])
        if isinstance(step, Item) and not _covered(log, path, index):
            assert step in messages, (index, step)


def _ids(item: Item) -> list[str]:
    if isinstance(item, ToolCall | ToolResult):
        return [item.call_id]
    if isinstance(item, AssistantMessage):
        return [p.call_id for p in item.content if isinstance(p, ToolUsePart)]
    return []


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_every_projection_of_a_random_log_is_valid_and_keeps_its_pairs(data: st.DataObject) -> None:
    log = random_log(lambda lo, hi: data.draw(st.integers(lo, hi)), data.draw(st.integers(0, 30)))
    for end in range(len(log) + 1):
        check_projection(log[:end])
