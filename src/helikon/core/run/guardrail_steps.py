"""The guardrail steps of a run: run a set of guardrails on a text, and what a tripped one ends the run with.

Input guardrails run before the first model call (or beside it); output guardrails on the
final answer. A guardrail that raises, or returns something else than a verdict, trips
(kind `other`), naming itself: a broken check never lets a run through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._internal.callbacks import cancelled_here, described, short_repr
from ..events import AgentError, AgentEvent, GuardrailTriggered, RunFailed
from ..governance import GuardrailInput, GuardrailVerdict
from ..governance._tripwire import guardrail_name, tripwire_message

if TYPE_CHECKING:
    from ..context import RunContext


async def run_guardrails(
    ctx: RunContext[Any], guardrails: Sequence[Any], input: GuardrailInput
) -> GuardrailVerdict:
    """Run `guardrails` concurrently on `input`: the first tripped verdict, in their order, or a pass."""
    verdicts = await asyncio.gather(*(_check(g, ctx, input) for g in guardrails), return_exceptions=True)
    for guardrail, verdict in zip(guardrails, verdicts, strict=True):
        if isinstance(verdict, asyncio.CancelledError) and cancelled_here():
            raise verdict  # else the guardrail raised it by itself: it trips like any error
        name = guardrail_name(guardrail)
        if isinstance(verdict, BaseException):
            error = described(verdict)
            return GuardrailVerdict.tripwire("other", {"guardrail": name, "error": error}, guardrail=name)
        if not isinstance(verdict, GuardrailVerdict):  # e.g. None: a `return` forgotten
            return GuardrailVerdict.tripwire(
                "other", {"guardrail": name, "returned": short_repr(verdict)}, guardrail=name
            )
        if verdict.tripped:  # named, so the run's error says which guardrail tripped
            return verdict if verdict.guardrail else replace(verdict, guardrail=name)
    return GuardrailVerdict.pass_()


async def _check(guardrail: Any, ctx: RunContext[Any], input: GuardrailInput) -> object:
    """`guardrail.check`, awaited here: one that raises at the call (a plain function) trips alone."""
    return await guardrail.check(ctx, input)


def input_tripped(verdict: GuardrailVerdict) -> list[AgentEvent]:
    """The events that end a run whose input a guardrail refused."""
    error = tripwire_error("input", verdict)
    return [GuardrailTriggered(kind=verdict.kind, info=verdict.info, stage="input"), RunFailed(error=error)]


def tripwire_error(stage: str, verdict: GuardrailVerdict) -> AgentError:
    """The run's error for a tripped guardrail: it names the guardrail, the kind and the info."""
    return AgentError(kind="guardrail_tripwire", message=tripwire_message(stage, verdict), cause=verdict.kind)


__all__ = ["input_tripped", "run_guardrails", "tripwire_error"]
