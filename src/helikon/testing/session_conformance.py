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
process. `list_sessions(limit=..., offset=..., filter=...)`, when the store can list its
sessions, enables the listing and metadata checks (a session there is expected to have
`set_metadata(..., expected_version=...)` and `metadata()`). `opener`
names an async function `module:function` that another process calls as
`await function(session_id, **opener_kwargs)` to open the same store: with it the suite
also checks writers in separate processes, resuming a run from another process, and
(with `crash_safe=True`) that a writer killed mid-append leaves all of the append or none,
and that a run killed mid-batch keeps the results of the calls that had returned.
Sessions with an `aclose()` method are closed after use.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from helikon.core.exceptions import SessionConflict, UnreadableSessionEvent, UserError
from helikon.core.items import SystemMessage, TextPart
from helikon.core.session import (
    AssistantMessageEvent,
    Compacted,
    SequenceId,
    Session,
    SessionRecord,
    ToolCalled,
    ToolReturned,
    UnknownEvent,
    project,
)
from helikon.core.session.compaction import CompactingSession

from ._approval_checks import (
    check_a_killed_resume_is_repaired,
    check_a_killed_run_goes_on_with_resume,
    check_a_paused_run_resumes_in_another_process,
    check_a_paused_run_survives_compaction,
    check_a_run_pauses_and_resumes_on_the_backend,
    check_approval_events_round_trip_exactly,
    check_decisions_fail_closed,
    check_one_decision_per_request,
    check_sub_agent_and_handoff_requests_resume,
)
from ._branch_checks import (
    BRANCH_CHECKS,
    check_a_rewind_behind_a_compaction_and_a_checkpoint,
    check_branches_are_listed_and_switched,
    check_cuts_inside_a_turn_are_refused,
    check_fork_is_isolated,
    check_rewind_and_fork_with_a_stale_expected_seq_change_nothing,
    check_rewind_survives_reopening,
)
from ._checkpoint_checks import (
    check_a_damaged_checkpoint_is_rebuilt,
    check_checkpoint_plus_tail_is_the_projection,
)
from ._compaction_checks import (
    check_compaction_keeps_tool_turns_whole,
    check_window_compaction_keeps_recent_turns_and_pairs,
)
from ._conformance_backend import Check, ConformanceBackend, DamageCheckpoint
from ._conformance_util import (
    assert_contiguous,
    close_session,
    new_id,
    read_log,
    require,
    run_worker,
    said,
    user_event,
    worker_argv,
)
from ._crash_checks import (
    check_a_killed_run_is_repaired,
    check_a_killed_run_keeps_the_results_that_returned,
    check_a_killed_writer_leaves_whole_appends,
)
from ._json_checks import check_exotic_json_round_trips
from ._metadata_checks import (
    METADATA_CHECKS,
    check_concurrent_metadata_updates_lose_nothing,
    check_custom_events_round_trip,
    check_metadata_is_read_and_compared,
    check_sessions_are_filtered_by_metadata,
)
from ._mock_model import MockModel
from ._request_checks import check_requests_are_rebuilt_from_the_stored_log
from ._scripts import text_turn


async def check_append_order_and_contiguous_sequences(backend: ConformanceBackend) -> None:
    """Appends keep their order; sequences run 0, 1, 2... across appends; empty appends do nothing."""
    sid = new_id("order")
    session = await backend.open(sid)
    try:
        first = [user_event("one")]
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
        await close_session(session)
    assert_contiguous([int(e.seq) for e in entries], 4)
    require([e.event for e in entries] == [*first, *second], "events did not come back equal, in order")


async def check_events_since_is_exclusive(backend: ConformanceBackend) -> None:
    """`events(since=n)` returns the events after n only."""
    sid = new_id("since")
    session = await backend.open(sid)
    try:
        await session.append([user_event(str(i)) for i in range(5)])
        after_one = await session.events(SequenceId(1))
        after_last = await session.events(SequenceId(4))
        beyond = await session.events(SequenceId(99))
    finally:
        await close_session(session)
    require([int(e.seq) for e in after_one] == [2, 3, 4], "since is exclusive")
    require(
        said([e.event for e in after_one]) == ["2", "3", "4"],
        'said([e.event for e in after_one]) == ["2", "3", "4"]',
    )
    require(after_last == [], "nothing follows the last event")
    require(beyond == [], "since beyond the end returns nothing")


