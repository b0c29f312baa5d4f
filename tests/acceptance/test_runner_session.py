"""Two turns through AsyncioRunner over one MemorySession: the exact events and the exact log."""

from __future__ import annotations

import itertools
from typing import Any

from helikon import (
    AssistantMessage,
    LlmAgent,
    MemorySession,
    RunContext,
    TextPart,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
)
from helikon.core.session import (
    AssistantMessageEvent,
    RequestHeader,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
)
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
async def balance(account: str) -> dict[str, float]:
    """Look up an account balance."""
    return {"balance": 1200.0}


async def test_two_turns_record_the_exact_events_and_log() -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("balance", {"account": "checking"}, call_id="call_1"),
            text_turn("You have $1,200 in checking."),
            text_turn("About $400 a month.", chunk_size=10),
        ]
    )
    agent = LlmAgent[None](
        name="banker", model=model, instructions="You are a bank assistant.", tools=[balance]
    )
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    runner = AsyncioRunner[None]()

    first = await runner.run(agent, "What's my checking balance?", ctx)
    assert [e.type for e in first.events] == [
        "run_started",
        "turn_started",
        "tool_call_delta",
        "tool_call_item",
        "tool_output_item",
        "turn_started",
        "token_delta",
        "message_output",
        "run_completed",
    ]
    second = await runner.run(agent, "How much can I save?", ctx)
    assert [e.type for e in second.events] == [
        "run_started",
        "turn_started",
        "token_delta",
        "token_delta",
        "message_output",
        "run_completed",
    ]
    assert second.final_output == "About $400 a month."

    entries = await session.events()
    assert [seq for seq, _ in entries] == [0, 1, 2, 3, 4, 5, 6]
    # The request header is recorded once: the second run sent the same system prompt,
    # tools and settings, so it adds none.
    headers = [event for _, event in entries if isinstance(event, RequestHeader)]
    assert len(headers) == 1 and [t.name for t in headers[0].tools] == ["balance"]
    log: list[Any] = [event for _, event in entries if not isinstance(event, RequestHeader)]
    expected_types = [
        UserMessageEvent,
        ToolCalled,
        ToolReturned,
        AssistantMessageEvent,
        UserMessageEvent,
        AssistantMessageEvent,
    ]
    assert [type(e) for e in log] == expected_types
    assert log[1] == ToolCalled(call_id="call_1", name="balance", args={"account": "checking"}, ts=log[1].ts)
    assert log[2] == ToolReturned(
        call_id="call_1", content=(TextPart(text='{"balance":1200.0}'),), name="balance", ts=log[2].ts
    )
    assert all(a.ts <= b.ts for a, b in itertools.pairwise(log))

    # The second model call saw the whole first exchange, projected from the log.
    assert list(model.requests[2].messages)[1:] == [
        UserMessage.from_text("What's my checking balance?"),
        ToolCall(call_id="call_1", name="balance", args={"account": "checking"}),
        ToolResult(call_id="call_1", content=(TextPart(text='{"balance":1200.0}'),), name="balance"),
        AssistantMessage.from_text("You have $1,200 in checking.", agent="banker"),
        UserMessage.from_text("How much can I save?"),
    ]
    snapshot = await session.snapshot()
    assert snapshot.messages[-1] == AssistantMessage.from_text("About $400 a month.", agent="banker")
