"""`RetryingModel`: retry transient model errors with exponential backoff and jitter."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

from helikon.core._carrier import carrier
from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import ModelError, RateLimited, UserError
from helikon.core.model import (
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    TokenDelta,
    ToolCallDelta,
)

_CONTENT = (TokenDelta, ReasoningDelta, ToolCallDelta)


@carrier
class RetryPolicy:
    """How `RetryingModel` retries, and how `AsyncioRunner` retries a session write (`persist_retry`).

    The n-th retry waits `min(max_delay, base_delay * multiplier ** (n - 1))` seconds,
    less a random share of up to `jitter` of it (so concurrent callers spread out), and
    never less than a `RateLimited` error's `retry_after_ms`.

    Attributes:
        max_attempts: Calls in all, the first included (1 = never retry).
        base_delay: Seconds before the first retry.
        multiplier: Growth factor per retry.
        max_delay: Cap on one backoff, in seconds.
        jitter: Fraction (0-1) of each delay that is randomized away.
    """

    max_attempts: int = 4
    base_delay: float = 0.25
    multiplier: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        attempts: object = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise UserError(f"RetryPolicy(max_attempts={self.max_attempts!r}): must be an integer >= 1")
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise UserError(f"RetryPolicy({name}={value!r}): must be a number of seconds >= 0")
        multiplier: object = self.multiplier
        if isinstance(multiplier, bool) or not isinstance(multiplier, int | float) or multiplier < 1:
            raise UserError(f"RetryPolicy(multiplier={multiplier!r}): must be a number >= 1")
        jitter: object = self.jitter
        if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= 1:
            raise UserError(f"RetryPolicy(jitter={jitter!r}): must be a number between 0 and 1")

    def delay(
        self, retry: int, error: BaseException | None = None, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before retry number `retry` (1-based) after `error` (a hint it may carry)."""
        backoff = min(self.max_delay, self.base_delay * self.multiplier ** (retry - 1))
        backoff -= backoff * self.jitter * (rng or random).random()
        if isinstance(error, RateLimited) and error.retry_after_ms is not None:
            backoff = max(backoff, error.retry_after_ms / 1000)
        return backoff


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
                if await _cancelled_within(cancel, self.policy.delay(attempt, error, self._rng)):
                    raise
                self.retries += 1


async def _cancelled_within(cancel: CancellationToken, seconds: float) -> bool:
    """Sleep `seconds`, returning early (True) if `cancel` fires first."""
    if seconds <= 0:
        return cancel.is_cancelled()
    waiter: Any = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait((waiter,), timeout=seconds)
    finally:
        waiter.cancel()
    return bool(done)
