"""The book's Quickstart, end to end: examples/budget_assistant.py and `helikon demo`."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helikon import MessageOutput, RunContext, ToolCallItem, ToolOutputItem
from helikon.core.events import AgentEvent

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "budget_assistant.py"


@pytest.fixture
def example() -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLE), run_name="quickstart_test")


async def test_the_budget_assistant_calls_both_tools_and_advises(example: dict[str, Any]) -> None:
    agent = example["build_agent"](example["scripted_model"]())
    events: list[AgentEvent] = [
        e async for e in agent.run(example["QUESTION"], context=RunContext.ephemeral(None))
    ]
    assert [e.type for e in events if e.type not in ("token_delta", "tool_call_delta")] == [
        "run_started",
        "turn_started",
        "tool_call_item",
        "tool_output_item",
        "turn_started",
        "tool_call_item",
        "tool_output_item",
        "turn_started",
        "message_output",
        "run_completed",
    ]
    calls = [(e.item.name, e.item.args) for e in events if isinstance(e, ToolCallItem)]
    assert calls == [
        ("lookup_spending", {"category": "Dining", "month": "2026-11"}),
        ("budget_status", {"category": "Dining"}),
    ]
    outputs = [e.item.text for e in events if isinstance(e, ToolOutputItem)]
    assert outputs == ['{"total":312.4,"count":18}', '{"budget":250.0,"spent":312.4,"remaining":-62.4}']
    final = [e for e in events if isinstance(e, MessageOutput)][-1]
    assert final.item.text == example["SCRIPTED_ANSWER"]


async def test_the_tools_match_the_books_schemas(example: dict[str, Any]) -> None:
    spending = example["lookup_spending"]
    assert spending.schema["required"] == ["category", "month"]
    assert spending.schema["properties"]["month"]["description"] == "Month in YYYY-MM form."
    assert spending.description.startswith("Look up the user's total spending")
    assert example["budget_status"].output_schema["properties"]["remaining"]["description"] == (
        "Remaining budget (negative = over budget)."
    )


async def test_main_streams_the_answer_and_says_it_is_scripted(
    example: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await example["main"]() == 0
    out = capsys.readouterr().out
    assert "built-in scripted model" in out
    assert "[calling lookup_spending" in out
    assert example["SCRIPTED_ANSWER"] in out


def test_the_cli_runs_the_demo_and_reports_its_version() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("AWS_")}
    version = subprocess.run(
        [sys.executable, "-m", "helikon.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert version.stdout.strip().startswith("helikon ")
    demo = subprocess.run(
        [sys.executable, "-m", "helikon.cli", "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    assert "You're over budget on dining" in demo.stdout


@pytest.mark.parametrize(
    ("variable", "provider"), [("OPENAI_API_KEY", "openai"), ("ANTHROPIC_API_KEY", "anthropic")]
)
def test_the_example_picks_the_provider_whose_key_is_set(
    example: dict[str, Any],
    variable: str,
    provider: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "test-key-not-used")  # no request is made: only the model is built
    model = example["pick_model"]()
    assert model.provider == provider
    assert f"Running on {'OpenAI' if provider == 'openai' else 'Anthropic'}" in capsys.readouterr().out
