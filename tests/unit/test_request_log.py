"""Request records: `RequestHeader` in the log, usage on answers, and rebuilding each turn's request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helikon import LlmAgent, MemorySession, ModelSettings, RunConfig, RunContext
from helikon.core.events import RequestSent, TokenUsage
from helikon.core.exceptions import UserError
from helikon.core.items import AssistantMessage, TextPart, ToolCall, ToolResult, UserMessage
from helikon.core.model import ToolDef, Usage
from helikon.core.session import AssistantMessageEvent, RequestHeader, UserMessageEvent, project
from helikon.core.session.codec import decode_event, decode_events, encode_event, snapshot_from_payloads
from helikon.core.session.recorder import SessionRecorder
from helikon.core.session.request_log import (
    header_of,
    rebuild_request,
    rebuild_requests,
    settings_from_json,
    settings_to_json,
    turn_starts,
)
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn
from helikon.testing._request_checks import convert, lookup, same_request


def usage(n: int) -> Usage:
    return Usage(input_tokens=10 * n, output_tokens=n)


@pytest.mark.parametrize("durable", [False, True], ids=["after-the-run", "durable"])
async def test_every_turn_of_a_multi_turn_tool_run_is_rebuilt_exactly(durable: bool) -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("lookup", {"city": "Oslo"}, usage=usage(1)),
            tool_calls_turn([("lookup", {"city": "Rome"}), ("convert", {"celsius": 21})], usage=usage(2)),
            text_turn("Oslo is sunny, Rome is 70F.", usage=usage(3)),
            # second run: the same agent, so no new header
            tool_call_turn("convert", {"celsius": 5}, usage=usage(4)),
            text_turn("41F.", usage=usage(5)),
        ]
    )
    agent = LlmAgent(
        name="weather",
        model=model,
        instructions="Answer briefly.",
        tools=[lookup, convert],
        model_settings=ModelSettings(temperature=0.2, max_output_tokens=256),
    )
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    runner = AsyncioRunner[None]()
    config = RunConfig(durable=durable)  # durable: turn and tool-start markers in between
    await runner.run(agent, "Weather in Oslo and Rome?", ctx, config)
    await runner.run(agent, "And 5C?", ctx, config)

    entries = await session.events()
    assert ("turn_opened" in [e.event.type for e in entries]) is durable
    assert [e.event.type for e in entries].count("request_header") == 1
    assert len(model.requests) == 5
    assert len(turn_starts(entries)) == 5
    rebuilt = rebuild_requests(entries)
    for turn, sent in enumerate(model.requests):
        assert same_request(rebuild_request(entries, turn), sent), turn
        assert same_request(rebuilt[turn], sent), turn
    assert same_request(rebuild_request(entries, -1), model.requests[-1])

    header = next(e.event for e in entries if isinstance(e.event, RequestHeader))
    assert header.provider == "mock" and header.system == ("Answer briefly.",)
    assert [t.name for t in header.tools] == ["lookup", "convert"]
    assert header.settings == {"temperature": 0.2, "max_output_tokens": 256}
    answers = [e.event for e in entries if isinstance(e.event, AssistantMessageEvent)]
    assert [a.usage for a in answers] == [
        TokenUsage(input_tokens=30, output_tokens=3, requests=1),
        TokenUsage(input_tokens=50, output_tokens=5, requests=1),
    ]

    # The log as a durable backend reads it back (fast-path decode) rebuilds the same requests.
    decoded = decode_events([encode_event(e.event) for e in entries])
    assert [same_request(r, s) for r, s in zip(rebuild_requests(decoded), model.requests, strict=True)] == [
        True
    ] * 5


async def test_a_new_header_appears_only_when_instructions_or_tools_change() -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("lookup", {"city": "Oslo"}),
            text_turn("Sunny."),
            text_turn("Still sunny."),  # same agent again: no header
            tool_call_turn("convert", {"celsius": 20}),  # new instructions and tools: a header
            text_turn("68F."),
            text_turn("Bye."),  # back to the first agent: a header again
        ]
    )
    first = LlmAgent(name="a", model=model, instructions="Be brief.", tools=[lookup])
    second = LlmAgent(name="a", model=model, instructions="Be precise.", tools=[lookup, convert])
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    runner = AsyncioRunner[None]()
    await runner.run(first, "Oslo?", ctx)
    await runner.run(first, "Again?", ctx)
    await runner.run(second, "20C?", ctx)
    await runner.run(first, "Thanks.", ctx)

    entries = await session.events()
    types = [e.event.type for e in entries]
    assert types == [
        "user_message",
        "request_header",
        "tool_called",
        "tool_returned",
        "assistant_message",
        "user_message",
        "assistant_message",
        "user_message",
        "request_header",
        "tool_called",
        "tool_returned",
        "assistant_message",
        "user_message",
        "request_header",
        "assistant_message",
    ]
    headers = [e.event for e in entries if isinstance(e.event, RequestHeader)]
    assert [h.system for h in headers] == [("Be brief.",), ("Be precise.",), ("Be brief.",)]
    for turn, sent in enumerate(model.requests):
        assert same_request(rebuild_request(entries, turn), sent), turn

    # A fresh runner (another process, say) reads the log once and still adds no header.
    model.with_script(text_turn("Hello again."))
    await AsyncioRunner[None]().run(first, "Hi.", ctx)
    assert [e.event.type for e in await session.events()][-2:] == ["user_message", "assistant_message"]


async def test_a_header_written_by_another_writer_is_seen() -> None:
    model = MockModel.with_scripts([text_turn("one"), text_turn("two")])
    agent = LlmAgent(name="a", model=model, instructions="Be brief.")
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    runner = AsyncioRunner[None]()
    await runner.run(agent, "1", ctx)
    await session.append([RequestHeader(provider="other", model="x")])  # another agent's record
    await runner.run(agent, "2", ctx)
    entries = await session.events()
    assert [e.event.type for e in entries].count("request_header") == 3
    assert same_request(rebuild_request(entries, 1), model.requests[1])


async def test_a_plain_agent_run_streams_no_request_events() -> None:
    model = MockModel.with_scripts([text_turn("hi")])
    agent = LlmAgent(name="a", model=model)
    events = [e async for e in agent.run("hello")]
    assert not any(isinstance(e, RequestSent) for e in events)


async def test_the_runner_does_not_pass_request_events_to_its_caller() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]))
    ctx = RunContext.ephemeral(None).with_session(MemorySession())
    events = [e async for e in AsyncioRunner[None]().run_streamed(agent, "hello", ctx)]
    assert not any(isinstance(e, RequestSent) for e in events)


def test_the_header_is_not_conversation_and_round_trips() -> None:
    header = RequestHeader(
        provider="openai",
        model="gpt-5-mini",
        settings={"temperature": 0.0, "tool_choice": {"type": "tool", "name": "lookup"}},
        system=("Be brief.",),
        tools=(ToolDef(name="lookup", description="d", parameters={"type": "object"}, strict=True),),
    )
    user = UserMessageEvent(content=(TextPart(text="hi"),))
    assert project([user, header]).messages == (UserMessage.from_text("hi"),)
    payload = encode_event(header)
    assert '"injected"' not in payload and ", " not in payload  # compact
    assert decode_event(payload) == header
    assert snapshot_from_payloads([encode_event(user), payload]).messages == (UserMessage.from_text("hi"),)
    with_injected = RequestHeader(provider="p", model="m", injected=("Mind the budget.",), ts=header.ts)
    assert decode_event(encode_event(with_injected)) == with_injected


@pytest.mark.parametrize(
    "usage_json",
    [{"input_tokens": "many"}, "lots", [1, 2]],
)
def test_a_malformed_usage_reads_as_unknown_not_as_a_lost_message(usage_json: Any) -> None:
    event = AssistantMessageEvent(content=(TextPart(text="x"),), usage=TokenUsage(input_tokens=1))
    data = json.loads(encode_event(event))
    data["usage"] = usage_json
    decoded = decode_event(json.dumps(data))
    assert isinstance(decoded, AssistantMessageEvent) and decoded.usage is None
    assert decoded.content == event.content


def test_settings_round_trip_through_json() -> None:
    from helikon.core.model import NamedToolChoice, ResponseFormat

    settings = ModelSettings(
        temperature=0.5,
        tool_choice=NamedToolChoice(name="lookup"),
        response_format=ResponseFormat.json_schema(name="A", schema={"type": "object"}),
    )
    data = settings_to_json(settings)
    assert "top_p" not in data
    assert settings_from_json(data) == settings
    assert settings_from_json({}) == ModelSettings()


def test_injected_system_messages_go_where_the_driver_puts_them() -> None:
    sent = RequestSent(provider="p", model="m", injected=("Hook says hi.",))
    header = header_of(sent)
    log = [
        UserMessageEvent(content=(TextPart(text="q"),)),
        header,
        AssistantMessageEvent(content=(TextPart(text="a"),)),
    ]
    messages = rebuild_request(log, 0).messages
    assert [m.type for m in messages] == ["system", "user"]


def test_the_recorder_logs_a_header_only_when_the_request_changes() -> None:
    tools = (ToolDef(name="t", description="d", parameters={"type": "object"}),)
    settings = ModelSettings(temperature=0.1)
    first = RequestSent(provider="p", model="m", tools=tools, settings=settings, usage=TokenUsage(requests=1))
    recorder = SessionRecorder([UserMessage.from_text("q")], last_header=header_of(first))
    recorder.request_sent(first)
    recorder.request_sent(RequestSent(provider="p", model="m", tools=tools, settings=settings))
    recorder.request_sent(RequestSent(provider="p", model="other", tools=tools, settings=settings))
    assert [e.type for e in recorder.drain()] == ["user_message", "request_header"]


def test_a_turn_without_a_header_cannot_be_rebuilt() -> None:
    log = [
        UserMessageEvent(content=(TextPart(text="q"),)),
        AssistantMessageEvent(content=(TextPart(text="a"),)),
    ]
    with pytest.raises(UserError):
        rebuild_request(log, 0)
    with pytest.raises(UserError):
        rebuild_requests(log)
    with pytest.raises(IndexError):
        rebuild_request(log, 1)


def test_turns_are_runs_of_answers() -> None:
    call = ToolCall(call_id="c", name="t", args={})
    result = ToolResult(call_id="c", content=(TextPart(text="r"),))
    recorder = SessionRecorder([UserMessage.from_text("q")])
    from helikon.core.events import MessageOutput, ToolCallItem, ToolOutputItem

    recorder.observe(MessageOutput(item=AssistantMessage.from_text("let me look")))
    recorder.observe(ToolCallItem(item=call))
    recorder.observe(ToolOutputItem(item=result))
    recorder.observe(MessageOutput(item=AssistantMessage.from_text("done")))
    assert turn_starts(recorder.drain()) == [1, 4]
