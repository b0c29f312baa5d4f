"""`helikon demo`: `--model <model string>`, its errors, and the provider picked from the keys set."""

from __future__ import annotations

import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helikon import LazyModel, Model, register_model_prefix, unregister_model_prefix
from helikon.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "budget_assistant.py"
SELECTORS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SELECTORS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def example() -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLE), run_name="cli_demo_test")


@pytest.fixture
def scripted_prefix(example: dict[str, Any]) -> Iterator[str]:
    """A registered prefix whose models are the example's scripted model."""
    register_model_prefix("demo-script", lambda rest: example["scripted_model"]())
    yield "demo-script"
    unregister_model_prefix("demo-script")


def test_demo_runs_on_the_model_string_given(
    scripted_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--model", f"{scripted_prefix}:any"]) == 0
    out = capsys.readouterr().out
    assert "Running on demo-script:any (--model)." in out
    assert "[calling lookup_spending" in out
    assert "built-in scripted model" not in out  # the key-based pick is skipped


def test_demo_without_a_key_or_model_says_it_is_scripted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "running on helikon's built-in scripted model" in out
    assert "helikon demo --model" in out
    assert "You're over budget on dining" in out


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("nope:x", "unknown prefix 'nope'; known prefixes: anthropic, bedrock"),
        ("gpt-5-mini", "'gpt-5-mini' has no prefix"),
        ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY"),  # the key is checked before the demo starts
        ("openai:gpt-5-mini", "OPENAI_API_KEY"),
    ],
)
def test_a_bad_model_string_or_missing_key_exits_2_saying_why(
    model: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--model", model]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("helikon demo: ") and message in captured.err
    assert "budget" not in captured.out  # the demo did not start


@pytest.mark.parametrize(
    ("variables", "label", "provider"),
    [
        ({"OPENAI_API_KEY": "k"}, "OpenAI (openai:gpt-5-mini): OPENAI_API_KEY", "openai"),
        ({"ANTHROPIC_API_KEY": "k"}, "Anthropic (anthropic:claude-sonnet-4-6)", "anthropic"),
        ({"GEMINI_API_KEY": "k"}, "Gemini (gemini:gemini-2.5-flash): GEMINI_API_KEY", "gemini"),
        ({"GOOGLE_API_KEY": "k"}, "Gemini (gemini:gemini-2.5-flash): GOOGLE_API_KEY", "gemini"),
        (
            {"AWS_PROFILE": "dev", "AWS_REGION": "us-east-1"},
            "AWS Bedrock (bedrock:amazon.nova-lite-v1:0): AWS_PROFILE",
            "aws.bedrock",
        ),
    ],
)
def test_the_example_picks_gemini_and_bedrock_too(
    example: dict[str, Any],
    variables: dict[str, str],
    label: str,
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    model: Model = example["pick_model"]()
    assert isinstance(model, LazyModel) and not model.built  # nothing is sent: only the string is resolved
    assert model.provider == provider
    assert f"Running on {label}" in capsys.readouterr().out


def test_aws_credentials_without_a_region_fall_back_to_the_script(
    example: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key-id")
    assert example["pick_model"]().provider == "mock"
    assert "built-in scripted model" in capsys.readouterr().out
