"""`FallbackModel` (issue 27): the next model on a transient (or chosen) error, before anything
streamed; each switch a `ModelFallback` event in the run's stream and in its session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helikon import (
    AGENT_EVENT_ADAPTER,
    CancellationToken,
    ContextLengthExceeded,
    CustomEvent,
    LlmAgent,
    ModelCapabilities,
    ModelError,
    ModelFallback,
    ModelRequest,
    RateLimited,
    Refused,
    RunContext,
    RunError,
    TokenDelta,
    Transport,
    TurnStarted,
    Unavailable,
    UserError,
)
from helikon.core.session.recorder import FALLBACK_KIND
from helikon.runtime import AsyncioRunner, FallbackModel, RetryingModel, RetryPolicy
from helikon.sessions.sqlite import open_session
from helikon.testing import MockModel, text_turn


def mock(name: str, *scripts: Any) -> MockModel:
    return MockModel.with_scripts(list(scripts), model_name=name)


def agent(model: FallbackModel) -> LlmAgent[None]:
    return LlmAgent[None](name="a", model=model)


@pytest.mark.parametrize("error", [Unavailable("503"), RateLimited("429"), Transport("reset")])
async def test_a_transient_error_moves_on_to_the_next_model_and_the_stream_says_so(error: ModelError) -> None:
    primary, backup = mock("big", [error]), mock("small", text_turn("Hi!"))
    model = FallbackModel([primary, backup])
    events = [e async for e in agent(model).run("Hello")]
    switch = ModelFallback(
        from_model="mock:big", to_model="mock:small", error_kind=error.kind, error=str(error)
    )
    types = [type(e) for e in events]
    assert types.index(TurnStarted) < types.index(ModelFallback) < types.index(TokenDelta)
    assert [e for e in events if isinstance(e, ModelFallback)] == [switch]
    assert model.fallbacks == 1 and len(primary.requests) == len(backup.requests) == 1
    assert AGENT_EVENT_ADAPTER.validate_json(AGENT_EVENT_ADAPTER.dump_json(switch)) == switch


async def test_it_goes_down_the_list_and_raises_the_last_error_when_all_fail() -> None:
    model = FallbackModel(
        [mock("a", [Unavailable("a down")]), mock("b", [RateLimited("b busy")]), mock("c", text_turn("ok"))]
    )
    result = await agent(model).run("Hi")
    assert result.final_output == "ok"
    assert [(e.from_model, e.to_model) for e in result.events if isinstance(e, ModelFallback)] == [
        ("mock:a", "mock:b"),
        ("mock:b", "mock:c"),
    ]
    failing = FallbackModel([mock("a", [Unavailable("a down")]), mock("b", [Transport("b reset")])])
    events = [e async for e in agent(failing).run("Hi")]
    assert [e.from_model for e in events if isinstance(e, ModelFallback)] == ["mock:a"]
    with pytest.raises(RunError) as info:
        await agent(
            FallbackModel([mock("a", [Unavailable("a down")]), mock("b", [Transport("b reset")])])
        ).run("Hi")
    assert info.value.error.cause == "transport" and "b reset" in str(info.value)


@pytest.mark.parametrize("error", [ContextLengthExceeded("too long"), Refused("no")])
async def test_other_errors_are_raised_at_once(error: ModelError) -> None:
    backup = mock("small", text_turn("never"))
    model = FallbackModel([mock("big", [error]), backup])
    with pytest.raises(RunError) as info:
        await agent(model).run("Hi")
    assert info.value.error.cause == error.kind
    assert backup.requests == [] and model.fallbacks == 0


async def test_an_error_after_content_streamed_is_raised_as_is() -> None:
    backup = mock("small", text_turn("never"))
    model = FallbackModel([mock("big", [TokenDelta(text="Hel"), Unavailable("dropped")]), backup])
    with pytest.raises(RunError) as info:
        await agent(model).run("Hi")
    assert info.value.error.cause == "unavailable" and backup.requests == []


@pytest.mark.parametrize(
    "fallback_on",
    [ContextLengthExceeded, [ContextLengthExceeded, Refused], lambda error: error.status_code == 413],
    ids=["a class", "a list", "a predicate"],
)
async def test_fallback_on_chooses_the_errors(fallback_on: Any) -> None:
    too_long = ContextLengthExceeded("too long", status_code=413)
    model = FallbackModel(
        [mock("small", [too_long]), mock("large", text_turn("fits"))], fallback_on=fallback_on
    )
    assert (await agent(model).run("Hi")).final_output == "fits"
    # Chosen errors replace the default: a transient one is now raised.
    model = FallbackModel(
        [mock("small", [Unavailable("503")]), mock("large", text_turn("x"))], fallback_on=fallback_on
    )
    with pytest.raises(RunError, match="503"):
        await agent(model).run("Hi")


async def test_a_cancelled_call_does_not_fall_back() -> None:
    token = CancellationToken()
    token.cancel("user left")
    backup = mock("small", text_turn("never"))
    model = FallbackModel([mock("big", [Unavailable("503")]), backup])
    with pytest.raises(Unavailable):
        [e async for e in model.invoke(ModelRequest(messages=()), token)]
    assert backup.requests == []


async def test_retrying_each_model_before_falling_back() -> None:
    fast = RetryPolicy(max_attempts=2, base_delay=0)
    primary = mock("big", [Unavailable("1")], [Unavailable("2")])
    model = FallbackModel([RetryingModel(primary, fast), RetryingModel(mock("small", text_turn("ok")), fast)])
    result = await agent(model).run("Hi")
    assert result.final_output == "ok" and len(primary.requests) == 2 and model.fallbacks == 1


async def test_a_runner_records_the_switch_in_the_session(tmp_path: Path) -> None:
    model = FallbackModel([mock("big", [Unavailable("503")]), mock("small", text_turn("Hi!"))])
    async with await open_session("s1", path=tmp_path / "s.db") as session:
        ctx = RunContext.ephemeral(None).with_session(session)
        result = await AsyncioRunner[None]().run(agent(model), "Hello", ctx)
        assert result.final_output == "Hi!"
        customs = [e.event for e in await session.events() if isinstance(e.event, CustomEvent)]
        assert customs == [
            CustomEvent(
                kind=FALLBACK_KIND,
                data={
                    "from_model": "mock:big",
                    "to_model": "mock:small",
                    "error_kind": "unavailable",
                    "error": "503",
                },
                ts=customs[0].ts,
            )
        ]
        snapshot = await session.snapshot()
        assert [m.type for m in snapshot.messages] == ["user", "assistant"]  # not conversation


def test_it_reports_the_first_models_names_and_what_every_model_can_do() -> None:
    both = ModelCapabilities.empty().with_streaming().with_tools()
    model = FallbackModel(
        [
            MockModel(capabilities=both.with_vision(), provider="p", model_name="big"),
            MockModel(capabilities=both.with_reasoning(), model_name="small"),
        ]
    )
    assert (model.provider, model.model_name) == ("p", "big")
    assert model.capabilities() == both
    assert repr(model) == "FallbackModel([p:big, mock:small])"
    lazy = FallbackModel(["openai:gpt-5-mini", "anthropic:claude-sonnet-4-6"])
    assert [m.provider for m in lazy.models] == ["openai", "anthropic"]


async def test_aclose_closes_every_model() -> None:
    closed: list[str] = []

    class Closing(MockModel):
        async def aclose(self) -> None:
            closed.append(self.model_name)

    await FallbackModel([Closing(model_name="a"), Closing(model_name="b")]).aclose()
    assert closed == ["a", "b"]


def test_bad_arguments_are_user_errors() -> None:
    with pytest.raises(UserError, match="two or more models"):
        FallbackModel([mock("a")])
    with pytest.raises(UserError, match="two or more models"):
        FallbackModel("openai:gpt-5-mini")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="expected a Model"):
        FallbackModel([mock("a"), 42])  # type: ignore[list-item]
    with pytest.raises(UserError, match="give ModelError classes"):
        FallbackModel([mock("a"), mock("b")], fallback_on=[ValueError])  # type: ignore[list-item]
    with pytest.raises(UserError, match="give ModelError classes"):
        FallbackModel([mock("a"), mock("b")], fallback_on=42)  # type: ignore[arg-type]
