"""Test conveniences: `TestModel`, `LlmAgent.override` and `capture_requests` (issue 18 §10)."""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import uuid
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter

from helikon import (
    AgentAsTool,
    AssistantMessage,
    CancellationToken,
    Finish,
    LlmAgent,
    ModelRequest,
    RunError,
    TextPart,
    TokenDelta,
    ToolCall,
    ToolCallDelta,
    ToolDef,
    ToolResult,
    UserError,
    UserMessage,
    tool,
)
from helikon.testing import FunctionModel, MockModel, TestModel, capture_requests, text_turn, tool_call_turn

# --- schemas as helikon's tools and output types produce them --------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: Annotated[str, Field(min_length=3, max_length=5)]
    zip_code: Annotated[str, Field(pattern=r"^\d{5}$")]
    country: Literal["NO", "SE"] = "NO"


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: Annotated[int, Field(ge=1, le=9)]


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool


class Tree(BaseModel):
    label: str
    children: list[Tree] = []
    parent: Tree | None


class Order(BaseModel):
    id: uuid.UUID
    when: dt.datetime
    day: dt.date
    quantity: Annotated[int, Field(gt=0, lt=100, multiple_of=7)]
    price: Annotated[float, Field(gt=0.5, le=0.75)]
    color: Color
    tags: Annotated[set[str], Field(min_length=3)]
    pair: tuple[int, str]
    address: Address
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    tree: Tree
    extras: Annotated[dict[str, int], Field(min_length=2)]
    note: str | None
    optional: int = 5


@tool
def place(order: Order, rush: bool, count: Annotated[int, Field(ge=10)]) -> str:
    """Place an order."""
    return f"{order.quantity} x {order.color.value}, rush={rush}, count={count}"


@pytest.mark.parametrize("seed", [0, 1, 2, 17, 1000])
def test_generated_tool_arguments_are_valid_for_the_tool(seed: int) -> None:
    model = TestModel(seed=seed)
    args = model.example(place.schema)
    TypeAdapter(Order).validate_python(args["order"])  # the nested model, through its $ref
    assert set(args) == {"order", "rush", "count"} and args["count"] >= 10


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=100_000))
def test_any_seed_gives_a_valid_structured_output(seed: int) -> None:
    example = TestModel(seed=seed).example(Order.model_json_schema())
    assert isinstance(Order.model_validate(example), Order)  # raises when the example does not fit


def test_seed_zero_gives_the_smallest_values() -> None:
    @tool
    def f(name: str, n: int, flag: bool, color: Color, maybe: str = "x") -> str:
        """F."""
        return ""

    assert TestModel().example(f.schema) == {"name": "a", "n": 0, "flag": False, "color": "red"}
    assert TestModel(seed=1).example(f.schema) == {"name": "b", "n": 1, "flag": True, "color": "blue"}


def test_a_schema_no_value_fits_is_a_user_error_naming_the_place() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"type": "integer", "minimum": 5, "maximum": 1}},
        "required": ["x"],
    }
    with pytest.raises(UserError, match="#/properties/x"):
        TestModel().example(schema)


# --- TestModel in runs ------------------------------------------------------------------------


@tool
def forecast(city: str, days: int) -> str:
    """The weather ahead."""
    return f"{days} sunny days in {city}"


@tool
def budget(category: str) -> dict[str, float]:
    """A category's budget."""
    return {"left": 12.5}


def test_it_calls_every_tool_once_then_summarizes_their_results() -> None:
    model = TestModel()
    result = LlmAgent(name="a", model=model, tools=[forecast, budget]).run_sync("Go")
    assert result.final_output == '{"forecast": "0 sunny days in a", "budget": {"left": 12.5}}'
    first, second = model.requests
    assert [t.name for t in first.tools] == ["forecast", "budget"]
    assert [m.type for m in second.messages] == [
        "user",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
    ]
    assert result.usage.requests == 2 and result.usage.input_tokens > 100 and result.usage.output_tokens > 0


def test_call_tools_picks_tools_and_custom_output_text_answers() -> None:
    model = TestModel(call_tools=["budget"], custom_output_text="All good.")
    result = LlmAgent(name="a", model=model, tools=[forecast, budget]).run_sync("Go")
    assert result.final_output == "All good."
    calls = [m for m in model.requests[1].messages if m.type == "tool_call"]
    assert [c.name for c in calls] == ["budget"]
    assert LlmAgent(name="b", model=TestModel(call_tools=[]), tools=[forecast]).run_sync(
        "x"
    ).final_output == ("success (no tool calls)")


async def test_each_user_turn_calls_the_tools_again_with_fresh_call_ids() -> None:
    model = TestModel()
    tools = [ToolDef(name="forecast", description="", parameters=forecast.schema)]
    first = [UserMessage.from_text("one")]
    calls = [e async for e in model.invoke(ModelRequest(messages=first, tools=tools), CancellationToken())]
    assert [e.type for e in calls] == ["tool_call_delta", "usage", "finish"]
    first_call = calls[0]
    assert isinstance(first_call, ToolCallDelta)
    called = ToolCall(call_id=first_call.call_id, name="forecast", args={"city": "a", "days": 0})
    answered = [*first, called, ToolResult(call_id=called.call_id, content=(TextPart(text="sun"),))]
    again = [*answered, AssistantMessage(content=(TextPart(text="ok"),)), UserMessage.from_text("two")]
    reply = [e async for e in model.invoke(ModelRequest(messages=answered, tools=tools), CancellationToken())]
    assert reply[0] == TokenDelta(text='{"forecast": ') and reply[-1] == Finish(reason="stop")
    second = [e async for e in model.invoke(ModelRequest(messages=again, tools=tools), CancellationToken())]
    assert isinstance(second[0], ToolCallDelta) and second[0].call_id != first_call.call_id