async def check_events_since_on_a_new_object(backend: ConformanceBackend) -> None:
    """A fresh session object answers `events(since)` right, then reads and projects the whole log."""
    sid = new_id("since-new")
    writer = await backend.open(sid)
    try:
        await writer.append([user_event(str(i)) for i in range(6)])
    finally:
        await close_session(writer)
    for since in (-1, 0, 3, 5, 9):
        fresh = await backend.open(sid)
        try:
            got = [(int(e.seq), e.event) for e in await fresh.events(SequenceId(since))]
            whole = await fresh.events()
            snapshot = await fresh.snapshot()
        finally:
            await close_session(fresh)
        require(
            said([event for _, event in got]) == [str(i) for i in range(since + 1, 6)],
            f"events({since}) on a new object",
        )
        require([int(e.seq) for e in whole] == list(range(6)), "the whole log after a since read")
        require(len(snapshot.messages) == 6, "the snapshot after a since read")


async def check_sessions_are_isolated(backend: ConformanceBackend) -> None:
    """Two session ids in one store never see each other's events."""
    a, b = new_id("iso-a"), new_id("iso-b")
    sa, sb = await backend.open(a), await backend.open(b)
    try:
        await sa.append([user_event("for a")])
        await sb.append([user_event("for b 1"), user_event("for b 2")])
        await sa.append([user_event("for a again")])
        ea, eb = await sa.events(), await sb.events()
    finally:
        await close_session(sa)
        await close_session(sb)
    require(
        said([e.event for e in ea]) == ["for a", "for a again"],
        'said([e.event for e in ea]) == ["for a", "for a again"]',
    )
    require(
        said([e.event for e in eb]) == ["for b 1", "for b 2"],
        'said([e.event for e in eb]) == ["for b 1", "for b 2"]',
    )
    assert_contiguous([int(e.seq) for e in ea])
    assert_contiguous([int(e.seq) for e in eb])


async def check_snapshot_is_the_projection_of_the_log(backend: ConformanceBackend) -> None:
    """`snapshot()` equals `project(events())`, compaction markers included."""
    sid = new_id("snapshot")
    session = await backend.open(sid)
    try:
        await session.append([user_event("old"), AssistantMessageEvent(content=(TextPart(text="older"),))])
        await session.append([Compacted(summary="they said old things", original_count=2), user_event("new")])
        snapshot = await session.snapshot()
        log = [e.event for e in await session.events()]
    finally:
        await close_session(session)
    require(snapshot == project(log), "snapshot == project(log)")
    require(
        snapshot.messages[0] == SystemMessage(text="they said old things"),
        'snapshot.messages[0] == SystemMessage(text="they said old things")',
    )
    require(len(snapshot.messages) == 2, "len(snapshot.messages) == 2")


async def check_a_reader_sees_what_others_append(backend: ConformanceBackend) -> None:
    """A session object that has read the log sees, on its next read, what another object appended."""
    sid = new_id("fresh")
    reader, writer = await backend.open(sid), await backend.open(sid)
    try:
        await reader.append([user_event("1"), user_event("2")])
        require(said([e.event for e in await reader.events()]) == ["1", "2"], "the reader's own appends")
        await reader.snapshot()
        await writer.append([user_event("3")])
        await writer.append([Compacted(summary="S", original_count=3), user_event("4")])
        events = [e.event for e in await reader.events()]
        snapshot = await reader.snapshot()
        tail = await reader.events(SequenceId(3))
    finally:
        await close_session(reader)
        await close_session(writer)
    require(
        said(events) == ["1", "2", "3", "4"], f"the reader missed another writer's events: {said(events)}"
    )
    require(snapshot == project(events), "the reader's snapshot is not the projection of the log")
    require(snapshot.messages[0] == SystemMessage(text="S"), "the reader did not see the compaction")
    require([int(e.seq) for e in tail] == [4], "since is exclusive after a refresh")


