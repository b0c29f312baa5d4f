"""CompactingSession and HeuristicTokenCounter, as the sessions chapter specifies."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from helikon import (
    AssistantMessage,
    AudioPart,
    Base64Source,
    CompactingSession,
    HeuristicTokenCounter,
    ImagePart,
    MemorySession,
    MetadataConflict,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    Transport,
    UrlSource,
    UserError,
    UserMessage,
)
from helikon.core.session import (
    Compacted,
    ConversationSnapshot,
    SequenceId,
    SessionEntry,
    SessionEvent,
    UserMessageEvent,
)
from helikon.core.session.compaction import DEFAULT_COMPACTION_PROMPT
from helikon.testing import MockModel, text_turn


def user(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


# --- the heuristic ---------------------------------------------------------------------------


def test_the_heuristic_counts_exactly_the_listed_parts() -> None:
    counter = HeuristicTokenCounter()
    items = [
        SystemMessage(text="abcd"),  # 4
        UserMessage(
            content=(TextPart(text="é" * 4), ImagePart(source=UrlSource(url="http://x/" + "y" * 99)))
        ),  # 4
        AssistantMessage(
            content=(ReasoningPart(text="r" * 8, signature="sig" * 50), TextPart(text="t"))
        ),  # 9
        ToolCall(call_id="id-ignored", name="ab", args={"k": "ü"}),  # 2 + len('{"k":"ü"}') = 2 + 9
        ToolResult(
            call_id="c",
            content=(TextPart(text="xyz"), AudioPart(source=Base64Source(media_type="a", data="zz"))),
        ),  # 3
        AssistantMessage(content=(ToolUsePart(call_id="u", name="nm", args=[1, 2]),)),  # 2 + 5
    ]
    assert counter.count(items) == -(-(4 + 4 + 9 + 11 + 3 + 7) // 4)
    assert counter.count([]) == 0
    assert counter.count([SystemMessage(text="a")]) == 1


# --- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0, -5, True, 2.5])
def test_a_threshold_must_be_a_positive_integer(threshold: Any) -> None:
    with pytest.raises(UserError, match="threshold"):
        CompactingSession(MemorySession(), MockModel(), threshold=threshold)


def test_the_wrapped_session_and_model_are_checked() -> None:
    with pytest.raises(UserError, match="expected a Session"):
        CompactingSession("nope", MockModel(), threshold=10)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="expected a Model"):
        CompactingSession(MemorySession(), "gpt", threshold=10)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="prompt"):
        CompactingSession(MemorySession(), MockModel(), threshold=10, prompt="  ")


# --- behaviour ---------------------------------------------------------------------------------


async def test_past_the_threshold_the_history_becomes_a_running_summary() -> None:
    inner = MemorySession()
    model = MockModel.with_scripts([text_turn("SUM1"), text_turn("SUM2")])
    session = CompactingSession(inner, model, threshold=20)
    await session.append([user("short")])
    assert len(model.requests) == 0
    await session.append([user("x" * 100)])
    assert session.compactions == 1
    request = model.requests[0]
    assert list(request.messages) == [
        UserMessage.from_text("short"),
        UserMessage.from_text("x" * 100),
        UserMessage.from_text(DEFAULT_COMPACTION_PROMPT),
    ]
    log = [e.event for e in await inner.events()]
    assert isinstance(log[-1], Compacted)
    assert (log[-1].summary, log[-1].original_count) == ("SUM1", 2)
    assert (await session.snapshot()).messages == (SystemMessage(text="SUM1"),)
    await session.append([user("y" * 100)])  # the next compaction folds the first summary in
    assert model.requests[1].messages[0] == SystemMessage(text="SUM1")
    assert (await session.snapshot()).messages == (SystemMessage(text="SUM2"),)


async def test_a_resumed_backlog_compacts_on_the_first_append() -> None:
    inner = MemorySession([user("z" * 200)])
    model = MockModel.with_scripts([text_turn("BACKLOG")])
    session = CompactingSession(inner, model, threshold=10)
    await session.append([user("hi")])
    assert session.compactions == 1
    assert [e.event.type for e in await inner.events()] == ["user_message", "user_message", "compacted"]


async def test_below_the_threshold_nothing_is_read_again_until_the_estimate_grows() -> None:
    reads = 0

    class Counting(MemorySession):
        async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
            nonlocal reads
            reads += 1
            return await super().events(since)

    session = CompactingSession(Counting(), MockModel(), threshold=1000)
    await session.append([user("a")])  # the first append always counts for real
    for _ in range(10):
        await session.append([user("b" * 10)])
    assert reads == 1


async def test_a_blank_summary_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    session = CompactingSession(MemorySession(), MockModel.with_scripts([text_turn("   \n")]), threshold=5)
    with caplog.at_level(logging.WARNING, logger="helikon.sessions"):
        await session.append([user("x" * 100)])
    assert session.compactions == 0
    assert "blank summary" in caplog.text


async def test_a_failing_model_is_logged_and_swallowed_and_the_events_are_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    inner = MemorySession()
    session = CompactingSession(inner, MockModel.with_scripts([[Transport("reset")]]), threshold=5)
    with caplog.at_level(logging.WARNING, logger="helikon.sessions"):
        await session.append([user("x" * 100)])
    assert len(inner) == 1
    assert "summarization call failed" in caplog.text


class BrokenInner(MemorySession):
    def __init__(self, *, fail_read: bool = False, fail_marker: bool = False) -> None:
        super().__init__()
        self.fail_read = fail_read
        self.fail_marker = fail_marker

    async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
        if self.fail_marker and any(isinstance(e, Compacted) for e in events):
            raise ConnectionError("write failed")
        await super().append(events, **kwargs)

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        if self.fail_read:
            raise ConnectionError("read failed")
        return await super().events(since)

    async def snapshot(self) -> ConversationSnapshot:
        return await super().snapshot()


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"fail_read": True}, "read failed"), ({"fail_marker": True}, "write failed")]
)
async def test_inner_failures_propagate_after_the_user_events_are_persisted(
    kwargs: dict[str, bool], message: str
) -> None:
    inner = BrokenInner(**kwargs)
    session = CompactingSession(inner, MockModel.with_scripts([text_turn("S")]), threshold=5)
    with pytest.raises(ConnectionError, match=message):
        await session.append([user("x" * 100)])
    assert len(inner) == 1  # the user's event was written first


async def test_the_convergence_guards_stop_recompaction() -> None:
    # A summary longer than the threshold: the lone running summary is never re-compacted.
    model = MockModel.with_scripts([text_turn("S" * 400)])
    session = CompactingSession(MemorySession(), model, threshold=10)
    await session.append([user("x" * 100)])
    await session.append([])  # nothing new, still over the threshold: no second call
    assert session.compactions == 1
    assert len(model.requests) == 1
    # An empty conversation (only audit events) is never sent for summary.
    from helikon.core.session import HandoffOccurred

    quiet = CompactingSession(MemorySession(), MockModel(), threshold=1)
    await quiet.append([HandoffOccurred(from_agent="a" * 50, to_agent="b")])
    assert quiet.compactions == 0


async def test_custom_counter_settings_and_prompt_are_used() -> None:
    from helikon import ModelSettings

    class Fixed:
        def count(self, items: Sequence[Any]) -> int:
            return 1000 if len(items) > 1 else 1

    model = MockModel.with_scripts([text_turn("S")])
    session = CompactingSession(
        MemorySession(),
        model,
        threshold=10,
        token_counter=Fixed(),
        model_settings=ModelSettings(temperature=0.0),
        prompt="Sum up.",
    )
    await session.append([user("a"), user("b")])
    assert model.requests[0].model_settings.temperature == 0.0
    assert model.requests[0].messages[-1] == UserMessage.from_text("Sum up.")


# --- keep-recent-window compaction -------------------------------------------------------------

from helikon.core.conversation_check import is_provider_valid  # noqa: E402
from helikon.core.session import (  # noqa: E402
    AssistantMessageEvent,
    ToolCalled,
    ToolReturned,
    project,
)
from helikon.core.session.codec import decode_event, encode_event  # noqa: E402


def said(text: str) -> AssistantMessageEvent:
    return AssistantMessageEvent(content=(TextPart(text=text),))


def thought() -> AssistantMessageEvent:
    return AssistantMessageEvent(content=(ReasoningPart(text="hmm", signature="s"),))


def called(call_id: str) -> ToolCalled:
    return ToolCalled(call_id=call_id, name="lookup", args={})


def returned(call_id: str, text: str = "ok") -> ToolReturned:
    return ToolReturned(call_id=call_id, content=(TextPart(text=text),), name="lookup")


async def markers(session: CompactingSession) -> list[Compacted]:
    return [e.event for e in await session.events() if isinstance(e.event, Compacted)]


@pytest.mark.parametrize("keep", [0, -1, 100, 150, True, 2.5])
def test_the_window_must_fit_below_the_threshold(keep: Any) -> None:
    with pytest.raises(UserError, match="keep_recent_tokens"):
        CompactingSession(MemorySession(), MockModel(), threshold=100, keep_recent_tokens=keep)
    with pytest.raises(UserError, match="summary_role"):
        CompactingSession(MemorySession(), MockModel(), threshold=100, summary_role="bot")  # type: ignore[arg-type]


async def test_the_window_keeps_the_recent_turns_verbatim_after_the_summary() -> None:
    inner = MemorySession()
    model = MockModel.with_scripts([text_turn("OLD")])
    session = CompactingSession(inner, model, threshold=50, keep_recent_tokens=21)
    await session.append([user("a" * 80), said("b" * 40)])  # 30 tokens: nothing yet
    await session.append([user("c" * 40), said("d" * 20)])  # 45 tokens
    await session.append([user("e" * 24)])  # 51 > 50: compact, keep <= 21 tokens of whole turns
    [marker] = await markers(session)
    assert (marker.first_kept_seq, marker.tokens_before, marker.original_count) == (2, 51, 5)
    assert marker.summary_role == "system"
    assert list(model.requests[0].messages[:-1]) == [
        UserMessage.from_text("a" * 80),
        AssistantMessage.from_text("b" * 40),
    ]
    assert (await session.snapshot()).messages == (
        SystemMessage(text="OLD"),
        UserMessage.from_text("c" * 40),
        AssistantMessage.from_text("d" * 20),
        UserMessage.from_text("e" * 24),
    )
    assert len(inner) == 6  # history is never deleted: the marker only changes the projection
    # Stored and read back, the marker projects the same.
    log = [decode_event(encode_event(e.event)) for e in await inner.events()]
    assert project(log) == await session.snapshot()
    await session.append([])  # below the threshold now: idempotent, no second compaction
    assert session.compactions == 1 and len(model.requests) == 1


async def test_a_tool_call_is_never_split_from_its_result_nor_reasoning_from_its_calls() -> None:
    model = MockModel.with_scripts([text_turn("S")])
    session = CompactingSession(MemorySession(), model, threshold=40, keep_recent_tokens=30)
    # The only user turn is far back: behind a system summary the window can only start there.
    await session.append(
        [
            user("go"),
            thought(),
            called("a"),
            returned("a", "x" * 100),
            thought(),
            called("b"),
            returned("b", "y" * 100),
        ]
    )
    [marker] = await markers(session)
    assert marker.first_kept_seq == 7  # nothing fits: everything summarized, pairs intact
    assert (await session.snapshot()).messages == (SystemMessage(text="S"),)


async def test_behind_a_user_summary_the_window_may_start_at_a_model_turn() -> None:
    model = MockModel.with_scripts([text_turn("S")])
    session = CompactingSession(
        MemorySession(), model, threshold=60, keep_recent_tokens=30, summary_role="user"
    )
    await session.append(
        [
            user("go"),
            thought(),
            called("a"),
            returned("a", "x" * 160),
            thought(),
            called("b"),
            returned("b", "y" * 60),
        ]
    )
    [marker] = await markers(session)
    assert marker.first_kept_seq == 4  # the second turn's reasoning, not its call
    messages = (await session.snapshot()).messages
    assert messages[0] == UserMessage.from_text("Summary of the conversation so far:\n\nS")
    assert [type(m).__name__ for m in messages[1:]] == ["AssistantMessage", "ToolCall", "ToolResult"]
    assert is_provider_valid(messages)
    # The summarized prefix ends with a whole pair.
    assert isinstance(model.requests[0].messages[-2], ToolResult)


async def test_a_second_compaction_carries_the_previous_window_forward() -> None:
    model = MockModel.with_scripts([text_turn("S1"), text_turn("S2")])
    session = CompactingSession(MemorySession(), model, threshold=40, keep_recent_tokens=25)
    await session.append([user("a" * 60), user("b" * 40), user("c" * 40)])  # 35: nothing yet
    await session.append([user("d" * 40)])  # 45: keep c, d (20 tokens)
    assert (await markers(session))[0].first_kept_seq == 2
    await session.append([user("e" * 80)])  # 41: keep e (20); c and d leave the window
    second = (await markers(session))[1]
    assert second.first_kept_seq == 5
    sent = list(model.requests[1].messages[:-1])
    # Everything the model saw before the new cut goes into the new summary.
    assert sent == [
        SystemMessage(text="S1"),
        UserMessage.from_text("c" * 40),
        UserMessage.from_text("d" * 40),
    ]
    assert (await session.snapshot()).messages == (SystemMessage(text="S2"), UserMessage.from_text("e" * 80))


async def test_compact_forces_a_compaction_and_extra_append_arguments_are_forwarded() -> None:
    seen: list[dict[str, Any]] = []

    class Recording(MemorySession):
        async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
            seen.append(kwargs)
            await super().append(events)

    session = CompactingSession(
        Recording(), MockModel.with_scripts([text_turn("S")]), threshold=1000, keep_recent_tokens=5
    )
    await session.append([user("old " * 10), user("new")], expected_seq=None)
    assert seen == [{"expected_seq": None}]
    marker = await session.compact()
    assert marker is not None and marker.first_kept_seq == 1
    assert (await session.snapshot()).messages == (SystemMessage(text="S"), UserMessage.from_text("new"))
    assert (
        await CompactingSession(MemorySession(), MockModel(), threshold=5, keep_recent_tokens=2).compact()
        is None
    )


async def test_a_marker_is_not_written_over_a_log_that_moved_meanwhile() -> None:
    from helikon.core.model import ModelRequest

    inner = MemorySession()

    class Interrupting:
        """A summarizer during whose call another writer appends to the log."""

        provider = "mock"
        model_name = "interrupting"

        def capabilities(self) -> Any:
            return MockModel.with_scripts([]).capabilities()

        async def invoke(self, request: ModelRequest, cancel: Any) -> Any:
            await inner.append([user("from another writer")])
            async for event in MockModel.with_scripts([text_turn("summary")]).invoke(request, cancel):
                yield event

    session = CompactingSession(inner, Interrupting(), threshold=10)  # type: ignore[arg-type]
    await session.append([user("x " * 100)])
    assert [e.type for _, e in await inner.events()] == ["user_message", "user_message"]  # no marker
    assert session.compactions == 0
    # Once the log holds still, the next append compacts as usual.
    quiet = CompactingSession(inner, MockModel.with_scripts([text_turn("summary")]), threshold=10)
    await quiet.append([user("y " * 100)])
    assert [e.type for _, e in await inner.events()][-1] == "compacted"


async def test_no_compaction_while_a_call_of_the_last_turn_waits_for_its_result() -> None:
    # A durable run logs its calls before they run: compacting then would strand the result.
    from helikon.core.conversation_check import is_provider_valid
    from helikon.core.session import ToolCalled, ToolReturned, UserMessageEvent

    inner = MemorySession()
    session = CompactingSession(inner, MockModel.with_scripts([text_turn("S")] * 3), threshold=10)
    await session.append([UserMessageEvent(content=(TextPart(text="x" * 200),))])
    await session.append([ToolCalled(call_id="c1", name="t", args={})])  # over the threshold, in flight
    assert session.compactions == 1  # the first append compacted; the call's did not
    await session.append([ToolReturned(call_id="c1", content=(TextPart(text="r" * 80),), name="t")])
    assert session.compactions == 2  # once the pair is whole
    assert is_provider_valid(list((await inner.snapshot()).messages))


# --- metadata ------------------------------------------------------------------------------------


async def test_metadata_reads_and_compare_and_sets_the_inner_sessions() -> None:
    inner = MemorySession()
    session = CompactingSession(inner, MockModel.with_scripts([]), threshold=1000)
    await session.set_metadata(title="Trip", metadata={"user": "u-42"})
    read = await session.metadata()
    assert (read.title, read.metadata) == ("Trip", {"user": "u-42"})
    assert await inner.metadata() == read
    with pytest.raises(MetadataConflict):
        await session.set_metadata(metadata={"user": "u-43"}, expected_version=read.version - 1)
    assert (await inner.metadata()).metadata == {"user": "u-42"}  # nothing written


async def test_metadata_of_a_session_that_keeps_none_says_so() -> None:
    class Bare:
        durable = False
        supports_ids = False

        def __init__(self) -> None:
            self.inner = MemorySession()

        async def append(self, events: Sequence[Any], **kwargs: Any) -> None:
            await self.inner.append(events)

        async def events(self, since: Any = None) -> list[Any]:
            return await self.inner.events(since)

        async def snapshot(self) -> Any:
            return await self.inner.snapshot()

    session = CompactingSession(Bare(), MockModel.with_scripts([]), threshold=1000)
    with pytest.raises(UserError, match="Bare keeps no metadata"):
        await session.metadata()
    with pytest.raises(UserError, match="Bare keeps no metadata"):
        await session.set_metadata(title="x")