def test_a_named_tool_the_request_lacks_fails_the_run_saying_so() -> None:
    agent = LlmAgent(name="a", model=TestModel(call_tools=["nope"]), tools=[forecast])
    with pytest.raises(
        RunError, match=r"'nope', which this request does not offer \(its tools: \['forecast'\]\)"
    ):
        agent.run_sync("x")


def test_structured_output_is_generated_or_custom_and_streams_in_pieces() -> None:
    typed = LlmAgent(name="t", model=TestModel(), tools=[forecast], output_type=Order)
    result = typed.run_sync("Order?")
    assert isinstance(result.final_output, Order)

    class Verdict(BaseModel):
        ok: bool

    custom = LlmAgent(name="c", model=TestModel(custom_output_args=Verdict(ok=True)), output_type=Verdict)
    assert custom.run_sync("?").final_output == Verdict(ok=True)
    listed = LlmAgent(name="l", model=TestModel(custom_output_args=[1, 2]), output_type=list[int])
    assert asyncio.run(listed.run("?").collect(output_type=list[int])).final_output == [1, 2]

    async def deltas() -> list[str]:
        return [e.text async for e in custom.run("?") if e.type == "token_delta"]

    assert len(asyncio.run(deltas())) > 1


def test_bad_options_are_user_errors() -> None:
    with pytest.raises(UserError, match="call_tools"):
        TestModel(call_tools="forecast")
    with pytest.raises(UserError, match="seed"):
        TestModel(seed=-1)
    with pytest.raises(UserError, match="custom_output_text"):
        TestModel(custom_output_text=3)  # pyright: ignore[reportArgumentType]


def test_one_test_model_serves_concurrent_runs() -> None:
    model = TestModel()
    agent = LlmAgent(name="a", model=model, tools=[forecast])

    async def main() -> list[Any]:
        return await asyncio.gather(*(agent.run(f"q{i}") for i in range(5)))

    assert {r.final_output for r in asyncio.run(main())} == {'{"forecast": "0 sunny days in a"}'}
    assert len(model.requests) == 10


# --- override -----------------------------------------------------------------------------------


def test_override_swaps_the_model_and_restores_it_even_on_error() -> None:
    own = MockModel()
    agent = LlmAgent(name="a", model=own)
    with agent.override(model=MockModel.with_scripts([text_turn("outer")])):
        with agent.override(model=MockModel.with_scripts([text_turn("inner")])):
            assert agent.run_sync("x").final_output == "inner"
        assert agent.run_sync("x").final_output == "outer"
    assert agent.model is own

    def failing_test() -> None:
        with agent.override(model=TestModel()):
            assert agent.model.provider == "test"
            raise KeyError("boom")

    with pytest.raises(KeyError):
        failing_test()
    assert agent.model is own


async def test_override_in_async_code_reaches_nested_agents_and_copies() -> None:
    inner = LlmAgent(name="inner", model=MockModel())
    outer_model = MockModel.with_scripts([tool_call_turn("inner", {"input": "hi"}), text_turn("done")])
    outer = LlmAgent(name="outer", model=outer_model, tools=[AgentAsTool(inner)])
    with inner.override(model=MockModel.with_scripts([text_turn("from the double")])):
        result = await outer.run("go")
        assert inner.with_handoffs([]).model is inner.model  # copies share the override
    assert result.final_output == "done"
    assert _text(outer_model.requests[1].messages[-1]) == "from the double"


async def test_override_does_not_leak_into_other_tasks() -> None:
    own = MockModel()
    agent = LlmAgent(name="a", model=own)
    entered, done = asyncio.Event(), asyncio.Event()
    seen: list[Any] = []

    async def other() -> None:
        await entered.wait()
        seen.append(agent.model)
        done.set()

    task = asyncio.create_task(other())  # started before the override: its own context
    with agent.override(model=TestModel()):
        entered.set()
        await done.wait()
        assert agent.model.provider == "test"
    await task
    assert seen == [own]


def test_override_takes_model_strings_and_refuses_non_models() -> None:
    agent = LlmAgent(name="a", model=MockModel())
    with agent.override(model="openai:gpt-5-mini"):
        assert agent.model.provider == "openai"
    with pytest.raises(UserError, match=r"LlmAgent.override\(model=3\)"), agent.override(model=3):  # pyright: ignore[reportArgumentType]
        pass


# --- capture_requests ---------------------------------------------------------------------------


def test_capture_requests_sees_every_agent_and_model_and_nests() -> None:
    def answer(request: ModelRequest) -> list[Any]:
        return text_turn("inner says hi")

    inner = LlmAgent(name="inner", model=FunctionModel(answer))
    outer = LlmAgent(
        name="outer",
        model=MockModel.with_scripts([tool_call_turn("inner", {"input": "hi"}), text_turn("done")]),
        tools=[AgentAsTool(inner)],
    )
    with capture_requests() as everything:
        with capture_requests() as inner_block:
            outer.run_sync("go")
        LlmAgent(name="solo", model=TestModel()).run_sync("x")
    assert [(c.agent, c.provider) for c in inner_block] == [
        ("outer", "mock"),
        ("inner", "function"),
        ("outer", "mock"),
    ]
    assert [c.agent for c in everything] == ["outer", "inner", "outer", "solo"]
    assert _text(everything[1].request.messages[-1]) == "hi"
    with capture_requests() as after:
        pass
    assert after == []


def _text(item: Any) -> str:
    return item.text
