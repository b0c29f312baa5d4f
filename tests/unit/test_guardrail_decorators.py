"""`@input_guardrail` / `@output_guardrail` (issue 27): guardrails written as functions, sync or
async, with or without the run context, as openai-agents users write them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import helikon
from helikon import (
    FunctionGuardrail,
    Guardrail,
    GuardrailTriggered,
    GuardrailVerdict,
    LlmAgent,
    RunContext,
    RunError,
    RunFailed,
    UserError,
    input_guardrail,
    output_guardrail,
)
from helikon.testing import MockModel, text_turn


def agent(**guardrails: Any) -> tuple[LlmAgent[None], MockModel]:
    model = MockModel.with_scripts([text_turn("You are stupid.")])
    return LlmAgent[None](name="a", model=model, **guardrails), model


@input_guardrail
async def no_ibans(ctx: RunContext[None], text: str) -> GuardrailVerdict:
    assert isinstance(ctx, RunContext)
    if "IBAN" in text:
        return GuardrailVerdict.tripwire("input_policy", {"matched": "IBAN"})
    return GuardrailVerdict.pass_()


@output_guardrail
def polite(text: str) -> GuardrailVerdict:
    return GuardrailVerdict.tripwire("output_policy") if "stupid" in text else GuardrailVerdict.pass_()


def test_the_decorators_are_exported_from_the_facade_and_make_guardrails() -> None:
    assert helikon.input_guardrail is input_guardrail and helikon.output_guardrail is output_guardrail
    assert isinstance(no_ibans, FunctionGuardrail) and isinstance(no_ibans, Guardrail)
    assert (no_ibans.name, no_ibans.stage, no_ibans.run_in_parallel) == ("no_ibans", "input", True)
    assert (polite.name, polite.stage) == ("polite", "output")


async def test_an_async_input_guardrail_with_the_context_trips_the_run_by_its_name() -> None:
    run, _ = agent(input_guardrails=[no_ibans])
    with pytest.raises(RunError) as info:
        await run.run("Pay IBAN DE89")
    assert str(info.value) == 'the input guardrail no_ibans tripped (input_policy): {"matched":"IBAN"}'
    assert info.value.kind == "guardrail_tripwire"


async def test_a_sync_output_guardrail_without_the_context_checks_the_final_text() -> None:
    run, _ = agent(input_guardrails=[no_ibans], output_guardrails=[polite])
    events = [e async for e in run.run("Hello")]
    assert GuardrailTriggered(kind="output_policy", stage="output") in events
    assert isinstance(events[-1], RunFailed)
    assert events[-1].error.message == "the output guardrail polite tripped (output_policy)"


async def test_options_name_it_and_run_it_before_the_model() -> None:
    @input_guardrail(name="iban check", run_in_parallel=False)
    def strict(text: str) -> GuardrailVerdict:
        return GuardrailVerdict.tripwire("input_policy") if "IBAN" in text else GuardrailVerdict.pass_()

    @output_guardrail(name="tone")
    async def tone(ctx: RunContext[None], text: str) -> GuardrailVerdict:
        await asyncio.sleep(0)
        return GuardrailVerdict.pass_()

    assert strict.run_in_parallel is False and tone.name == "tone"
    run, model = agent(input_guardrails=[strict], output_guardrails=[tone])
    with pytest.raises(RunError, match="the input guardrail iban check tripped"):
        await run.run("IBAN DE89")
    assert model.requests == []  # checked before the model was called
    assert (await agent(input_guardrails=[strict], output_guardrails=[tone])[0].run("hi")).final_output


async def test_a_guardrail_function_that_raises_or_returns_no_verdict_trips_as_other() -> None:
    @input_guardrail
    def broken(text: str) -> GuardrailVerdict:
        raise ValueError("no model")

    @output_guardrail
    def forgetful(text: str) -> GuardrailVerdict:
        return None  # type: ignore[return-value]

    with pytest.raises(RunError, match="the input guardrail broken raised ValueError: no model"):
        await agent(input_guardrails=[broken])[0].run("hi")
    with pytest.raises(
        RunError, match="the output guardrail forgetful returned None, not a GuardrailVerdict"
    ):
        await agent(output_guardrails=[forgetful])[0].run("hi")


def test_a_function_of_another_shape_is_a_user_error_at_decoration() -> None:
    def three(ctx: Any, agent: Any, input: str) -> GuardrailVerdict:
        return GuardrailVerdict.pass_()

    with pytest.raises(
        UserError, match=r"three takes 3 arguments; give a function of \(text\) or \(ctx, text\)"
    ):
        input_guardrail(three)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="is not a function"):
        output_guardrail(42)  # type: ignore[call-overload]


def test_a_guardrail_in_the_wrong_list_or_undecorated_is_a_user_error_at_agent_build() -> None:
    with pytest.raises(UserError, match=r"polite is an @output_guardrail; put it in output_guardrails"):
        agent(input_guardrails=[polite])
    with pytest.raises(UserError, match=r"no_ibans is an @input_guardrail; put it in input_guardrails"):
        agent(output_guardrails=[no_ibans])

    def plain(text: str) -> GuardrailVerdict:
        return GuardrailVerdict.pass_()

    with pytest.raises(UserError, match="is not a guardrail; decorate it with @input_guardrail"):
        agent(input_guardrails=[plain])
    with pytest.raises(UserError, match="is not a guardrail; decorate it with @output_guardrail"):
        agent(output_guardrails=[plain])