async def check_concurrent_writers_in_one_process(backend: ConformanceBackend) -> None:
    """16 tasks, each with its own session object, append 10 events each: no gap, no duplicate."""
    sid = new_id("tasks")
    writers, per_writer = 16, 10

    async def writer(index: int) -> None:
        session = await backend.open(sid)
        try:
            for n in range(per_writer):
                await session.append([user_event(f"w{index}:{n}")])
        finally:
            await close_session(session)

    await asyncio.gather(*(writer(i) for i in range(writers)))
    seqs, events = await read_log(backend, sid)
    assert_contiguous(seqs, writers * per_writer)
    texts = said(events)
    for index in range(writers):
        mine = [t for t in texts if t.startswith(f"w{index}:")]
        require(
            mine == [f"w{index}:{n}" for n in range(per_writer)],
            (f"writer {index}'s order was not kept: {mine}"),
        )


async def check_a_failed_append_writes_nothing(backend: ConformanceBackend) -> None:
    """An append that fails (here: an event that cannot be stored) leaves the log as it was."""
    sid = new_id("failed")
    session = await backend.open(sid)
    try:
        await session.append([user_event("before")])
        not_json: Any = {1, 2}  # a set cannot be written as JSON
        poison = UnknownEvent(type="poison", data={"type": "poison", "value": not_json})
        try:
            await session.append([user_event("half"), poison])
        except Exception:
            stored = [e.event for e in await session.events()]
            require(said(stored) == ["before"], "a failed append must not write part of its events")
        else:  # a backend that keeps objects as they are (in memory) may accept it
            stored = [e.event for e in await session.events()]
            require(said(stored) == ["before", "half"], 'said(stored) == ["before", "half"]')
        await session.append([user_event("after")])
        entries = await session.events()
    finally:
        await close_session(session)
    assert_contiguous([int(e.seq) for e in entries])
    require(said([e.event for e in entries])[-1] == "after", "the session must stay usable after a failure")


async def check_a_cancelled_append_is_whole(backend: ConformanceBackend) -> None:
    """An append cancelled at any point leaves all of its events or none, and the session usable."""
    sid = new_id("cancelled")
    size = 20
    session = await backend.open(sid)
    try:
        for steps in range(12):  # cancelled after 0, 1, ... event-loop steps
            task = asyncio.ensure_future(session.append([user_event(f"c{steps}:{i}") for i in range(size)]))
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await session.append([user_event("after")])
    finally:
        await close_session(session)
    await asyncio.sleep(0.2)  # a write the cancel could not stop has landed by now
    seqs, events = await read_log(backend, sid)
    assert_contiguous(seqs)
    written = said(events)
    require(written and written[-1] == "after", "the session must stay appendable after a cancelled append")
    batches: dict[str, list[str]] = {}
    for text in written[:-1]:
        batches.setdefault(text.split(":")[0], []).append(text)
    for tag, texts in batches.items():
        require(texts == [f"{tag}:{i}" for i in range(size)], f"a cancelled append was torn: {texts}")


async def check_unknown_event_types_survive(backend: ConformanceBackend) -> None:
    """An event type this version does not know is stored and read back unchanged, and projects to nothing."""
    sid = new_id("unknown")
    future = UnknownEvent(
        type="branch_switched", data={"type": "branch_switched", "branch": "b2", "nested": {"k": [1, "x"]}}
    )
    session = await backend.open(sid)
    try:
        await session.append([user_event("hi"), future, user_event("bye")])
        events = [e.event for e in await session.events()]
        snapshot = await session.snapshot()
    finally:
        await close_session(session)
    require(events[1] == future, f"the unknown event changed: {events[1]!r}")
    require(
        [m.type for m in snapshot.messages] == ["user", "user"],
        '[m.type for m in snapshot.messages] == ["user", "user"]',
    )


