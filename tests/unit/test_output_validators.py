"""Output validators and output retries: `LlmAgent(output_validators=..., output_retries=...)`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from helikon import (
    InvalidStructuredOutput,
    LlmAgent,
    MemorySession,
    ModelRetry,
    OutputRetriesExceeded,
    RepairStarted,
    RunCompleted,
    RunContext,
    RunError,
    TextPart,
    UserError,
    UserMessage,
    tool,
)
from helikon.core.items import AssistantMessage, Item, SystemMessage
from helikon.core.loop import (
    RETRY_PROMPT,
    CallingModel,
    CheckingOutput,
    CheckOutput,
    Done,
    Failed,
    FinalOutput,
    ModelResponse,
    OutputChecked,
    OutputRetry,
    RepairingOutput,
    TransitionCtx,
    transition,
)
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


class Weather(BaseModel):
    city: str
    celsius: float


OSLO = '{"city": "Oslo", "celsius": 21.5}'
HOT = '{"city": "Oslo", "celsius": 75}'


def no_bad_words(text: str) -> str:
    if "bad" in text:
        raise ModelRetry("do not say bad")
    return text


def plausible(weather: Weather) -> Weather:
    if weather.celsius > 60:
        raise ModelRetry(f"{weather.celsius} °C is not a weather reading; check the units")
    return weather


def texts(model: MockModel, call: int) -> list[str]:
    return [text_of(m) for m in model.requests[call].messages if not isinstance(m, SystemMessage)]


def text_of(item: Item) -> str:
    """A message's text (the test fails on a tool call or result)."""
    assert isinstance(item, UserMessage | AssistantMessage | SystemMessage), item
    return item.text


# --- text output -------------------------------------------------------------------------------


def test_a_text_validator_may_rewrite_the_output() -> None:
    agent = LlmAgent(
        name="a", model=MockModel.with_scripts([text_turn("hello")]), output_validators=[str.upper]
    )
    result = agent.run_sync("hi")
    assert result.final_output == "HELLO"
    completed = result.events[-1]
    assert isinstance(completed, RunCompleted) and completed.output == "HELLO"
    # The conversation keeps what the model said; the output is what the validator made of it.
    assert [text_of(item) for item in result.new_items] == ["hello"]


def test_model_retry_sends_the_model_back_with_the_reason() -> None:
    model = MockModel.with_scripts([text_turn("a bad answer"), text_turn("a good answer")])
    agent = LlmAgent(name="a", model=model, output_validators=[no_bad_words])
    result = agent.run_sync("hi")
    assert result.final_output == "a good answer"
    retry = RETRY_PROMPT.format(reason="do not say bad")
    assert texts(model, 1) == ["hi", "a bad answer", retry]
    assert model.requests[1].tools == ()  # a text agent's retry is a normal turn (it has no tools here)
    started = [e for e in result.events if isinstance(e, RepairStarted)]
    assert [(e.attempt, e.reason) for e in started] == [(1, "do not say bad")]
    assert started[0].item == UserMessage.from_text(retry)
    # The retry message is part of the conversation: continuing without a session sends it again.
    assert [text_of(item) for item in result.all_items] == ["hi", "a bad answer", retry, "a good answer"]


def test_past_output_retries_the_run_fails_naming_the_validator_and_its_reason() -> None:
    model = MockModel.with_scripts([text_turn("bad one"), text_turn("bad two")])
    agent = LlmAgent(name="a", model=model, output_validators=[no_bad_words])
    with pytest.raises(OutputRetriesExceeded) as info:
        agent.run_sync("hi")
    exc = info.value
    assert exc.kind == "output_retries_exceeded"
    assert exc.reason == "do not say bad" and exc.final_text == "bad two"
    assert exc.validator == "no_bad_words"
    assert str(exc) == (
        "the output validator no_bad_words rejected the output after 1 retry (output_retries=1): "
        "do not say bad"
    )


@pytest.mark.parametrize(("retries", "calls"), [(0, 1), (2, 3)])
def test_output_retries_bounds_the_retries(retries: int, calls: int) -> None:
    model = MockModel.with_scripts([text_turn("bad")] * 4)
    agent = LlmAgent(name="a", model=model, output_validators=[no_bad_words], output_retries=retries)
    with pytest.raises(OutputRetriesExceeded, match=f"output_retries={retries}"):
        agent.run_sync("hi")
    assert len(model.requests) == calls


def test_the_retry_count_survives_a_tool_loop_in_between() -> None:
    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return "found"

    model = MockModel.with_scripts(
        [
            text_turn("bad guess"),
            tool_call_turn("lookup", {"q": "x"}),
            text_turn("still bad"),
            text_turn("never asked"),
        ]
    )
    agent = LlmAgent(name="a", model=model, tools=[lookup], output_validators=[no_bad_words])
    with pytest.raises(OutputRetriesExceeded):
        agent.run_sync("hi")
    assert len(model.requests) == 3
    assert model.requests[1].tools  # after a retry the tools are offered again


