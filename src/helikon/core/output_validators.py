"""Output validators: functions that check (and may rewrite) a run's final output.

An output validator takes the output (the validated `output_type` value, or the text for
an agent without one), optionally after the `RunContext`, and returns the output to keep,
sync or async. Raising `ModelRetry("why")` sends the model back with the reason, up to
the agent's `output_retries`; past it the run fails (`OutputRetriesExceeded`).

Example:
    ```python
    from pydantic import BaseModel

    from helikon import LlmAgent, ModelRetry, RunContext
    from helikon.testing import MockModel, text_turn

    class Weather(BaseModel):
        city: str
        celsius: float

    def plausible(weather: Weather) -> Weather:
        if weather.celsius > 60:
            raise ModelRetry(f"{weather.celsius} °C is not a weather reading; check the units")
        return weather

    model = MockModel.with_scripts([
        text_turn('{"city": "Oslo", "celsius": 75}'),
        text_turn('{"city": "Oslo", "celsius": 24}'),
    ])
    agent = LlmAgent(name="w", model=model, output_type=Weather, output_validators=[plausible])

    @agent.output_validator
    async def titled(ctx: RunContext[None], weather: Weather) -> Weather:
        return weather.model_copy(update={"city": weather.city.title()})

    assert agent.run_sync("Weather in Oslo?").final_output == Weather(city="Oslo", celsius=24)
    assert "check the units" in model.requests[1].messages[-1].text
    ```
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from ._internal.callbacks import CallbackRaised, CallbackReturned
from .context import RunContext
from .exceptions import ModelRetry, UserError

if TYPE_CHECKING:
    from .agent import LlmAgent
    from .loop import CheckingOutput, OutputChecked, OutputRetry

Ctx = TypeVar("Ctx")
OutT = TypeVar("OutT")

OutputValidatorFunc: TypeAlias = (
    Callable[[RunContext[Ctx], OutT], OutT | Awaitable[OutT]] | Callable[[OutT], OutT | Awaitable[OutT]]
)
"""A function of `(ctx, output)` or `(output)`, sync or async, returning the output to keep."""


class OutputCheck:
    """One output validator, with how it is called (checked once, when the agent is built)."""

    __slots__ = ("fn", "name", "takes_ctx")

    def __init__(self, fn: Callable[..., Any], *, name: str, takes_ctx: bool) -> None:
        self.fn = fn
        self.name = name
        self.takes_ctx = takes_ctx

    @staticmethod
    def of(fn: object, where: str) -> OutputCheck:
        """Check `fn`'s shape: a callable of one (output) or two (ctx, output) positional arguments."""
        if not callable(fn):
            raise UserError(
                f"{where}: {fn!r} is not a function; give a function of (output) or (ctx, output)"
            )
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature: call it with the output
            return OutputCheck(fn, name=name, takes_ctx=False)
        positional = [
            p
            for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        if len(positional) not in (1, 2):
            raise UserError(
                f"{where}: the output validator {name} takes {len(positional)} arguments; "
                "give a function of (output) or (ctx, output)"
            )
        return OutputCheck(fn, name=name, takes_ctx=len(positional) == 2)


def output_checks(validators: Sequence[object], where: str) -> tuple[OutputCheck, ...]:
    """The checked validators of `LlmAgent(output_validators=...)`."""
    if isinstance(validators, str) or not isinstance(validators, Sequence):
        raise UserError(f"{where}: expected a list of functions, got {validators!r}")
    return tuple(OutputCheck.of(fn, where) for fn in validators)


async def check_output(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any], state: CheckingOutput
) -> OutputChecked | OutputRetry:
    """Run the agent's output validators in order on the final output (a driver step).

    `ModelRetry` settles into `OutputRetry`; anything else a validator raises fails the run.
    """
    from .loop import OutputChecked, OutputRetry

    spec = agent.output_spec
    output = spec.output if spec is not None else None
    text = state.output.text
    value: Any = text if output is None else output.validate_text(text)[0]
    original = value
    what = "an output validator"
    for check in agent.output_checks:
        what = f"the output validator {check.name}"
        try:
            result = check.fn(ctx, value) if check.takes_ctx else check.fn(value)
            if inspect.isawaitable(result):
                result = await result
        except ModelRetry as exc:
            return OutputRetry(reason=exc.message, validator=check.name)
        except Exception as exc:
            raise CallbackRaised(what, "output_validator", exc) from exc
        if result is None:  # a `return` forgotten: keeping None would lose the output
            raise CallbackReturned(what, "output_validator", result, "the output (return it to keep it)")
        value = result
    if value is original:
        return OutputChecked()
    if output is None:
        if not isinstance(value, str):
            raise CallbackReturned(what, "output_validator", value, "a str (the agent has no output_type)")
        return OutputChecked(output=value)
    try:
        return OutputChecked(output=output.dump_text(value))
    except Exception as exc:  # not a value of the output type
        raise CallbackReturned(what, "output_validator", value, f"a {output.name}") from exc


__all__ = ["OutputValidatorFunc"]
