"""`GET /sessions/{session_id}/requests`: every model call of a session, as it was sent and answered.

Rebuilt from the session's log (`helikon.core.session.request_log`): for each turn, the
exact request (the messages, the tools offered, the settings, the provider and model from
the request header in force), its answer as logged (the assistant message and the tool
calls), the usage the provider reported, and the time from the event the model answered
to the answer. What a developer reads to see why the model did what it did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from ..core.items import ITEM_ADAPTER
from ..core.session import AssistantMessageEvent, RequestHeader, SessionEntry, ToolCalled
from ..core.session.codec import encode_event
from ..core.session.request_log import rebuild_requests, settings_to_json, turn_starts


def model_calls(entries: Sequence[SessionEntry], *, with_messages: int | None = None) -> list[dict[str, Any]]:
    """Each model call of the log, in order (see the module).

    A call's `messages` (the whole conversation it was sent) come with turn `with_messages`
    only; the others give their count (`message_count`): a long session's calls would
    otherwise repeat its history once per call.

    Raises:
        UserError: A turn has no request header before it (a log written without request records).
    """
    requests = rebuild_requests(entries)
    calls: list[dict[str, Any]] = []
    header: RequestHeader | None = None
    starts = turn_starts(entries)
    next_turn = 0
    for index, entry in enumerate(entries):
        if isinstance(entry.event, RequestHeader):
            header = entry.event
        if next_turn >= len(starts) or index != starts[next_turn]:
            continue
        answer = _answer(entries, index)
        request = requests[next_turn]
        usage = next((e.usage for e in answer if isinstance(e, AssistantMessageEvent) and e.usage), None)
        before = entries[index - 1].event if index > 0 else None
        started = getattr(before, "ts", None)
        ended = getattr(answer[-1], "ts", None)
        calls.append(
            {
                "turn": next_turn,
                "seq": entry.seq,
                "provider": header.provider if header else None,
                "model": header.model if header else None,
                "settings": settings_to_json(request.model_settings),
                "tools": [{"name": t.name, "description": t.description} for t in request.tools],
                "message_count": len(request.messages),
                "answer": [json.loads(encode_event(e)) for e in answer],
                "usage": None if usage is None else to_jsonable_python(usage),
                "latency_s": (ended - started).total_seconds() if started and ended else None,
            }
        )
        if next_turn == with_messages:
            calls[-1]["messages"] = [json.loads(ITEM_ADAPTER.dump_json(m)) for m in request.messages]
        next_turn += 1
    return calls


def _answer(entries: Sequence[SessionEntry], start: int) -> list[Any]:
    """The events of the turn starting at `start`: its assistant messages and tool calls."""
    answer: list[Any] = []
    for entry in entries[start:]:
        if not isinstance(entry.event, AssistantMessageEvent | ToolCalled):
            break
        answer.append(entry.event)
    return answer


__all__ = ["model_calls"]
