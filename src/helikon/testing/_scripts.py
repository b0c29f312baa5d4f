"""Small helpers for writing model scripts by hand."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from helikon.core._internal.carrier import carrier
from helikon.core._internal.json_value import JsonValue
from helikon.core.exceptions import UserError
from helikon.core.handoff import Handoff, transfer_tool_name
from helikon.core.model import Finish, ModelEvent, ReasoningDelta, TokenDelta, ToolCallDelta, Usage

if TYPE_CHECKING:
    from helikon.core.agent import Agent


@carrier(kw_only=False)
class Delay:
    """A script step that waits `seconds` before the next event (to test timeouts and cancellation)."""

    seconds: float


ScriptStep = ModelEvent | Delay | BaseException
"""One step of a script: an event to stream, a pause, or an exception to raise."""

Script = Sequence[ScriptStep]
"""What one model call streams."""


def text_turn(text: str, *, chunk_size: int | None = None, usage: Usage | None = None) -> list[ScriptStep]:
    """A turn that answers `text` (split into `chunk_size`-character deltas when given).

    Example:
        ```python
        from helikon.testing import text_turn

        assert [e.type for e in text_turn("Hi")] == ["token_delta", "finish"]
        ```
    """
    steps: list[ScriptStep] = []
    if chunk_size and chunk_size > 0:
        steps += [TokenDelta(text=text[i : i + chunk_size]) for i in range(0, len(text), chunk_size)]
    else:
        steps.append(TokenDelta(text=text))
    if usage is not None:
        steps.append(usage)
    steps.append(Finish(reason="stop"))
    return steps


def reasoning_turn(reasoning: str, text: str, *, signature: str | None = None) -> list[ScriptStep]:
    """A turn that reasons, then answers."""
    return [ReasoningDelta(text=reasoning, signature=signature), TokenDelta(text=text), Finish(reason="stop")]


def tool_call_turn(
    name: str, args: JsonValue = None, *, call_id: str | None = None, usage: Usage | None = None
) -> list[ScriptStep]:
    """A turn that calls one tool with `args` (a JSON value, or a raw argument string)."""
    return tool_calls_turn([(name, args)], call_ids=[call_id] if call_id else None, usage=usage)


def handoff_turn(
    target: Agent[Any] | Handoff[Any] | str,
    args: JsonValue = None,
    *,
    call_id: str | None = None,
    usage: Usage | None = None,
) -> list[ScriptStep]:
    """A turn that hands off to `target`: an agent, its name, or the `Handoff` to it.

    It calls the handoff's transfer tool (`transfer_to_<slug of the name>`, or the
    `tool_name` a `Handoff` was given), so a script need not spell the tool out.

    Example:
        ```python
        from helikon import LlmAgent
        from helikon.testing import MockModel, handoff_turn, text_turn

        billing = LlmAgent(name="Billing Desk", model=MockModel.with_scripts([text_turn("Refunded.")]))
        model = MockModel.with_scripts([handoff_turn(billing)])  # calls transfer_to_billing_desk
        triage = LlmAgent(name="triage", model=model, handoffs=[billing])
        assert triage.run_sync("refund please").final_output == "Refunded."
        ```
    """
    name = _transfer_tool(target)
    return tool_call_turn(name, {} if args is None else args, call_id=call_id, usage=usage)


def _transfer_tool(target: object) -> str:
    """The transfer tool of a handoff to `target` (an agent, its name, or the `Handoff`)."""
    if isinstance(target, Handoff):
        return cast("Handoff[Any]", target).tool_name
    if isinstance(target, str) and target.strip():
        return transfer_tool_name(target)
    name = getattr(target, "name", None)
    if isinstance(name, str) and name.strip() and callable(getattr(target, "run", None)):
        return transfer_tool_name(name)
    raise UserError(f"handoff_turn({target!r}): give the target agent, its name, or the Handoff to it")


def tool_calls_turn(
    calls: Sequence[tuple[str, JsonValue]],
    *,
    call_ids: Sequence[str] | None = None,
    usage: Usage | None = None,
) -> list[ScriptStep]:
    """A turn that calls several tools at once (they run concurrently)."""
    steps: list[ScriptStep] = []
    for index, (name, args) in enumerate(calls):
        call_id = call_ids[index] if call_ids else f"call_{index + 1}_{name}"
        raw = args if isinstance(args, str) else json.dumps({} if args is None else args)
        steps.append(ToolCallDelta(call_id=call_id, name=name, args_delta=raw))
    if usage is not None:
        steps.append(usage)
    steps.append(Finish(reason="tool_calls"))
    return steps
