from helikon import LlmAgent, tool
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
async def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"sunny in {city}"


def test_a_tool_round_trip_completes() -> None:
    model = MockModel.with_scripts([tool_call_turn("get_weather", {"city": "Paris"}), text_turn("Sunny.")])
    agent = LlmAgent(name="weather", model=model, tools=[get_weather])
    result = agent.run_sync("Weather in Paris?")
    assert result.final_output == "Sunny."
    assert result.usage.requests == 2
    assert model.requests[1].messages[-1].type == "tool_result"