async def check_compaction_over_the_backend(backend: ConformanceBackend) -> None:
    """`CompactingSession` over the backend persists its marker; a later reader sees the summary."""
    sid = new_id("compact")
    inner = await backend.open(sid)
    try:
        backlog = [user_event("spent " * 60) for _ in range(3)]
        await inner.append(backlog)  # a backlog written before the wrapper existed
        wrapper = CompactingSession(inner, MockModel.with_scripts([text_turn("SUMMARY")]), threshold=50)
        await wrapper.append([user_event("and one more thing")])  # the first append counts for real
    finally:
        await close_session(inner)
    require(wrapper.compactions == 1, "a resumed backlog past the threshold compacts on the first append")
    reader = await backend.open(sid)
    try:
        snapshot = await reader.snapshot()
        log = [e.event for e in await reader.events()]
    finally:
        await close_session(reader)
    require(
        isinstance(log[-1], Compacted) and log[-1].original_count == 4,
        "isinstance(log[-1], Compacted) and log[-1].original_count == 4",
    )
    require(
        snapshot.messages == (SystemMessage(text="SUMMARY"),),
        'snapshot.messages == (SystemMessage(text="SUMMARY"),)',
    )


async def _records(session: Session) -> list[SessionRecord] | None:
    """`session.records()`, for a backend that keeps the envelope readable (all of helikon's do)."""
    records = getattr(session, "records", None)
    return None if records is None else await records()


async def check_a_retried_append_is_a_no_op(backend: ConformanceBackend) -> None:
    """The same batch appended twice with the same ids (also by two tasks at once) is stored once."""
    sid = new_id("retry")
    batch = [user_event("a"), user_event("b")]
    ids = [f"{sid}-a", f"{sid}-b"]
    first, second = await backend.open(sid), await backend.open(sid)
    try:
        await first.append(batch, ids=ids)
        await first.append(batch, ids=ids)  # a retry after, say, a timeout whose write went through
        await second.append(batch, ids=ids, expected_seq=-1)  # a retry wins over a stale expected_seq
        require(
            said([e.event for e in await first.events()]) == ["a", "b"], "a retried append was stored twice"
        )
        try:
            await first.append([user_event("c"), user_event("b again")], ids=[f"{sid}-c", f"{sid}-b"])
        except UserError as exc:
            require(f"{sid}-b" in str(exc), f"the error must name the reused id: {exc}")
        else:
            raise AssertionError("an append reusing a stored id for another event must be refused")
        racing = [user_event("x"), user_event("y"), user_event("z")]
        racing_ids = [f"{sid}-x", f"{sid}-y", f"{sid}-z"]
        await asyncio.gather(first.append(racing, ids=racing_ids), second.append(racing, ids=racing_ids))
        entries = await first.events()
        records = await _records(first)
    finally:
        await close_session(first)
        await close_session(second)
    assert_contiguous([int(e.seq) for e in entries], 5)
    require(
        said([e.event for e in entries]) == ["a", "b", "x", "y", "z"],
        "concurrent retries duplicated a batch",
    )
    if records is not None:
        require([r.id for r in records] == [*ids, *racing_ids], f"ids not kept: {[r.id for r in records]}")
        require([int(r.seq) for r in records] == [0, 1, 2, 3, 4], "records() seqs")
        require(all(r.version == 2 for r in records), "new events are stored in format 2")
        require([r.ts for r in records] == [e.event.ts for e in entries], "the envelope's ts is the event's")
        require(
            [r.event for r in records] == [e.event for e in entries], "records() events differ from events()"
        )


