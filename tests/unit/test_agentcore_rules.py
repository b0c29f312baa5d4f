"""helikon.agentcore's rules on their own: the ping stamp, the session header, payloads, session URLs."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from helikon.agentcore import Health, PingStatus, custom_headers, prompt_input
from helikon.agentcore.headers import BadSessionId, session_id_of
from helikon.agentcore.payloads import Decide, PayloadError, Start, read_payload
from helikon.agentcore.worker import WorkerLoop
from helikon.core.exceptions import UserError
from helikon.server import InMemorySessionProvider, SqliteSessionProvider, session_provider


def counting_clock() -> Any:
    """A clock that moves one second at every reading: any extra stamp shows."""
    ticks = itertools.count(1000)
    return lambda: float(next(ticks))


def test_the_stamp_is_set_at_start_and_moves_only_when_the_status_changes() -> None:
    health = Health(clock=counting_clock())
    start = health.ping()
    assert start == {"status": "Healthy", "time_of_last_update": 1000}
    assert [health.ping() for _ in range(3)] == [start] * 3  # a ping never re-stamps
    health.enter()
    busy = health.ping()
    assert busy == {"status": "HealthyBusy", "time_of_last_update": 1001}
    health.enter()  # more work while busy: no change of status, no new stamp
    health.leave()
    assert health.ping() == busy
    health.leave()
    assert health.ping() == {"status": "Healthy", "time_of_last_update": 1002}
    assert health.ping() == {"status": "Healthy", "time_of_last_update": 1002}


def test_force_pins_a_status_until_cleared() -> None:
    health = Health(clock=counting_clock())
    health.force(PingStatus.HEALTHY_BUSY)
    assert health.ping() == {"status": "HealthyBusy", "time_of_last_update": 1001}
    health.enter()
    health.leave()
    assert health.ping()["time_of_last_update"] == 1001
    health.force("Healthy")
    assert health.ping() == {"status": "Healthy", "time_of_last_update": 1002}
    health.force(None)  # back to counting: still no work, so no change
    assert health.ping()["time_of_last_update"] == 1002
    with pytest.raises(ValueError, match="Busy"):
        health.force("Busy")


async def test_spawned_and_tracked_work_keeps_the_container_busy_until_it_ends() -> None:
    health = Health()
    release = asyncio.Event()
    task = health.spawn(release.wait())
    assert health.status is PingStatus.HEALTHY_BUSY
    release.set()
    await task
    await asyncio.sleep(0)  # the done callback runs on the next step of the loop
    assert health.status is PingStatus.HEALTHY
    failing = health.spawn(asyncio.sleep(0, result=None))
    await failing
    await asyncio.sleep(0)
    assert health.open == 0


def test_leave_without_enter_never_goes_below_idle() -> None:
    health = Health()
    health.leave()
    health.enter()
    assert health.status is PingStatus.HEALTHY_BUSY


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "is empty"),
        ("a" * 257, "257 characters long"),
        ("has space", "contains ' '"),
        ("tab\there", r"contains '\\t'"),
        ("café", "contains 'é'"),
    ],
)
def test_a_malformed_session_header_is_refused_with_what_is_wrong(value: str, why: str) -> None:
    with pytest.raises(BadSessionId, match=why):
        session_id_of(value)


def test_a_well_formed_session_header_is_the_session_id() -> None:
    long_id = "agentcore-" + "7" * 246
    assert session_id_of(long_id) == long_id
    assert session_id_of("s:1/2.3-4_5") == "s:1/2.3-4_5"
    assert session_id_of(None) is None


def test_custom_headers_are_the_pass_through_ones_by_their_own_name() -> None:
    headers = {
        "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Tenant": "acme",
        "x-amzn-bedrock-agentcore-runtime-custom-plan": "pro",
        "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": "s1",
        "Authorization": "Bearer x",
    }
    assert custom_headers(headers) == {"tenant": "acme", "plan": "pro"}


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ({}, "no prompt"),
        ({"prompt": 3}, "prompt is a JSON number"),
        ({"prompt": None}, "no prompt"),
        ([1, 2], "the payload is a JSON array"),
        ("hello", "the payload is a JSON string"),
        (None, "the payload is a JSON null"),
    ],
)
def test_a_payload_without_a_prompt_says_what_to_send(payload: Any, why: str) -> None:
    with pytest.raises(PayloadError, match=why) as raised:
        read_payload(payload, prompt_input)
    assert '{"prompt": "<text>"}' in str(raised.value)


def test_a_payload_is_a_prompt_or_decisions() -> None:
    assert read_payload({"prompt": "Hi"}, prompt_input) == Start("Hi")
    decided = read_payload({"decisions": {"r1": {"decision": "approve"}}}, prompt_input)
    assert isinstance(decided, Decide) and list(decided.decisions) == ["r1"] and not decided.deny_rest
    with pytest.raises(PayloadError, match="decide at least one request"):
        read_payload({"decisions": {}}, prompt_input)


def test_input_from_maps_any_payload_and_its_errors_become_payload_errors() -> None:
    def question(payload: Any) -> str:
        if "question" not in payload:
            raise ValueError('send {"question": "..."}')
        return payload["question"]

    assert read_payload({"question": "Why?"}, question) == Start("Why?")
    with pytest.raises(PayloadError, match="question"):
        read_payload({"prompt": "Hi"}, question)


def test_session_urls_name_each_backend() -> None:
    assert isinstance(session_provider("memory"), InMemorySessionProvider)
    sqlite = session_provider("sqlite:///var/data/s.db")
    assert isinstance(sqlite, SqliteSessionProvider) and sqlite.path == "/var/data/s.db"
    relative = session_provider("sqlite://data/s.db")
    assert isinstance(relative, SqliteSessionProvider) and relative.path == "data/s.db"
    for url in ("postgresql://u:p@h/db", "postgres://h/db", "redis://h:6379/0", "rediss://h"):
        assert hasattr(session_provider(url), "aclose")


def test_a_bad_session_url_names_the_schemes_and_never_the_password() -> None:
    with pytest.raises(UserError, match="one of memory, sqlite, postgresql") as raised:
        session_provider("mysql://admin:hunter2@db/agents")
    assert "hunter2" not in str(raised.value)
    with pytest.raises(UserError, match="name the file"):
        session_provider("sqlite://")


async def test_the_worker_loop_runs_work_on_its_own_thread_and_streams_back() -> None:
    import threading

    worker = WorkerLoop()
    worker.start()
    try:

        async def where() -> str:
            return threading.current_thread().name

        assert await worker.call(where()) == "helikon-agentcore-runs"

        async def numbers() -> AsyncIterator[int]:
            for n in range(5):
                yield n

        assert [n async for n in worker.stream(numbers)] == [0, 1, 2, 3, 4]

        async def broken() -> AsyncIterator[int]:
            yield 1
            raise RuntimeError("the source broke")

        got: list[int] = []

        async def collect() -> None:
            async for n in worker.stream(broken):
                got.append(n)  # noqa: PERF401 - what came before the error is what is checked

        with pytest.raises(RuntimeError, match="the source broke"):
            await collect()
        assert got == [1]
    finally:
        worker.stop()
    assert not worker.started


async def test_leaving_a_stream_early_stops_the_worker_side() -> None:
    worker = WorkerLoop()
    worker.start()
    stopped = asyncio.Event()
    here = asyncio.get_running_loop()
    try:

        async def endless() -> AsyncIterator[int]:
            try:
                n = 0
                while True:
                    yield n
                    n += 1
                    await asyncio.sleep(0)
            finally:
                here.call_soon_threadsafe(stopped.set)

        stream = worker.stream(endless)
        async for n in stream:
            if n == 3:
                break
        await stream.aclose()  # type: ignore[attr-defined]
        await asyncio.wait_for(stopped.wait(), 30)
        assert stopped.is_set()  # the worker side's generator was closed
    finally:
        worker.stop()
