"""The output part of the loop's vocabulary: prompts, the final output, and its states and steps.

The states of finalizing (`Finalizing`), repairing (`RepairingOutput`) and checking the
output (`CheckingOutput`) and the inputs that answer a check (`OutputChecked`,
`OutputRetry`). `helikon.core.loop` re-exports every name; `transition` there drives them.
"""

from __future__ import annotations

from typing import Literal

from .._internal.carrier import carrier
from ..events import AgentError, TokenUsage
from ..items import ContentPart, TextPart

FINALIZE_PROMPT = "Now give your final answer as a JSON object that matches the `{name}` schema."
REPAIR_PROMPT = (
    "Your last answer did not match the `{name}` schema. Errors:\n{errors}\n"
    "Reply again with only a JSON object that matches the schema."
)
RETRY_PROMPT = "Validation feedback:\n{reason}\n\nFix the errors and try again."
"""What the model reads when an output validator raised `ModelRetry(reason)` (a text answer)."""
STRUCTURED_RETRY_PROMPT = (
    "Validation feedback:\n{reason}\n\n"
    "Fix the errors and reply again with only a JSON object that matches the `{name}` schema."
)


@carrier
class FinalOutput:
    """The terminal assistant content and the run's usage."""

    content: tuple[ContentPart, ...] = ()
    usage: TokenUsage = TokenUsage()
    validated: str | None = None
    """The output as the output validators made it (None: the content's text, unchanged)."""

    @property
    def text(self) -> str:
        """The output text: the concatenated text parts, unless a validator rewrote them."""
        if self.validated is not None:
            return self.validated
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


@carrier
class Done:
    """Terminal success."""

    type: Literal["done"] = "done"
    output: FinalOutput


@carrier
class Failed:
    """Terminal failure."""

    type: Literal["failed"] = "failed"
    error: AgentError
    usage: TokenUsage = TokenUsage()


@carrier
class Finalizing:
    """A constrained turn asking the model for the output type."""

    type: Literal["finalizing"] = "finalizing"
    turn: int
    usage: TokenUsage = TokenUsage()
    output_retried: int = 0


@carrier
class RepairingOutput:
    """A constrained turn after the structured output was sent back (schema errors, a validator)."""

    type: Literal["repairing_output"] = "repairing_output"
    turn: int
    usage: TokenUsage = TokenUsage()
    output_retried: int = 1
    """How often the output was sent back, this time included."""


@carrier
class CheckingOutput:
    """The output validators are checking the final answer `output` (the driver runs them)."""

    type: Literal["checking_output"] = "checking_output"
    output: FinalOutput
    turn: int
    usage: TokenUsage = TokenUsage()
    output_retried: int = 0
    args_retried: tuple[str, ...] = ()


@carrier
class OutputChecked:
    """The output validators accepted the output; `output` is its new text if one rewrote it."""

    type: Literal["output_checked"] = "output_checked"
    output: str | None = None


@carrier
class OutputRetry:
    """The output validator `validator` raised `ModelRetry(reason)`: the model should try again."""

    type: Literal["output_retry"] = "output_retry"
    reason: str
    validator: str = ""


def retries_exceeded(output_retries: int, reason: str, validator: str, final_text: str) -> AgentError:
    """Why a run whose output validator `validator` still rejects the output (`reason`) failed."""
    retries = f"{output_retries} retr{'y' if output_retries == 1 else 'ies'}"
    return AgentError(
        kind="output_retries_exceeded",
        message=f"the output validator {validator} rejected the output after {retries} "
        f"(output_retries={output_retries}): {reason}",
        limit=output_retries,
        cause=validator,
        schema_errors=(reason,),
        final_text=final_text,
    )


__all__ = [
    "FINALIZE_PROMPT",
    "REPAIR_PROMPT",
    "RETRY_PROMPT",
    "STRUCTURED_RETRY_PROMPT",
    "CheckingOutput",
    "Done",
    "Failed",
    "FinalOutput",
    "Finalizing",
    "OutputChecked",
    "OutputRetry",
    "RepairingOutput",
    "retries_exceeded",
]
