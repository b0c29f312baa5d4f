"""`RunConfig`: the per-run knobs (turns, depth, timeout, durability, limits, model, approvals).

Example:
    ```python
    from helikon import RunConfig

    config = RunConfig(max_turns=8).with_timeout(30.0)
    assert config.timeout == 30.0 and config.max_turns == 8
    ```
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from ._internal.carrier import carrier
from .exceptions import UserError
from .model import Model, ModelSettings
from .model_strings import checked_model
from .usage import UsageLimits

if TYPE_CHECKING:
    from datetime import timedelta

    from .tools import PrepareTools


@carrier
class RunConfig:
    """Per-run knobs.

    Attributes:
        max_turns: Model turns before the run fails with `MaxTurnsExceeded` (default 16).
        parallel_tool_call_limit: Cap on concurrently running tool calls; `None` = unbounded.
        max_agent_depth: Nesting depth across handoffs and agent-as-tool runs (default 8).
        timeout: Wall-clock seconds for the whole run; enforced by a runner (also the one behind
            `agent.run(q, session=s)`), not by a bare `agent.run`.
        durable: Persist the run's events as they settle — before every model call and before
            tools start — with turn markers for crash repair, instead of only after the run.
            None (the default): what the session declares (`Session.durable`): on for SQLite,
            PostgreSQL and Redis, off for `MemorySession`.
        fail_on_tool_denied: Make a tool's `ToolError.Denied` fail the run (`tool_denied`). Off by
            default: the model reads the refusal as an error result (and `PermissionDenied` is
            streamed), so one refused call does not end the run.
        usage_limits: Caps on the model requests, tokens and tool calls of the run, summed
            with those of its handoff targets, agents called as tools and workflow children;
            passing one fails the run with `UsageLimitExceeded` (`helikon.core.usage` says
            when each is checked). None (the default): no caps.
        model: The model every `LlmAgent` of the run calls instead of its own (handoff
            targets and workflow children too, as in openai-agents): a `Model` or a model
            string. `LlmAgent.override` (for tests) still wins. None: each agent's own.
        model_settings: Settings laid over each agent's `model_settings` for this run (the
            fields set here win). None: each agent's own.
        prepare_tools: A function of (ctx, tool definitions) choosing the tools each model turn
            of the run offers, as `LlmAgent(prepare_tools=...)` does (and after it, when the
            agent has one too), for every agent of the run. None: the agents' own choice.
        approval_expires_after: Seconds (or a `timedelta`) a person has to decide on a call
            the run paused for (`PendingApproval.expires_at`). None (the default): no deadline.
        on_approval_expired: What expiry does to such a call: `"deny"` (the default; a
            decision after it is refused, and a resume denies the call) or `"keep"` (it
            stays open to a decision).
    """

    max_turns: int = 16
    parallel_tool_call_limit: int | None = None
    max_agent_depth: int = 8
    timeout: float | None = None
    durable: bool | None = None
    fail_on_tool_denied: bool = False
    usage_limits: UsageLimits | None = None
    model: Model | str | None = None
    """A model string is resolved as the config is made: read back, this is a `Model` or None."""
    model_settings: ModelSettings | None = None
    prepare_tools: PrepareTools | None = None
    approval_expires_after: float | None = None
    on_approval_expired: Literal["deny", "keep"] = "deny"

    def __post_init__(self) -> None:
        _positive_int("RunConfig", "max_turns", self.max_turns)
        _positive_int("RunConfig", "max_agent_depth", self.max_agent_depth)
        if self.parallel_tool_call_limit is not None:
            _positive_int("RunConfig", "parallel_tool_call_limit", self.parallel_tool_call_limit)
        if self.timeout is not None:
            object.__setattr__(self, "timeout", _seconds("timeout", self.timeout))
        if self.model is not None:
            object.__setattr__(self, "model", checked_model(self.model, "RunConfig"))
        if self.model_settings is not None and not isinstance(self.model_settings, ModelSettings):
            raise UserError(f"RunConfig(model_settings={self.model_settings!r}): expected a ModelSettings")
        if self.prepare_tools is not None and not callable(self.prepare_tools):
            raise UserError(
                f"RunConfig(prepare_tools={self.prepare_tools!r}): give a function of (ctx, tool definitions)"
            )
        expires = self.approval_expires_after
        if expires is not None:
            object.__setattr__(self, "approval_expires_after", _seconds("approval_expires_after", expires))
        if self.on_approval_expired not in ("deny", "keep"):
            raise UserError(f"RunConfig(on_approval_expired={self.on_approval_expired!r}): 'deny' or 'keep'")
        if self.usage_limits is not None and not isinstance(self.usage_limits, UsageLimits):
            raise UserError(
                f"RunConfig(usage_limits={self.usage_limits!r}): give a UsageLimits(...), or None"
            )

    def with_max_turns(self, max_turns: int) -> RunConfig:
        """A copy with `max_turns` set."""
        return replace(self, max_turns=max_turns)

    def with_parallel_tool_call_limit(self, limit: int | None) -> RunConfig:
        """A copy with `parallel_tool_call_limit` set."""
        return replace(self, parallel_tool_call_limit=limit)

    def with_max_agent_depth(self, depth: int) -> RunConfig:
        """A copy with `max_agent_depth` set."""
        return replace(self, max_agent_depth=depth)

    def with_timeout(self, timeout: float | timedelta | None) -> RunConfig:
        """A copy with `timeout` (seconds or a `timedelta`) set."""
        return replace(self, timeout=timeout)  # pyright: ignore[reportArgumentType]

    def with_usage_limits(self, limits: UsageLimits | None) -> RunConfig:
        """A copy with `usage_limits` set."""
        return replace(self, usage_limits=limits)


def _seconds(name: str, value: object) -> float:
    """A positive duration given as seconds or a `timedelta`, in seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        from datetime import timedelta  # here: seconds need none, and it is ~1.5 ms to import

        if not isinstance(value, timedelta):
            raise UserError(f"RunConfig({name}={value!r}): give seconds as a number, or a timedelta")
        value = value.total_seconds()
    if value <= 0:
        raise UserError(f"RunConfig({name}={value!r}): must be positive, or None for no limit")
    return float(value)


def _positive_int(owner: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{owner}({name}={value!r}): must be a positive integer")


__all__ = ["RunConfig"]
