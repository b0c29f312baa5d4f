"""The book's transaction categorizer: a typed result from a structured run."""

from __future__ import annotations

from typing import cast

import pytest
from pydantic import BaseModel, Field

from helikon import InvalidStructuredOutput, LlmAgent, RunContext
from helikon.testing import MockModel, text_turn


class TransactionCategory(BaseModel):
    category: str = Field(description='Spending category, e.g. "Groceries", "Dining", "Transport".')
    confidence: float = Field(description="0.0-1.0 confidence in the category.")
    recurring: bool = Field(description="True if this looks like a recurring charge.")
    reasoning: str = Field(description="One-sentence justification.")


INSTRUCTIONS = (
    "You are a personal-finance assistant. Categorize the transaction into a single spending category, "
    "say whether it looks recurring, and express your confidence as a number between 0.0 and 1.0."
)
ANSWER = (
    '{"category": "Entertainment", "confidence": 0.95, "recurring": true, '
    '"reasoning": "Netflix is a monthly streaming subscription."}'
)


def categorizer(*scripts: str) -> tuple[LlmAgent[None, TransactionCategory], MockModel]:
    model = MockModel.with_scripts([text_turn(s, chunk_size=16) for s in scripts])
    agent = LlmAgent[None, TransactionCategory](
        name="transaction-categorizer",
        model=model,
        instructions=INSTRUCTIONS,
        output_type=TransactionCategory,
    )
    return agent, model


async def test_the_categorizer_returns_a_typed_value() -> None:
    agent, model = categorizer(ANSWER)
    result = await agent.run(
        "NETFLIX.COM 866-579-7172 CA — $15.49", context=RunContext.ephemeral(None)
    ).collect(output_type=TransactionCategory)
    assert result.final_output == TransactionCategory(
        category="Entertainment",
        confidence=0.95,
        recurring=True,
        reasoning="Netflix is a monthly streaming subscription.",
    )
    [request] = model.requests
    response_format = request.model_settings.response_format
    assert response_format is not None
    assert (response_format.type, response_format.name, response_format.strict) == (
        "json_schema",
        "TransactionCategory",
        True,
    )
    assert response_format.schema is not None
    assert set(cast("list[str]", response_format.schema["required"])) == {
        "category",
        "confidence",
        "recurring",
        "reasoning",
    }


async def test_a_malformed_answer_is_repaired_once() -> None:
    agent, model = categorizer('{"category": "Entertainment"}', ANSWER)
    result = await agent.run("NETFLIX.COM — $15.49").collect(output_type=TransactionCategory)
    assert result.final_output.recurring is True
    assert [e.type for e in result.events if e.type in ("structured_output_failed", "repair_started")] == [
        "structured_output_failed",
        "repair_started",
    ]
    repair_prompt = model.requests[1].messages[-1]
    assert "confidence" in repair_prompt.text  # type: ignore[union-attr]


async def test_two_misses_fail_with_the_schema_errors_and_the_text() -> None:
    agent, _ = categorizer("not json", '{"category": 3}')
    with pytest.raises(InvalidStructuredOutput) as info:
        await agent.run("NETFLIX.COM — $15.49").collect(output_type=TransactionCategory)
    assert info.value.final_text == '{"category": 3}'
    assert any(error.startswith("category") for error in info.value.schema_errors)
