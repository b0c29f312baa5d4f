"""Per-run state: `RunContext`, the narrower `ToolContext`, `SessionState`, `ActionsHandle`.

`RunConfig` (the per-run knobs) lives in `helikon.core.run_config`; it is importable from here too.

Example:
    ```python
    from helikon import MemorySession, RunConfig, RunContext

    ctx = RunContext.ephemeral({"user_id": 42}).with_session(MemorySession())
    config = RunConfig(max_turns=8).with_timeout(30.0)
    assert ctx.user_ctx["user_id"] == 42 and config.timeout == 30.0
    ```
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ._internal.callbacks import call_user
from ._internal.carrier import carrier
from ._internal.json_value import JsonValue
from .cancel import CancellationToken
from .exceptions import UserError
from .governance import ApprovalHandler, HookEvent, HookRegistry, PermissionMode, PermissionPolicy
from .governance.settings import Governance, default_governance
from .run_config import RunConfig

if TYPE_CHECKING:
    from .conversation_check import ConversationCheck
    from .events import TokenUsage
    from .governance.compiled import CompiledRules
    from .governance.redaction import Redactor
    from .governance.rules import AllowRule, DenyRule, GuardRule
    from .observer import RunObserver
    from .run.resume_point import SubResume
    from .session import Session
    from .usage import UsageMeter

Ctx = TypeVar("Ctx")
C = TypeVar("C")


class SessionState:
    """Run-scoped key/value state shared by an agent, its tools and its sub-agents.

    Workflow agents store each sub-agent's final text under its key.
    """

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, JsonValue] | None = None) -> None:
        self._data: dict[str, JsonValue] = dict(data or {})

    def get(self, key: str, default: JsonValue = None) -> JsonValue:
        """The value at `key`, or `default`."""
        return self._data.get(key, default)

    def set(self, key: str, value: JsonValue) -> None:
        """Store `value` at `key`."""
        self._data[key] = value

    def delete(self, key: str) -> None:
        """Remove `key` if present."""
        self._data.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def to_dict(self) -> dict[str, JsonValue]:
        """A deep copy of the state."""
        return copy.deepcopy(self._data)

    def __call__(self) -> SessionState:
        """The state itself: `ctx.state()`, called as a method, is `ctx.state`."""
        return self


class ActionsHandle:
    """Signals from tools to the enclosing workflow: `escalate()` stops a `LoopAgent`."""

    __slots__ = ("_escalated",)

    def __init__(self) -> None:
        self._escalated = False

    def escalate(self) -> None:
        """Ask the enclosing loop to stop after the current sub-agent."""
        self._escalated = True

    @property
    def escalated(self) -> bool:
        """Whether `escalate` was called."""
        return self._escalated

    def reset(self) -> None:
        """Clear the escalation (a loop does this before each sub-agent)."""
        self._escalated = False

    def __call__(self) -> ActionsHandle:
        """The handle itself: `ctx.actions().escalate()`, called as a method, works."""
        return self


@carrier
class TracerHandle:
    """What this run's trace spans are tagged with: session, user, tags; and content capture.

    `session_id`, `user_id` and `tags` are stamped on the run and turn spans as
    `session.id`, `user.id` and `langfuse.trace.tags` (the keys Langfuse's OpenTelemetry
    integration reads). `capture_content=True` records prompts, completions and tool
    arguments/results on the spans (off by default: they may hold personal data).

    Example:
        ```python
        from helikon import RunContext, TracerHandle

        builder = TracerHandle.builder().with_session_id("chat-7").with_user_id("u-42")
        handle = builder.with_tags(["beta"]).build()
        assert handle == TracerHandle(session_id="chat-7", user_id="u-42", tags=("beta",))
        ctx = RunContext.ephemeral(None).with_tracer(handle)
        ```
    """

    session_id: str | None = None
    user_id: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, JsonValue] = field(default_factory=lambda: {})
    capture_content: bool = False

    @staticmethod
    def builder() -> TracerHandleBuilder:
        """Build a handle step by step (`with_session_id(...)...build()`)."""
        return TracerHandleBuilder()

    def __call__(self) -> TracerHandle:
        """The handle itself: `ctx.tracer()`, called as a method, is `ctx.tracer`."""
        return self


class TracerHandleBuilder:
    """Builds a `TracerHandle`; each `with_*` returns the builder."""

    __slots__ = ("_fields",)

    def __init__(self) -> None:
        self._fields: dict[str, object] = {}

    def with_session_id(self, session_id: str) -> TracerHandleBuilder:
        """Group this run's traces into a session."""
        self._fields["session_id"] = session_id
        return self

    def with_user_id(self, user_id: str) -> TracerHandleBuilder:
        """Attribute this run's traces to a user."""
        self._fields["user_id"] = user_id
        return self

    def with_tags(self, tags: Iterable[str]) -> TracerHandleBuilder:
        """Tag this run's traces (replacing the tags given before)."""
        self._fields["tags"] = tuple(tags)
        return self

    def with_tag(self, tag: str) -> TracerHandleBuilder:
        """Add one tag, e.g. `.with_tag("prod")`."""
        tags: tuple[str, ...] = self._fields.get("tags", ())  # pyright: ignore[reportAssignmentType]
        self._fields["tags"] = (*tags, tag)
        return self

    def with_metadata(self, metadata: dict[str, JsonValue]) -> TracerHandleBuilder:
        """Attach free-form metadata."""
        self._fields["metadata"] = dict(metadata)
        return self

    def with_capture_content(self, capture: bool = True) -> TracerHandleBuilder:
        """Record message content on the spans."""
        self._fields["capture_content"] = capture
        return self

    def build(self) -> TracerHandle:
        """The handle."""
        return TracerHandle(**self._fields)  # pyright: ignore[reportArgumentType]


