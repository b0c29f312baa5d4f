"""MemorySession (in a MemoryStore) passes the conformance suite: the in-process checks, listing
included (it has no cross-process store)."""

from __future__ import annotations

import pytest

from helikon import MemoryStore, Session
from helikon.testing import session_conformance as conformance

_STORE = MemoryStore()  # one MemorySession per id, shared by every "connection" in this process


async def _open(session_id: str) -> Session:
    return await _STORE.open(session_id)


MEMORY = conformance.ConformanceBackend(name="memory", open=_open, list_sessions=_STORE.list_sessions)


@pytest.mark.parametrize("check", conformance.checks_for(MEMORY), ids=lambda c: c.__name__)
async def test_memory_session_conforms(check: conformance.Check) -> None:
    await check(MEMORY)


def test_process_checks_need_an_opener() -> None:
    assert conformance.checks_for(MEMORY) == [
        *conformance.IN_PROCESS,
        conformance.check_sessions_are_listed,
        *conformance.METADATA_CHECKS,
    ]
    plain = conformance.ConformanceBackend(name="plain", open=_open, branching=False)
    assert conformance.check_fork_is_isolated not in conformance.checks_for(plain)
    durable = conformance.ConformanceBackend(name="x", open=_open, opener="m:f", crash_safe=True)
    assert conformance.checks_for(durable)[-len(conformance.CRASH) :] == list(conformance.CRASH)