async def check_a_partly_stored_retry_appends_the_rest(backend: ConformanceBackend) -> None:
    """Idempotency is per event id: a retry skips the events already stored and appends the rest, in order.

    A stored id with other content (apart from `ts`) is refused, never overwritten; with
    `expected_seq`, the writer's own stored events do not count as another writer's.
    """
    sid = new_id("partial")
    first, second = await backend.open(sid), await backend.open(sid)
    try:
        letters = "abcd"
        # A prefix of the batch landed (a timeout whose write went through), then the whole is retried.
        await first.append([user_event("a"), user_event("b")], ids=[f"{sid}-a", f"{sid}-b"])
        await first.append([user_event(x) for x in letters], ids=[f"{sid}-{x}" for x in letters])
        await first.append([user_event("f")], ids=[f"{sid}-f"])  # then one from the middle
        await first.append([user_event(x) for x in "efgh"], ids=[f"{sid}-{x}" for x in "efgh"])
        # A rebuilt event (a new `ts`, the same content) is the same event.
        await first.append([user_event("h"), user_event("i")], ids=[f"{sid}-h", f"{sid}-i"])
        texts = said([e.event for e in await first.events()])
        require(texts == list("abcdfeghi"), f"partly stored retries left {texts}")
        try:
            await first.append([user_event("j"), user_event("not i")], ids=[f"{sid}-j", f"{sid}-i"])
        except UserError as exc:
            require(f"{sid}-i" in str(exc), f"the error must name the id stored with other content: {exc}")
        else:
            raise AssertionError("an id stored with other content must be refused, not skipped or kept")
        seen = (await first.events())[-1].seq  # 8
        await first.append([user_event("p")], ids=[f"{sid}-p"], expected_seq=seen)
        await first.append(
            [user_event("p"), user_event("q")], ids=[f"{sid}-p", f"{sid}-q"], expected_seq=seen
        )  # only its own event follows `seen`: no conflict
        await second.append([user_event("z")])  # another writer
        for batch, ids in (
            ([user_event("p"), user_event("q"), user_event("r")], [f"{sid}-p", f"{sid}-q", f"{sid}-r"]),
            ([user_event("other p")], [f"{sid}-p"]),  # another event under that id, after `seen`
        ):
            try:
                await first.append(batch, ids=ids, expected_seq=seen)
            except SessionConflict as conflict:
                found = (conflict.expected_seq, conflict.actual_seq)
                require(found == (seen, seen + 3), f"the conflict says {found}")
            else:
                raise AssertionError("another writer's event after expected_seq must be a SessionConflict")
        await first.append([user_event("r")], ids=[f"{sid}-r"])
        racing = [user_event(x) for x in "rstu"]
        racing_ids = [f"{sid}-{x}" for x in "rstu"]
        await asyncio.gather(first.append(racing, ids=racing_ids), second.append(racing, ids=racing_ids))
        entries = await first.events()
        records = await _records(first)
    finally:
        await close_session(first)
        await close_session(second)
    assert_contiguous([int(e.seq) for e in entries], 16)
    texts = said([e.event for e in entries])
    require(texts == [*"abcdfeghi", "p", "q", "z", "r", "s", "t", "u"], f"the retries left {texts}")
    if records is not None:
        require(records[8].id == f"{sid}-i", "a skipped event keeps its stored id")


async def check_generated_ids_are_unique(backend: ConformanceBackend) -> None:
    """Without `ids`, each event gets a fresh id, and appending the same objects again appends them again."""
    sid = new_id("ids")
    session = await backend.open(sid)
    try:
        batch = [user_event("again")]
        await session.append(batch)
        await session.append(batch)  # no ids: not a retry, a second copy on purpose
        entries = await session.events()
        records = await _records(session)
    finally:
        await close_session(session)
    require(len(entries) == 2, "two appends without ids store two events")
    if records is not None:
        require(
            len({r.id for r in records}) == 2 and all(r.id for r in records), "generated ids must be unique"
        )


async def check_expected_seq_conflicts_write_nothing(backend: ConformanceBackend) -> None:
    """`append(..., expected_seq=n)` writes only if the log ends at n; of two racing writers one wins."""
    sid = new_id("expected")
    session, other = await backend.open(sid), await backend.open(sid)
    try:
        await session.append([user_event("first")], expected_seq=-1)
        await other.append([user_event("second")], expected_seq=0)
        for stale in (-1, 0, 5):
            try:
                await session.append([user_event("stale")], expected_seq=stale)
            except SessionConflict as conflict:
                require(
                    (conflict.expected_seq, conflict.actual_seq) == (stale, 1),
                    f"the conflict says {(conflict.expected_seq, conflict.actual_seq)}, not {(stale, 1)}",
                )
            else:
                raise AssertionError(f"expected_seq={stale} on a log ending at 1 must raise SessionConflict")
        results = await asyncio.gather(
            session.append([user_event("race a")], expected_seq=1),
            other.append([user_event("race b")], expected_seq=1),
            return_exceptions=True,
        )
        texts = said([e.event for e in await session.events()])
    finally:
        await close_session(session)
        await close_session(other)
    conflicts = [r for r in results if isinstance(r, SessionConflict)]
    require(
        len(conflicts) == 1 and results.count(None) == 1, f"exactly one racing writer must win: {results}"
    )
    require(texts[:2] == ["first", "second"] and "stale" not in texts, f"a conflict wrote something: {texts}")
    require(len(texts) == 3 and texts[2] in ("race a", "race b"), f"the race left {texts}")


