"""Every projection of a session, after the validator, is provider-valid: whatever was appended,
compacted (both modes, both summary roles), rewound, forked or lost in a crash. Also runs the
window-compaction conformance check on MemorySession.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from helikon import MemorySession, ModelRequest
from helikon.core.conversation_check import ensure_provider_valid, is_provider_valid
from helikon.core.items import (
    AssistantMessage,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
)
from helikon.core.session import (
    AssistantMessageEvent,
    HandoffOccurred,
    Rewound,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnOpened,
    UserMessageEvent,
    project,
)
from helikon.core.session.branches import cut_problem
from helikon.core.session.compaction import CompactingSession
from helikon.core.session.crash_repair import close_interrupted_turn
from helikon.testing import FunctionModel, text_turn
from helikon.testing._compaction_checks import check_window_compaction_keeps_recent_turns_and_pairs
from helikon.testing._scripts import Script
from helikon.testing.session_conformance import ConformanceBackend


async def test_window_compaction_conforms_on_memory() -> None:
    store: dict[str, MemorySession] = {}

    async def open_(session_id: str) -> MemorySession:
        return store.setdefault(session_id, MemorySession())

    await check_window_compaction_keeps_recent_turns_and_pairs(ConformanceBackend(name="memory", open=open_))


# --- the random walk ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UserTurn:
    size: int


@dataclass(frozen=True)
class ToolTurn:
    calls: int
    reasoning: bool
    size: int
    crash_after: int | None  # results written before the "crash" (None: all of them)


@dataclass(frozen=True)
class Handoff:
    cut: bool  # the transcript stops between the transfer call and its result


@dataclass(frozen=True)
class Compact:
    mode: int  # index into the wrappers


@dataclass(frozen=True)
class Rewind:
    back: int  # how many valid cut points back from the head


@dataclass(frozen=True)
class Fork:
    back: int  # as for Rewind; the walk goes on in the fork


@dataclass(frozen=True)
class CrashedRun:
    calls: int
    started: bool  # the crash came after the ToolsStarted marker


Action = UserTurn | ToolTurn | Handoff | Compact | Rewind | Fork | CrashedRun

actions = st.lists(
    st.one_of(
        st.builds(UserTurn, size=st.integers(1, 120)),
        st.builds(
            ToolTurn,
            calls=st.integers(1, 3),
            reasoning=st.booleans(),
            size=st.integers(1, 200),
            crash_after=st.none() | st.integers(0, 2),
        ),
        st.builds(Handoff, cut=st.booleans()),
        st.builds(Compact, mode=st.integers(0, 3)),
        st.builds(Rewind, back=st.integers(0, 8)),
        st.builds(Fork, back=st.integers(0, 8)),
        st.builds(CrashedRun, calls=st.integers(0, 2), started=st.booleans()),
    ),
    max_size=25,
)


def summarizer(request: ModelRequest) -> Script:
    # The summarizing call is itself a model call: what it is sent must be provider-valid too.
    assert is_provider_valid(list(request.messages)[:-1])
    return text_turn(f"summary of {len(request.messages) - 1} items")


def wrappers(inner: MemorySession) -> list[CompactingSession]:
    model = FunctionModel(summarizer)
    return [
        CompactingSession(inner, model, threshold=150),  # the book's full history
        CompactingSession(inner, model, threshold=150, summary_role="user"),
        CompactingSession(inner, model, threshold=150, keep_recent_tokens=60),
        CompactingSession(inner, model, threshold=150, keep_recent_tokens=60, summary_role="user"),
    ]


def events_of(action: Action, n: int) -> list[SessionEvent]:
    if isinstance(action, UserTurn):
        return [UserMessageEvent(content=(TextPart(text="u" * action.size),))]
    if isinstance(action, ToolTurn):
        out: list[SessionEvent] = []
        if action.reasoning:
            out.append(AssistantMessageEvent(content=(ReasoningPart(text="r", signature="s"),)))
        ids = [f"c{n}-{i}" for i in range(action.calls)]
        out += [ToolCalled(call_id=i, name="t", args={}) for i in ids]
        answered = ids if action.crash_after is None else ids[: action.crash_after]
        out += [
            ToolReturned(call_id=i, content=(TextPart(text="x" * action.size),), name="t") for i in answered
        ]
        if action.crash_after is None:
            out.append(AssistantMessageEvent(content=(TextPart(text="done"),)))
        return out
    if isinstance(action, CrashedRun):  # a durable run killed mid-turn
        ids = [f"k{n}-{i}" for i in range(action.calls)]
        out = [TurnOpened(run_id=f"run{n}"), UserMessageEvent(content=(TextPart(text="go"),))]
        out += [ToolCalled(call_id=i, name="t", args={}) for i in ids]
        if action.started and ids:
            out.append(ToolsStarted(call_ids=tuple(ids)))
        return out
    if isinstance(action, Handoff):
        call = ToolCalled(call_id=f"h{n}", name="transfer_to_b", args={})
        result = ToolReturned(
            call_id=f"h{n}", content=(TextPart(text='{"assistant": "b"}'),), name="transfer_to_b"
        )
        moved = HandoffOccurred(from_agent="a", to_agent="b")
        reply = AssistantMessageEvent(content=(TextPart(text="b here"),), agent="b")
        return [call, moved, reply] if action.cut else [call, result, moved, reply]
    return []


def assert_provider_valid(items: list[Item], *, system_first: bool) -> None:
    """The properties providers enforce, checked directly (not through `is_provider_valid`)."""
    calls: dict[str, int] = {}
    results: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if isinstance(item, ToolCall):
            assert item.call_id not in calls
            calls[item.call_id] = index
        elif isinstance(item, ToolResult):
            results.setdefault(item.call_id, []).append(index)
        elif isinstance(item, AssistantMessage) and all(isinstance(p, ReasoningPart) for p in item.content):
            # Reasoning travels with the tool call right after it.
            assert index + 1 < len(items) and isinstance(items[index + 1], ToolCall)
        assert not (
            isinstance(item, AssistantMessage) and any(isinstance(p, ToolUsePart) for p in item.content)
        )
    for call_id, at in calls.items():
        assert len(results.get(call_id, [])) == 1, call_id  # exactly one result...
        (after,) = results[call_id]
        assert after > at  # ... after its call ...
        between = items[at + 1 : after]  # ... with only the turn's calls and results between
        assert all(isinstance(m, ToolCall | ToolResult) for m in between)
    assert set(results) <= set(calls)  # no orphan result
    if system_first:
        systems = [i for i, m in enumerate(items) if isinstance(m, SystemMessage)]
        assert systems == list(range(len(systems)))


async def valid_cut(session: MemorySession, back: int) -> int | None:
    """The seq of the `back`-th valid cut point before the end (None: the log has none)."""
    events = [entry.event for entry in await session.events()]
    cuts = [
        seq
        for seq in range(len(events))
        if not isinstance(events[seq], Rewound) and cut_problem(events, seq) is None
    ]
    return cuts[-1 - back % len(cuts)] if cuts else None


MARKERS = ("compacted", "rewound", "forked", "turn_opened", "turn_closed", "tools_started")


@settings(max_examples=150, deadline=None)
@given(actions)
async def test_every_projection_is_provider_valid_after_the_validator(walk: list[Action]) -> None:
    inner = MemorySession()
    sessions = wrappers(inner)
    broken = False  # a crash or a cut handoff: only then may the raw projection need repair
    expected = 0  # events appended to `inner` (or copied into it), markers aside
    for n, action in enumerate(walk):
        if isinstance(action, Compact):
            await sessions[action.mode].compact()
        elif isinstance(action, Rewind | Fork):
            seq = await valid_cut(inner, action.back)
            if seq is None:
                continue
            if isinstance(action, Rewind):
                await inner.rewind(seq)
            else:
                copied = [e.event for e in (await inner.events())[: seq + 1]]
                inner = await inner.fork(seq)
                sessions = wrappers(inner)
                expected = sum(1 for e in copied if e.type not in MARKERS)
        else:
            batch = events_of(action, n)
            await sessions[n % 4].append(batch)  # any wrapper may compact on its way
            expected += sum(1 for e in batch if e.type not in MARKERS)
            if isinstance(action, CrashedRun):  # the next run on the session repairs it first
                repairs = await close_interrupted_turn(inner)
                assert sum(isinstance(e, ToolReturned) for e in repairs) == action.calls
                expected += len(repairs) - 1  # the results; the TurnClosed is a marker
            broken = broken or (isinstance(action, ToolTurn) and action.crash_after is not None)
            broken = broken or (isinstance(action, Handoff) and action.cut)
        messages = list((await inner.snapshot()).messages)
        log = [entry.event for entry in await inner.events()]
        # The running projection (rewinds undone in place or refolded) is the log's projection.
        assert messages == list(project(log).messages)
        if not broken:
            # Compaction and cuts at valid points never split a pair nor strand reasoning.
            assert is_provider_valid(messages), messages
        repaired = list(ensure_provider_valid(messages))
        assert_provider_valid(repaired, system_first=True)
        assert ensure_provider_valid(repaired) is repaired
    # History is never deleted: every appended event is still in the log.
    log = await inner.events()
    assert sum(1 for e in log if e.event.type not in MARKERS) == expected
