"""`FallbackModel`: call the next model when one fails with a transient (or chosen) error."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, cast

from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import ModelError, UserError
from helikon.core.model import (
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelFallback,
    ModelRequest,
    ReasoningDelta,
    TokenDelta,
    ToolCallDelta,
)
from helikon.core.model_strings import checked_model

_CONTENT = (TokenDelta, ReasoningDelta, ToolCallDelta)

FallbackOn = Sequence[type[ModelError]] | type[ModelError] | Callable[[ModelError], bool]
"""Which failures move on to the next model: `ModelError` classes, or a predicate of the error."""


class FallbackModel(Model):
    """Calls its models in order: the next one when a call fails before it streamed anything.

    A call falls back on the transient errors (`RateLimited`, `Unavailable`, `Transport`:
    `ModelError.retryable`) unless `fallback_on` says which. Only before the failing model
    streamed a token, reasoning or tool-call delta: what reached the consumer cannot be
    taken back, so a later error is raised as is. Each switch is streamed as a
    `ModelFallback` event (a runner records it in the session). When the last model fails
    too, its error is raised. Wrap each model in `RetryingModel` to retry it before moving on.

    `provider` and `model_name` are the first model's (the one a call is meant for);
    `capabilities()` is what every model can do.

    Example:
        ```python
        from helikon import LlmAgent, ModelFallback, Unavailable
        from helikon.runtime import FallbackModel
        from helikon.testing import MockModel, text_turn

        primary = MockModel.with_scripts([[Unavailable("503")]], model_name="big")
        model = FallbackModel([primary, MockModel.with_scripts([text_turn("Hi!")], model_name="small")])
        result = LlmAgent(name="a", model=model).run_sync("Hello")
        assert result.final_output == "Hi!"
        [switch] = [e for e in result.events if isinstance(e, ModelFallback)]
        assert (switch.from_model, switch.to_model) == ("mock:big", "mock:small")
        assert switch.error_kind == "unavailable"
        ```
    """

    def __init__(self, models: Sequence[Model | str], *, fallback_on: FallbackOn | None = None) -> None:
        if isinstance(models, str) or not isinstance(models, Sequence) or len(models) < 2:
            raise UserError(
                f"FallbackModel({models!r}): give a list of two or more models (or model strings), "
                "the first to call first"
            )
        self.models: tuple[Model, ...] = tuple(checked_model(model, "FallbackModel") for model in models)
        self._falls_back = _predicate(fallback_on)
        self.fallbacks = 0
        """How many times this model moved on to the next one (for tests and metrics)."""

    @property
    def provider(self) -> str:
        return self.models[0].provider

    @property
    def model_name(self) -> str:
        return self.models[0].model_name

    def capabilities(self) -> ModelCapabilities:
        every = [model.capabilities() for model in self.models]
        flags = {
            f.name: all(getattr(c, f.name) for c in every) for f in dataclasses.fields(ModelCapabilities)
        }
        return ModelCapabilities(**flags)

    async def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        last = len(self.models) - 1
        for index, model in enumerate(self.models):
            streamed = False
            stream = model.invoke(request, cancel)
            try:
                async for event in stream:
                    if not streamed and isinstance(event, _CONTENT):
                        streamed = True
                    yield event
                return
            except ModelError as error:
                if streamed or index == last or cancel.is_cancelled() or not self._falls_back(error):
                    raise
                self.fallbacks += 1
                failure = error
            finally:
                aclose: Any = getattr(stream, "aclose", None)
                if aclose is not None:  # an abandoned stream lets go of its connection now
                    await aclose()
            yield ModelFallback(
                from_model=_label(model),
                to_model=_label(self.models[index + 1]),
                error_kind=failure.kind,
                error=str(failure),
            )

    async def aclose(self) -> None:
        """Close every model that has a client to close."""
        for model in self.models:
            close: Any = getattr(model, "aclose", None)
            if close is not None:
                await close()

    def __repr__(self) -> str:
        return f"FallbackModel([{', '.join(_label(m) for m in self.models)}])"


def _label(model: Model) -> str:
    return f"{model.provider}:{model.model_name}"


def _predicate(fallback_on: FallbackOn | None) -> Callable[[ModelError], bool]:
    """`fallback_on` as a predicate of the error (default: the transient errors)."""
    if fallback_on is None:
        return _transient
    given: object = (fallback_on,) if isinstance(fallback_on, type) else fallback_on
    if isinstance(given, list | tuple):
        classes = tuple(cast("Sequence[object]", given))
        for cls in classes:
            if not (isinstance(cls, type) and issubclass(cls, ModelError)):
                raise UserError(
                    f"FallbackModel(fallback_on=[..., {cls!r}]): give ModelError classes "
                    "(e.g. ContextLengthExceeded), or a function of the error returning a bool"
                )
        chosen = cast("tuple[type[ModelError], ...]", classes)
        return lambda error: isinstance(error, chosen)
    if callable(given):
        return given
    raise UserError(
        f"FallbackModel(fallback_on={fallback_on!r}): give ModelError classes, or a function of the error"
    )


def _transient(error: ModelError) -> bool:
    return error.retryable
