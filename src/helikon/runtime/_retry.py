"""`RetryingModel`: retry transient model errors with exponential backoff and jitter."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

from helikon.core.cancel import CancellationToken, cancelled_within
from helikon.core.exceptions import ModelError, UserError
from helikon.core.model import (
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    TokenDelta,
    ToolCallDelta,
)
from helikon.core.retry import RetryPolicy

_CONTENT = (TokenDelta, ReasoningDelta, ToolCallDelta)


class RetryingModel(Model):
    """Wraps a model and retries `RateLimited`, `Unavailable` and `Transport` errors.

    Only before any content has streamed: once a token, reasoning or tool-call delta has
    been emitted, a later error is raised as is (output cannot be taken back). A
    cancellation during a backoff abandons it at once and raises the last error.

    Example:
        ```python
        from helikon.runtime import RetryingModel, RetryPolicy
        from helikon.testing import MockModel, text_turn

        model = RetryingModel(MockModel.with_scripts([text_turn("hi")]), RetryPolicy(max_attempts=3))
        ```
    """

    def __init__(
        self, model: Model, policy: RetryPolicy | None = None, *, rng: random.Random | None = None
    ) -> None:
        if not callable(getattr(model, "invoke", None)):
            raise UserError(f"RetryingModel(model={model!r}): expected a Model")
        self.inner = model
        self.policy = policy or RetryPolicy()
        self._rng = rng
        self.retries = 0
        """How many retries this wrapper has made (for tests and metrics)."""

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def capabilities(self) -> ModelCapabilities:
        return self.inner.capabilities()

    async def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        attempt = 0
        while True:
            attempt += 1
            streamed = False
            try:
                async for event in self.inner.invoke(request, cancel):
                    if not streamed and isinstance(event, _CONTENT):
                        streamed = True
                    yield event
                return
            except ModelError as error:
                if (
                    streamed
                    or not error.retryable
                    or attempt >= self.policy.max_attempts
                    or cancel.is_cancelled()
                ):
                    raise
                if await cancelled_within(cancel, self.policy.delay(attempt, error, self._rng)):
                    raise
                self.retries += 1
