"""`@tool(timeout=, timeout_behavior=, max_retries=)`, `ModelRetry` from a tool, lone-model parameters."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel, Field

from helikon import LlmAgent, ModelRetry, RunContext, RunError, ToolContext, UserError, tool
from helikon.core.items import ToolResult
from helikon.testing import MockModel, text_turn, tool_call_turn


def results(model: MockModel) -> list[ToolResult]:
    """Every tool result the model was shown, in order (from the last request)."""
    return [m for m in model.requests[-1].messages if isinstance(m, ToolResult)]


# --- timeout -----------------------------------------------------------------------------------


async def test_a_timed_out_async_call_is_cancelled_and_the_model_reads_why() -> None:
    cancelled = asyncio.Event()

    @tool(timeout=0.05)
    async def slow(city: str) -> str:
        """Slow."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    model = MockModel.with_scripts([tool_call_turn("slow", {"city": "Paris"}), text_turn("Sorry.")])
    result = await LlmAgent(name="a", model=model, tools=[slow]).run("Weather?")
    assert result.final_output == "Sorry."
    assert cancelled.is_set()
    [answer] = results(model)
    assert answer.is_error and "the tool 'slow' timed out after 0.05s" in answer.text


async def test_a_sync_tool_past_its_timeout_is_no_longer_waited_for() -> None:
    release = threading.Event()

    @tool(timeout=timedelta(milliseconds=50))
    def blocking() -> str:
        """Blocks until released."""
        release.wait(30)
        return "late"

    model = MockModel.with_scripts([tool_call_turn("blocking", {}), text_turn("Moving on.")])
    try:
        result = await LlmAgent(name="a", model=model, tools=[blocking]).run("Go")
    finally:
        release.set()
    assert result.final_output == "Moving on."
    assert "timed out" in results(model)[0].text


async def test_fail_run_makes_a_timeout_fail_the_run_naming_the_tool() -> None:
    @tool(timeout=0.01, timeout_behavior="fail_run")
    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(60)
        return "never"

    model = MockModel.with_scripts([tool_call_turn("slow", {}), text_turn("unreachable")])
    with pytest.raises(RunError) as info:
        await LlmAgent(name="a", model=model, tools=[slow]).run("Go")
    error = info.value.error
    assert error.kind == "tool_error" and error.cause == "slow"
    assert error.message == "the tool 'slow' timed out after 0.01s (timeout_behavior='fail_run')"
    assert len(model.requests) == 1


async def test_a_call_within_its_timeout_returns_normally() -> None:
    @tool(timeout=30)
    def quick(x: int) -> int:
        """Doubles."""
        return 2 * x

    out = await quick.invoke(
        ToolContext(_ctx(), call_id="c", tool_name="quick", max_agent_depth=8), {"x": 21}
    )
    assert out.value == 42 and quick.timeout == 30.0


async def test_cancelling_the_run_while_a_timed_tool_runs_cancels_the_run_not_the_call() -> None:
    ctx = RunContext.ephemeral(None)

    @tool(timeout=30)
    async def stuck() -> str:
        """Stuck."""
        ctx.cancel.cancel("user pressed stop")
        await asyncio.sleep(60)
        return "never"

    model = MockModel.with_scripts([tool_call_turn("stuck", {}), text_turn("unreachable")])
    with pytest.raises(RunError) as info:
        await LlmAgent(name="a", model=model, tools=[stuck]).run("Go", context=ctx)
    assert info.value.error.kind == "cancelled" and "user pressed stop" in info.value.error.message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout=0; give positive seconds"),
        ({"timeout": -1.5}, "timeout=-1.5; give positive seconds"),
        ({"timeout": "5s"}, "timeout='5s'; give positive seconds"),
        ({"timeout": True}, "timeout=True; give positive seconds"),
        ({"timeout_behavior": "raise"}, "timeout_behavior='raise'; use 'error_result'"),
        ({"max_retries": -1}, "max_retries=-1; give how many times"),
        ({"max_retries": 1.5}, "max_retries=1.5; give how many times"),
        ({"enabled": True}, "enabled=True; give a function of the RunContext"),
    ],
)
def test_bad_options_are_user_errors_that_say_what_to_give(options: dict[str, Any], message: str) -> None:
    def f() -> str:
        """F."""
        return ""

    with pytest.raises(UserError, match="@tool 'f': ") as info:
        tool(**options)(f)
    assert message in str(info.value)


# --- ModelRetry and max_retries ----------------------------------------------------------------


@tool
def lookup(order_id: str) -> str:
    """Find an order."""
    if not order_id.startswith("A-"):
        raise ModelRetry("order ids look like 'A-1234'")
    return "shipped"


async def test_model_retry_sends_the_reason_back_and_the_model_may_call_again() -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("lookup", {"order_id": "1234"}),
            tool_call_turn("lookup", {"order_id": "A-1234"}),
            text_turn("It shipped."),
        ]
    )
    result = await LlmAgent(name="a", model=model, tools=[lookup]).run("Where is my order?")
    assert result.final_output == "It shipped."
    first, second = results(model)
    assert first.is_error and first.text == "Error: order ids look like 'A-1234'"
    assert not second.is_error and second.text == "shipped"


