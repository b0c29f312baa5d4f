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
from helikon.core.compaction import DEFAULT_COMPACTION_PROMPT
from helikon.core.session import (
    Compacted,
    ConversationSnapshot,
    SequenceId,
    SessionEntry,
    SessionEvent,
    UserMessageEvent,
)
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

    async def append(self, events: Sequence[SessionEvent]) -> None:
        if self.fail_marker and any(isinstance(e, Compacted) for e in events):
            raise ConnectionError("write failed")
        await super().append(events)

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
