"""`@input_guardrail` and `@output_guardrail`: a guardrail written as one function.

The function takes the text to check, after the `RunContext` if it wants it, and returns a
`GuardrailVerdict`; it may be async (to await a moderation API) or sync (it then runs on
the event loop: keep it quick). The decorator makes it a `FunctionGuardrail`, which is a
`Guardrail` like any class with a `check` method, named after the function.

Example:
    ```python
    from helikon import GuardrailVerdict, LlmAgent, RunContext, RunError, input_guardrail, output_guardrail
    from helikon.testing import MockModel, text_turn

    @input_guardrail
    async def no_account_numbers(ctx: RunContext[None], text: str) -> GuardrailVerdict:
        if "IBAN" in text:
            return GuardrailVerdict.tripwire("input_policy", {"matched": "IBAN"})
        return GuardrailVerdict.pass_()

    @output_guardrail
    def polite(text: str) -> GuardrailVerdict:  # sync, and without the context
        if "stupid" in text:
            return GuardrailVerdict.tripwire("output_policy")
        return GuardrailVerdict.pass_()

    agent = LlmAgent(
        name="assistant",
        model=MockModel.with_scripts([text_turn("Sure.")]),
        input_guardrails=[no_account_numbers],
        output_guardrails=[polite],
    )
    try:
        agent.run_sync("Send it to IBAN DE89...")
    except RunError as error:
        assert str(error).startswith("the input guardrail no_account_numbers tripped (input_policy)")
    ```
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, cast, overload

from ..exceptions import UserError
from . import Guardrail, GuardrailInput, GuardrailVerdict

if TYPE_CHECKING:
    from ..context import RunContext

Ctx = TypeVar("Ctx")

_Verdict: TypeAlias = GuardrailVerdict | Awaitable[GuardrailVerdict]
GuardrailFunc: TypeAlias = "Callable[[RunContext[Any], str], _Verdict] | Callable[[str], _Verdict]"
"""A guardrail function: of `(ctx, text)` or `(text)`, sync or async, returning a `GuardrailVerdict`."""

Stage: TypeAlias = Literal["input", "output"]

_OPPOSITE: dict[Stage, Stage] = {"input": "output", "output": "input"}


class FunctionGuardrail(Generic[Ctx]):
    """A `Guardrail` made of a function by `@input_guardrail` or `@output_guardrail`.

    Attributes:
        fn: The function.
        name: What the run's error calls it (the function's name unless given).
        stage: `input` (it checks the user's text) or `output` (the final text).
        run_in_parallel: For an input guardrail: whether it runs beside the first model
            call (True) or before it.
    """

    __slots__ = ("fn", "name", "run_in_parallel", "stage", "takes_ctx")

    def __init__(
        self, fn: GuardrailFunc, *, stage: Stage, name: str | None = None, run_in_parallel: bool = True
    ):
        where = f"@{stage}_guardrail"
        if not callable(fn):
            raise UserError(
                f"{where}: {fn!r} is not a function; decorate a function of (text) or (ctx, text)"
            )
        label = name if name is not None else getattr(fn, "__name__", None) or type(fn).__name__
        if not isinstance(label, str) or not label.strip():
            raise UserError(f"{where}(name={name!r}): give the guardrail a non-empty name")
        self.fn = fn
        self.name: str = label
        self.stage: Stage = stage
        self.run_in_parallel = run_in_parallel
        self.takes_ctx = _takes_ctx(fn, where, label)

    async def check(self, ctx: RunContext[Ctx], input: GuardrailInput) -> GuardrailVerdict:
        """Call the function on `input.text`; what it returns is the verdict (the run checks it is one)."""
        fn = cast("Callable[..., object]", self.fn)
        value = fn(ctx, input.text) if self.takes_ctx else fn(input.text)
        if inspect.isawaitable(value):
            value = await value
        return cast("GuardrailVerdict", value)

    def __repr__(self) -> str:
        return f"FunctionGuardrail({self.name!r}, stage={self.stage!r})"


def _takes_ctx(fn: Callable[..., object], where: str, name: str) -> bool:
    """Whether `fn` takes `(ctx, text)` (else `(text)`); any other shape is a `UserError`."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: call it with the text
        return False
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if len(positional) not in (1, 2):
        raise UserError(
            f"{where}: {name} takes {len(positional)} arguments; give a function of (text) or (ctx, text) "
            "returning a GuardrailVerdict (openai-agents' (ctx, agent, input) is (ctx, text) here)"
        )
    return len(positional) == 2


@overload
def input_guardrail(fn: GuardrailFunc, /) -> FunctionGuardrail[Any]: ...


@overload
def input_guardrail(
    *, name: str | None = None, run_in_parallel: bool = True
) -> Callable[[GuardrailFunc], FunctionGuardrail[Any]]: ...


def input_guardrail(
    fn: GuardrailFunc | None = None, /, *, name: str | None = None, run_in_parallel: bool = True
) -> FunctionGuardrail[Any] | Callable[[GuardrailFunc], FunctionGuardrail[Any]]:
    """Make a function a guardrail on the user's text: `@input_guardrail` or `@input_guardrail(...)`.

    Args:
        fn: A function of `(text)` or `(ctx, text)`, sync or async, returning a `GuardrailVerdict`.
        name: What the run's error calls it (default: the function's name).
        run_in_parallel: Run beside the first model call (the default: its text may stream,
            nothing it asks for happens before the guardrail passed), or before it (False).
    """
    if fn is not None:
        return FunctionGuardrail(fn, stage="input", name=name, run_in_parallel=run_in_parallel)

    def decorate(f: GuardrailFunc) -> FunctionGuardrail[Any]:
        return FunctionGuardrail(f, stage="input", name=name, run_in_parallel=run_in_parallel)

    return decorate


@overload
def output_guardrail(fn: GuardrailFunc, /) -> FunctionGuardrail[Any]: ...


@overload
def output_guardrail(*, name: str | None = None) -> Callable[[GuardrailFunc], FunctionGuardrail[Any]]: ...


def output_guardrail(
    fn: GuardrailFunc | None = None, /, *, name: str | None = None
) -> FunctionGuardrail[Any] | Callable[[GuardrailFunc], FunctionGuardrail[Any]]:
    """Make a function a guardrail on the final text: `@output_guardrail` or `@output_guardrail(name=...)`.

    Args:
        fn: A function of `(text)` or `(ctx, text)`, sync or async, returning a `GuardrailVerdict`.
            The text is the final answer (JSON for an agent with an `output_type`).
        name: What the run's error calls it (default: the function's name).
    """
    if fn is not None:
        return FunctionGuardrail(fn, stage="output", name=name)

    def decorate(f: GuardrailFunc) -> FunctionGuardrail[Any]:
        return FunctionGuardrail(f, stage="output", name=name)

    return decorate


def checked_guardrails(
    guardrails: Iterable[Guardrail[Ctx]], stage: Stage, where: str
) -> tuple[Guardrail[Ctx], ...]:
    """`LlmAgent(input_guardrails=...)` or `output_guardrails=...` as a tuple, each item checked.

    A plain function (not decorated) and a decorated guardrail of the other stage are
    `UserError`s that say what to write instead.
    """
    if isinstance(guardrails, str):
        raise UserError(f"{where}: expected a list of guardrails, got {guardrails!r}")
    items = tuple(guardrails)
    for index, guardrail in enumerate(items):
        if not callable(getattr(guardrail, "check", None)):
            hint = (
                f"decorate it with @{stage}_guardrail"
                if callable(guardrail)
                else "give an object with check()"
            )
            raise UserError(
                f"{where}: item {index} ({guardrail!r}) is not a guardrail; {hint} "
                "(a function of (text) or (ctx, text) returning a GuardrailVerdict)"
            )
        if isinstance(guardrail, FunctionGuardrail) and guardrail.stage != stage:
            other = _OPPOSITE[stage]
            raise UserError(
                f"{where}: {guardrail.name} is an @{other}_guardrail; put it in {other}_guardrails=[...]"
            )
    return items


__all__ = ["FunctionGuardrail", "GuardrailFunc", "checked_guardrails", "input_guardrail", "output_guardrail"]
