"""Public constructors reject bad settings with an error that names the argument and says why."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from helikon import LlmAgent, ModelSettings, RunConfig, RunContext, UserError, tool
from helikon.runtime import RetryingModel, RetryPolicy
from helikon.testing import FunctionModel, MockModel, text_turn


@tool
async def ping() -> str:
    """Answer pong."""
    return "pong"


def model() -> MockModel:
    return MockModel.with_scripts([text_turn("x")])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "name=''"),
        ({"name": "   "}, "non-empty name"),
        ({"model": "gpt-5"}, "expected a Model"),
        ({"instructions": 42}, "instructions=42"),
        ({"tools": [ping, ping]}, "two tools are named 'ping'"),
        ({"tools": [lambda: None]}, "is not a Tool; decorate the function with @tool"),
        ({"output_type": socket.socket}, "output_type="),
        ({"model_settings": {"temperature": 0.1}}, "expected a ModelSettings"),
        ({"run_config": {"max_turns": 3}}, "expected a RunConfig"),
    ],
)
def test_llm_agent_rejects_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"name": "agent", "model": model(), **kwargs}
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("[", r"\[")):
        LlmAgent(**arguments)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: RunConfig(max_turns=0), "max_turns=0"),
        (lambda: RunConfig(max_turns=-3), "max_turns=-3"),
        (lambda: RunConfig(parallel_tool_call_limit=0), "parallel_tool_call_limit=0"),
        (lambda: RunConfig(max_agent_depth=0), "max_agent_depth=0"),
        (lambda: RunConfig(timeout=0), "timeout=0"),
        (lambda: ModelSettings(temperature=3.0), "temperature=3.0"),
        (lambda: ModelSettings(max_output_tokens=0), "max_output_tokens=0"),
        (lambda: RetryPolicy(max_attempts=0), "max_attempts=0"),
        (lambda: RetryPolicy(jitter=2.0), "jitter=2.0"),
        (lambda: RetryingModel("not a model"), "expected a Model"),  # type: ignore[arg-type]
        (lambda: MockModel.with_scripts(["not a script"]), "script 0"),  # type: ignore[list-item]
        (lambda: FunctionModel("not callable"), "expected a function"),  # type: ignore[arg-type]
    ],
)
def test_settings_reject_bad_values(build: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        build()


def test_user_error_is_a_value_error_too() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        RunConfig(max_turns=0)


def test_bad_run_input_is_rejected_at_the_call() -> None:
    agent = LlmAgent(name="a", model=model())
    with pytest.raises(UserError, match="expected a str, an AgentInput or a sequence of items"):
        agent.run(42, context=RunContext.ephemeral(None))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"multiplier": "x"}, "multiplier='x'"),
        ({"jitter": None}, "jitter=None"),
        ({"base_delay": True}, "base_delay"),
    ],
)
def test_retry_policy_rejects_values_of_the_wrong_type(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        RetryPolicy(**kwargs)
