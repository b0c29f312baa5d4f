"""`UsageLimits`: caps on what a run may spend, and the meter its runs share.

A run given `RunConfig(usage_limits=UsageLimits(...))` counts its model requests, tokens
and tool calls, together with those of everything it starts (handoff targets, agents
called as tools, workflow children), and fails with `UsageLimitExceeded` once a cap is
passed. When each limit is checked:

- `request_limit`: before each model call. The call that would pass the cap is not made.
- `input_tokens_limit`, `output_tokens_limit`, `total_tokens_limit`: when a call's usage
  arrives (the model reports it only once it has answered). The call that pushes the count
  over the cap has been made and paid for; its answer is streamed (and recorded), and the
  run fails right after it, before any tool runs or any further call. A run whose tree is
  already over a token cap makes no further call either.
- `tool_calls_limit`: before each batch of tool calls. A batch that would pass the cap
  does not run at all (each call the model asks for counts, refused ones included).

Example:
    ```python
    from helikon import LlmAgent, RunConfig, UsageLimitExceeded, UsageLimits
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("never sent")]))
    config = RunConfig(usage_limits=UsageLimits(request_limit=0))
    try:
        agent.run_sync("Hi", config=config)
    except UsageLimitExceeded as exc:
        assert (exc.limit_name, exc.limit, exc.used) == ("request_limit", 0, 1)
    ```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._internal.carrier import carrier
from .events import AgentError, TokenUsage
from .exceptions import UserError

if TYPE_CHECKING:
    from .context import RunContext

_TOGETHER = "the run, its handoffs and sub-agents count together"
_LIMITS = (
    "request_limit",
    "input_tokens_limit",
    "output_tokens_limit",
    "total_tokens_limit",
    "tool_calls_limit",
)


@carrier
class UsageLimits:
    """Caps on a run's spending; `None` (the default for each) means no cap.

    Attributes:
        request_limit: Model requests (calls) the run may make.
        input_tokens_limit: Input tokens its model calls may use.
        output_tokens_limit: Output tokens its model calls may use.
        total_tokens_limit: Input plus output tokens.
        tool_calls_limit: Tool calls the model may make.

    Example:
        ```python
        from helikon import RunConfig, UsageLimits

        config = RunConfig(usage_limits=UsageLimits(request_limit=5, total_tokens_limit=20_000))
        assert config.usage_limits is not None and config.usage_limits.request_limit == 5
        ```
    """

    request_limit: int | None = None
    input_tokens_limit: int | None = None
    output_tokens_limit: int | None = None
    total_tokens_limit: int | None = None
    tool_calls_limit: int | None = None

    def __post_init__(self) -> None:
        for name in _LIMITS:
            value: object = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise UserError(
                    f"UsageLimits({name}={value!r}): give a whole number >= 0, or None for no limit"
                )

    @property
    def any(self) -> bool:
        """Whether any cap is set."""
        return any(getattr(self, name) is not None for name in _LIMITS)


class UsageMeter:
    """Internal: what the runs under one `UsageLimits` have spent, shared by those runs.

    A run carries its meter on its `RunContext`, so every run it starts (each on a child
    context) counts into it. A run whose own config sets other limits gets a meter of its
    own whose `parent` is the inherited one: what it spends counts into both, and it is
    checked against both.
    """

    __slots__ = ("exceeded", "input_tokens", "limits", "output_tokens", "parent", "requests", "tool_calls")

    def __init__(self, limits: UsageLimits, parent: UsageMeter | None = None) -> None:
        self.limits = limits
        self.parent = parent
        self.requests = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.tool_calls = 0
        self.exceeded: AgentError | None = None
        """Set once a cap is passed: every run on this meter then fails at its next step."""

    @staticmethod
    def for_run(limits: UsageLimits | None, inherited: UsageMeter | None) -> UsageMeter | None:
        """The meter a run with `limits` counts into, under the meter its context carries."""
        if limits is None or not limits.any:
            return inherited
        meter = inherited
        while meter is not None:
            # A meter up the chain counts a superset of this run's spending: the same caps
            # there are at least as strict as a meter of its own would be.
            if meter.limits is limits or meter.limits == limits:
                return inherited
            meter = meter.parent
        return UsageMeter(limits, inherited)

    def failure(self) -> AgentError | None:
        """The error of a cap passed on this meter or one above it, if any."""
        meter: UsageMeter | None = self
        while meter is not None:
            if meter.exceeded is not None:
                return meter.exceeded
            meter = meter.parent
        return None

    def before_request(self, agent: str) -> AgentError | None:
        """Count one more model request, unless it (or a spent token cap) passes a limit."""
        meter: UsageMeter | None = self
        while meter is not None:
            error = meter.refuse_request(agent)
            if error is not None:
                meter.exceeded = error
                return error
            meter = meter.parent
        meter = self
        while meter is not None:
            meter.requests += 1
            meter = meter.parent
        return None

    def refuse_request(self, agent: str) -> AgentError | None:
        limits = self.limits
        if limits.request_limit is not None and self.requests + 1 > limits.request_limit:
            return _error(
                "request_limit",
                limits.request_limit,
                self.requests + 1,
                f"{agent!r} would make model request {self.requests + 1}, so it was not sent",
            )
        # Already over a token cap (a sub-agent pushed it there): no call may follow.
        return self.token_error(f"used, so {agent!r} makes no further model call")

    def add_usage(self, agent: str, usage: TokenUsage) -> None:
        """Count a settled model call's tokens; a cap they pass marks the meter exceeded."""
        meter: UsageMeter | None = self
        while meter is not None:
            meter.input_tokens += usage.input_tokens
            meter.output_tokens += usage.output_tokens
            if meter.exceeded is None:
                meter.exceeded = meter.token_error(f"used once a call of {agent!r} answered")
            meter = meter.parent

    def token_error(self, then: str) -> AgentError | None:
        """The error of a token cap this meter is over (`then` ends its sentence), if any."""
        limits = self.limits
        checks = (
            ("input_tokens_limit", limits.input_tokens_limit, self.input_tokens, "input tokens"),
            ("output_tokens_limit", limits.output_tokens_limit, self.output_tokens, "output tokens"),
            (
                "total_tokens_limit",
                limits.total_tokens_limit,
                self.input_tokens + self.output_tokens,
                "tokens (input plus output)",
            ),
        )
        for name, limit, used, what in checks:
            if limit is not None and used > limit:
                return _error(name, limit, used, f"{used} {what} {then}")
        return None

    def before_tools(self, count: int) -> AgentError | None:
        """Count a batch of `count` tool calls, unless it passes `tool_calls_limit`."""
        meter: UsageMeter | None = self
        while meter is not None:
            limit = meter.limits.tool_calls_limit
            if limit is not None and meter.tool_calls + count > limit:
                used = meter.tool_calls + count
                what = "a tool call" if count == 1 else f"{count} tool calls"
                error = _error(
                    "tool_calls_limit",
                    limit,
                    used,
                    f"{what} would bring the tool calls to {used}, so none of the batch ran",
                )
                meter.exceeded = error
                return error
            meter = meter.parent
        meter = self
        while meter is not None:
            meter.tool_calls += count
            meter = meter.parent
        return None


def _error(name: str, limit: int, used: int, why: str) -> AgentError:
    return AgentError(
        kind="usage_limit_exceeded",
        message=f"UsageLimits.{name}={limit} exceeded: {why} ({_TOGETHER})",
        limit=limit,
        cause=name,
        used=used,
    )


def meter_of(ctx: RunContext[Any]) -> UsageMeter | None:
    """The meter `ctx` counts into, if any."""
    return ctx._meter  # pyright: ignore[reportPrivateUsage]


def metered(ctx: RunContext[Any], limits: UsageLimits | None) -> tuple[RunContext[Any], UsageMeter | None]:
    """The context a run with `limits` runs in (carrying its meter), and that meter.

    `ctx` itself when nothing changes: no limits, or limits its meter already enforces.
    """
    inherited = ctx._meter  # pyright: ignore[reportPrivateUsage]
    meter = UsageMeter.for_run(limits, inherited)
    if meter is inherited:
        return ctx, meter
    new = ctx._copy()  # pyright: ignore[reportPrivateUsage]
    new._meter = meter  # pyright: ignore[reportPrivateUsage]
    return new, meter


__all__ = ["UsageLimits"]
