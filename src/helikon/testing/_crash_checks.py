"""Conformance checks that kill a writer process with SIGKILL (they need `crash_safe` and `opener`)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from helikon.core.items import TextPart
from helikon.core.session import ToolReturned

from ._conformance_util import (
    assert_contiguous,
    close_session,
    new_id,
    read_log,
    require,
    said,
    user_event,
    worker_argv,
)
from ._mock_model import MockModel
from ._scripts import text_turn

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend


async def check_a_killed_writer_leaves_whole_appends(backend: ConformanceBackend) -> None:
    """SIGKILL in the middle of multi-event appends: each append is all there or not at all."""
    require(backend.opener is not None, "backend.opener is not None")
    sid = new_id("crash")
    batch = 200
    argv = worker_argv(backend, sid, {"action": "batches_forever", "size": batch})
    process = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = process.stdout
    if stdout is None:
        raise AssertionError("the writer has no stdout")
    try:
        # Wait until the writer has committed a few batches, then kill it mid-flight.
        for _ in range(3):
            async with asyncio.timeout(120):
                line = await stdout.readline()
            require(line, "the writer died before committing a batch")
        await asyncio.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
    seqs, events = await read_log(backend, sid)
    assert_contiguous(seqs)
    texts = said(events)
    _require_whole_batches(texts, batch)
    session = await backend.open(sid)
    try:
        await session.append([user_event("after the crash")])
        after = await session.events()
    finally:
        await close_session(session)
    # The server may still finish an append the writer sent just before it died (a SQL
    # COMMIT, a script call) after the first read: the log then holds one more whole batch,
    # before or after the new event. This check cannot see the server's connections, so it
    # allows that batch rather than racing it; whole batches and one new event must hold.
    assert_contiguous([int(e.seq) for e in after])
    later = said([e.event for e in after])
    require(later.count("after the crash") == 1, f"the append after the crash is stored once: {later[-3:]}")
    where = later.index("after the crash")
    late = len(later) - 1 - len(texts)
    require(late in (0, batch), f"{late} events appeared after the kill, not 0 or one batch of {batch}")
    require(where in (len(texts), len(texts) + late), f"the append after the crash landed at {where}")
    _require_whole_batches(later[:where] + later[where + 1 :], batch)


def _require_whole_batches(texts: list[str], batch: int) -> None:
    require(len(texts) % batch == 0, f"{len(texts)} events: a batch of {batch} was cut")
    for start in range(0, len(texts), batch):
        number = start // batch
        require(
            texts[start : start + batch] == [f"b{number}:{i}" for i in range(batch)],
            (f"batch {number} is torn"),
        )


async def check_a_killed_run_is_repaired(backend: ConformanceBackend) -> None:
    """A durable run killed while its tool runs: the next run repairs the turn, then sends a valid request."""
    require(backend.opener is not None, "backend.opener is not None")
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunContext
    from helikon.core.conversation_check import is_provider_valid
    from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT
    from helikon.runtime import AsyncioRunner

    sid = new_id("killed-run")
    async with _killed_when_done(backend, sid, "run_until_killed", "its tool started"):
        pass
    seqs, events = await read_log(backend, sid)
    kinds = [e.type for e in events]
    require(
        kinds[:1] == ["turn_opened"] and "tools_started" in kinds and "turn_closed" not in kinds,
        f"a durable run logs as it goes (the turn, the call, the start marker): {kinds}",
    )
    session = await backend.open(sid)
    try:
        model = MockModel.with_scripts([text_turn("It may have been paid: let me check first.")])
        agent = LlmAgent[None](name="payer", model=model)
        await AsyncioRunner[None]().run(
            agent, "did it go through?", RunContext.ephemeral(None).with_session(session)
        )
    finally:
        await close_session(session)
    sent = list(model.requests[0].messages)
    require(is_provider_valid(sent), f"the resumed run sent a conversation providers refuse: {sent}")
    seqs, events = await read_log(backend, sid)
    assert_contiguous(seqs)
    repaired = [e for e in events if isinstance(e, ToolReturned) and e.call_id == "pay-1"]
    require(
        len(repaired) == 1 and repaired[0].is_error and OUTCOME_UNKNOWN_TEXT in _part_text(repaired[0]),
        f"the dangling call must get one 'outcome unknown' result: {repaired}",
    )
    closed = [e for e in events if e.type == "turn_closed"]
    require(
        [getattr(e, "outcome", None) for e in closed] == ["interrupted", "completed"],
        f"the killed turn is closed as interrupted, the new one as completed: {closed}",
    )


async def check_a_killed_run_keeps_the_results_that_returned(backend: ConformanceBackend) -> None:
    """A durable run killed while one call of a parallel batch still runs keeps its sibling's result.

    The sibling returned first: its result is stored when it returns, so the repair marks
    only the call still running as interrupted, and the conversation keeps call order.
    """
    require(backend.opener is not None, "backend.opener is not None")
    from helikon.core.items import ToolResult
    from helikon.core.session import project
    from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT, close_interrupted_turn

    sid = new_id("killed-batch")
    try:
        async with _killed_when_done(backend, sid, "parallel_run_until_killed", "its tools started"):
            # The slow call runs until the kill; the quick one has returned. Wait (bounded)
            # for its result to reach the log: a run that stores results only once the whole
            # batch is done never gets there.
            stored = False
            async with asyncio.timeout(60):
                while not stored:
                    _, events = await read_log(backend, sid)
                    stored = any(isinstance(e, ToolReturned) and e.call_id == "charge-1" for e in events)
                    if not stored:
                        await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(
            "the result of a call that returned was not stored while its sibling still ran"
        ) from None
    session = await backend.open(sid)
    try:
        await close_interrupted_turn(session)
        entries = await session.events()
        snapshot = await session.snapshot()
    finally:
        await close_session(session)
    results = {e.event.call_id: e.event for e in entries if isinstance(e.event, ToolReturned)}
    charged = results.get("charge-1")
    require(
        charged is not None and not charged.is_error and _part_text(charged) == "charged 4242",
        f"the call that returned keeps its real result: {charged}",
    )
    paying = results.get("pay-1")
    require(
        paying is not None and paying.is_error and OUTCOME_UNKNOWN_TEXT in _part_text(paying),
        f"only the call still running is repaired as 'outcome unknown': {paying}",
    )
    order = [m.call_id for m in project([e.event for e in entries]).messages if isinstance(m, ToolResult)]
    require(order == ["pay-1", "charge-1"], f"the conversation keeps the order the calls were made: {order}")
    stored = [m.call_id for m in snapshot.messages if isinstance(m, ToolResult)]
    require(stored == order, f"the session's snapshot shows the results as `project` does: {stored}")


@contextlib.asynccontextmanager
async def _killed_when_done(
    backend: ConformanceBackend, sid: str, action: str, what: str
) -> AsyncGenerator[None]:
    """A worker running `action` on session `sid`, entered once it printed that `what`.

    SIGKILLed on leaving.
    """
    argv = worker_argv(backend, sid, {"action": action})
    process = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = process.stdout
    if stdout is None:
        raise AssertionError("the worker has no stdout")
    try:
        async with asyncio.timeout(120):
            line = await stdout.readline()
        if not line:
            err = b"" if process.stderr is None else await process.stderr.read()
            raise AssertionError(f"the run died before {what}: {err.decode()[-2000:]}")
        yield
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()


def _part_text(event: ToolReturned) -> str:
    return "".join(p.text for p in event.content if isinstance(p, TextPart))


__all__ = ["check_a_killed_run_is_repaired", "check_a_killed_writer_leaves_whole_appends"]