async def check_format_versions_are_read_by_their_rules(backend: ConformanceBackend) -> None:
    """Format 1 keeps unknown events; format 2 keeps them only if ignorable; a newer format is refused."""
    ignorable = UnknownEvent(type="ui_note", data={"type": "ui_note", "ignorable": True, "n": 1}, version=2)
    old = UnknownEvent(type="branch_switched", data={"type": "branch_switched", "branch": "b"}, version=1)
    kept = new_id("v-kept")
    session = await backend.open(kept)
    try:
        await session.append([user_event("hi"), old, ignorable])
        events = [e.event for e in await session.events()]
        records = await _records(session)
    finally:
        await close_session(session)
    require(events[1:] == [old, ignorable], f"unknown events changed: {events[1:]}")
    if records is not None:
        require([r.version for r in records] == [2, 1, 2], f"stored versions {[r.version for r in records]}")
    refused = (
        ("v-strict", UnknownEvent(type="rewound", data={"type": "rewound", "to": 0}, version=2), 2),
        ("v-newer", UnknownEvent(type="user_message", data={"type": "user_message"}, version=3), 3),
    )
    for tag, event, version in refused:
        sid = new_id(tag)
        writer = await backend.open(sid)  # as a newer helikon would write it
        try:
            await writer.append([user_event("before"), event])
        finally:
            await close_session(writer)
        reader = await backend.open(sid)
        try:
            for read in (reader.events, reader.snapshot):
                try:
                    await read()
                except UnreadableSessionEvent as exc:
                    require((exc.seq, exc.version) == (1, version), f"the error names {exc.seq, exc.version}")
                    require("upgrade" in str(exc), "the error must say what to upgrade")
                else:
                    raise AssertionError(f"{read.__name__}() must refuse {event!r}")
        finally:
            await close_session(reader)


async def check_sessions_are_listed(backend: ConformanceBackend) -> None:
    """`list_sessions` shows each session's id, times, event count, title and metadata, newest first."""
    require(backend.list_sessions is not None, "backend.list_sessions is not None")
    assert backend.list_sessions is not None
    older, newer = new_id("list-old"), new_id("list-new")
    a = await backend.open(older)
    try:
        await a.append([user_event("1"), user_event("2")])
        await a.append([user_event("3")])
        await a.set_metadata(title="Trip", metadata={"user": "u1", "tags": ["x"]})  # type: ignore[attr-defined]
    finally:
        await close_session(a)
    await asyncio.sleep(0.01)  # a later `updated`
    b = await backend.open(newer)
    try:
        await b.append([user_event("only")])
    finally:
        await close_session(b)
    listed = await backend.list_sessions(limit=100, offset=0)
    by_id = {info.session_id: info for info in listed}
    require({older, newer} <= set(by_id), f"list_sessions missed a session: {sorted(by_id)}")
    first, second = by_id[older], by_id[newer]
    require((first.event_count, second.event_count) == (3, 1), "event counts")
    require((first.title, first.metadata) == ("Trip", {"user": "u1", "tags": ["x"]}), f"metadata: {first}")
    require((second.title, second.metadata) == (None, {}), f"no metadata set: {second}")
    require(first.created <= first.updated <= second.updated, "times")
    require(listed.index(second) < listed.index(first), "the most recently updated session comes first")
    page = await backend.list_sessions(limit=1, offset=0)
    rest = await backend.list_sessions(limit=100, offset=1)
    require(page == listed[:1] and rest == listed[1:], "limit and offset page through the list")


# --- multi-process checks (need `opener`) --------------------------------------------------------


