"""Marker files the test servers write (what they saw: a cancel, a call), and waiting for them."""

from __future__ import annotations

import asyncio
from pathlib import Path


def says(marker: Path) -> str | None:
    """The marker's text, or None while the server has not written it."""
    return marker.read_text() if marker.exists() else None


async def until(marker: Path, text: str) -> None:
    """Wait (bounded, ~10 s) until `marker` says `text`."""
    for _ in range(1000):
        if says(marker) == text:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{marker} never said {text!r} (it says {says(marker)!r})")
