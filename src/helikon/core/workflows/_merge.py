"""What every workflow agent shares: checking its parts, and folding one child's run into its own.

The merge convention (the same for every workflow agent): a child's
`RunStarted` is swallowed, its `RunCompleted` / `RunFailed` are folded into the parent's
running usage and outcome, and every other event passes through in arrival order.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from .._internal.callbacks import CallbackRaised, call_user
from ..agent import Agent
from ..context import RunConfig, RunContext
from ..events import (
    AgentError,
    AgentEvent,
    MessageOutput,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunStarted,
    TokenUsage,
)
from ..exceptions import RunError, UserError
from ..governance import HookEvent
from ..input import AgentInput, check_run_signature

DEFAULT_CONFIG = RunConfig()


def check_name(owner: str, name: object) -> str:
    """`name`, or a `UserError` saying why it is not a usable agent name."""
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{owner}(name={name!r}): give the workflow a non-empty name")
    return name


def check_description(owner: str, description: object) -> str:
    """`description`, or a `UserError` when it is not text."""
    if not isinstance(description, str):
        raise UserError(f"{owner}(description={description!r}): the description must be a string")
    return description


def check_agent(where: str, agent: object) -> Agent[Any]:
    """`agent`, or a `UserError` when it is not an `Agent` (name, description and run)."""
    if not isinstance(agent, Agent) or not isinstance(agent.name, str) or not agent.name:
        raise UserError(
            f"{where}: {agent!r} is not an Agent; give an LlmAgent or a workflow agent "
            "(anything with name, description and run)"
        )
    check_run_signature(where, agent)  # pyright: ignore[reportUnknownArgumentType]
    return agent  # pyright: ignore[reportUnknownVariableType]


def check_key(where: str, key: object) -> str:
    """`key`, or a `UserError` when it is not a non-empty string."""
    if not isinstance(key, str) or not key:
        raise UserError(f"{where}: the state key must be a non-empty string, got {key!r}")
    return key


def preflight(
    kind: str, name: str, ctx: RunContext[Any], config: RunConfig, *, empty: bool
) -> AgentError | None:
    """Why the workflow cannot start at all (cancelled, too deep, nothing to run), or None."""
    if ctx.cancel.is_cancelled():
        return AgentError(kind="cancelled", message=f"{kind} {name!r} was cancelled before it started")
    depth = ctx.agent_depth + 1
    if depth > config.max_agent_depth:
        return AgentError(
            kind="max_agent_depth_exceeded",
            message=f"{kind} {name!r} would run its children at depth {depth}, "
            f"over RunConfig.max_agent_depth={config.max_agent_depth}",
            limit=config.max_agent_depth,
        )
    if empty:
        return AgentError(kind="other", message=f"{kind} {name!r} has no sub-agents to run; add some first")
    return None


def cancelled(kind: str, name: str, waiting: list[str]) -> AgentError:
    """The error of a workflow cancelled while `waiting` children ran."""
    running = f" while {', '.join(repr(k) for k in waiting)} ran" if waiting else ""
    return AgentError(kind="cancelled", message=f"{kind} {name!r} was cancelled{running}")


class ChildRun:
    """One child's run: its final text, usage and failure, filled in as its events arrive."""

    __slots__ = ("agent", "completed", "error", "index", "key", "text", "usage")

    def __init__(self, agent: Agent[Any], key: str, index: int = 0) -> None:
        self.agent: Agent[Any] = agent
        self.key: str = key
        self.index: int = index
        self.text: str = ""
        self.usage: TokenUsage = TokenUsage()
        self.error: AgentError | None = None
        self.completed: bool = False

    def start(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        """Start the child one level deeper (its own cancel token, the same state)."""
        return self.agent.run(input, context=ctx.child(), config=config).__aiter__()

    async def forwarded(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncGenerator[AgentEvent]:
        """Run the child: the events the parent forwards, its outcome folded in as they pass.

        A child that raises fails like one ending in `RunFailed`; its stream is closed when
        this ends, however it ends (the child's cleanup runs then, not at garbage collection).
        """
        events: AsyncIterator[AgentEvent] | None = None
        try:
            events = self.start(input, ctx, config)
            async for event in events:
                if self.absorb(event):
                    yield event
        except Exception as exc:
            self.crashed(exc)
        finally:
            if events is not None:
                await aclose(events)
        self.settle()

    def absorb(self, event: AgentEvent) -> bool:
        """Fold `event` into the outcome; whether the parent forwards it."""
        # `type(...) is`: exact-class checks, the cheapest dispatch on this per-event path.
        if type(event) is MessageOutput:
            self.text = event.item.text
            return True
        if type(event) is RunStarted:
            return False
        if type(event) is RunCompleted:
            self.usage = self.usage + event.usage
            self.completed = True
            return False
        if type(event) is RunFailed:
            self.usage = self.usage + event.usage
            self.error = event.error
            return False
        if type(event) is RunPaused:  # a workflow cannot pause: the step fails, saying why
            self.usage = self.usage + event.usage
            tools = ", ".join(sorted({p.tool for p in event.pending}))
            self.error = AgentError(
                kind="other",
                cause="approval",
                message=(
                    f"{self.agent.name!r} needs a person's approval for {tools}, and a workflow agent "
                    "cannot pause for it: give the run an approval handler "
                    "(RunContext.with_approval_handler), or run that agent on its own"
                ),
            )
            return False
        return True

    def crashed(self, exc: Exception) -> None:
        """The child raised instead of ending with `RunFailed`: a failure like any other."""
        if isinstance(exc, RunError):
            self.error = exc.error
        else:
            self.error = AgentError(
                kind="other",
                message=f"{self.agent.name!r} raised {type(exc).__name__}: {exc}",
                cause=type(exc).__name__,
            )

    def settle(self) -> None:
        """After the stream ended: a stream that stopped without a terminal event failed."""
        if self.error is None and not self.completed:
            self.error = AgentError(
                kind="other", message=f"{self.agent.name!r} ended without RunCompleted or RunFailed"
            )


async def aclose(events: AsyncIterator[AgentEvent]) -> None:
    """Close a child's stream (its `finally` blocks run now, not at garbage collection)."""
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()


async def subagent_stopped(ctx: RunContext[Any], agent: str) -> None:
    """Fire `on_subagent_stop` on the run's hooks once a child's stream has drained.

    A hook that raises raises `CallbackRaised`, naming it; the workflow fails with `hook_failed`.
    """
    if len(ctx.hooks):
        event = HookEvent("on_subagent_stop", agent=agent)
        for hook in ctx.hooks:
            what = f"the on_subagent_stop hook {type(hook).__name__}"
            await call_user(what, "hook", lambda hook=hook: hook.on_event(ctx, event), object, "anything")


def hook_failed(exc: CallbackRaised, usage: TokenUsage) -> RunFailed:
    """The workflow's terminal event when a hook it fired raised (as the driver words it)."""
    return RunFailed(error=AgentError(kind="other", message=str(exc), cause=exc.cause), usage=usage)


def failed_child(kind: str, name: str, role: str, run: ChildRun) -> AgentError:
    """The parent's error for a child's failure: the child's kind and limit, with the child named."""
    error = run.error or AgentError(kind="other", message="failed")
    return AgentError(
        kind=error.kind,
        message=f"{kind} {name!r}: {role} {run.key!r} ({run.agent.name}) failed: {error.message}",
        limit=error.limit,
        cause=error.cause,
        schema_errors=error.schema_errors,
        final_text=error.final_text,
        used=error.used,
    )


def aggregate(
    kind: str, name: str, roles: str, failed: list[ChildRun], total: int, extra: str = ""
) -> AgentError:
    """One error for several failed children: their shared kind (else `other`), each one named."""
    kinds = {r.error.kind for r in failed if r.error is not None}
    first = next(r.error for r in failed if r.error is not None)
    details = "; ".join(f"{r.key!r} ({r.error})" for r in failed)
    message = f"{kind} {name!r}: {len(failed)} of {total} {roles} failed: {details}{extra}"
    if len(kinds) == 1:
        return AgentError(
            kind=first.kind, message=message, limit=first.limit, cause=first.cause, used=first.used
        )
    return AgentError(kind="other", message=message)
