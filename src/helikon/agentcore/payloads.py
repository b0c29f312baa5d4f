"""What an invocation's JSON payload asks for: a run on some input, or a paused run decided.

AgentCore passes the caller's payload to the container as it is. By default helikon reads
the convention AgentCore's own tools use, `{"prompt": "<text>"}`; `input_from=` maps any
other shape to a `RunInput`. A payload with `decisions` (and no prompt) decides the run the
session holds paused for approval, as the agent server's `approvals` endpoint does:
`{"decisions": {"<request id>": {"decision": "approve"}}, "deny_rest": false}`.

Example:
    ```python
    from helikon.agentcore import prompt_input

    assert prompt_input({"prompt": "Hi"}) == "Hi"
    ```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from ..core.approvals import Decision
from ..core.input import RunInput
from ..server.errors import ApiError
from ..server.wire import decisions as read_decisions

InputFrom: TypeAlias = Callable[[Any], RunInput]
"""Maps an invocation's payload to the run's input; raises `ValueError` or `TypeError` saying what to fix."""


class PayloadError(ValueError):
    """A payload that asks for nothing helikon can run (HTTP 400); the message says what to send."""


def prompt_input(payload: Any) -> RunInput:
    """The default `input_from`: the text of `{"prompt": "<text>"}`."""
    if not isinstance(payload, dict):
        raise PayloadError(f'the payload is a JSON {_kind(payload)}: send an object, {{"prompt": "<text>"}}')
    prompt = cast("dict[str, Any]", payload).get("prompt")
    if not isinstance(prompt, str):
        got = "no prompt" if prompt is None else f"prompt is a JSON {_kind(prompt)}"
        raise PayloadError(f'{got}: send {{"prompt": "<text>"}}')
    return prompt


@dataclass(frozen=True, slots=True)
class Start:
    """Run the agent on `input`."""

    input: RunInput


@dataclass(frozen=True, slots=True)
class Decide:
    """Decide the session's paused run and go on with it."""

    decisions: dict[str, Decision]
    deny_rest: bool


def read_payload(payload: Any, input_from: InputFrom) -> Start | Decide:
    """What `payload` asks for.

    Raises:
        PayloadError: It asks for nothing that can run (the message says what to send).
    """
    if isinstance(payload, dict) and "decisions" in payload and "prompt" not in payload:
        try:
            chosen, deny_rest = read_decisions(payload)
        except ApiError as exc:
            raise PayloadError(exc.message) from None
        return Decide(chosen, deny_rest)
    try:
        return Start(input_from(payload))
    except (ValueError, TypeError) as exc:
        raise PayloadError(str(exc)) from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else type(value).__name__


__all__ = ["Decide", "InputFrom", "Start", "prompt_input", "read_payload"]
