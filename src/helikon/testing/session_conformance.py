"""The session conformance suite: the checks every `Session` backend must pass.

Run it from your own pytest against your own backend (`open_my_session` being yours):

```text
import pytest

from helikon.testing import session_conformance as conformance

BACKEND = conformance.ConformanceBackend(
    name="mine", open=open_my_session, opener="myapp.sessions:open_session"
)


@pytest.mark.parametrize("check", conformance.checks_for(BACKEND), ids=lambda c: c.__name__)
async def test_my_backend_conforms(check: conformance.Check) -> None:
    await check(BACKEND)
```

`open(session_id)` opens (creating if needed) a session in the store under test, in this
process. `list_sessions(limit=..., offset=...)`, when the store can list its sessions,
enables the listing check (a session there is expected to have `set_metadata`). `opener`
names an async function `module:function` that another process calls as
`await function(session_id, **opener_kwargs)` to open the same store: with it the suite
also checks writers in separate processes, resuming a run from another process, and
(with `crash_safe=True`) that a writer killed mid-append leaves all of the append or none.
Sessions with an `aclose()` method are closed after use.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from helikon.core.compaction import CompactingSession
from helikon.core.exceptions import SessionConflict, UnreadableSessionEvent, UserError
from helikon.core.items import SystemMessage, TextPart
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    SequenceId,
    Session,
    SessionEvent,
    SessionInfo,
    SessionRecord,
    ToolCalled,
    ToolReturned,
    UnknownEvent,
    UserMessageEvent,
    project,
)

from ._branch_checks import (
    BRANCH_CHECKS,
    check_a_rewind_behind_a_compaction_and_a_checkpoint,
    check_branches_are_listed_and_switched,
    check_cuts_inside_a_turn_are_refused,
    check_fork_is_isolated,
    check_rewind_survives_reopening,
)
from ._checkpoint_checks import (
    DamageCheckpoint,
    check_a_damaged_checkpoint_is_rebuilt,
    check_checkpoint_plus_tail_is_the_projection,
)
from ._compaction_checks import check_window_compaction_keeps_recent_turns_and_pairs
from ._mock_model import MockModel
from ._scripts import text_turn


@dataclass
class ConformanceBackend:
    """The store under test. See the module docstring."""

    name: str
    open: Callable[[str], Awaitable[Session]]
    opener: str | None = None
    opener_kwargs: dict[str, Any] = field(default_factory=lambda: {})
    crash_safe: bool = False
    processes: int = 4
    """How many writer processes the multi-process checks start."""
    list_sessions: Callable[..., Awaitable[list[SessionInfo]]] | None = None
    """The store's `list_sessions(limit=..., offset=...)`, if it can list its sessions."""
    damage_checkpoint: DamageCheckpoint | None = None
    """Spoils a session's stored projection checkpoint (see `DamageCheckpoint`), if the store keeps one."""
    branching: bool = True
    """Whether its sessions have `rewind`, `branches` and `fork` (`helikon.core.branches.Branching`)."""


Check = Callable[[ConformanceBackend], Awaitable[None]]


def _check(condition: object, message: str) -> None:
    """Fail the check (explicitly, so the suite also works under `python -O`)."""
    if not condition:
        raise AssertionError(message)


async def _close(session: Session) -> None:
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()


def _new_id(tag: str) -> str:
    return f"conformance-{tag}-{uuid.uuid4().hex[:12]}"


