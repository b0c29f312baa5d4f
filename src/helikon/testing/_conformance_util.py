"""Helpers the session conformance checks share (their failures, logs and worker processes)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from helikon.core.items import TextPart
from helikon.core.session import AssistantMessageEvent, SessionEvent, UserMessageEvent

if TYPE_CHECKING:
    from ._conformance_backend import ConformanceBackend


def require(condition: object, message: str) -> None:
    """Fail the check (explicitly, so the suite also works under `python -O`)."""
    if not condition:
        raise AssertionError(message)


async def close_session(session: object) -> None:
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()


def new_id(tag: str) -> str:
    return f"conformance-{tag}-{uuid.uuid4().hex[:12]}"


def user_event(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


def said(events: Sequence[SessionEvent]) -> list[str]:
    return [
        "".join(p.text for p in event.content if isinstance(p, TextPart))
        for event in events
        if isinstance(event, UserMessageEvent | AssistantMessageEvent)
    ]


async def read_log(backend: ConformanceBackend, session_id: str) -> tuple[list[int], list[SessionEvent]]:
    session = await backend.open(session_id)
    try:
        entries = await session.events()
    finally:
        await close_session(session)
    return [int(e.seq) for e in entries], [e.event for e in entries]


def assert_contiguous(seqs: list[int], expected: int | None = None) -> None:
    require(
        seqs == list(range(len(seqs))), f"sequences are not 0..n-1 without gaps or duplicates: {seqs[:50]}"
    )
    if expected is not None:
        require(len(seqs) == expected, f"expected {expected} events, found {len(seqs)}")


# --- in-process checks ---------------------------------------------------------------------------


def worker_argv(backend: ConformanceBackend, session_id: str, action: dict[str, Any]) -> list[str]:
    spec = {"opener": backend.opener, "kwargs": backend.opener_kwargs, "session_id": session_id, **action}
    return [sys.executable, "-m", "helikon.testing._conformance_worker", json.dumps(spec)]


async def run_worker(argv: list[str], seconds: float = 120) -> str:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    async with asyncio.timeout(seconds):
        out, err = await process.communicate()
    require(process.returncode == 0, f"worker failed ({process.returncode}): {err.decode()[-2000:]}")
    return out.decode()


__all__ = [
    "assert_contiguous",
    "close_session",
    "new_id",
    "read_log",
    "require",
    "run_worker",
    "said",
    "user_event",
    "worker_argv",
]
