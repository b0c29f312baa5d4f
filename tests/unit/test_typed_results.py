"""Typed by default: `final_output` is the agent's `output_type` value (issue 18, item 2), and unions."""

from __future__ import annotations

from typing import Any, Union

import pytest
from pydantic import BaseModel

from helikon import LlmAgent, MemorySession, RunContext
from helikon.core.output import OutputType
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


class Weather(BaseModel):
    city: str
    celsius: float


class Refusal(BaseModel):
    reason: str


OSLO = '{"city": "Oslo", "celsius": 21.5}'


def weather_agent(*texts: str, name: str = "weather") -> LlmAgent[None, Weather]:
    return LlmAgent[None, Weather](
        name=name, model=MockModel.with_scripts([text_turn(t) for t in texts]), output_type=Weather
    )


async def test_await_gives_the_validated_value() -> None:
    assert (await weather_agent(OSLO).run("Oslo?")).final_output == Weather(city="Oslo", celsius=21.5)


def test_run_sync_gives_the_validated_value() -> None:
    assert weather_agent(OSLO).run_sync("Oslo?").final_output == Weather(city="Oslo", celsius=21.5)


def test_a_text_agent_still_gives_its_text() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn(OSLO)]))
    assert agent.run_sync("x").final_output == OSLO


async def test_a_runner_gives_the_typed_value_too() -> None:
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    result = await AsyncioRunner[None]().run(weather_agent(OSLO), "Oslo?", ctx)
    assert result.final_output == Weather(city="Oslo", celsius=21.5)
    # The session keeps the text.
    assert [getattr(m, "text", None) for m in (await session.snapshot()).messages] == ["Oslo?", OSLO]


def test_a_run_with_a_session_gives_the_typed_value_too() -> None:
    session = MemorySession()
    result = weather_agent(OSLO).run_sync("Oslo?", session=session)  # through the default runner
    assert result.final_output == Weather(city="Oslo", celsius=21.5)


async def test_collect_with_an_output_type_parses_into_that_type_instead() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn(OSLO)]))
    result = await agent.run("x").collect(output_type=Weather)
    assert result.final_output == Weather(city="Oslo", celsius=21.5)


def test_a_run_ending_in_a_handoff_target_gives_the_targets_output() -> None:
    target = weather_agent(OSLO, name="forecaster")
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_forecaster", {})]),
        handoffs=[target],
    )
    assert triage.run_sync("Oslo?").final_output == Weather(city="Oslo", celsius=21.5)


def test_a_typed_agent_handing_off_to_a_text_agent_gives_the_text() -> None:
    chat = LlmAgent(name="chat", model=MockModel.with_scripts([text_turn("Just chatting.")]))
    typed = LlmAgent(
        name="typed",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_chat", {})]),
        output_type=Weather,
        handoffs=[chat],
    )
    result = typed.run_sync("hi")
    assert result.last_agent is chat and result.final_output == "Just chatting."


def test_a_handoff_targets_rewritten_output_reaches_the_result() -> None:
    shouting = LlmAgent(
        name="shouting", model=MockModel.with_scripts([text_turn("quiet")]), output_validators=[str.upper]
    )
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_shouting", {})]),
        handoffs=[shouting],
    )
    assert triage.run_sync("hi").final_output == "QUIET"


# --- unions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("output_type", [Weather | Refusal, [Weather, Refusal], Union[Weather, Refusal]])  # noqa: UP007
def test_a_union_validates_into_the_member_that_fits(output_type: Any) -> None:
    model = MockModel.with_scripts([text_turn('{"response": {"reason": "not weather"}}')])
    agent = LlmAgent(name="u", model=model, output_type=output_type)
    assert agent.run_sync("Who wins?").final_output == Refusal(reason="not weather")
    fmt = model.requests[0].model_settings.response_format
    assert fmt is not None and fmt.name == "Weather_or_Refusal"
    assert fmt.schema == {
        "type": "object",
        "properties": {"response": {"anyOf": [{"$ref": "#/$defs/Weather"}, {"$ref": "#/$defs/Refusal"}]}},
        "required": ["response"],
        "$defs": {
            "Weather": Weather.model_json_schema(),
            "Refusal": Refusal.model_json_schema(),
        },
    }


def test_a_single_type_keeps_its_name_and_a_dumped_value_reads_back() -> None:
    assert OutputType(Weather).name == "Weather" and OutputType(list[str]).name == "list"
    pairs: list[tuple[OutputType[Any], Any]] = [
        (OutputType(Weather), Weather(city="Oslo", celsius=1)),
        (OutputType(list[int]), [1, 2]),
    ]
    for output, value in pairs:
        assert output.validate_text(output.dump_text(value)) == (value, ())
    assert OutputType(list[int]).dump_text([1]) == '{"response":[1]}'
