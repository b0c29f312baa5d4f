"""The streaming helpers of a run (issue 18 §9) and the result helpers for stateless continuation (§3)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from helikon import (
    AgentInput,
    AssistantMessage,
    Item,
    LlmAgent,
    MemorySession,
    RunContext,
    RunError,
    RunResult,
    SequentialAgent,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    UserError,
    UserMessage,
    print_stream,
    tool,
)
from helikon.core.output import OutputType
from helikon.core.session import UserMessageEvent
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def texts(items: Sequence[Item]) -> list[str]:
    return [item.text for item in items if not isinstance(item, ToolCall)]


def agent_of(*turns: Any, **kwargs: Any) -> LlmAgent[Any, Any]:
    return LlmAgent(name=kwargs.pop("name", "a"), model=MockModel.with_scripts(list(turns)), **kwargs)


class Line(BaseModel):
    name: str
    qty: int = Field(gt=0)


class Order(BaseModel):
    customer: str
    lines: list[Line]
    note: str = ""


ORDER = (
    '{"customer": "Ada", "lines": [{"name": "eggs", "qty": 12}, {"name": "milk", "qty": 2}], "note": "asap"}'
)


# --- text_stream ------------------------------------------------------------------------------


async def test_text_stream_yields_the_text_deltas_only() -> None:
    agent = agent_of(
        tool_call_turn("weather", {"city": "Oslo"}),
        text_turn("Sunny in Oslo.", chunk_size=5),
        tools=[weather],
    )
    run = agent.run("Weather?")
    assert [text async for text in run.text_stream()] == ["Sunny", " in O", "slo."]


async def test_await_after_text_stream_gives_the_result() -> None:
    run = agent_of(text_turn("Hello there", chunk_size=3)).run("Hi")
    assert "".join([text async for text in run.text_stream()]) == "Hello there"
    result = await run
    assert result.final_output == "Hello there"
    assert result.usage.requests == 1


async def test_await_after_a_text_stream_left_early_finishes_the_run() -> None:
    run = agent_of(text_turn("one two three", chunk_size=2)).run("Hi")
    async for _ in run.text_stream():
        break
    result = await run
    assert result.final_output == "one two three"
    assert result.events[0].type == "run_started" and result.events[-1].type == "run_completed"


async def test_text_stream_raises_the_run_error_at_the_end() -> None:
    agent = agent_of(tool_call_turn("weather", {"city": "Oslo"}), tools=[weather])
    run = agent.run("Weather?", config=agent.run_config.with_max_turns(1))
    with pytest.raises(RunError) as info:
        async for _ in run.text_stream():
            pass
    assert info.value.kind == "max_turns_exceeded"


async def test_text_stream_yields_a_message_that_arrived_whole() -> None:
    # A workflow's merged answer comes with no deltas of its own; the steps' text streams as deltas.
    flow = SequentialAgent[Any]("flow").then(agent_of(text_turn("first", chunk_size=2), name="one"))
    texts = [text async for text in flow.run("go").text_stream()]
    assert "".join(texts) == "first"


async def test_a_stream_is_read_once() -> None:
    run = agent_of(text_turn("x")).run("Hi")
    async for _ in run:
        pass
    with pytest.raises(UserError, match=r"already consumed .iterated with async for.*read it with a helper"):
        await run
    with pytest.raises(UserError, match="already consumed"):
        async for _ in run.text_stream():
            pass

    run = agent_of(text_turn("x")).run("Hi")
    [_ async for _ in run.text_stream()]
    with pytest.raises(UserError, match=r"cannot read its partial_output\(\): .*read by a helper"):
        async for _ in run.partial_output(str):
            pass
    with pytest.raises(UserError, match="cannot iterate it"):
        async for _ in run:
            pass
    await run
    with pytest.raises(UserError, match=r"cannot collect it: .*consumed \(collected\)"):
        await run


# --- partial_output ---------------------------------------------------------------------------


async def test_partial_output_grows_a_pydantic_model_field_by_field() -> None:
    agent = agent_of(text_turn(ORDER, chunk_size=1), output_type=Order)
    run = agent.run("Order")
    values = [value async for value in run.partial_output()]
    assert all(isinstance(value, Order) for value in values)
    assert values[-1] == Order.model_validate_json(ORDER)
    assert any(value.model_fields_set == {"customer"} and value.customer == "Ada" for value in values)
    # A nested model in a list is built from its complete fields too, the last string still growing.
    partial_lines = [value.lines for value in values if "lines" in value.model_fields_set]
    assert [Line.model_construct(name="eg")] in partial_lines
    assert [Line(name="eggs", qty=12), Line.model_construct(name="mi")] in partial_lines
    assert len({repr(value) for value in values}) == len(values)  # each value is new
    assert (await run).final_output == Order.model_validate_json(ORDER)  # typed: the agent's output_type


async def test_partial_output_skips_a_value_that_breaks_a_constraint() -> None:
    # qty must be > 0: "0" is dropped until it validates (it never does: the run fails).
    text = '{"customer": "Ada", "lines": [{"name": "eggs", "qty": 0}]}'
    agent = agent_of(text_turn(text, chunk_size=6), text_turn(text), text_turn(text), output_type=Order)
    run = agent.run("Order")
    seen: list[Order] = []

    async def read() -> None:
        async for value in run.partial_output():
            seen.append(value)  # noqa: PERF401 (the stream raises at its end: keep what came before)

    with pytest.raises(RunError) as info:
        await read()
    assert info.value.kind == "invalid_structured_output"
    lines = [line for value in seen if "lines" in value.model_fields_set for line in value.lines]
    assert lines and all("qty" not in line.model_fields_set for line in lines)


async def test_partial_output_of_a_list_type_unwraps_the_response_key() -> None:
    text = '{"response": [{"name": "eggs", "qty": 1}, {"name": "milk", "qty": 2}]}'
    run = agent_of(text_turn(text, chunk_size=1), output_type=list[Line]).run("Lines")
    values = [value async for value in run.partial_output()]
    assert values[0] == [] and [Line(name="eggs", qty=1), Line.model_construct(name="mi")] in values
    assert values[-1] == [Line(name="eggs", qty=1), Line(name="milk", qty=2)]


class Point(TypedDict):
    x: int
    y: int


async def test_partial_output_of_a_typed_dict_and_an_explicit_type() -> None:
    run = agent_of(text_turn('{"x": 1, "y": 22}', chunk_size=3)).run("Point")
    values = [value async for value in run.partial_output(Point)]
    assert {"x": 1} in values and values[-1] == {"x": 1, "y": 22}


async def test_partial_output_ignores_the_text_before_a_tool_call_and_a_fence() -> None:
    answer = "```json\n" + ORDER + "\n```"
    agent = agent_of(
        text_turn("Let me check."),
        tool_call_turn("weather", {"city": "Oslo"}),
        text_turn(answer, chunk_size=9),
        output_type=Order,
        tools=[weather],
    )
    values = [value async for value in agent.run("Order").partial_output()]
    assert values and values[-1] == Order.model_validate_json(ORDER)


async def test_partial_output_needs_an_output_type() -> None:
    run = agent_of(text_turn("x")).run("Hi")
    with pytest.raises(UserError, match=r"partial_output\(\): the run's agent has no output_type"):
        run.partial_output()


def test_validate_partial_of_text_that_is_not_json_yet() -> None:
    output = OutputType(Order)
    assert output.validate_partial("") is None
    assert output.validate_partial("Sure, here") is None
    assert output.validate_partial('{"customer": "A') == Order.model_construct(customer="A")


# --- print_stream -----------------------------------------------------------------------------


async def test_print_stream_prints_text_and_one_line_per_tool_call_and_handoff() -> None:
    billing = agent_of(text_turn("Refunded.", chunk_size=3), name="billing")
    triage = agent_of(
        tool_call_turn("weather", {"city": "Oslo"}),
        tool_call_turn("transfer_to_billing", {}),
        name="triage",
        tools=[weather],
        handoffs=[billing],
    )
    out = io.StringIO()
    result = await print_stream(triage.run("refund"), file=out)
    assert out.getvalue() == (
        '[tool] weather({"city": "Oslo"})\n'
        "[tool] transfer_to_billing({})\n"
        "[handoff] triage -> billing\n"
        "Refunded.\n"
    )
    assert result.final_output == "Refunded."


async def test_print_stream_breaks_the_line_before_a_tool_call_and_raises_a_failure() -> None:
    agent = agent_of(tool_call_turn("weather", {"city": "x" * 500}), tools=[weather])
    out = io.StringIO()
    with pytest.raises(RunError):
        await print_stream(agent.run("Hi", config=agent.run_config.with_max_turns(1)), file=out)
    [line] = out.getvalue().splitlines()
    assert line.startswith("[tool] weather(") and line.endswith("...)") and len(line) < 230


# --- result helpers ---------------------------------------------------------------------------


async def test_new_items_all_items_and_to_input_list() -> None:
    agent = agent_of(tool_call_turn("weather", {"city": "Oslo"}), text_turn("Sunny."), tools=[weather])
    earlier = [UserMessage.from_text("Hello"), AssistantMessage.from_text("Hi!")]
    run_input = AgentInput(
        (SystemMessage(text="be brief"), UserMessage.from_text("Weather?")), tuple(earlier)
    )
    result = await agent.run(run_input)
    new = result.new_items
    assert [type(item) for item in new] == [ToolCall, ToolResult, AssistantMessage]
    assert new[-1] == AssistantMessage.from_text("Sunny.", agent="a")
    # The per-run system message is not conversation: a session would not hold it either.
    assert texts(result.all_items) == [
        "Hello",
        "Hi!",
        "Weather?",
        "sunny in Oslo",
        "Sunny.",
    ]
    listed = result.to_input_list()
    assert listed == list(result.all_items) and listed is not result.to_input_list()


async def test_all_items_equal_what_a_runner_stores_in_its_session() -> None:
    agent = agent_of(tool_call_turn("weather", {"city": "Oslo"}), text_turn("Sunny."), tools=[weather])
    bare = await agent.run("Weather?")
    session = MemorySession()
    again = agent_of(tool_call_turn("weather", {"city": "Oslo"}), text_turn("Sunny."), tools=[weather])
    await AsyncioRunner().run(again, "Weather?", RunContext.ephemeral(None).with_session(session))
    stored = (await session.snapshot()).messages
    assert bare.all_items == stored


async def test_history_continues_without_a_session() -> None:
    model = MockModel.with_scripts([text_turn("Hi Ada."), text_turn("You are Ada.")])
    agent = LlmAgent(name="a", model=model)
    first = await agent.run("I am Ada.")
    second = await agent.run("Who am I?", history=first)
    assert texts(model.requests[1].messages) == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert texts(second.all_items) == ["I am Ada.", "Hi Ada.", "Who am I?", "You are Ada."]
    assert second.new_items == (AssistantMessage.from_text("You are Ada.", agent="a"),)
    third = await agent_of(text_turn("ok")).run("And?", history=second.to_input_list())
    assert len(third.all_items) == 6


def test_history_refuses_a_session_that_holds_a_conversation_too() -> None:
    agent = agent_of(text_turn("x"))
    first = agent_of(text_turn("hi")).run_sync("Hello")
    busy = MemorySession([UserMessageEvent(content=(TextPart(text="earlier"),))])
    with pytest.raises(
        UserError, match=r"LlmAgent.run\(history=...\): the context's session .MemorySession. holds"
    ):
        agent.run("Next", context=RunContext.ephemeral(None).with_session(busy), history=first)

    class Durable(MemorySession):
        durable = True

    with pytest.raises(UserError, match="holds a conversation too"):
        agent.run("Next", context=RunContext.ephemeral(None).with_session(Durable()), history=first)
    # An empty in-memory session (the ephemeral default) holds nothing: allowed.
    assert agent.run_sync("Next", context=RunContext.ephemeral(None), history=first).final_output == "x"


def test_history_refuses_what_is_not_a_conversation() -> None:
    agent = agent_of(text_turn("x"))
    with pytest.raises(UserError, match=r"expected a RunResult or a sequence of items, got str"):
        agent.run("Next", history="earlier")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match=r"item 1 is a dict, not a conversation item"):
        agent.run("Next", history=[UserMessage.from_text("a"), {"role": "user"}])  # pyright: ignore[reportArgumentType]


async def test_last_agent_follows_the_handoffs() -> None:
    refunds = agent_of(text_turn("Refunded."), name="refunds")
    billing = agent_of(tool_call_turn("transfer_to_refunds", {}), name="billing", handoffs=[refunds])
    triage = agent_of(tool_call_turn("transfer_to_billing", {}), name="triage", handoffs=[billing])
    result = await triage.run("refund")
    assert result.last_agent is refunds and result.agent is triage
    alone = agent_of(text_turn("hi"))
    assert (await alone.run("x")).last_agent is alone


async def test_a_workflow_is_its_own_last_agent_and_knows_its_input() -> None:
    flow = (
        SequentialAgent[Any]("flow")
        .then(agent_of(text_turn("one"), name="s1"))
        .then(agent_of(text_turn("two"), name="s2"))
    )
    result = await flow.run("go")
    assert result.last_agent is flow
    assert texts(result.all_items) == ["go", "one", "two"]


async def test_a_runner_result_knows_its_agent_not_its_whole_input() -> None:
    agent = agent_of(text_turn("x"))
    result = await AsyncioRunner().run(agent, "Hi", RunContext.ephemeral(None))
    assert result.last_agent is agent and result.new_items == (AssistantMessage.from_text("x", agent="a"),)
    with pytest.raises(UserError, match=r"does not know its run's input .* continue with the same session"):
        _ = result.all_items


def test_a_result_built_without_its_agent_says_so() -> None:
    from helikon import TokenUsage

    result = RunResult(final_output="x", events=[], usage=TokenUsage())
    with pytest.raises(UserError, match="does not know its run's agent"):
        _ = result.last_agent
    assert result.new_items == ()
