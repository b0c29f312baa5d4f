"""RunLog: replay, then live events, each once; a subscriber that falls behind is dropped, not waited for."""

from __future__ import annotations

import asyncio

from helikon.server.run_log import RunLog, Tally


async def test_a_late_subscriber_gets_the_backlog_then_the_live_events_once_each() -> None:
    log = RunLog()
    for i in range(3):
        log.append("e", str(i).encode())
    late = log.subscribe(after=0)
    seen: list[int] = []

    async def read() -> None:
        async for entry in late:
            seen.append(entry.seq)
            if entry.seq == 2:
                log.append("e", b"3")  # appended while the replay is being read

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)
    log.append("e", b"4")
    log.close()
    await reader
    assert seen == [1, 2, 3, 4]
    assert [e.seq async for e in log.subscribe(after=3)] == [4]  # a closed log replays and ends


async def test_a_subscriber_that_falls_behind_is_dropped_and_the_log_goes_on() -> None:
    log = RunLog()
    slow = log.subscribe(limit=2)
    fast = log.subscribe(limit=100)
    for i in range(5):
        log.append("e", str(i).encode())  # never waits for anyone
    assert slow.dropped and not fast.dropped and log.subscribers == 1
    assert [e.seq async for e in slow] == []  # it learns it was dropped, and ends
    log.close()
    assert [e.seq async for e in fast] == [0, 1, 2, 3, 4]


async def test_a_tally_counts_the_subscribers_of_every_log_sharing_it() -> None:
    tally = Tally()
    first, second = RunLog(tally), RunLog(tally)
    a, b = first.subscribe(), second.subscribe(limit=1)
    assert tally.count == 2
    second.append("e", b"0")
    second.append("e", b"1")  # b falls behind and is dropped
    assert b.dropped and tally.count == 1
    a.cancel()
    a.cancel()  # twice: counted once
    assert tally.count == 0
    c = first.subscribe()
    first.close()
    assert tally.count == 0 and [e async for e in c] == []
