"""Per-run `model=` and `model_settings=` (on `run`, `run_sync` and in `RunConfig`)."""

from __future__ import annotations

import pytest

from helikon import LlmAgent, MemorySession, ModelSettings, RunConfig, UserError
from helikon.testing import MockModel, capture_requests, text_turn, tool_call_turn


def own() -> MockModel:
    return MockModel.with_scripts([text_turn("own")])


def test_run_model_replaces_the_agents_for_that_run_only() -> None:
    agent = LlmAgent[None](name="a", model=own())
    other = MockModel.with_scripts([text_turn("other")])
    assert agent.run_sync("q", model=other).final_output == "other"
    assert agent.run_sync("q").final_output == "own"  # the agent is unchanged


async def test_config_model_reaches_handoff_targets() -> None:
    billing = LlmAgent[None](name="billing", model=own())
    triage = LlmAgent[None](name="triage", model=own(), handoffs=[billing])
    shared = MockModel.with_scripts([tool_call_turn("transfer_to_billing", {}), text_turn("billing here")])
    with capture_requests() as captured:
        result = await triage.run("refund", config=RunConfig(model=shared))
    assert result.final_output == "billing here"
    assert [c.agent for c in captured] == ["triage", "billing"]
    assert len(shared.requests) == 2


def test_a_model_string_is_resolved_lazily_and_checked() -> None:
    config = RunConfig(model="openai:gpt-5-mini")  # no key needed until the first call
    assert config.model is not None and config.model.provider == "openai"  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="model string such as"):
        RunConfig(model=42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"unknown|prefix"):
        LlmAgent[None](name="a", model=own()).run("q", model="nosuch:model")


def test_override_beats_the_run_model() -> None:
    agent = LlmAgent[None](name="a", model=own())
    double = MockModel.with_scripts([text_turn("double")])
    with agent.override(model=double):
        assert agent.run_sync("q", model=own()).final_output == "double"


def test_run_settings_are_laid_over_the_agents() -> None:
    model = MockModel.with_scripts([text_turn("x"), text_turn("y")])
    agent = LlmAgent[None](name="a", model=model, model_settings=ModelSettings(temperature=0.2, top_p=0.5))
    agent.run_sync("q", model_settings=ModelSettings(temperature=0.9))
    settings = model.requests[0].model_settings
    assert (settings.temperature, settings.top_p) == (0.9, 0.5)
    config = RunConfig(model_settings=ModelSettings(max_output_tokens=100))
    agent.run_sync("q", config=config, model_settings=ModelSettings(top_p=0.1))
    settings = model.requests[1].model_settings
    assert (settings.temperature, settings.top_p, settings.max_output_tokens) == (0.2, 0.1, 100)


def test_bad_settings_are_named() -> None:
    agent = LlmAgent[None](name="a", model=own())
    with pytest.raises(UserError, match=r"model_settings=\{'temperature': 1\}\): expected a ModelSettings"):
        agent.run("q", model_settings={"temperature": 1})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="expected a ModelSettings"):
        RunConfig(model_settings={"temperature": 1})  # type: ignore[arg-type]


def test_run_model_goes_with_a_session_run() -> None:
    agent = LlmAgent[None](name="a", model=own())
    session = MemorySession()
    other = MockModel.with_scripts([text_turn("other")])
    assert agent.run_sync("q", session=session, model=other).final_output == "other"
    assert len(other.requests) == 1
