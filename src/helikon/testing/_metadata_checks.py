"""Conformance checks for an application's own data in a session: `CustomEvent`s and metadata.

`check_custom_events_round_trip` applies to every backend; the metadata checks to a store
that lists its sessions (`ConformanceBackend.list_sessions`): `metadata()`, compare-and-set
on `set_metadata(..., expected_version=...)` raced by concurrent writers, and
`list_sessions(filter=...)`.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from helikon.core.exceptions import MetadataConflict, UserError
from helikon.core.items import TextPart
from helikon.core.session import AssistantMessageEvent, CustomEvent, SessionMetadata, project

from ._conformance_backend import Check, ConformanceBackend
from ._conformance_util import close_session, new_id, require, user_event


async def check_custom_events_round_trip(backend: ConformanceBackend) -> None:
    """A `CustomEvent` comes back equal (kind, data, ts) from `events()`, and projects to nothing."""
    sid = new_id("custom")
    when = datetime(2026, 5, 1, 12, 30, 15, 250000, tzinfo=UTC)
    facts = [
        CustomEvent(kind="order_placed", data={"order": 17, "items": ["tea", None], "total": 9.5}, ts=when),
        CustomEvent(kind="flag", data=True),
        CustomEvent(kind="note", data="ü ✓"),
    ]
    log = [user_event("hi"), facts[0], AssistantMessageEvent(content=(TextPart(text="ok"),)), *facts[1:]]
    session = await backend.open(sid)
    try:
        await session.append(log[:2])
        await session.append(log[2:])
    finally:
        await close_session(session)
    reader = await backend.open(sid)
    try:
        events = [entry.event for entry in await reader.events()]
        snapshot = await reader.snapshot()
    finally:
        await close_session(reader)
    require(events == log, f"custom events did not come back equal, in order: {events}")
    require(snapshot == project(log), "a snapshot over custom events is not the projection of the log")
    require([m.type for m in snapshot.messages] == ["user", "assistant"], "custom events project to nothing")


def _metadata_of(session: Any) -> Any:
    require(callable(getattr(session, "metadata", None)), f"{type(session).__name__} has no metadata()")
    return session


async def check_metadata_is_read_and_compared(backend: ConformanceBackend) -> None:
    """`metadata()` reads title, metadata and version; a stale `expected_version` writes nothing."""
    sid = new_id("meta")
    session = _metadata_of(await backend.open(sid))
    try:
        require(await session.metadata() == SessionMetadata(), "a new session's metadata is empty, version 0")
        await session.append([user_event("hi")])
        require((await session.metadata()).version == 0, "an append leaves the metadata version alone")
        await session.set_metadata(title="Trip", metadata={"user": "u1"}, expected_version=0)
        first: SessionMetadata = await session.metadata()
        require(first == SessionMetadata(title="Trip", metadata={"user": "u1"}, version=1), f"read {first}")
        await session.set_metadata(metadata={"user": "u1", "step": 2}, expected_version=first.version)
        try:
            await session.set_metadata(title="stale", expected_version=first.version)
        except MetadataConflict as exc:
            require((exc.expected_version, exc.actual_version) == (1, 2), f"conflict figures: {exc}")
        else:
            raise AssertionError("set_metadata with a stale expected_version did not raise MetadataConflict")
        await session.set_metadata(title="Trip 2")  # without expected_version: always written
        now = await session.metadata()
        require(
            now == SessionMetadata(title="Trip 2", metadata={"user": "u1", "step": 2}, version=3), f"{now}"
        )
        for bad in (-1, "1", True):
            try:
                await session.set_metadata(title="x", expected_version=bad)
            except UserError:
                continue
            raise AssertionError(f"expected_version={bad!r} was not refused with a UserError")
    finally:
        await close_session(session)
    fresh = _metadata_of(await backend.open(sid))
    try:
        require((await fresh.metadata()).version == 3, "another session object reads the same version")
        try:
            await fresh.set_metadata(title="late", expected_version=0)
        except MetadataConflict:
            pass
        else:
            raise AssertionError("expected_version=0 on a session with metadata did not conflict")
    finally:
        await close_session(fresh)


async def check_concurrent_metadata_updates_lose_nothing(backend: ConformanceBackend) -> None:
    """Writers on separate session objects increment a counter by read + compare-and-set: none is lost."""
    sid = new_id("meta-race")
    writers, each = 6, 5
    conflicts = 0

    async def writer() -> None:
        nonlocal conflicts
        session = _metadata_of(await backend.open(sid))
        try:
            done = 0
            while done < each:
                read: SessionMetadata = await session.metadata()
                count = int(read.metadata.get("count", 0))  # type: ignore[arg-type]
                try:
                    await session.set_metadata(metadata={"count": count + 1}, expected_version=read.version)
                except MetadataConflict:
                    conflicts += 1
                    await asyncio.sleep(0)
                    continue
                done += 1
        finally:
            await close_session(session)

    await asyncio.gather(*(writer() for _ in range(writers)))
    reader = _metadata_of(await backend.open(sid))
    try:
        final: SessionMetadata = await reader.metadata()
    finally:
        await close_session(reader)
    total = writers * each
    require(final.metadata == {"count": total}, f"lost updates: {final.metadata} after {total} increments")
    require(final.version == total, f"the version counts the writes: {final.version}, not {total}")


async def check_sessions_are_filtered_by_metadata(backend: ConformanceBackend) -> None:
    """`list_sessions(filter=...)` keeps the sessions whose metadata has each key with an equal JSON value."""
    require(backend.list_sessions is not None, "backend.list_sessions is not None")
    assert backend.list_sessions is not None
    user = new_id("user")  # unique: the store holds other checks' sessions too
    stored: dict[str, dict[str, Any]] = {
        new_id("f-a"): {"user": user, "n": 1, "ok": True, "gone": None, "tags": ["x"]},
        new_id("f-b"): {"user": user, "n": 2.5, "ok": False},
        new_id("f-c"): {"user": user, "n": "1", "ok": 1},
        new_id("f-d"): {"user": f"{user}-other", "n": 1},
    }
    for sid, metadata in stored.items():
        session = _metadata_of(await backend.open(sid))
        try:
            await session.append([user_event(sid)])
            await session.set_metadata(metadata=metadata)
        finally:
            await close_session(session)
        await asyncio.sleep(0.01)  # distinct `updated` times (ms in Redis): a stable order
    a, b, c, _ = stored

    async def ids(**query: Any) -> list[str]:
        assert backend.list_sessions is not None
        return [info.session_id for info in await backend.list_sessions(limit=100, offset=0, **query)]

    mine = await ids(filter={"user": user})
    require(mine == [c, b, a], f"filter by user, newest first: {mine}")
    require(await ids(filter={"user": user, "n": 1.0}) == [a], "numbers compare as numbers (1 matches 1.0)")
    require(await ids(filter={"user": user, "n": "1"}) == [c], "a string is not a number")
    require(await ids(filter={"user": user, "ok": True}) == [a], "true is not 1")
    require(await ids(filter={"user": user, "ok": False}) == [b], "false")
    require(
        await ids(filter={"user": user, "gone": None}) == [a], "None matches a stored null, not a missing key"
    )
    require(await ids(filter={"user": user, "n": 3}) == [], "no session matches")
    require(await ids(filter={"user": user, "missing": "x"}) == [], "a key no session has")
    page = await backend.list_sessions(limit=1, offset=1, filter={"user": user})
    require([info.session_id for info in page] == [b], "limit and offset page through the filtered list")
    require(page[0].metadata == stored[b], f"the listed metadata: {page[0].metadata}")
    for bad in ({"tags": ["x"]}, {"user": {"a": 1}}, {1: "x"}, {"n": float("nan")}, "user"):
        try:
            await backend.list_sessions(limit=10, offset=0, filter=bad)
        except UserError:
            continue
        raise AssertionError(f"filter={bad!r} was not refused with a UserError")


METADATA_CHECKS: tuple[Check, ...] = (
    check_metadata_is_read_and_compared,
    check_concurrent_metadata_updates_lose_nothing,
    check_sessions_are_filtered_by_metadata,
)
"""The checks of `metadata()`, compare-and-set and filtered listing (need `list_sessions`)."""

__all__ = [
    "METADATA_CHECKS",
    "check_concurrent_metadata_updates_lose_nothing",
    "check_custom_events_round_trip",
    "check_metadata_is_read_and_compared",
    "check_sessions_are_filtered_by_metadata",
]
