"""`RetryPolicy`: how often, and after what backoff, a failed call is tried again.

`helikon.runtime.RetryingModel` retries model calls with one; a run on a session retries the
writes it could not make with one (`AsyncioRunner(persist_retry=...)`).
"""

from __future__ import annotations

import random

from ._internal.carrier import carrier
from .exceptions import RateLimited, UserError


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


__all__ = ["RetryPolicy"]