async def check_concurrent_writers_in_separate_processes(backend: ConformanceBackend) -> None:
    """Several processes append to one session at once: no gap, no duplicate, each writer's order kept."""
    require(backend.opener is not None, "backend.opener is not None")
    sid = new_id("procs")
    per_writer = 25
    await asyncio.gather(
        *(
            run_worker(worker_argv(backend, sid, {"action": "append", "count": per_writer, "tag": f"p{i}"}))
            for i in range(backend.processes)
        )
    )
    seqs, events = await read_log(backend, sid)
    assert_contiguous(seqs, backend.processes * per_writer)
    texts = said(events)
    for i in range(backend.processes):
        mine = [t for t in texts if t.startswith(f"p{i}:")]
        require(mine == [f"p{i}:{n}" for n in range(per_writer)], f"process {i}'s order was not kept")


async def check_a_run_resumes_in_another_process(backend: ConformanceBackend) -> None:
    """A run through the runner persists; a second process resumes the session and the model sees it."""
    require(backend.opener is not None, "backend.opener is not None")
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunContext
    from helikon.runtime import AsyncioRunner

    sid = new_id("resume")
    session = await backend.open(sid)
    try:
        agent = LlmAgent[None](name="resumer", model=MockModel.with_scripts([text_turn("Noted: Ada.")]))
        await AsyncioRunner[None]().run(
            agent, "My name is Ada.", RunContext.ephemeral(None).with_session(session)
        )
    finally:
        await close_session(session)
    seen = json.loads(
        await run_worker(worker_argv(backend, sid, {"action": "runner_turn", "input": "Who am I?"}))
    )
    expected = ["user:My name is Ada.", "assistant:Noted: Ada.", "user:Who am I?"]
    require(seen == expected, f"the resuming process's model saw {seen}, not {expected}")
    seqs, events = await read_log(backend, sid)
    # Two exchanges and the agent's request header (unchanged in the second process: not
    # repeated); a durable run brackets each exchange with turn markers.
    kinds = [e.type for e in events]
    require(
        kinds
        == ["turn_opened", "user_message", "request_header", "assistant_message", "turn_closed"] * 1
        + ["turn_opened", "user_message", "assistant_message", "turn_closed"],
        f"the log of two durable runs: {kinds}",
    )
    assert_contiguous(seqs, 9)
    require(said(events)[-1] == "resumed", 'said(events)[-1] == "resumed"')


async def check_retries_from_separate_processes_store_one_copy(backend: ConformanceBackend) -> None:
    """Several processes append the same batch with the same ids at once: it is stored once."""
    require(backend.opener is not None, "backend.opener is not None")
    sid = new_id("proc-retry")
    action = {"action": "append_with_ids", "count": 20, "tag": "r"}
    await asyncio.gather(*(run_worker(worker_argv(backend, sid, action)) for _ in range(backend.processes)))
    seqs, events = await read_log(backend, sid)
    assert_contiguous(seqs, 20)
    require(said(events) == [f"r:{n}" for n in range(20)], "retries from other processes duplicated events")


IN_PROCESS: tuple[Check, ...] = (
    check_append_order_and_contiguous_sequences,
    check_events_since_is_exclusive,
    check_events_since_on_a_new_object,
    check_sessions_are_isolated,
    check_snapshot_is_the_projection_of_the_log,
    check_a_reader_sees_what_others_append,
    check_concurrent_writers_in_one_process,
    check_a_failed_append_writes_nothing,
    check_a_cancelled_append_is_whole,
    check_unknown_event_types_survive,
    check_exotic_json_round_trips,
    check_compaction_over_the_backend,
    check_a_retried_append_is_a_no_op,
    check_a_partly_stored_retry_appends_the_rest,
    check_generated_ids_are_unique,
    check_expected_seq_conflicts_write_nothing,
    check_format_versions_are_read_by_their_rules,
    check_window_compaction_keeps_recent_turns_and_pairs,
    check_compaction_keeps_tool_turns_whole,
    check_checkpoint_plus_tail_is_the_projection,
    check_requests_are_rebuilt_from_the_stored_log,
    check_custom_events_round_trip,
    check_approval_events_round_trip_exactly,
    check_one_decision_per_request,
    check_a_run_pauses_and_resumes_on_the_backend,
    check_sub_agent_and_handoff_requests_resume,
    check_decisions_fail_closed,
    check_a_paused_run_survives_compaction,
    *BRANCH_CHECKS,
)
MULTI_PROCESS: tuple[Check, ...] = (
    check_concurrent_writers_in_separate_processes,
    check_a_run_resumes_in_another_process,
    check_retries_from_separate_processes_store_one_copy,
    check_a_paused_run_resumes_in_another_process,
)
CRASH: tuple[Check, ...] = (
    check_a_killed_writer_leaves_whole_appends,
    check_a_killed_run_is_repaired,
    check_a_killed_run_keeps_the_results_that_returned,
    check_a_killed_resume_is_repaired,
    check_a_killed_run_goes_on_with_resume,
)
"""The checks that kill a writer process (they need `crash_safe`)."""


