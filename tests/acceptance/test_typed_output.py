"""Acceptance: typed results and output validators, as a user writes them (issue 18, items 2 and 8).

A weather agent with a tool answers a typed `Weather | Refusal`; a validator sends an
implausible reading back; the run is persisted by the runner and continued, and the
model's second run sees the retry in its history.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from helikon import LlmAgent, MemorySession, ModelRetry, RunContext, tool
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


class Weather(BaseModel):
    city: str
    celsius: float


class Refusal(BaseModel):
    reason: str


@tool
def forecast(city: str) -> str:
    """The forecast for a city, in Fahrenheit."""
    return "75 F, sunny"


def plausible(answer: Weather | Refusal) -> Weather | Refusal:
    if isinstance(answer, Weather) and answer.celsius > 60:
        raise ModelRetry(f"{answer.celsius} looks like Fahrenheit; convert it to Celsius")
    return answer


def test_structured_output_is_typed_validated_retried_and_persisted() -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("forecast", {"city": "Oslo"}),
            text_turn("It is 75 F and sunny in Oslo."),
            text_turn('{"response": {"city": "Oslo", "celsius": 75}}'),  # the finalizing turn
            text_turn('{"response": {"city": "Oslo", "celsius": 23.9}}'),  # after the validator's retry
            text_turn("That is not a weather question."),
            text_turn('{"response": {"reason": "I only do weather."}}'),
        ]
    )
    agent = LlmAgent(
        name="weather",
        model=model,
        instructions="Answer weather questions.",
        tools=[forecast],
        output_type=Weather | Refusal,
        output_validators=[plausible],
    )

    # The result is the validated value: no parsing, no collect(output_type=...).
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    runner = AsyncioRunner[None]()
    first = asyncio.run(runner.run(agent, "Weather in Oslo?", ctx))
    assert first.final_output == Weather(city="Oslo", celsius=23.9)
    assert "convert it to Celsius" in getattr(model.requests[3].messages[-1], "text", "")

    second = asyncio.run(runner.run(agent, "And who wins the cup?", ctx))
    assert second.final_output == Refusal(reason="I only do weather.")
    history = [getattr(m, "text", "") for m in model.requests[4].messages]
    assert any("convert it to Celsius" in text for text in history)  # the session kept the retry
    assert history[-1] == "And who wins the cup?"