class _SessionOnFirstRead:
    """The `MemorySession` of an ephemeral context, made when something first reads it.

    Most ephemeral contexts are run with a session of their own (`with_session`), or never
    read theirs; the ones derived from a context (`child()`, the `with_*` copies) share its
    holder, as they would share the session, so all of them read the same one.
    """

    __slots__ = ("_session",)

    def __init__(self) -> None:
        self._session: Session | None = None

    def get(self) -> Session:
        if self._session is None:
            from .session.memory import MemorySession  # not loaded by `import helikon`

            self._session = MemorySession()
        return self._session


class RunContext(Generic[Ctx]):
    """Everything a run shares across the loop, tools, guardrails and hooks.

    Build with `RunContext.ephemeral(user_ctx)` (in-memory session, no hooks, default
    tracer, fresh cancel token, default `Governance`) and override parts with the `with_*`
    methods, each of which returns a new context. The permission settings are one frozen
    `Governance` object (`governance`); `with_deny_rules`, `with_permission_mode` and the
    other permission setters are shorthands for `with_governance(governance.replace(...))`.

    Example:
        ```python
        from helikon import DenyRule, PermissionMode, RunContext

        governed = RunContext.ephemeral(None).with_deny_rules([DenyRule.tool("WebFetch")])
        plan = governed.with_permission_mode(PermissionMode.PLAN)
        assert plan.governance.compiled is governed.governance.compiled  # the rules, compiled once
        assert plan.permission_mode is PermissionMode.PLAN and plan.deny_rules == governed.deny_rules
        ```
    """

    __slots__ = (
        "_actions",
        "_agent_depth",
        "_cancel",
        "_check",
        "_governance",
        "_hooks",
        "_meter",
        "_observer",
        "_session",
        "_state",
        "_trace_parent",
        "_tracer",
        "_user_ctx",
    )

    def __init__(
        self,
        user_ctx: Ctx,
        session: Session,
        hooks: HookRegistry[Ctx],
        tracer: TracerHandle,
        cancel: CancellationToken,
        *,
        governance: Governance[Ctx] | None = None,
    ) -> None:
        self._user_ctx = user_ctx
        self._session: Session | _SessionOnFirstRead = session
        self._hooks = hooks
        self._tracer = tracer
        self._cancel = cancel
        self._governance: Governance[Ctx] = default_governance() if governance is None else governance
        self._state = SessionState()
        self._actions = ActionsHandle()
        self._agent_depth = 0
        self._trace_parent: object = None
        self._observer: RunObserver | None = None
        self._meter: UsageMeter | None = None  # set by a run with usage limits, for the runs it starts
        # The conversation check of the session a runner runs this on: the session's runs
        # then look at their new turns only (see ConversationCheck).
        self._check: ConversationCheck | None = None

    @staticmethod
    def ephemeral(user_ctx: C) -> RunContext[C]:
        """A context with an in-memory session, no hooks, a default tracer and a fresh token.

        The session is made when something first reads `session`: a context given a session
        of its own (`with_session`) never makes one.

        A static method with its own type variable, so `RunContext.ephemeral(3)` is typed
        `RunContext[int]` (a classmethod of the bare generic class would be `Unknown`).
        """
        session: Any = _SessionOnFirstRead()  # `RunContext.session` reads it as its MemorySession
        hooks: HookRegistry[C] = HookRegistry()  # not `HookRegistry[C]()`: a generic alias per call
        return RunContext(user_ctx, session, hooks, TracerHandle(), CancellationToken())

    def _copy(self) -> RunContext[Ctx]:
        # Field by field: every `with_*` makes a copy, several a run, and this costs a third
        # of a loop over __slots__. test_context.py checks that it copies every slot.
        new: RunContext[Ctx] = object.__new__(RunContext)  # pyright: ignore[reportUnknownVariableType]
        new._actions = self._actions
        new._agent_depth = self._agent_depth
        new._cancel = self._cancel
        new._check = self._check
        new._governance = self._governance
        new._hooks = self._hooks
        new._meter = self._meter
        new._observer = self._observer
        new._session = self._session
        new._state = self._state
        new._trace_parent = self._trace_parent
        new._tracer = self._tracer
        new._user_ctx = self._user_ctx
        return new

    # --- readers -------------------------------------------------------------------------

    @property
    def user_ctx(self) -> Ctx:
        """Your application context."""
        return self._user_ctx

    @property
    def session(self) -> Session:
        """The session the runner loads from and records to."""
        session = self._session
        return session.get() if isinstance(session, _SessionOnFirstRead) else session

    @property
    def session_is_durable(self) -> bool:
        """Whether the session is durable (SQLite, PostgreSQL, Redis: it declares `durable`).

        An ephemeral context's in-memory session is not, and is not made to tell.
        """
        session = self._session
        if isinstance(session, _SessionOnFirstRead):
            return False
        return getattr(session, "durable", False) is True  # a session that declares no flags is not

    @property
    def hooks(self) -> HookRegistry[Ctx]:
        """Run-level hooks."""
        return self._hooks

    @property
    def tracer(self) -> TracerHandle:
        """Trace tags for this run."""
        return self._tracer

    @property
    def cancel(self) -> CancellationToken:
        """The run's cancellation token."""
        return self._cancel

    @property
    def trace_parent(self) -> object:
        """The OpenTelemetry span this run's spans start under (None: the current context)."""
        return self._trace_parent

    @property
    def observer(self) -> RunObserver | None:
        """What the run reports its model requests and tool starts to (a runner's), if anything."""
        return self._observer

    @property
    def state(self) -> SessionState:
        """Run-scoped state shared with sub-agents."""
        return self._state

    @property
    def actions(self) -> ActionsHandle:
        """Signals to the enclosing workflow."""
        return self._actions

    @property
    def agent_depth(self) -> int:
        """How deeply this run is nested (0 at the top)."""
        return self._agent_depth

    @property
    def governance(self) -> Governance[Ctx]:
        """The permission settings tool calls are checked under, and secret redaction."""
        return self._governance

    # The governance's settings, read through the context (`ctx.governance.X`).

    @property
    def permission_mode(self) -> PermissionMode:
        """The permission mode tool calls are checked under."""
        return self._governance.mode

    @property
    def permission_policy(self) -> PermissionPolicy[Ctx] | None:
        """The `canUseTool` policy, if any."""
        return self._governance.policy

    @property
    def approval_handler(self) -> ApprovalHandler | None:
        """Resolves `ask_user` decisions; without one they resolve to deny."""
        return self._governance.approval_handler

    @property
    def deny_rules(self) -> tuple[DenyRule, ...]:
        """Rules that refuse a call before anything else is consulted."""
        return self._governance.deny_rules

    @property
    def allow_rules(self) -> tuple[AllowRule, ...]:
        """Rules that permit a call (after the deny rules and guards) in every mode."""
        return self._governance.allow_rules

    @property
    def guard_rules(self) -> tuple[GuardRule, ...]:
        """Your guard rules (the built-in ones are in `guards`)."""
        return self._governance.guard_rules

    @property
    def compiled_rules(self) -> CompiledRules:
        """The deny, allow and guard rules grouped for matching (`governance.compiled`)."""
        return self._governance.compiled

    @property
    def default_guards(self) -> bool:
        """Whether `GuardRule.destructive_defaults()` apply (True unless `without_default_guards`)."""
        return self._governance.default_guards

    @property
    def guards(self) -> tuple[GuardRule, ...]:
        """Every guard the pipeline evaluates: the built-in ones (unless disabled), then yours."""
        return self._governance.guards

    @property
    def output_redaction(self) -> bool:
        """Whether tool output is scrubbed of secrets (True unless `without_output_redaction`)."""
        return self._governance.output_redaction

    @property
    def extra_secrets(self) -> tuple[str, ...]:
        """Secret values redacted from tool output besides the environment's."""
        return self._governance.extra_secrets

    @property
    def redactor(self) -> Redactor | None:
        """The redactor applied to tool output, or None when redaction is off."""
        return self._governance.redactor

    # --- setters (each returns a new context) --------------------------------------------

    def with_session(self, session: Session) -> RunContext[Ctx]:
        """Use `session` for this run."""
        new = self._copy()
        new._session = session
        return new

    def with_hooks(self, hooks: HookRegistry[Ctx]) -> RunContext[Ctx]:
        """Use these run-level hooks."""
        new = self._copy()
        new._hooks = hooks
        return new

    def with_tracer(self, tracer: TracerHandle) -> RunContext[Ctx]:
        """Tag traces with `tracer`."""
        new = self._copy()
        new._tracer = tracer
        return new

    def with_trace_parent(self, span: object) -> RunContext[Ctx]:
        """Start this run's spans under `span` (an OpenTelemetry span): composite agents use it."""
        new = self._copy()
        new._trace_parent = span
        return new

    def with_observer(self, observer: RunObserver | None) -> RunContext[Ctx]:
        """Report the run's model requests and tool starts to `observer` (see `RunObserver`)."""
        new = self._copy()
        new._observer = observer
        return new

    def _in_turn(self, observer: RunObserver, check: ConversationCheck) -> RunContext[Ctx]:
        """The context of a run a session runner records (`observer`), checking its session's conversation."""
        new = self._copy()
        new._observer = observer
        new._check = check
        return new

    def with_cancel(self, cancel: CancellationToken) -> RunContext[Ctx]:
        """Use `cancel` as the run's token."""
        new = self._copy()
        new._cancel = cancel
        return new

    def with_state(self, state: SessionState) -> RunContext[Ctx]:
        """Share `state` (e.g. with a parent run)."""
        new = self._copy()
        new._state = state
        return new

    def with_governance(self, governance: Governance[Ctx]) -> RunContext[Ctx]:
        """Check tool calls under `governance` (it replaces every permission setting)."""
        if not isinstance(governance, Governance):
            raise UserError(f"with_governance takes a Governance, not {governance!r}")
        return self._governed(governance)

    def _governed(self, governance: Governance[Ctx]) -> RunContext[Ctx]:
        # The permission setters' copy: their `replace` made `governance`, so it needs no check.
        new = self._copy()
        new._governance = governance
        return new

    def with_permission_mode(self, mode: PermissionMode) -> RunContext[Ctx]:
        """Set the permission mode. Tighten-only: `BYPASS` may only become `DONT_ASK`; `DONT_ASK` is final."""
        return self._governed(self._governance.replace(mode=mode))

    def with_permission_policy(self, policy: PermissionPolicy[Ctx] | None) -> RunContext[Ctx]:
        """Authorize tool calls with `policy`."""
        return self._governed(self._governance.replace(policy=policy))

    def with_approval_handler(self, handler: ApprovalHandler | None) -> RunContext[Ctx]:
        """Resolve `ask_user` decisions with `handler`."""
        return self._governed(self._governance.replace(approval_handler=handler))

    def with_deny_rules(self, rules: Iterable[DenyRule]) -> RunContext[Ctx]:
        """Refuse calls any of `rules` matches, in every mode (replaces earlier deny rules).

        Example:
            ```python
            from helikon import RunContext
            from helikon.core.governance.rules import DenyRule

            rules = [DenyRule.tool("WebFetch"), DenyRule.edit("dist/**")]
            ctx = RunContext.ephemeral(None).with_deny_rules(rules)
            assert len(ctx.deny_rules) == 2
            ```
        """
        return self._governed(self._governance.replace(deny_rules=rules))

    def with_allow_rules(self, rules: Iterable[AllowRule]) -> RunContext[Ctx]:
        """Pre-approve calls `rules` cover, in every mode, after deny rules and guards (replaces earlier)."""
        return self._governed(self._governance.replace(allow_rules=rules))

    def with_guard_rules(self, rules: Iterable[GuardRule]) -> RunContext[Ctx]:
        """Add your own guards, evaluated after the built-in ones (replaces earlier guard rules)."""
        return self._governed(self._governance.replace(guard_rules=rules))

    def without_default_guards(self) -> RunContext[Ctx]:
        """Switch off `GuardRule.destructive_defaults()`: the `rm -rf /`, system-path and dot-path guards."""
        return self._governed(self._governance.replace(default_guards=False))

    def with_extra_secrets(self, secrets: Iterable[str]) -> RunContext[Ctx]:
        """Also redact these values from tool output (values shorter than 8 characters are ignored)."""
        if isinstance(secrets, str):
            raise UserError("with_extra_secrets takes a list of strings, not one str: wrap it in a list")
        return self._governed(
            self._governance.replace(extra_secrets=(*self._governance.extra_secrets, *secrets))
        )

    def without_output_redaction(self) -> RunContext[Ctx]:
        """Pass tool output to the model and the session unredacted."""
        return self._governed(self._governance.replace(output_redaction=False))

    def child(self) -> RunContext[Ctx]:
        """A context for a nested run: one level deeper, a child cancel token, same state."""
        new = self._copy()
        new._agent_depth = self._agent_depth + 1
        new._cancel = self._cancel.child_token()
        return new

    def isolated_child(self) -> RunContext[Ctx]:
        """A context for a sub-agent called as a tool, isolated from this one.

        A fresh in-memory session, no hooks and a fresh state, so the sub-agent's turns
        never touch this run's log; the user context, tracer, a child cancel token, the
        depth counter (one deeper), the governance (mode, policy, approval handler,
        rules, guards, redaction) and the run's usage count (`RunConfig.usage_limits`)
        cross over.
        """
        new = self._copy()
        new._session = _SessionOnFirstRead()
        hooks: HookRegistry[Ctx] = HookRegistry()  # not `HookRegistry[Ctx]()`: a generic alias per call
        new._hooks = hooks
        new._state = SessionState()
        new._actions = ActionsHandle()
        new._agent_depth = self._agent_depth + 1
        new._cancel = self._cancel.child_token()
        new._observer = None  # its turns are not this run's to record
        new._check = None  # nor its conversation
        return new