def checks_for(backend: ConformanceBackend) -> list[Check]:
    """The checks that apply to `backend`.

    Process checks need `opener`, the crash check `crash_safe`, the listing and metadata checks
    `list_sessions`,
    the damaged-checkpoint check `damage_checkpoint`; `branching=False` leaves out the branch checks.
    """
    checks = [c for c in IN_PROCESS if backend.branching or c not in BRANCH_CHECKS]
    if backend.damage_checkpoint is not None:
        checks.append(check_a_damaged_checkpoint_is_rebuilt)
    if backend.list_sessions is not None:
        checks += (check_sessions_are_listed, *METADATA_CHECKS)
    if backend.opener is not None:
        checks += MULTI_PROCESS
        if backend.crash_safe:
            checks += CRASH
    return checks


async def run_all(backend: ConformanceBackend) -> None:
    """Run every applicable check in turn (raises `AssertionError` on the first miss)."""
    for check in checks_for(backend):
        await check(backend)


__all__ = [
    "IN_PROCESS",
    "check_a_killed_resume_is_repaired",
    "check_a_killed_run_goes_on_with_resume",
    "check_a_paused_run_resumes_in_another_process",
    "check_a_paused_run_survives_compaction",
    "check_decisions_fail_closed",
    "check_a_run_pauses_and_resumes_on_the_backend",
    "check_approval_events_round_trip_exactly",
    "check_one_decision_per_request",
    "check_sub_agent_and_handoff_requests_resume",
    "METADATA_CHECKS",
    "MULTI_PROCESS",
    "check_concurrent_metadata_updates_lose_nothing",
    "check_custom_events_round_trip",
    "check_metadata_is_read_and_compared",
    "check_sessions_are_filtered_by_metadata",
    "Check",
    "ConformanceBackend",
    "DamageCheckpoint",
    "check_a_damaged_checkpoint_is_rebuilt",
    "check_a_failed_append_writes_nothing",
    "check_a_cancelled_append_is_whole",
    "check_requests_are_rebuilt_from_the_stored_log",
    "check_a_killed_writer_leaves_whole_appends",
    "check_a_killed_run_is_repaired",
    "check_a_killed_run_keeps_the_results_that_returned",
    "CRASH",
    "check_a_reader_sees_what_others_append",
    "check_a_retried_append_is_a_no_op",
    "check_a_partly_stored_retry_appends_the_rest",
    "check_a_run_resumes_in_another_process",
    "check_append_order_and_contiguous_sequences",
    "check_checkpoint_plus_tail_is_the_projection",
    "check_compaction_over_the_backend",
    "check_compaction_keeps_tool_turns_whole",
    "check_concurrent_writers_in_one_process",
    "check_concurrent_writers_in_separate_processes",
    "check_events_since_is_exclusive",
    "check_exotic_json_round_trips",
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
    "check_rewind_and_fork_with_a_stale_expected_seq_change_nothing",
    "check_rewind_survives_reopening",
    "BRANCH_CHECKS",
    "check_snapshot_is_the_projection_of_the_log",
    "check_unknown_event_types_survive",
    "checks_for",
    "run_all",
]
