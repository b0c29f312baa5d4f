"""The governance seams: `Guardrail`, `Hook`, `PermissionPolicy`, `ApprovalHandler`.

Permissions authorize tool calls, guardrails validate text entering and leaving the
agent, hooks observe and steer the run's lifecycle. The loop calls all three. A run's
permission settings are one frozen `Governance` (`settings.py`) that its `RunContext` holds.

Example:
    ```python
    from helikon import HookDecision, HookEvent, RunContext


    class AuditLog:
        async def on_event(self, ctx: RunContext[None], event: HookEvent) -> HookDecision:
            if event.type == "pre_tool_use":
                print("about to call", event.tool)
            return HookDecision.allow()
    ```
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar, get_args, runtime_checkable

from .._internal.carrier import carrier
from .._internal.json_value import JsonValue
from ..events import GuardrailKind
from ..exceptions import UserError

if TYPE_CHECKING:
    from ..context import RunContext

Ctx = TypeVar("Ctx")

# --- permissions -----------------------------------------------------------------------------


class PermissionMode(enum.Enum):
    """How tool calls are authorized when no rule decides.

    `DEFAULT` defers to the policy (permissive without one); `ACCEPT_EDITS` auto-approves
    `WRITE` tools; `PLAN` denies anything not `READ_ONLY`; `BYPASS` allows everything;
    `DONT_ASK` denies anything an allow rule does not permit.
    """

    DEFAULT = "default"
    ACCEPT_EDITS = "accept_edits"
    PLAN = "plan"
    BYPASS = "bypass"
    DONT_ASK = "dont_ask"


@carrier(kw_only=False)
class PermissionDecision:
    """A policy's answer: `allow`, `deny(reason)`, `ask_user(prompt)` or `replace(args)`."""

    kind: Literal["allow", "deny", "ask_user", "replace"]
    reason: str = ""
    prompt: str = ""
    args: JsonValue = None

    @classmethod
    def allow(cls) -> PermissionDecision:
        """Run the call."""
        return _ALLOW

    @classmethod
    def deny(cls, reason: str) -> PermissionDecision:
        """Refuse the call; the model sees `reason`."""
        return cls("deny", reason=reason)

    @classmethod
    def ask_user(cls, prompt: str) -> PermissionDecision:
        """Ask the `ApprovalHandler` (deny when there is none)."""
        return cls("ask_user", prompt=prompt)

    @classmethod
    def replace(cls, args: JsonValue) -> PermissionDecision:
        """Run the call with these arguments instead."""
        return cls("replace", args=args)


_ALLOW = PermissionDecision("allow")


@carrier(kw_only=False)
class ApprovalOutcome:
    """An approval handler's answer: `allow()` or `deny(reason)`."""

    approved: bool
    reason: str = ""

    @classmethod
    def allow(cls) -> ApprovalOutcome:
        """Approve the call."""
        return cls(True)

    @classmethod
    def deny(cls, reason: str) -> ApprovalOutcome:
        """Refuse the call."""
        return cls(False, reason)


@runtime_checkable
class PermissionPolicy(Protocol[Ctx]):
    """Authorizes tool calls (`canUseTool`)."""

    async def check(self, ctx: RunContext[Ctx], tool: str, args: JsonValue) -> PermissionDecision:
        """Decide whether `tool` may run with `args`."""
        ...


@runtime_checkable
class ApprovalHandler(Protocol):
    """Resolves `PermissionDecision.ask_user` out of band (a human, a UI)."""

    async def decide(self, tool: str, prompt: str, args: JsonValue) -> ApprovalOutcome:
        """Approve or refuse the call."""
        ...


# --- guardrails ------------------------------------------------------------------------------


@carrier(kw_only=False)
class GuardrailInput:
    """The text a guardrail checks: `user_text` entering the agent or `model_output` leaving it."""

    kind: Literal["user_text", "model_output"]
    text: str