def _user(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


def _texts(events: Sequence[SessionEvent]) -> list[str]:
    return [
        "".join(p.text for p in event.content if isinstance(p, TextPart))
        for event in events
        if isinstance(event, UserMessageEvent | AssistantMessageEvent)
    ]


async def _log(backend: ConformanceBackend, session_id: str) -> tuple[list[int], list[SessionEvent]]:
    session = await backend.open(session_id)
    try:
        entries = await session.events()
    finally:
        await _close(session)
    return [int(e.seq) for e in entries], [e.event for e in entries]


def _assert_contiguous(seqs: list[int], expected: int | None = None) -> None:
    _check(
        seqs == list(range(len(seqs))), f"sequences are not 0..n-1 without gaps or duplicates: {seqs[:50]}"
    )
    if expected is not None:
        _check(len(seqs) == expected, f"expected {expected} events, found {len(seqs)}")


# --- in-process checks ---------------------------------------------------------------------------


async def check_append_order_and_contiguous_sequences(backend: ConformanceBackend) -> None:
    """Appends keep their order; sequences run 0, 1, 2... across appends; empty appends do nothing."""
    sid = _new_id("order")
    session = await backend.open(sid)
    try:
        first = [_user("one")]
        second = [
            ToolCalled(call_id="c1", name="lookup", args={"q": "ü", "n": [1, 2.5, None, True]}),
            ToolReturned(call_id="c1", content=(TextPart(text='{"ok":true}'),), name="lookup"),
            AssistantMessageEvent(content=(TextPart(text="two"),), agent="a"),
        ]
        await session.append(first)
        await session.append([])
        await session.append(second)
        entries = await session.events()
    finally:
        await _close(session)
    _assert_contiguous([int(e.seq) for e in entries], 4)
    _check([e.event for e in entries] == [*first, *second], "events did not come back equal, in order")


async def check_events_since_is_exclusive(backend: ConformanceBackend) -> None:
    """`events(since=n)` returns the events after n only."""
    sid = _new_id("since")
    session = await backend.open(sid)
    try:
        await session.append([_user(str(i)) for i in range(5)])
        after_one = await session.events(SequenceId(1))
        after_last = await session.events(SequenceId(4))
        beyond = await session.events(SequenceId(99))
    finally:
        await _close(session)
    _check([int(e.seq) for e in after_one] == [2, 3, 4], "since is exclusive")
    _check(
        _texts([e.event for e in after_one]) == ["2", "3", "4"],
        '_texts([e.event for e in after_one]) == ["2", "3", "4"]',
    )
    _check(after_last == [], "nothing follows the last event")
    _check(beyond == [], "since beyond the end returns nothing")


async def check_events_since_on_a_new_object(backend: ConformanceBackend) -> None:
    """A fresh session object answers `events(since)` right, then reads and projects the whole log."""
    sid = _new_id("since-new")
    writer = await backend.open(sid)
    try:
        await writer.append([_user(str(i)) for i in range(6)])
    finally:
        await _close(writer)
    for since in (-1, 0, 3, 5, 9):
        fresh = await backend.open(sid)
        try:
            got = [(int(e.seq), e.event) for e in await fresh.events(SequenceId(since))]
            whole = await fresh.events()
            snapshot = await fresh.snapshot()
        finally:
            await _close(fresh)
        _check(
            _texts([event for _, event in got]) == [str(i) for i in range(since + 1, 6)],
            f"events({since}) on a new object",
        )
        _check([int(e.seq) for e in whole] == list(range(6)), "the whole log after a since read")
        _check(len(snapshot.messages) == 6, "the snapshot after a since read")


async def check_sessions_are_isolated(backend: ConformanceBackend) -> None:
    """Two session ids in one store never see each other's events."""
    a, b = _new_id("iso-a"), _new_id("iso-b")
    sa, sb = await backend.open(a), await backend.open(b)
    try:
        await sa.append([_user("for a")])
        await sb.append([_user("for b 1"), _user("for b 2")])
        await sa.append([_user("for a again")])
        ea, eb = await sa.events(), await sb.events()
    finally:
        await _close(sa)
        await _close(sb)
    _check(
        _texts([e.event for e in ea]) == ["for a", "for a again"],
        '_texts([e.event for e in ea]) == ["for a", "for a again"]',
    )
    _check(
        _texts([e.event for e in eb]) == ["for b 1", "for b 2"],
        '_texts([e.event for e in eb]) == ["for b 1", "for b 2"]',
    )
    _assert_contiguous([int(e.seq) for e in ea])
    _assert_contiguous([int(e.seq) for e in eb])


async def check_snapshot_is_the_projection_of_the_log(backend: ConformanceBackend) -> None:
    """`snapshot()` equals `project(events())`, compaction markers included."""
    sid = _new_id("snapshot")
    session = await backend.open(sid)
    try:
        await session.append([_user("old"), AssistantMessageEvent(content=(TextPart(text="older"),))])
        await session.append([Compacted(summary="they said old things", original_count=2), _user("new")])
        snapshot = await session.snapshot()
        log = [e.event for e in await session.events()]
    finally:
        await _close(session)
    _check(snapshot == project(log), "snapshot == project(log)")
    _check(
        snapshot.messages[0] == SystemMessage(text="they said old things"),
        'snapshot.messages[0] == SystemMessage(text="they said old things")',
    )
    _check(len(snapshot.messages) == 2, "len(snapshot.messages) == 2")


async def check_a_reader_sees_what_others_append(backend: ConformanceBackend) -> None:
    """A session object that has read the log sees, on its next read, what another object appended."""
    sid = _new_id("fresh")
    reader, writer = await backend.open(sid), await backend.open(sid)
    try:
        await reader.append([_user("1"), _user("2")])
        _check(_texts([e.event for e in await reader.events()]) == ["1", "2"], "the reader's own appends")
        await reader.snapshot()
        await writer.append([_user("3")])
        await writer.append([Compacted(summary="S", original_count=3), _user("4")])
        events = [e.event for e in await reader.events()]
        snapshot = await reader.snapshot()
        tail = await reader.events(SequenceId(3))
    finally:
        await _close(reader)
        await _close(writer)
    _check(
        _texts(events) == ["1", "2", "3", "4"], f"the reader missed another writer's events: {_texts(events)}"
    )
    _check(snapshot == project(events), "the reader's snapshot is not the projection of the log")
    _check(snapshot.messages[0] == SystemMessage(text="S"), "the reader did not see the compaction")
    _check([int(e.seq) for e in tail] == [4], "since is exclusive after a refresh")


async def check_concurrent_writers_in_one_process(backend: ConformanceBackend) -> None:
    """16 tasks, each with its own session object, append 10 events each: no gap, no duplicate."""
    sid = _new_id("tasks")
    writers, per_writer = 16, 10

    async def writer(index: int) -> None:
        session = await backend.open(sid)
        try:
            for n in range(per_writer):
                await session.append([_user(f"w{index}:{n}")])
        finally:
            await _close(session)

    await asyncio.gather(*(writer(i) for i in range(writers)))
    seqs, events = await _log(backend, sid)
    _assert_contiguous(seqs, writers * per_writer)
    texts = _texts(events)
    for index in range(writers):
        mine = [t for t in texts if t.startswith(f"w{index}:")]
        _check(
            mine == [f"w{index}:{n}" for n in range(per_writer)],
            (f"writer {index}'s order was not kept: {mine}"),
        )


async def check_a_failed_append_writes_nothing(backend: ConformanceBackend) -> None:
    """An append that fails (here: an event that cannot be stored) leaves the log as it was."""
    sid = _new_id("failed")
    session = await backend.open(sid)
    try:
        await session.append([_user("before")])
        not_json: Any = {1, 2}  # a set cannot be written as JSON
        poison = UnknownEvent(type="poison", data={"type": "poison", "value": not_json})
        try:
            await session.append([_user("half"), poison])
        except Exception:
            stored = [e.event for e in await session.events()]
            _check(_texts(stored) == ["before"], "a failed append must not write part of its events")
        else:  # a backend that keeps objects as they are (in memory) may accept it
            stored = [e.event for e in await session.events()]
            _check(_texts(stored) == ["before", "half"], '_texts(stored) == ["before", "half"]')
        await session.append([_user("after")])
        entries = await session.events()
    finally:
        await _close(session)
    _assert_contiguous([int(e.seq) for e in entries])
    _check(_texts([e.event for e in entries])[-1] == "after", "the session must stay usable after a failure")


async def check_unknown_event_types_survive(backend: ConformanceBackend) -> None:
    """An event type this version does not know is stored and read back unchanged, and projects to nothing."""
    sid = _new_id("unknown")
    future = UnknownEvent(
        type="branch_switched", data={"type": "branch_switched", "branch": "b2", "nested": {"k": [1, "x"]}}
    )
    session = await backend.open(sid)
    try:
        await session.append([_user("hi"), future, _user("bye")])
        events = [e.event for e in await session.events()]
        snapshot = await session.snapshot()
    finally:
        await _close(session)
    _check(events[1] == future, f"the unknown event changed: {events[1]!r}")
    _check(
        [m.type for m in snapshot.messages] == ["user", "user"],
        '[m.type for m in snapshot.messages] == ["user", "user"]',
    )


async def check_compaction_over_the_backend(backend: ConformanceBackend) -> None:
    """`CompactingSession` over the backend persists its marker; a later reader sees the summary."""
    sid = _new_id("compact")
    inner = await backend.open(sid)
    try:
        backlog = [_user("spent " * 60) for _ in range(3)]
        await inner.append(backlog)  # a backlog written before the wrapper existed
        wrapper = CompactingSession(inner, MockModel.with_scripts([text_turn("SUMMARY")]), threshold=50)
        await wrapper.append([_user("and one more thing")])  # the first append counts for real
    finally:
        await _close(inner)
    _check(wrapper.compactions == 1, "a resumed backlog past the threshold compacts on the first append")
    reader = await backend.open(sid)
    try:
        snapshot = await reader.snapshot()
        log = [e.event for e in await reader.events()]
    finally:
        await _close(reader)
    _check(
        isinstance(log[-1], Compacted) and log[-1].original_count == 4,
        "isinstance(log[-1], Compacted) and log[-1].original_count == 4",
    )
    _check(
        snapshot.messages == (SystemMessage(text="SUMMARY"),),
        'snapshot.messages == (SystemMessage(text="SUMMARY"),)',
    )


async def _records(session: Session) -> list[SessionRecord] | None:
    """`session.records()`, for a backend that keeps the envelope readable (all of helikon's do)."""
    records = getattr(session, "records", None)
    return None if records is None else await records()


async def check_a_retried_append_is_a_no_op(backend: ConformanceBackend) -> None:
    """The same batch appended twice with the same ids (also by two tasks at once) is stored once."""
    sid = _new_id("retry")
    batch = [_user("a"), _user("b")]
    ids = [f"{sid}-a", f"{sid}-b"]
    first, second = await backend.open(sid), await backend.open(sid)
    try:
        await first.append(batch, ids=ids)
        await first.append(batch, ids=ids)  # a retry after, say, a timeout whose write went through
        await second.append(batch, ids=ids, expected_seq=-1)  # a retry wins over a stale expected_seq
        _check(
            _texts([e.event for e in await first.events()]) == ["a", "b"], "a retried append was stored twice"
        )
        try:
            await first.append([_user("c"), _user("b again")], ids=[f"{sid}-c", f"{sid}-b"])
        except UserError:
            pass
        else:
            raise AssertionError("an append reusing one stored id (but not all) must be refused")
        racing = [_user("x"), _user("y"), _user("z")]
        racing_ids = [f"{sid}-x", f"{sid}-y", f"{sid}-z"]
        await asyncio.gather(first.append(racing, ids=racing_ids), second.append(racing, ids=racing_ids))
        entries = await first.events()
        records = await _records(first)
    finally:
        await _close(first)
        await _close(second)
    _assert_contiguous([int(e.seq) for e in entries], 5)
    _check(
        _texts([e.event for e in entries]) == ["a", "b", "x", "y", "z"],
        "concurrent retries duplicated a batch",
    )
    if records is not None:
        _check([r.id for r in records] == [*ids, *racing_ids], f"ids not kept: {[r.id for r in records]}")
        _check([int(r.seq) for r in records] == [0, 1, 2, 3, 4], "records() seqs")
        _check(all(r.version == 2 for r in records), "new events are stored in format 2")
        _check([r.ts for r in records] == [e.event.ts for e in entries], "the envelope's ts is the event's")
        _check(
            [r.event for r in records] == [e.event for e in entries], "records() events differ from events()"
        )


async def check_generated_ids_are_unique(backend: ConformanceBackend) -> None:
    """Without `ids`, each event gets a fresh id, and appending the same objects again appends them again."""
    sid = _new_id("ids")
    session = await backend.open(sid)
    try:
        batch = [_user("again")]
        await session.append(batch)
        await session.append(batch)  # no ids: not a retry, a second copy on purpose
        entries = await session.events()
        records = await _records(session)
    finally:
        await _close(session)
    _check(len(entries) == 2, "two appends without ids store two events")
    if records is not None:
        _check(
            len({r.id for r in records}) == 2 and all(r.id for r in records), "generated ids must be unique"
        )


async def check_expected_seq_conflicts_write_nothing(backend: ConformanceBackend) -> None:
    """`append(..., expected_seq=n)` writes only if the log ends at n; of two racing writers one wins."""
    sid = _new_id("expected")
    session, other = await backend.open(sid), await backend.open(sid)
    try:
        await session.append([_user("first")], expected_seq=-1)
        await other.append([_user("second")], expected_seq=0)
        for stale in (-1, 0, 5):
            try:
                await session.append([_user("stale")], expected_seq=stale)
            except SessionConflict as conflict:
                _check(
                    (conflict.expected_seq, conflict.actual_seq) == (stale, 1),
                    f"the conflict says {(conflict.expected_seq, conflict.actual_seq)}, not {(stale, 1)}",
                )
            else:
                raise AssertionError(f"expected_seq={stale} on a log ending at 1 must raise SessionConflict")
        results = await asyncio.gather(
            session.append([_user("race a")], expected_seq=1),
            other.append([_user("race b")], expected_seq=1),
            return_exceptions=True,
        )
        texts = _texts([e.event for e in await session.events()])
    finally:
        await _close(session)
        await _close(other)
    conflicts = [r for r in results if isinstance(r, SessionConflict)]
    _check(len(conflicts) == 1 and results.count(None) == 1, f"exactly one racing writer must win: {results}")
    _check(texts[:2] == ["first", "second"] and "stale" not in texts, f"a conflict wrote something: {texts}")
    _check(len(texts) == 3 and texts[2] in ("race a", "race b"), f"the race left {texts}")


async def check_format_versions_are_read_by_their_rules(backend: ConformanceBackend) -> None:
    """Format 1 keeps unknown events; format 2 keeps them only if ignorable; a newer format is refused."""
    ignorable = UnknownEvent(type="ui_note", data={"type": "ui_note", "ignorable": True, "n": 1}, version=2)
    old = UnknownEvent(type="branch_switched", data={"type": "branch_switched", "branch": "b"}, version=1)
    kept = _new_id("v-kept")
    session = await backend.open(kept)
    try:
        await session.append([_user("hi"), old, ignorable])
        events = [e.event for e in await session.events()]
        records = await _records(session)
    finally:
        await _close(session)
    _check(events[1:] == [old, ignorable], f"unknown events changed: {events[1:]}")
    if records is not None:
        _check([r.version for r in records] == [2, 1, 2], f"stored versions {[r.version for r in records]}")
    refused = (
        ("v-strict", UnknownEvent(type="rewound", data={"type": "rewound", "to": 0}, version=2), 2),
        ("v-newer", UnknownEvent(type="user_message", data={"type": "user_message"}, version=3), 3),
    )
    for tag, event, version in refused:
        sid = _new_id(tag)
        writer = await backend.open(sid)  # as a newer helikon would write it
        try:
            await writer.append([_user("before"), event])
        finally:
            await _close(writer)
        reader = await backend.open(sid)
        try:
            for read in (reader.events, reader.snapshot):
                try:
                    await read()
                except UnreadableSessionEvent as exc:
                    _check((exc.seq, exc.version) == (1, version), f"the error names {exc.seq, exc.version}")
                    _check("upgrade" in str(exc), "the error must say what to upgrade")
                else:
                    raise AssertionError(f"{read.__name__}() must refuse {event!r}")
        finally:
            await _close(reader)


async def check_sessions_are_listed(backend: ConformanceBackend) -> None:
    """`list_sessions` shows each session's id, times, event count, title and metadata, newest first."""
    _check(backend.list_sessions is not None, "backend.list_sessions is not None")
    assert backend.list_sessions is not None
    older, newer = _new_id("list-old"), _new_id("list-new")
    a = await backend.open(older)
    try:
        await a.append([_user("1"), _user("2")])
        await a.append([_user("3")])
        await a.set_metadata(title="Trip", metadata={"user": "u1", "tags": ["x"]})  # type: ignore[attr-defined]
    finally:
        await _close(a)
    await asyncio.sleep(0.01)  # a later `updated`
    b = await backend.open(newer)
    try:
        await b.append([_user("only")])
    finally:
        await _close(b)
    listed = await backend.list_sessions(limit=100, offset=0)
    by_id = {info.session_id: info for info in listed}
    _check({older, newer} <= set(by_id), f"list_sessions missed a session: {sorted(by_id)}")
    first, second = by_id[older], by_id[newer]
    _check((first.event_count, second.event_count) == (3, 1), "event counts")
    _check((first.title, first.metadata) == ("Trip", {"user": "u1", "tags": ["x"]}), f"metadata: {first}")
    _check((second.title, second.metadata) == (None, {}), f"no metadata set: {second}")
    _check(first.created <= first.updated <= second.updated, "times")
    _check(listed.index(second) < listed.index(first), "the most recently updated session comes first")
    page = await backend.list_sessions(limit=1, offset=0)
    rest = await backend.list_sessions(limit=100, offset=1)
    _check(page == listed[:1] and rest == listed[1:], "limit and offset page through the list")


# --- multi-process checks (need `opener`) --------------------------------------------------------


def _worker(backend: ConformanceBackend, session_id: str, action: dict[str, Any]) -> list[str]:
    spec = {"opener": backend.opener, "kwargs": backend.opener_kwargs, "session_id": session_id, **action}
    return [sys.executable, "-m", "helikon.testing._conformance_worker", json.dumps(spec)]


async def _run(argv: list[str], seconds: float = 120) -> str:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    async with asyncio.timeout(seconds):
        out, err = await process.communicate()
    _check(process.returncode == 0, f"worker failed ({process.returncode}): {err.decode()[-2000:]}")
    return out.decode()


async def check_concurrent_writers_in_separate_processes(backend: ConformanceBackend) -> None:
    """Several processes append to one session at once: no gap, no duplicate, each writer's order kept."""
    _check(backend.opener is not None, "backend.opener is not None")
    sid = _new_id("procs")
    per_writer = 25
    await asyncio.gather(
        *(
            _run(_worker(backend, sid, {"action": "append", "count": per_writer, "tag": f"p{i}"}))
            for i in range(backend.processes)
        )
    )
    seqs, events = await _log(backend, sid)
    _assert_contiguous(seqs, backend.processes * per_writer)
    texts = _texts(events)
    for i in range(backend.processes):
        mine = [t for t in texts if t.startswith(f"p{i}:")]
        _check(mine == [f"p{i}:{n}" for n in range(per_writer)], f"process {i}'s order was not kept")


async def check_a_run_resumes_in_another_process(backend: ConformanceBackend) -> None:
    """A run through the runner persists; a second process resumes the session and the model sees it."""
    _check(backend.opener is not None, "backend.opener is not None")
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunContext
    from helikon.runtime import AsyncioRunner

    sid = _new_id("resume")
    session = await backend.open(sid)
    try:
        agent = LlmAgent[None](name="resumer", model=MockModel.with_scripts([text_turn("Noted: Ada.")]))
        await AsyncioRunner[None]().run(
            agent, "My name is Ada.", RunContext.ephemeral(None).with_session(session)
        )
    finally:
        await _close(session)
    seen = json.loads(await _run(_worker(backend, sid, {"action": "runner_turn", "input": "Who am I?"})))
    expected = ["user:My name is Ada.", "assistant:Noted: Ada.", "user:Who am I?"]
    _check(seen == expected, f"the resuming process's model saw {seen}, not {expected}")
    seqs, events = await _log(backend, sid)
    # two exchanges and the agent's request header (unchanged in the second process: not repeated)
    _assert_contiguous(seqs, 5)
    _check(_texts(events)[-1] == "resumed", '_texts(events)[-1] == "resumed"')


async def check_retries_from_separate_processes_store_one_copy(backend: ConformanceBackend) -> None:
    """Several processes append the same batch with the same ids at once: it is stored once."""
    _check(backend.opener is not None, "backend.opener is not None")
    sid = _new_id("proc-retry")
    action = {"action": "append_with_ids", "count": 20, "tag": "r"}
    await asyncio.gather(*(_run(_worker(backend, sid, action)) for _ in range(backend.processes)))
    seqs, events = await _log(backend, sid)
    _assert_contiguous(seqs, 20)
    _check(_texts(events) == [f"r:{n}" for n in range(20)], "retries from other processes duplicated events")


async def check_a_killed_writer_leaves_whole_appends(backend: ConformanceBackend) -> None:
    """SIGKILL in the middle of multi-event appends: each append is all there or not at all."""
    _check(backend.opener is not None, "backend.opener is not None")
    sid = _new_id("crash")
    batch = 200
    argv = _worker(backend, sid, {"action": "batches_forever", "size": batch})
    process = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = process.stdout
    if stdout is None:
        raise AssertionError("the writer has no stdout")
    try:
        # Wait until the writer has committed a few batches, then kill it mid-flight.
        for _ in range(3):
            async with asyncio.timeout(120):
                line = await stdout.readline()
            _check(line, "the writer died before committing a batch")
        await asyncio.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
    seqs, events = await _log(backend, sid)
    _assert_contiguous(seqs)
    _check(len(seqs) % batch == 0, f"{len(seqs)} events: a batch of {batch} was cut")
    texts = _texts(events)
    for start in range(0, len(texts), batch):
        number = start // batch
        _check(
            texts[start : start + batch] == [f"b{number}:{i}" for i in range(batch)],
            (f"batch {number} is torn"),
        )
    session = await backend.open(sid)
    try:
        await session.append([_user("after the crash")])
        after = await session.events()
    finally:
        await _close(session)
    _assert_contiguous([int(e.seq) for e in after], len(seqs) + 1)


IN_PROCESS: tuple[Check, ...] = (
    check_append_order_and_contiguous_sequences,
    check_events_since_is_exclusive,
    check_events_since_on_a_new_object,
    check_sessions_are_isolated,
    check_snapshot_is_the_projection_of_the_log,
    check_a_reader_sees_what_others_append,
    check_concurrent_writers_in_one_process,
    check_a_failed_append_writes_nothing,
    check_unknown_event_types_survive,
    check_compaction_over_the_backend,
    check_a_retried_append_is_a_no_op,
    check_generated_ids_are_unique,
    check_expected_seq_conflicts_write_nothing,
    check_format_versions_are_read_by_their_rules,
    check_window_compaction_keeps_recent_turns_and_pairs,
    check_checkpoint_plus_tail_is_the_projection,
    *BRANCH_CHECKS,
)
MULTI_PROCESS: tuple[Check, ...] = (
    check_concurrent_writers_in_separate_processes,
    check_a_run_resumes_in_another_process,
    check_retries_from_separate_processes_store_one_copy,
)


def checks_for(backend: ConformanceBackend) -> list[Check]:
    """The checks that apply to `backend`.

    Process checks need `opener`, the crash check `crash_safe`, the listing check `list_sessions`,
    the damaged-checkpoint check `damage_checkpoint`; `branching=False` leaves out the branch checks.
    """
    checks = [c for c in IN_PROCESS if backend.branching or c not in BRANCH_CHECKS]
    if backend.damage_checkpoint is not None:
        checks.append(check_a_damaged_checkpoint_is_rebuilt)
    if backend.list_sessions is not None:
        checks.append(check_sessions_are_listed)
    if backend.opener is not None:
        checks += MULTI_PROCESS
        if backend.crash_safe:
            checks.append(check_a_killed_writer_leaves_whole_appends)
    return checks


async def run_all(backend: ConformanceBackend) -> None:
    """Run every applicable check in turn (raises `AssertionError` on the first miss)."""
    for check in checks_for(backend):
        await check(backend)


__all__ = [
    "IN_PROCESS",
    "MULTI_PROCESS",
    "Check",
    "ConformanceBackend",
    "DamageCheckpoint",
    "check_a_damaged_checkpoint_is_rebuilt",
    "check_a_failed_append_writes_nothing",
    "check_a_killed_writer_leaves_whole_appends",
    "check_a_reader_sees_what_others_append",
    "check_a_retried_append_is_a_no_op",
    "check_a_run_resumes_in_another_process",
    "check_append_order_and_contiguous_sequences",
    "check_checkpoint_plus_tail_is_the_projection",
    "check_compaction_over_the_backend",
    "check_concurrent_writers_in_one_process",
    "check_concurrent_writers_in_separate_processes",
    "check_events_since_is_exclusive",
    "check_expected_seq_conflicts_write_nothing",
    "check_format_versions_are_read_by_their_rules",
    "check_generated_ids_are_unique",
    "check_retries_from_separate_processes_store_one_copy",
    "check_sessions_are_isolated",
    "check_sessions_are_listed",
    "check_a_rewind_behind_a_compaction_and_a_checkpoint",
    "check_branches_are_listed_and_switched",
    "check_cuts_inside_a_turn_are_refused",
    "check_fork_is_isolated",
    "check_rewind_survives_reopening",
    "BRANCH_CHECKS",
    "check_snapshot_is_the_projection_of_the_log",
    "check_unknown_event_types_survive",
    "checks_for",
    "run_all",
]