async def test_validators_run_in_order_with_the_context_sync_or_async() -> None:
    seen: list[tuple[str, object]] = []

    async def first(ctx: RunContext[str], text: str) -> str:
        await asyncio.sleep(0)
        seen.append(("first", ctx.user_ctx))
        return text + "!"

    agent = LlmAgent[str](
        name="a", model=MockModel.with_scripts([text_turn("hi")]), output_validators=[first]
    )

    @agent.output_validator
    def second(text: str) -> str:
        seen.append(("second", text))
        return text + "?"

    result = await agent.run("x", context=RunContext.ephemeral("user-1"))
    assert result.final_output == "hi!?"
    assert seen == [("first", "user-1"), ("second", "hi!")]


@pytest.mark.parametrize(
    ("validator", "message"),
    [
        (lambda text: 1 / 0, "raised ZeroDivisionError: division by zero"),
        (lambda text: None, "returned None, not the output (return it to keep it)"),
        (lambda text: 42, "returned 42, not a str (the agent has no output_type)"),
    ],
)
def test_a_validator_that_raises_or_returns_nonsense_fails_the_run(validator: Any, message: str) -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]), output_validators=[validator])
    with pytest.raises(RunError) as info:
        agent.run_sync("x")
    assert info.value.kind == "other" and info.value.error.cause == "output_validator"
    assert "the output validator" in str(info.value) and message in str(info.value)


async def test_a_cancel_interrupts_a_validator_that_waits() -> None:
    entered = asyncio.Event()

    async def slow(text: str) -> str:
        entered.set()
        await asyncio.sleep(60)
        return text

    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]), output_validators=[slow])
    ctx = RunContext.ephemeral(None)
    task = asyncio.ensure_future(agent.run("x", context=ctx).collect())
    await entered.wait()
    ctx.cancel.cancel("stop")
    with pytest.raises(RunError) as info:
        await task
    assert info.value.kind == "cancelled"


# --- structured output -------------------------------------------------------------------------


def test_a_structured_validator_gets_the_value_and_may_replace_it() -> None:
    def rounded(weather: Weather) -> Weather:
        return weather.model_copy(update={"celsius": round(weather.celsius)})

    agent = LlmAgent(
        name="w",
        model=MockModel.with_scripts([text_turn(OSLO)]),
        output_type=Weather,
        output_validators=[rounded],
    )
    result = agent.run_sync("Oslo?")
    assert result.final_output == Weather(city="Oslo", celsius=22)
    completed = result.events[-1]
    assert isinstance(completed, RunCompleted) and completed.output is not None
    assert json.loads(completed.output) == {"city": "Oslo", "celsius": 22.0}  # the text the events keep


def test_a_structured_retry_is_a_constrained_turn_with_the_reason() -> None:
    model = MockModel.with_scripts([text_turn(HOT), text_turn(OSLO)])
    agent = LlmAgent(name="w", model=model, output_type=Weather, output_validators=[plausible])
    assert agent.run_sync("Oslo?").final_output == Weather(city="Oslo", celsius=21.5)
    retry = model.requests[1]
    assert retry.model_settings.response_format is not None and retry.tools == ()
    assert "check the units" in text_of(retry.messages[-1]) and "`Weather` schema" in text_of(
        retry.messages[-1]
    )


def test_a_schema_miss_is_retried_up_to_output_retries() -> None:
    bad = '{"city": "Oslo"}'
    model = MockModel.with_scripts([text_turn(bad), text_turn(bad), text_turn(OSLO)])
    agent = LlmAgent(name="w", model=model, output_type=Weather, output_retries=2)
    result = agent.run_sync("Oslo?")
    assert result.final_output == Weather(city="Oslo", celsius=21.5)
    assert [e.attempt for e in result.events if isinstance(e, RepairStarted)] == [1, 2]


def test_no_output_retries_fails_a_schema_miss_at_once() -> None:
    model = MockModel.with_scripts([text_turn('{"city": "Oslo"}')])
    agent = LlmAgent(name="w", model=model, output_type=Weather, output_retries=0)
    with pytest.raises(InvalidStructuredOutput) as info:
        agent.run_sync("Oslo?")
    assert info.value.schema_errors == ("celsius: Field required",)
    assert len(model.requests) == 1


def test_schema_misses_and_validator_retries_share_the_bound() -> None:
    model = MockModel.with_scripts([text_turn('{"city": "Oslo"}'), text_turn(HOT), text_turn(OSLO)])
    agent = LlmAgent(name="w", model=model, output_type=Weather, output_validators=[plausible])
    with pytest.raises(OutputRetriesExceeded, match="check the units"):
        agent.run_sync("Oslo?")
    assert len(model.requests) == 2


def test_a_validator_returning_another_type_fails_naming_the_output_type() -> None:
    def sunny(weather: Any) -> Any:
        return "sunny"  # not a Weather

    agent = LlmAgent(
        name="w",
        model=MockModel.with_scripts([text_turn(OSLO)]),
        output_type=Weather,
        output_validators=[sunny],
    )
    with pytest.raises(RunError, match="returned 'sunny', not a Weather"):
        agent.run_sync("Oslo?")


# --- the session holds the retry --------------------------------------------------------------


