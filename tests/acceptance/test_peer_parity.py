"""The everyday tasks of openai-agents and pydantic-ai users, written the helikon way.

One test per row of issue 18's table and per feature 1-11: each holds the short form a user
would write (the docs' "Coming from openai-agents / pydantic-ai" page quotes them) and
asserts that it runs and does what it says. Models are helikon's scripted ones (no keys
here); sessions are real SQLite files; a local server is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from pydantic import BaseModel

from helikon import (
    Handoff,
    LlmAgent,
    ModelRetry,
    ModelSettings,
    RunConfig,
    Toolset,
    UsageLimitExceeded,
    UsageLimits,
    keep_last_user_message,
    open_session,
    print_stream,
    tool,
)
from helikon.core.items import ToolResult
from helikon.core.session import SessionEvent, TurnClosed, UserMessageEvent
from helikon.testing import MockModel, TestModel, capture_requests, text_turn, tool_call_turn
from local_chat_server import ChatServer


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"The weather in {city} is sunny."


def weather_model(*answers: str) -> MockModel:
    """A model that looks the weather up, then answers; once per answer."""
    turns: list[list] = []
    for answer in answers:
        turns += [tool_call_turn("get_weather", {"city": "Tokyo"}), text_turn(answer)]
    return MockModel.with_scripts(turns)


# --- the table's rows ---------------------------------------------------------------------------


def test_row_quickstart_with_one_tool() -> None:
    agent = LlmAgent(name="Assistant", model=weather_model("Sunny in Tokyo."), tools=[get_weather])
    result = agent.run_sync("What's the weather in Tokyo?")
    assert result.final_output == "Sunny in Tokyo."


class Weather(BaseModel):
    city: str
    sunny: bool


def test_row_structured_output() -> None:
    model = MockModel.with_scripts([text_turn('{"city": "Tokyo", "sunny": true}')])
    agent = LlmAgent(name="Assistant", model=model, output_type=Weather)
    result = agent.run_sync("Weather in Tokyo?")
    assert result.final_output == Weather(city="Tokyo", sunny=True)  # typed: no collect(T)


# --- the features ------------------------------------------------------------------------------


def test_row_agent_tool_and_a_persisted_two_turn_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    agent = LlmAgent(name="Assistant", model=weather_model("Sunny.", "Still sunny."), tools=[get_weather])
    session = open_session("sqlite:///chat.db", "user-42")
    agent.run_sync("What's the weather in Tokyo?", session=session)
    result = agent.run_sync("And now?", session=session)
    assert result.final_output == "Still sunny."
    session.close()

    # A new process would see both turns: read the file again through a new handle.
    async def read() -> list[SessionEvent]:
        async with open_session("sqlite:///chat.db", "user-42") as again:
            return [e.event for e in await again.events()]

    stored = asyncio.run(read())
    assert sum(isinstance(e, UserMessageEvent) for e in stored) == 2


async def test_feature_1_a_session_in_one_call(tmp_path: Path) -> None:
    agent = LlmAgent(name="Assistant", model=weather_model("Sunny.", "Still sunny."), tools=[get_weather])
    async with open_session(f"sqlite:///{tmp_path / 'chat.db'}", "user-42") as session:
        await agent.run("Weather in Tokyo?", session=session)
        result = await agent.run("And now?", session=session)
        stored = [e.event for e in await session.events()]
    assert result.final_output == "Still sunny."
    assert sum(isinstance(e, UserMessageEvent) for e in stored) == 2
    assert any(isinstance(e, TurnClosed) for e in stored)  # written durably, turn by turn


async def test_feature_2_typed_by_default() -> None:
    model = MockModel.with_scripts([text_turn('{"city": "Tokyo", "sunny": false}')])
    agent = LlmAgent(name="Assistant", model=model, output_type=Weather)
    result = await agent.run("Weather in Tokyo?")
    assert result.final_output.city == "Tokyo" and not result.final_output.sunny


def test_feature_3_stateless_continuation() -> None:
    agent = LlmAgent(
        name="Assistant", model=MockModel.with_scripts([text_turn("Hi Ada."), text_turn("Ada.")])
    )
    first = agent.run_sync("I am Ada.")
    second = agent.run_sync("Who am I?", history=first)
    assert second.final_output == "Ada."
    assert [item.type for item in second.new_items] == ["assistant"]
    assert len(second.to_input_list()) == 4
    assert second.last_agent is agent


def test_feature_4_model_strings_and_a_local_server(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for string in ("openai:gpt-5-mini", "anthropic:claude-sonnet-4-5", "gemini:gemini-2.5-flash"):
        assert LlmAgent(name="a", model=string).model.provider == string.split(":")[0]
    local = LlmAgent(name="local", model=f"openai-compatible:llama3.2@{chat_server.base_url}")
    assert local.run_sync("Capital of France?").final_output == "Paris."  # no API key needed


def test_feature_5_per_run_model_and_settings() -> None:
    agent = LlmAgent(name="Assistant", model="openai:gpt-5-mini")  # never called here
    cheap = MockModel.with_scripts([text_turn("ok")])
    agent.run_sync("Hi", model=cheap, model_settings=ModelSettings(temperature=0.0))
    assert cheap.requests[0].model_settings.temperature == 0.0


def test_feature_6_usage_limits() -> None:
    agent = LlmAgent(name="Assistant", model=weather_model("a", "b"), tools=[get_weather])
    with pytest.raises(UsageLimitExceeded, match="request_limit"):
        agent.run_sync("Weather?", config=RunConfig(usage_limits=UsageLimits(request_limit=1)))


class City(BaseModel):
    city: str


def test_feature_7_tools_users_expect() -> None:
    @tool(timeout=5, max_retries=2, enabled=lambda ctx: True)
    def forecast(args: City) -> str:  # a lone model is the schema: the model calls {"city": ...}
        """The forecast for a city."""
        if args.city != args.city.title():
            raise ModelRetry("capitalize the city")
        return f"Sunny in {args.city}."

    retry, fixed = (
        tool_call_turn("wx_forecast", {"city": "tokyo"}),
        tool_call_turn("wx_forecast", {"city": "Tokyo"}),
    )
    model = MockModel.with_scripts([retry, fixed, text_turn("Sunny.")])
    agent = LlmAgent(
        name="Assistant",
        model=model,
        tools=[Toolset([forecast, get_weather]).prefixed("wx_")],
        prepare_tools=lambda ctx, defs: [d for d in defs if d.name != "wx_get_weather"],
    )
    assert agent.run_sync("Weather in Tokyo?").final_output == "Sunny."
    assert [t.name for t in model.requests[0].tools] == ["wx_forecast"]
    retried, answered = (m for m in model.requests[2].messages if isinstance(m, ToolResult))
    assert (retried.text, answered.text) == ("Error: capitalize the city", "Sunny in Tokyo.")


class Refusal(BaseModel):
    reason: str


def test_feature_8_output_validators_and_unions() -> None:
    def known_city(answer: Weather | Refusal) -> Weather | Refusal:
        if isinstance(answer, Weather) and answer.city != "Tokyo":
            raise ModelRetry("the user asked about Tokyo")
        return answer

    model = MockModel.with_scripts(
        [
            text_turn('{"response": {"city": "Kyoto", "sunny": true}}'),
            text_turn('{"response": {"city": "Tokyo", "sunny": true}}'),
        ]
    )
    agent = LlmAgent(
        name="Assistant", model=model, output_type=Weather | Refusal, output_validators=[known_city]
    )
    assert agent.run_sync("Weather in Tokyo?").final_output == Weather(city="Tokyo", sunny=True)


async def test_feature_9_streaming_helpers() -> None:
    hello = text_turn("Hello there!", chunk_size=3)
    agent = LlmAgent(name="Assistant", model=MockModel.with_scripts([hello, hello]))
    assert [text async for text in agent.run("Hi").text_stream()] == ["Hel", "lo ", "the", "re!"]
    out = io.StringIO()
    result = await print_stream(agent.run("Hi"), file=out)
    assert out.getvalue().startswith("Hello there!") and result.final_output == "Hello there!"


def test_feature_10_test_conveniences() -> None:
    agent = LlmAgent(name="Assistant", model="openai:gpt-5-mini", tools=[get_weather])
    with agent.override(model=TestModel()), capture_requests() as requests:
        result = agent.run_sync("Weather?")
    assert result.final_output == '{"get_weather": "The weather in a is sunny."}'
    assert [r.agent for r in requests] == ["Assistant", "Assistant"]


class Escalation(BaseModel):
    reason: str


def test_feature_11_handoff_control() -> None:
    seen: list[str] = []
    billing = LlmAgent(name="billing", model=MockModel.with_scripts([text_turn("Refund done.")]))
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_billing", {"reason": "refund"})]),
        handoffs=[
            Handoff.to(
                billing,
                input_type=Escalation,
                input_filter=keep_last_user_message,
                on_handoff=lambda ctx, args: seen.append(args.reason),
            )
        ],
    )
    result = triage.run_sync("Refund my order")
    assert (result.final_output, seen, result.last_agent) == ("Refund done.", ["refund"], billing)
