"""A session's log as lines a person reads: who said what, tool calls in one line each."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

TOOL_RESULT_CHARS = 80
"""How much of a tool's result a transcript shows (the rest is folded into `…`)."""


def transcript_lines(entries: Iterable[Any]) -> Iterator[str]:
    """The lines of a session's entries (`SessionEntry`s or bare events)."""
    for entry in entries:
        event = getattr(entry, "event", entry)
        kind = getattr(event, "type", "")
        if kind == "user_message":
            yield f"you: {_text(event.content)}"
        elif kind == "assistant_message":
            yield f"{event.agent or 'agent'}: {_text(event.content)}"
        elif kind == "tool_called":
            yield f"  > {event.name}({_brief(json.dumps(event.args, ensure_ascii=False))})"
        elif kind == "tool_returned":
            mark = "!" if event.is_error else "<"
            yield f"  {mark} {_brief(_text(event.content))}"
        elif kind == "handoff_occurred":
            yield f"  -> {event.from_agent} handed off to {event.to_agent}"


def active_entries(entries: Sequence[Any]) -> list[Any]:
    """The entries of the active branch, in order (what a rewind left out is not in it)."""
    from ..core.session.branches import event_parents

    parents, head = event_parents([entry.event for entry in entries])
    seqs: list[int] = []
    while head >= 0:
        seqs.append(head)
        head = parents[head]
    return [entries[seq] for seq in reversed(seqs)]


def _text(parts: Iterable[Any]) -> str:
    return "".join(getattr(part, "text", "") or "" for part in parts)


def _brief(text: str, limit: int = TOOL_RESULT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["TOOL_RESULT_CHARS", "active_entries", "transcript_lines"]