class ToolContext(Generic[Ctx]):
    """What a tool sees of the run: no session handle, so tools cannot bypass persistence."""

    __slots__ = ("_max_agent_depth", "_run", "_span", "_usage", "call_id", "resuming", "tool_name")

    def __init__(
        self,
        run: RunContext[Ctx],
        *,
        call_id: str,
        tool_name: str,
        max_agent_depth: int,
        span: object = None,
        resuming: SubResume | None = None,
    ) -> None:
        self._run = run
        self._max_agent_depth = max_agent_depth
        self._span = span  # the call's execute_tool span: sub-agent runs nest under it
        self._usage: TokenUsage | None = None  # what `add_usage` was given: the call's outcome carries it
        self.call_id = call_id
        """The id of the call being served."""
        self.tool_name = tool_name
        """The name the model called."""
        self.resuming = resuming
        """For an agent called as a tool whose run paused for approval and is being resumed:
        that run, to go on with instead of starting afresh (see `AgentAsTool`); else None."""

    @property
    def user_ctx(self) -> Ctx:
        """Your application context."""
        return self._run.user_ctx

    @property
    def state(self) -> SessionState:
        """Run-scoped state shared with sub-agents."""
        return self._run.state

    @property
    def actions(self) -> ActionsHandle:
        """Signals to the enclosing workflow (`escalate()`)."""
        return self._run.actions

    @property
    def permission_mode(self) -> PermissionMode:
        """The run's permission mode."""
        return self._run.permission_mode

    @property
    def tracer(self) -> TracerHandle:
        """Trace tags for this run."""
        return self._run.tracer

    @property
    def cancel(self) -> CancellationToken:
        """The run's cancellation token; long-running tools should watch it."""
        return self._run.cancel

    @property
    def agent_depth(self) -> int:
        """How deeply the calling agent is nested."""
        return self._run.agent_depth

    @property
    def max_agent_depth(self) -> int:
        """The run's nesting limit."""
        return self._max_agent_depth

    async def subagent_stopped(self, agent: str) -> None:
        """Fire the run's `on_subagent_stop` hooks for `agent` (a sub-agent this tool ran).

        A hook that raises fails the run (not only this tool's call), as the run's other
        hooks do: let what this raises propagate out of the tool.
        """
        run = self._run
        event = HookEvent("on_subagent_stop", agent=agent)
        for hook in run.hooks:
            what = f"the on_subagent_stop hook {type(hook).__name__}"
            await call_user(what, "hook", lambda hook=hook: hook.on_event(run, event), object, "anything")

    def add_usage(self, usage: TokenUsage) -> None:
        """Count `usage` into the calling run's usage (`RunResult.usage`, `RunCompleted.usage`).

        For what this tool spent on models: a sub-agent's run (`AgentAsTool` reports its
        sub-run's), or a model it called itself. The usage limits are not changed by it: a
        sub-agent run on `subagent_context()` counts against them by itself.
        """
        self._usage = usage if self._usage is None else self._usage + usage

    def subagent_context(self) -> RunContext[Ctx]:
        """The context for a sub-agent this tool runs: `RunContext.isolated_child()` of the run."""
        child = self._run.isolated_child()
        if self._span is not None:
            child._trace_parent = self._span  # pyright: ignore[reportPrivateUsage]
        return child


__all__ = [
    "ActionsHandle",
    "RunConfig",
    "RunContext",
    "SessionState",
    "ToolContext",
    "TracerHandle",
    "TracerHandleBuilder",
]
