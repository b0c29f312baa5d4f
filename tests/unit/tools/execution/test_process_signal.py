"""`_process.Signal`: what `supervise` waits on for a command's exit and its drained pipes."""

from __future__ import annotations

import asyncio

import pytest

from helikon.tools.execution._process import Signal


async def test_a_wait_ends_when_the_signal_is_set() -> None:
    signal = Signal()
    asyncio.get_running_loop().call_later(0.01, signal.set)
    assert await signal.wait(30)
    assert signal.is_set()


async def test_a_wait_times_out_and_says_so() -> None:
    signal = Signal()
    assert not await signal.wait(0.01)
    assert not signal.is_set()


async def test_a_set_signal_returns_at_once() -> None:
    signal = Signal()
    signal.set()
    assert await signal.wait(0)


async def test_a_cancelled_wait_leaves_the_signal_usable() -> None:
    # supervise's finally waits again for the exit of a command whose task was cancelled.
    signal = Signal()
    waiting = asyncio.create_task(signal.wait(30))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    asyncio.get_running_loop().call_later(0.01, signal.set)
    assert await signal.wait(30)