async def test_the_session_holds_the_retry_and_projects_to_what_the_model_was_sent() -> None:
    model = MockModel.with_scripts([text_turn("a bad answer"), text_turn("a good answer"), text_turn("sure")])
    agent = LlmAgent(name="a", model=model, instructions="Be kind.", output_validators=[no_bad_words])
    session = MemorySession()
    ctx = RunContext.ephemeral(None).with_session(session)
    runner = AsyncioRunner[None]()
    result = await runner.run(agent, "hi", ctx)
    assert result.final_output == "a good answer"
    snapshot = await session.snapshot()
    retry = RETRY_PROMPT.format(reason="do not say bad")
    assert [text_of(m) for m in snapshot.messages] == ["hi", "a bad answer", retry, "a good answer"]
    # The conversation the retried turn was sent is what the session projects to, up to that turn.
    assert texts(model, 1) == [text_of(m) for m in snapshot.messages][:3]
    await runner.run(agent, "thanks", ctx)
    assert texts(model, 2) == ["hi", "a bad answer", retry, "a good answer", "thanks"]


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"output_validators": [42]}, "42 is not a function; give a function of (output) or (ctx, output)"),
        ({"output_validators": "upper"}, "expected a list of functions"),
        ({"output_validators": [lambda a, b, c: a]}, "takes 3 arguments; give a function of (output) or"),
        ({"output_validators": [lambda: 1]}, "takes 0 arguments"),
        ({"output_retries": -1}, "LlmAgent(output_retries=-1): give a whole number >= 0"),
        ({"output_retries": True}, "LlmAgent(output_retries=True)"),
        ({"output_type": []}, "output_type=[]: list at least one type"),
    ],
)
def test_bad_validator_arguments_are_user_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError) as info:
        LlmAgent(name="a", model=MockModel.with_scripts([]), **kwargs)
    assert message in str(info.value)


def test_the_decorator_checks_the_function_too() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([]))
    with pytest.raises(UserError, match=r"@LlmAgent.output_validator: the output validator .* takes 3"):
        agent.output_validator(lambda a, b, c: a)  # pyright: ignore[reportArgumentType]


# --- the loop ----------------------------------------------------------------------------------

ANSWER = AssistantMessage.from_text("hello", agent="a")
CHECKING = CheckingOutput(output=FinalOutput(content=ANSWER.content), turn=0)


def test_without_validators_an_answer_is_done_at_once() -> None:
    out = transition(CallingModel(turn=0), ModelResponse(items=(ANSWER,)), TransitionCtx(agent_name="a"))
    assert isinstance(out.next_state, Done)


def test_with_validators_an_answer_is_checked_before_the_run_completes() -> None:
    ctx = TransitionCtx(agent_name="a", check_output=True)
    out = transition(CallingModel(turn=0), ModelResponse(items=(ANSWER,)), ctx)
    assert out.next_state == CHECKING
    assert isinstance(out.next_action, CheckOutput)
    assert [e.type for e in out.events] == ["message_output"]  # no RunCompleted yet

    done = transition(CHECKING, OutputChecked(output="HELLO"), ctx)
    assert done.next_state == Done(output=FinalOutput(content=ANSWER.content, validated="HELLO"))
    assert isinstance(done.next_state, Done) and done.next_state.output.text == "HELLO"
    assert done.events == (RunCompleted(usage=CHECKING.usage, output="HELLO"),)


def test_a_retry_goes_back_to_the_model_and_counts() -> None:
    ctx = TransitionCtx(agent_name="a", check_output=True, output_retries=1)
    out = transition(CHECKING, OutputRetry(reason="louder", validator="v"), ctx, (ANSWER,))
    assert out.next_state == CallingModel(turn=1, output_retried=1)
    message = UserMessage(content=(TextPart(text=RETRY_PROMPT.format(reason="louder")),))
    assert out.conversation_appends == (message,)
    assert [e.type for e in out.events] == ["repair_started", "turn_started"]

    again = transition(replace_turn(CHECKING, 1), OutputRetry(reason="louder", validator="v"), ctx)
    assert isinstance(again.next_state, Failed)
    assert again.next_state.error.kind == "output_retries_exceeded"


def test_a_structured_retry_repairs_with_a_constrained_turn() -> None:
    from helikon.core.output import OutputSpec

    ctx = TransitionCtx(agent_name="a", check_output=True, output=OutputSpec.of(Weather))
    out = transition(CHECKING, OutputRetry(reason="too hot", validator="v"), ctx)
    assert out.next_state == RepairingOutput(turn=1, output_retried=1)


def replace_turn(state: CheckingOutput, retried: int) -> CheckingOutput:
    from dataclasses import replace

    return replace(state, output_retried=retried)


def test_the_builder_sets_validators_and_retries() -> None:
    model = MockModel.with_scripts([text_turn("bad"), text_turn("bad"), text_turn("fine")])
    agent = (
        LlmAgent.builder()
        .name("a")
        .model(model)
        .output_validator(no_bad_words)
        .output_validator(str.upper)
        .output_retries(2)
        .build()
    )
    assert agent.run_sync("hi").final_output == "FINE"
    assert len(model.requests) == 3