async def test_a_retry_past_max_retries_fails_the_run_naming_the_tool() -> None:
    model = MockModel.with_scripts(
        [tool_call_turn("lookup", {"order_id": "1"}), tool_call_turn("lookup", {"order_id": "2"})]
    )
    with pytest.raises(RunError) as info:
        await LlmAgent(name="a", model=model, tools=[lookup]).run("Where?")
    error = info.value.error
    assert error.kind == "tool_error" and error.cause == "lookup"
    assert error.message == (
        "tool 'lookup' asked the model to retry past its max_retries (1): Error: order ids look like 'A-1234'"
    )


async def test_max_retries_sets_how_often_the_model_is_sent_back() -> None:
    calls: list[int] = []

    @tool(max_retries=3)
    def flaky(n: int) -> str:
        """Succeeds on the fourth try."""
        calls.append(n)
        if n < 4:
            raise ModelRetry(f"try {n + 1}")
        return "done"

    model = MockModel.with_scripts(
        [*(tool_call_turn("flaky", {"n": n}) for n in (1, 2, 3, 4)), text_turn("Done.")]
    )
    assert (await LlmAgent(name="a", model=model, tools=[flaky]).run("Go")).final_output == "Done."
    assert calls == [1, 2, 3, 4]


async def test_max_retries_zero_fails_on_the_first_retry() -> None:
    @tool(max_retries=0)
    def strict_tool() -> str:
        """Never retried."""
        raise ModelRetry("no")

    model = MockModel.with_scripts([tool_call_turn("strict_tool", {}), text_turn("unreachable")])
    with pytest.raises(RunError, match="past its max_retries \\(0\\)"):
        await LlmAgent(name="a", model=model, tools=[strict_tool]).run("Go")


async def test_max_retries_bounds_invalid_arguments_too() -> None:
    @tool(max_retries=2)
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    bad = {"a": "x", "b": 1}
    model = MockModel.with_scripts([tool_call_turn("add", bad)] * 3)
    with pytest.raises(RunError) as info:
        await LlmAgent(name="a", model=model, tools=[add]).run("Go")
    assert info.value.error.message.startswith(
        "tool 'add' got invalid arguments again after 2 corrections (its max_retries): "
        "Error: invalid arguments"
    )
    assert len(model.requests) == 3


async def test_invalid_arguments_and_retries_share_the_tools_budget() -> None:
    @tool(max_retries=1)
    def pick(n: int) -> str:
        """Pick."""
        raise ModelRetry("another")

    model = MockModel.with_scripts([tool_call_turn("pick", {"n": "x"}), tool_call_turn("pick", {"n": 1})])
    with pytest.raises(RunError, match="tool 'pick' asked the model to retry past its max_retries \\(1\\)"):
        await LlmAgent(name="a", model=model, tools=[pick]).run("Go")


async def test_the_default_feeds_invalid_arguments_back_once() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    model = MockModel.with_scripts(
        [tool_call_turn("add", {"a": "x", "b": 1}), tool_call_turn("add", {"a": 1, "b": 2}), text_turn("3")]
    )
    assert (await LlmAgent(name="a", model=model, tools=[add]).run("Go")).final_output == "3"


# --- a lone pydantic-model parameter -----------------------------------------------------------


class Args(BaseModel):
    city: str = Field(description="The city, e.g. Paris.")
    days: int = 1


def test_a_lone_model_parameter_is_the_schema() -> None:
    @tool
    def forecast(ctx: ToolContext[None], args: Args) -> str:
        """Forecast."""
        return args.city

    assert forecast.schema["properties"] == {
        "city": {"description": "The city, e.g. Paris.", "type": "string"},
        "days": {"default": 1, "type": "integer"},
    }
    assert forecast.schema["required"] == ["city"]


async def test_the_flat_call_validates_and_the_function_gets_the_model() -> None:
    seen: list[Args] = []

    @tool
    async def forecast(args: Args) -> str:
        """Forecast."""
        seen.append(args)
        return f"sunny in {args.city}"

    model = MockModel.with_scripts([tool_call_turn("forecast", {"city": "Paris"}), text_turn("Sunny.")])
    await LlmAgent(name="a", model=model, tools=[forecast]).run("Weather?")
    assert seen == [Args(city="Paris")]
    assert results(model)[0].text == "sunny in Paris"


async def test_a_lone_model_reports_errors_by_its_own_field_names() -> None:
    @tool
    def forecast(ctx: ToolContext[None], args: Args) -> str:
        """Forecast."""
        return args.city

    model = MockModel.with_scripts([tool_call_turn("forecast", {"days": 2}), text_turn("?")])
    await LlmAgent(name="a", model=model, tools=[forecast]).run("Weather?")
    [answer] = results(model)
    assert answer.is_error and answer.text.startswith("Error: invalid arguments: city: Field required")


def test_a_model_beside_other_parameters_stays_nested() -> None:
    @tool
    def forecast(args: Args, units: str = "C") -> str:
        """Forecast."""
        return args.city

    properties: Any = forecast.schema["properties"]
    assert set(properties) == {"args", "units"}


def _ctx() -> RunContext[None]:
    return RunContext.ephemeral(None)
