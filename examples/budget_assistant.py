"""The Quickstart: a budgeting assistant that calls two tools, then advises in plain text.

Run it with `uv run python examples/budget_assistant.py` (or `helikon demo`). The answer
streams to the terminal as it arrives. It runs on the first provider whose key is set
(OpenAI, Anthropic, Gemini, AWS Bedrock); with none it runs on helikon's built-in scripted
model and says so. `helikon demo --model <model string>` runs it on any model.
"""

from __future__ import annotations

import asyncio
import os
import sys

from pydantic import BaseModel, Field

from helikon import (
    LlmAgent,
    Model,
    RunContext,
    RunFailed,
    TokenDelta,
    ToolCallItem,
    ToolOutputItem,
    resolve_model,
    tool,
)
from helikon.testing import MockModel, text_turn, tool_call_turn

INSTRUCTIONS = (
    "You are a budgeting assistant. Use the tools to look up the user's spending "
    "and budget for the relevant category, then tell them whether they are on "
    "track and suggest one concrete action."
)
QUESTION = "How am I doing on my dining budget this month?"


class Spending(BaseModel):
    total: float = Field(description="Total spent in the category this month, in dollars.")
    count: int = Field(description="Number of transactions.")


class BudgetStatus(BaseModel):
    budget: float = Field(description="Monthly budget for the category, in dollars.")
    spent: float = Field(description="Amount spent so far, in dollars.")
    remaining: float = Field(description="Remaining budget (negative = over budget).")


@tool
async def lookup_spending(category: str, month: str) -> Spending:
    """Look up the user's total spending and transaction count for a category in a month.

    Args:
        category: Spending category, e.g. "Dining".
        month: Month in YYYY-MM form.
    """
    ledger = {"dining": Spending(total=312.40, count=18), "groceries": Spending(total=540.10, count=9)}
    return ledger.get(category.lower(), Spending(total=0.0, count=0))


@tool
async def budget_status(category: str) -> BudgetStatus:
    """Look up the user's monthly budget, amount spent, and remaining balance for a category.

    Args:
        category: Spending category, e.g. "Dining".
    """
    budgets = {
        "dining": BudgetStatus(budget=250.0, spent=312.40, remaining=-62.40),
        "groceries": BudgetStatus(budget=600.0, spent=540.10, remaining=59.90),
    }
    return budgets.get(category.lower(), BudgetStatus(budget=0.0, spent=0.0, remaining=0.0))


SCRIPTED_ANSWER = (
    "You're over budget on dining this month: you've spent $312.40 across 18 transactions "
    "against a $250.00 budget, so you're $62.40 over. One concrete action: cap dining out "
    "at one meal a week for the rest of the month and cook at home the other nights."
)


def scripted_model() -> MockModel:
    """The built-in scripted model: the same tool calls and answer a real model gives."""
    return MockModel.with_scripts(
        [
            tool_call_turn("lookup_spending", {"category": "Dining", "month": "2026-11"}, call_id="call_1"),
            tool_call_turn("budget_status", {"category": "Dining"}, call_id="call_2"),
            text_turn(SCRIPTED_ANSWER, chunk_size=12),
        ]
    )


# (label, model string, variables of which one must be set, and a second such group if any),
# in the order they are tried.
PROVIDERS = [
    ("OpenAI", "openai:gpt-5-mini", ("OPENAI_API_KEY",), ()),
    ("Anthropic", "anthropic:claude-sonnet-4-6", ("ANTHROPIC_API_KEY",), ()),
    ("Gemini", "gemini:gemini-2.5-flash", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), ()),
    (
        "AWS Bedrock",
        "bedrock:amazon.nova-lite-v1:0",
        ("AWS_ACCESS_KEY_ID", "AWS_PROFILE"),
        ("AWS_REGION", "AWS_DEFAULT_REGION"),
    ),
]


def pick_model() -> Model:
    """The first provider whose key is set; otherwise the scripted model. Says which."""
    for label, model, keys, region in PROVIDERS:
        key = next((name for name in keys if os.environ.get(name)), None)
        if key is None or (region and not any(os.environ.get(name) for name in region)):
            continue
        try:
            resolved = resolve_model(model)
        except ImportError as exc:  # the key is set but the provider's extra is not installed
            print(f"({exc}; trying the next provider)", file=sys.stderr)
            continue
        print(f"Running on {label} ({model}): {key} is set.\n")
        return resolved
    print(
        "No OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or AWS credentials set: "
        "running on helikon's built-in scripted model.\n"
        "(Pick any model with `helikon demo --model <prefix>:<model>`, e.g. --model ollama:llama3.2)\n"
    )
    return scripted_model()


def build_agent(model: Model) -> LlmAgent[None]:
    return LlmAgent(
        name="budget-assistant",
        model=model,
        instructions=INSTRUCTIONS,
        tools=[lookup_spending, budget_status],
    )


async def main(model: Model | None = None) -> int:
    agent = build_agent(model or pick_model())
    print(f"> {QUESTION}\n")
    async for event in agent.run(QUESTION, context=RunContext.ephemeral(None)):
        if isinstance(event, ToolCallItem):
            print(f"  [calling {event.item.name}({event.item.args})]")
        elif isinstance(event, ToolOutputItem):
            print(f"  [{event.item.name} -> {event.item.text}]\n")
        elif isinstance(event, TokenDelta):
            print(event.text, end="", flush=True)
        elif isinstance(event, RunFailed):
            print(f"\nrun failed: {event.error}", file=sys.stderr)
            return 1
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
