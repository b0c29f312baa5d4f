"""MemorySession passes the conformance suite (the in-process checks: it has no cross-process store)."""

from __future__ import annotations

import pytest

from helikon import MemorySession, Session
from helikon.testing import session_conformance as conformance

_STORE: dict[str, MemorySession] = {}


async def _open(session_id: str) -> Session:
    # One MemorySession per id, shared by every "connection" in this process.
    return _STORE.setdefault(session_id, MemorySession())


MEMORY = conformance.ConformanceBackend(name="memory", open=_open)


@pytest.mark.parametrize("check", conformance.checks_for(MEMORY), ids=lambda c: c.__name__)
async def test_memory_session_conforms(check: conformance.Check) -> None:
    await check(MEMORY)


def test_process_checks_need_an_opener() -> None:
    assert conformance.checks_for(MEMORY) == list(conformance.IN_PROCESS)
    durable = conformance.ConformanceBackend(name="x", open=_open, opener="m:f", crash_safe=True)
    assert conformance.checks_for(durable)[-1] is conformance.check_a_killed_writer_leaves_whole_appends