@carrier(kw_only=False)
class GuardrailVerdict:
    """`pass_()` lets the run continue; `tripwire(kind, info)` halts it."""

    tripped: bool
    kind: GuardrailKind = "other"
    info: JsonValue = None
    guardrail: str | None = None
    """Who tripped, as the run's error names it: the run fills in the guardrail's `name`
    attribute (else its class name) when this is left None."""

    @classmethod
    def pass_(cls) -> GuardrailVerdict:
        """All clear."""
        return _PASS

    @classmethod
    def tripwire(
        cls, kind: GuardrailKind, info: JsonValue = None, *, guardrail: str | None = None
    ) -> GuardrailVerdict:
        """Halt the run; the run's `RunError` names the guardrail, the kind and `info`."""
        if kind not in _GUARDRAIL_KINDS:  # e.g. the Rust-style `InputPolicy`
            raise UserError(
                f"GuardrailVerdict.tripwire(kind={kind!r}): use 'input_policy', 'output_policy' or 'other' "
                "(the kinds are snake_case: InputPolicy is 'input_policy')"
            )
        return cls(True, kind, info, guardrail)


_PASS = GuardrailVerdict(False)
_GUARDRAIL_KINDS = frozenset(get_args(GuardrailKind))


@runtime_checkable
class Guardrail(Protocol[Ctx]):
    """Validates content flowing into or out of an agent.

    An exception raised by `check` counts as a tripwire of kind `other`.
    """

    async def check(self, ctx: RunContext[Ctx], input: GuardrailInput) -> GuardrailVerdict:
        """Check `input`."""
        ...


# --- hooks -----------------------------------------------------------------------------------


@carrier(kw_only=False)
class HookEvent:
    """A lifecycle point a hook sees.

    `type` is one of `on_run_start`, `on_turn_start`, `pre_tool_use`, `post_tool_use`,
    `on_handoff`, `on_run_complete`, `on_subagent_stop`; the other fields are set
    where they apply.
    """

    type: Literal[
        "on_run_start",
        "on_turn_start",
        "pre_tool_use",
        "post_tool_use",
        "on_handoff",
        "on_run_complete",
        "on_subagent_stop",
    ]
    agent: str = ""
    turn: int | None = None
    tool: str | None = None
    call_id: str | None = None
    args: JsonValue = None
    output: JsonValue = None
    from_agent: str | None = None
    to_agent: str | None = None


@carrier(kw_only=False)
class HookDecision:
    """What a hook wants: `allow`, `deny`, `replace_input`, `replace_output` or `inject_system_message`."""

    kind: Literal["allow", "deny", "replace_input", "replace_output", "inject_system_message"]
    reason: str = ""
    value: JsonValue = None
    text: str = ""

    @classmethod
    def allow(cls) -> HookDecision:
        """Proceed unchanged."""
        return _HOOK_ALLOW

    @classmethod
    def deny(cls, reason: str) -> HookDecision:
        """Block the event; the reason is surfaced to the agent."""
        return cls("deny", reason=reason)

    @classmethod
    def replace_input(cls, value: JsonValue) -> HookDecision:
        """Rewrite what the runner is about to use (e.g. tool arguments)."""
        return cls("replace_input", value=value)

    @classmethod
    def replace_output(cls, value: JsonValue) -> HookDecision:
        """Rewrite what the runner just observed (e.g. tool output)."""
        return cls("replace_output", value=value)

    @classmethod
    def inject_system_message(cls, text: str) -> HookDecision:
        """Add a system message to the next model call."""
        return cls("inject_system_message", text=text)


_HOOK_ALLOW = HookDecision("allow")


@runtime_checkable
class Hook(Protocol[Ctx]):
    """A lifecycle interceptor: observes events and may steer the run."""

    async def on_event(self, ctx: RunContext[Ctx], event: HookEvent) -> HookDecision:
        """React to `event`."""
        ...


class HookRegistry(Generic[Ctx]):
    """The run-level hooks carried by a `RunContext` (agent-level hooks fire first)."""

    __slots__ = ("_hooks",)

    def __init__(self, hooks: list[Hook[Ctx]] | None = None) -> None:
        self._hooks: list[Hook[Ctx]] = list(hooks or ())

    def push(self, hook: Hook[Ctx]) -> None:
        """Add a hook."""
        self._hooks.append(hook)

    def __iter__(self) -> Iterator[Hook[Ctx]]:
        return iter(self._hooks)

    def __len__(self) -> int:
        return len(self._hooks)

    def is_empty(self) -> bool:
        """Whether no hook is registered."""
        return not self._hooks


__all__ = [
    "ApprovalHandler",
    "ApprovalOutcome",
    "Guardrail",
    "GuardrailInput",
    "GuardrailVerdict",
    "Hook",
    "HookDecision",
    "HookEvent",
    "HookRegistry",
    "PermissionDecision",
    "PermissionMode",
    "PermissionPolicy",
]
