"""The provider-validity check and repair run before every model call."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helikon import AgentInput, LlmAgent
from helikon.core.conversation_check import (
    UNKNOWN_OUTCOME,
    InvalidConversationError,
    Repair,
    ensure_provider_valid,
    is_provider_valid,
    repair_conversation,
    valid_request,
)
from helikon.core.items import (
    AssistantMessage,
    ImagePart,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UrlSource,
    UserMessage,
)
from helikon.core.model import ModelRequest
from helikon.testing import MockModel, text_turn


def user(text: str = "u") -> UserMessage:
    return UserMessage.from_text(text)


def call(call_id: str, name: str = "t") -> ToolCall:
    return ToolCall(call_id=call_id, name=name, args={})


def result(call_id: str, text: str = "ok", *, name: str | None = "t", is_error: bool = False) -> ToolResult:
    return ToolResult(call_id=call_id, content=(TextPart(text=text),), name=name, is_error=is_error)


def reasoning(text: str = "thinking") -> AssistantMessage:
    return AssistantMessage(content=(ReasoningPart(text=text, signature="sig"),))


def kinds(repairs: list[Repair]) -> list[str]:
    return [r.kind for r in repairs]


# --- valid conversations pass untouched --------------------------------------------------------


VALID: list[list[Item]] = [
    [],
    [SystemMessage(text="s"), user(), AssistantMessage.from_text("a")],
    [user(), reasoning(), call("a"), call("b"), result("a"), result("b"), AssistantMessage.from_text("done")],
    [user(), call("a"), result("a"), call("b"), result("b")],  # one turn after another
    [user(), AssistantMessage(content=(ToolUsePart(call_id="u", name="t", args={}),)), result("u")],
    [user(), AssistantMessage(content=(ReasoningPart(text="r"), TextPart(text="t")))],
]


@pytest.mark.parametrize("items", VALID)
def test_a_valid_conversation_is_returned_as_it_is(items: list[Item]) -> None:
    assert is_provider_valid(items)
    fixed, repairs = repair_conversation(items)
    assert fixed == items and repairs == []
    assert all(a is b for a, b in zip(fixed, items, strict=True))
    assert ensure_provider_valid(items) is items
    request = ModelRequest(messages=items)
    assert valid_request(request) is request


# --- each repair ------------------------------------------------------------------------------


def test_a_call_without_its_result_gets_a_synthetic_error_result() -> None:
    fixed, repairs = repair_conversation([user(), call("a", "weather"), call("b"), result("b")])
    assert repairs == [Repair(kind="missing_result", index=1, call_id="a")]
    assert fixed[-1] == ToolResult(
        call_id="a", content=(TextPart(text=UNKNOWN_OUTCOME),), is_error=True, name="weather"
    )
    assert "unknown" in UNKNOWN_OUTCOME


def test_a_dangling_call_before_the_next_user_turn_is_answered_in_place() -> None:
    fixed, repairs = repair_conversation([user(), call("a"), user("next")])
    assert kinds(repairs) == ["missing_result"]
    assert [type(i).__name__ for i in fixed] == ["UserMessage", "ToolCall", "ToolResult", "UserMessage"]


def test_a_result_written_late_is_moved_up_to_its_call() -> None:
    late = result("a")
    fixed, repairs = repair_conversation([user(), call("a"), user("meanwhile"), late])
    assert repairs == [Repair(kind="moved_result", index=3, call_id="a")]
    assert fixed == [user(), call("a"), late, user("meanwhile")]


def test_a_result_before_its_call_is_moved_after_it() -> None:
    fixed, repairs = repair_conversation([user(), result("a"), call("a"), AssistantMessage.from_text("x")])
    assert kinds(repairs) == ["moved_result"]
    assert fixed == [user(), call("a"), result("a"), AssistantMessage.from_text("x")]


def test_results_of_two_turns_interleaved_are_regrouped() -> None:
    items: list[Item] = [user(), call("a"), call("b"), result("a"), call("c"), result("b"), result("c")]
    fixed, repairs = repair_conversation(items)
    assert kinds(repairs) == ["moved_result"]
    assert fixed == [user(), call("a"), call("b"), result("a"), result("b"), call("c"), result("c")]


def test_a_second_result_is_dropped_and_a_reused_call_id_renamed() -> None:
    items: list[Item] = [user(), call("a"), result("a"), result("a", "again"), call("a"), result("a", "3")]
    fixed, repairs = repair_conversation(items)
    assert kinds(repairs) == ["duplicate_result", "renamed_call"]
    assert fixed == [user(), call("a"), result("a"), call("a~4"), result("a~4", "3")]  # keyed on its place


def test_a_call_reusing_the_id_of_a_pending_call_is_dropped() -> None:
    items: list[Item] = [user(), call("a"), call("a"), result("a")]
    fixed, repairs = repair_conversation(items)
    assert kinds(repairs) == ["duplicate_call"]
    assert fixed == [user(), call("a"), result("a")]


def test_an_early_duplicate_is_dropped_when_the_call_is_answered_in_place() -> None:
    fixed, repairs = repair_conversation([user(), result("a", "early"), call("a"), result("a", "real")])
    assert repairs == [Repair(kind="duplicate_result", index=1, call_id="a")]
    assert fixed == [user(), call("a"), result("a", "real")]


def test_a_result_whose_call_is_gone_becomes_a_user_note() -> None:
    orphan = ToolResult(
        call_id="gone",
        content=(TextPart(text="42 rows"), ReasoningPart(text="x"), ImagePart(source=UrlSource(url="u"))),
        name="query",
        is_error=True,
    )
    fixed, repairs = repair_conversation([SystemMessage(text="summary"), orphan, user()])
    assert repairs == [Repair(kind="orphan_result", index=1, call_id="gone")]
    note = fixed[1]
    assert isinstance(note, UserMessage)
    assert "'query'" in note.text and "gone" in note.text and "error" in note.text
    assert note.content[1:] == (TextPart(text="42 rows"), ImagePart(source=UrlSource(url="u")))


def test_reasoning_without_its_tool_call_is_dropped() -> None:
    fixed, repairs = repair_conversation(
        [user(), reasoning(), user("again"), reasoning(), call("a"), result("a")]
    )
    assert repairs == [Repair(kind="orphan_reasoning", index=1)]
    assert fixed == [user(), user("again"), reasoning(), call("a"), result("a")]


def test_trailing_reasoning_and_empty_assistant_messages_are_dropped() -> None:
    fixed, repairs = repair_conversation([user(), AssistantMessage(content=()), user(), reasoning()])
    assert kinds(repairs) == ["empty_message", "orphan_reasoning"]
    assert fixed == [user(), user()]


def test_reasoning_stays_with_a_call_whose_result_came_first() -> None:
    fixed, repairs = repair_conversation([user(), reasoning(), result("a"), call("a")])
    assert kinds(repairs) == ["moved_result"]
    assert fixed == [user(), reasoning(), call("a"), result("a")]


def test_tool_use_parts_count_as_calls() -> None:
    message = AssistantMessage(
        content=(ToolUsePart(call_id="a", name="t", args={}), ToolUsePart(call_id="a", name="t", args={}))
    )
    fixed, repairs = repair_conversation([user(), message])
    assert kinds(repairs) == ["duplicate_call", "missing_result"]
    assert fixed[1] == AssistantMessage(content=(ToolUsePart(call_id="a", name="t", args={}),))
    assert isinstance(fixed[2], ToolResult) and fixed[2].call_id == "a"


def test_a_handoff_transcript_cut_mid_pair_is_repaired() -> None:
    # A filter kept the tail of a transcript: the result of the transfer call, not the call.
    transcript: list[Item] = [result("h", '{"assistant": "billing"}', name="transfer_to_billing"), user()]
    fixed, repairs = repair_conversation(transcript)
    assert kinds(repairs) == ["orphan_result"]
    assert is_provider_valid(fixed)


# --- modes -------------------------------------------------------------------------------------


def test_strict_mode_rejects_instead_of_repairing() -> None:
    with pytest.raises(InvalidConversationError) as caught:
        ensure_provider_valid([user(), call("a")], strict=True)
    assert caught.value.repairs == (Repair(kind="missing_result", index=1, call_id="a"),)
    assert "missing_result@1" in str(caught.value)


def test_a_repair_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="helikon.sessions"):
        fixed = ensure_provider_valid([user(), call("a")])
    assert is_provider_valid(fixed)
    assert "missing_result@1 (a)" in caplog.text


def test_a_foreign_item_type_takes_the_careful_path_and_is_kept() -> None:
    class Custom(UserMessage):
        pass

    items: list[Item] = [Custom(content=(TextPart(text="x"),))]
    assert not is_provider_valid(items)
    assert ensure_provider_valid(items) is items


def test_the_driver_repairs_the_request_before_the_model_sees_it() -> None:
    model = MockModel.with_scripts([text_turn("fine")])
    history: list[Item] = [user("weather?"), call("a", "weather")]  # the last run crashed mid-call
    result_ = LlmAgent[None](name="a", model=model).run_sync(AgentInput((user("again"),), tuple(history)))
    assert result_.final_output == "fine"
    sent = list(model.requests[0].messages)
    assert is_provider_valid(sent)
    assert [type(i).__name__ for i in sent] == ["UserMessage", "ToolCall", "ToolResult", "UserMessage"]


# --- properties --------------------------------------------------------------------------------

ids = st.sampled_from(["a", "b", "c", "d"])
items_strategy: st.SearchStrategy[Item] = st.one_of(
    st.just(user()),
    st.just(SystemMessage(text="s")),
    st.just(AssistantMessage.from_text("x")),
    st.just(reasoning()),
    st.just(AssistantMessage(content=())),
    ids.map(call),
    ids.map(result),
    ids.map(
        lambda i: AssistantMessage(
            content=(ReasoningPart(text="r"), ToolUsePart(call_id=i, name="t", args={}))
        )
    ),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(items_strategy, max_size=14))
def test_repair_always_yields_a_valid_conversation_and_is_idempotent(items: list[Item]) -> None:
    fixed, repairs = repair_conversation(items)
    assert is_provider_valid(fixed)
    assert is_provider_valid(items) == (repairs == [])  # the fast check agrees with the careful pass
    again, more = repair_conversation(fixed)
    assert again == fixed and more == []
    # Nothing but tool results and assistant messages is ever dropped or invented.
    assert [i for i in fixed if isinstance(i, SystemMessage)] == [
        i for i in items if isinstance(i, SystemMessage)
    ]
    # Calls keep their order; a reused id comes back renamed (`id~n`), a duplicate of a
    # pending call is dropped, and no id is lost.
    bases = [c.split("~")[0] for c in call_ids(fixed)]
    remaining = iter(call_ids(items))
    assert all(any(b == c for c in remaining) for b in bases)  # a subsequence
    assert set(bases) == set(call_ids(items))
    assert len(set(call_ids(fixed))) == len(call_ids(fixed))  # unique, as Anthropic requires


def call_ids(items: list[Item]) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, ToolCall):
            out.append(item.call_id)
        elif isinstance(item, AssistantMessage):
            out += [p.call_id for p in item.content if isinstance(p, ToolUsePart)]
    return out


def test_a_call_id_reused_in_a_later_turn_is_renamed_with_its_result() -> None:
    from helikon.core.conversation_check import repair_conversation
    from helikon.core.items import ToolCall, ToolResult, UserMessage

    def result(call_id: str, text: str) -> ToolResult:
        return ToolResult(call_id=call_id, content=(TextPart(text=text),), name="w")

    items = [
        UserMessage.from_text("one"),
        ToolCall(call_id="call_1", name="w", args={}),
        result("call_1", "first"),
        UserMessage.from_text("two"),
        ToolCall(call_id="call_1", name="w", args={}),
        result("call_1", "second"),
        UserMessage.from_text("three"),
        ToolCall(call_id="call_1", name="w", args={}),
        result("call_1", "third"),
    ]
    assert not is_provider_valid(items)  # Anthropic and Bedrock refuse reused tool_use ids
    fixed, repairs = repair_conversation(items)
    assert [(r.kind, r.index) for r in repairs] == [("renamed_call", 4), ("renamed_call", 7)]
    ids = [
        (m.call_id, m.text if isinstance(m, ToolResult) else None)
        for m in fixed
        if isinstance(m, ToolCall | ToolResult)
    ]
    assert ids == [
        ("call_1", None),
        ("call_1", "first"),
        ("call_1~4", None),  # keyed on the call's place: an earlier turn's id never changes
        ("call_1~4", "second"),
        ("call_1~7", None),
        ("call_1~7", "third"),
    ]
    assert is_provider_valid(fixed)
    assert repair_conversation(fixed) == (fixed, [])


async def test_a_scripted_model_reusing_ids_across_runs_keeps_working() -> None:
    from helikon import MemorySession, RunContext, tool
    from helikon.runtime import AsyncioRunner
    from helikon.testing import FunctionModel, text_turn, tool_call_turn

    @tool
    def weather() -> str:
        """Weather."""
        return "sunny"

    def script(request: Any) -> Any:
        if request.messages[-1].type == "tool_result":
            return text_turn("Sunny.")
        return tool_call_turn("weather", {}, call_id="call_1")

    agent = LlmAgent(name="a", model=FunctionModel(script), tools=[weather])
    session = MemorySession()
    for _ in range(3):
        result = await AsyncioRunner[None]().run(
            agent, "Weather?", RunContext.ephemeral(None).with_session(session)
        )
        assert result.final_output == "Sunny."


def test_a_growing_conversation_is_checked_from_where_the_last_valid_one_ended() -> None:
    call = ToolCall(call_id="c1", name="t", args={})
    result = ToolResult(call_id="c1", content=(TextPart(text="r"),))
    first = (user("a"), call, result, AssistantMessage.from_text("done"))
    assert is_provider_valid(first)
    # The next turn: the same items, then new ones. A new call reusing an old id is still caught
    # (the prefix's call ids carry over), and so is a new dangling call.
    assert not is_provider_valid([*first, user("b"), ToolCall(call_id="c1", name="t", args={})])
    assert is_provider_valid(first)
    assert not is_provider_valid((*first, user("b"), ToolCall(call_id="c2", name="t", args={})))
    assert is_provider_valid((*first, user("b"), AssistantMessage.from_text("ok")))
    # Equal but not identical items count as the same prefix; a changed one means a full scan.
    copies = (
        user("a"),
        ToolCall(call_id="c1", name="t", args={}),
        ToolResult(call_id="c1", content=(TextPart(text="r"),)),
        AssistantMessage.from_text("done"),
    )
    assert copies == first and all(a is not b for a, b in zip(copies, first, strict=True))
    assert is_provider_valid((*copies, user("c")))
    assert not is_provider_valid((*copies, ToolCall(call_id="c1", name="t", args={})))
    assert not is_provider_valid((user("a"), call, AssistantMessage.from_text("done")))
    assert not is_provider_valid((user("a"), result, *first[3:]))


def test_renaming_a_growing_conversation_turn_by_turn_equals_repairing_it_whole() -> None:
    # A model that numbers its calls per response: call_1 (and call_2) in every turn.
    conversation: list[Item] = []
    for turn in range(12):
        conversation.append(UserMessage.from_text(f"q{turn}"))
        ids = ["call_1", "call_2"] if turn % 3 == 0 else ["call_1"]
        conversation += [ToolCall(call_id=i, name="w", args={}) for i in ids]
        conversation += [
            ToolResult(call_id=i, content=(TextPart(text=f"{i}@{turn}"),)) for i in reversed(ids)
        ]
        conversation.append(AssistantMessage.from_text(f"a{turn}"))
        step_by_step = list(ensure_provider_valid(conversation))  # continues the last one checked
        whole, _ = repair_conversation(conversation)
        assert step_by_step == whole
        assert is_provider_valid(step_by_step)


async def test_a_model_numbering_its_calls_per_turn_costs_each_run_its_new_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Repeated ids once made every model call re-repair the whole history (3-4 ms a run
    # after 200 runs): only the new turn is looked at now, however long the session.
    from helikon import MemorySession, RunContext, tool
    from helikon.core import conversation_check
    from helikon.runtime import AsyncioRunner
    from helikon.testing import MockModel, text_turn, tool_call_turn

    @tool
    def weather() -> str:
        """Weather."""
        return "sunny"

    looked_at: list[int] = []
    full_repairs: list[int] = []
    distinct_ids = conversation_check._distinct_ids  # pyright: ignore[reportPrivateUsage]
    repair = conversation_check.repair_conversation

    def counted_distinct_ids(items: Any, *args: Any) -> Any:
        looked_at.append(len(items))
        return distinct_ids(items, *args)

    def counted_repair(items: Any) -> Any:
        full_repairs.append(len(items))
        return repair(items)

    monkeypatch.setattr(conversation_check, "_distinct_ids", counted_distinct_ids)
    monkeypatch.setattr(conversation_check, "repair_conversation", counted_repair)
    session = MemorySession()
    runner = AsyncioRunner[None]()
    sent: Sequence[Item] = ()
    for _ in range(40):
        model = MockModel.with_scripts([tool_call_turn("weather", {}, call_id="call_0"), text_turn("Sunny.")])
        agent = LlmAgent[None](name="a", model=model, tools=[weather])
        await runner.run(agent, "Weather?", RunContext.ephemeral(None).with_session(session))
        sent = model.requests[-1].messages
    assert full_repairs == []
    assert max(looked_at) <= 4  # the new turn: the call, its result (and the user's message)
    assert is_provider_valid(sent) and len({m.call_id for m in sent if isinstance(m, ToolCall)}) == 40


def test_a_check_remembers_its_own_conversation_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from helikon.core import conversation_check
    from helikon.core.conversation_check import ConversationCheck

    scanned: list[int] = []
    scan = conversation_check._scan  # pyright: ignore[reportPrivateUsage]

    def counted_scan(items: Any, seen: Any) -> Any:
        scanned.append(len(items))
        return scan(items, seen)

    monkeypatch.setattr(conversation_check, "_scan", counted_scan)
    first = [UserMessage.from_text("hi"), AssistantMessage.from_text("hello")]
    longer = [*first, UserMessage.from_text("and now?")]
    check = ConversationCheck()
    assert check.ensure_provider_valid(first) is first
    assert check.ensure_provider_valid(longer) is longer
    assert scanned == [2, 1]  # the continuation: its new item only
    scanned.clear()
    assert ConversationCheck().ensure_provider_valid(longer) is longer
    assert ensure_provider_valid(longer) is longer
    assert scanned == [3, 3]  # another check (and the plain function) starts from nothing


@pytest.mark.parametrize(
    "turns",
    [
        [["c0"], ["c0"], ["c0"]],  # a model numbering its calls per response
        [["a"], ["b"], ["a", "c"]],  # an id of two turns back, beside a fresh one
        [["a", "b"], ["c"], ["d"]],  # nothing reused
        [["x"], ["x", "x"]],  # a new turn repeating its own id
    ],
)
def test_a_continued_check_says_what_a_fresh_one_says(turns: list[list[str]]) -> None:
    from helikon.core.conversation_check import ConversationCheck

    conversation: list[Item] = [UserMessage.from_text("go")]
    check = ConversationCheck()
    for index, ids in enumerate(turns):
        conversation += [ToolCall(call_id=i, name="t", args={}) for i in ids]
        conversation += [ToolResult(call_id=i, name="t", content=(TextPart(text=f"{index}"),)) for i in ids]
        continued = check.ensure_provider_valid(list(conversation))
        fresh = ConversationCheck().ensure_provider_valid(list(conversation))
        assert list(continued) == list(fresh)
        assert is_provider_valid(continued)
