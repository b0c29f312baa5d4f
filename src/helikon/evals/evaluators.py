"""Built-in evaluators of the final answer: `ExactMatch` and `JsonSchemaEvaluator`.

(`ToolUseTrajectory` scores the tool calls, `LlmJudge` asks a model: their own modules.)

Example:
    ```python
    import asyncio

    from helikon.evals import CaseOutcome, EvalCase, ExactMatch, JsonSchemaEvaluator

    case = EvalCase.of("sum?", expected={"total": 4})
    outcome = CaseOutcome(output='{"total": 4}')
    assert asyncio.run(ExactMatch().evaluate(case, outcome)).outcome == "passed"
    schema = {"type": "object", "required": ["total"]}
    assert asyncio.run(JsonSchemaEvaluator(schema).evaluate(case, outcome)).outcome == "passed"
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core._internal.extras import missing_extra
from ..core._internal.json_value import JsonObject
from ..core.exceptions import UserError
from .score import CaseOutcome, Score

if TYPE_CHECKING:
    from .dataset import EvalCase


class ExactMatch:
    """The final answer equals `expected`: text for a string, JSON (parsed) for any other value.

    Args:
        strip: Compare text without its leading and trailing whitespace (default True).
        case_sensitive: Compare text case by case (default True).

    Skips a case without `expected`.
    """

    name = "exact_match"

    def __init__(self, *, strip: bool = True, case_sensitive: bool = True) -> None:
        self.strip = strip
        self.case_sensitive = case_sensitive

    async def evaluate(self, case: EvalCase, outcome: CaseOutcome) -> Score:
        """Passed when the answer equals the case's `expected`."""
        expected = case.expected
        if expected is None:
            return Score.skipped("the case has no expected answer")
        if isinstance(expected, str):
            got, want = self._text(outcome.output), self._text(expected)
            if got == want:
                return Score.passed()
            return Score.failed(reason=f"expected {_short(expected)!r}, got {_short(outcome.output)!r}")
        try:
            value = outcome.output_json()
        except ValueError:
            return Score.failed(
                reason=f"expected JSON {_short(str(expected))}, got text {_short(outcome.output)!r}"
            )
        if value == expected:
            return Score.passed()
        return Score.failed(reason=f"expected {_short(str(expected))}, got {_short(str(value))}")

    def _text(self, text: str) -> str:
        text = text.strip() if self.strip else text
        return text if self.case_sensitive else text.casefold()


class JsonSchemaEvaluator:
    """The final answer is JSON that fits `schema` (a JSON Schema, checked with `jsonschema`).

    Needs the `evals` extra. Never skips: an answer that is no JSON fails, saying so.

    Raises:
        UserError: `schema` is not a valid JSON Schema.
    """

    name = "json_schema"

    def __init__(self, schema: JsonObject) -> None:
        try:
            from jsonschema import SchemaError
            from jsonschema.validators import validator_for
        except ImportError as exc:
            raise missing_extra("JsonSchemaEvaluator needs jsonschema", "evals") from exc
        validator: Any = validator_for(schema)
        try:
            validator.check_schema(schema)
        except SchemaError as exc:
            raise UserError(
                f"JsonSchemaEvaluator(schema=...): not a valid JSON Schema: {exc.message}"
            ) from None
        self.schema = schema
        self._validator: Any = validator(schema)

    async def evaluate(self, case: EvalCase, outcome: CaseOutcome) -> Score:
        """Passed when the answer is JSON that fits the schema; the first error says where not."""
        try:
            value = outcome.output_json()
        except ValueError:
            return Score.failed(reason=f"the answer is not JSON: {_short(outcome.output)!r}")
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.path))
        if not errors:
            return Score.passed()
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(the answer)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return Score.failed(reason=f"{where}: {first.message}{more}")


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["ExactMatch", "JsonSchemaEvaluator"]
