"""`CompiledRules`: a run's rules grouped for matching, one view per distinct set of rules.

`compiled_rules(...)` interns the views by value: every `Governance` with the same deny,
allow and guard rules and the same built-in guards setting (the default one, each copy a
run derives, one built anew per run) shares one view, and so shares what the view learns
(`verdicts`). The table is bounded (`_MAX_VIEWS`): its keys are settings that user code
builds, and past the bound it starts afresh.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from .path_glob import PathGlob
from .rules import EDIT_TOOLS, READ_TOOLS, AllowRule, DenyRule, GuardRule, ToolSubject

if TYPE_CHECKING:
    from .permissions import Step

__all__ = ["CompiledRules", "compiled_rules"]


class CompiledRules:
    """Deny and allow rules grouped by what they look at: tool names, programs, path globs.

    A decision then costs a few set operations and the path globs of one kind, whatever
    the number of rules; each answer is the one the rules' own `matches` (and
    `allowed_by`) give, which the tests check on generated rules and calls.

    `all_guards` is every guard the pipeline evaluates (the built-in ones unless
    `default_guards` is off, then yours). `verdicts` holds the permission pipeline's
    settled answers for calls whose arguments no rule reads (`permissions.authorize`
    fills it); it is bounded (`MAX_VERDICTS`) and starts afresh past the bound.
    """

    __slots__ = (
        "all_guards",
        "allow",
        "allow_paths",
        "allow_programs",
        "allow_tools",
        "default_guards",
        "deny",
        "deny_paths",
        "deny_programs",
        "deny_tools",
        "guard_rules",
        "guards",
        "verdicts",
    )

    MAX_VERDICTS = 256
    """How many settled verdicts a view keeps: a run offers a few dozen tools at most."""

    def __init__(
        self,
        deny: tuple[DenyRule, ...],
        allow: tuple[AllowRule, ...],
        guards: tuple[GuardRule, ...] = (),
        default_guards: bool = False,
    ) -> None:
        self.deny = deny
        self.allow = allow
        self.guards = guards
        self.default_guards = default_guards
        self.all_guards = (*GuardRule.destructive_defaults(), *guards) if default_guards else guards
        self.verdicts: dict[tuple[object, ...], tuple[bool, str, Step]] = {}
        # The deny rules behind your guards, grouped the same way, to tell when none of the
        # guards can trip (None: some guard is not rule-based, so each must be asked).
        rules = tuple(g.rule for g in guards if g.rule is not None)
        self.guard_rules = CompiledRules(rules, ()) if guards and len(rules) == len(guards) else None
        self.deny_tools = frozenset(r.value for r in deny if r.kind == "tool")
        self.deny_programs = frozenset(r.value.casefold() for r in deny if r.kind == "bash_command")
        self.deny_paths = _globs(deny)
        self.allow_tools = frozenset(r.value for r in allow if r.kind == "tool")
        self.allow_programs = frozenset(r.value for r in allow if r.kind == "bash_command")
        self.allow_paths = _globs(allow)

    def denying(self, subject: ToolSubject) -> DenyRule | None:
        """The first deny rule that matches the call, or None."""
        if self.could_deny(subject):
            return next((rule for rule in self.deny if rule.matches(subject)), None)
        return None

    def could_deny(self, subject: ToolSubject) -> bool:
        """Whether some deny rule matches the call (as `denying`, without naming it)."""
        if subject.tool in self.deny_tools:
            return True
        if subject.parse is not None:  # a Bash call: no path rule looks at it
            if subject.deny_all:  # a command that cannot be analysed matches every Bash deny rule
                return bool(self.deny_programs)
            return not subject.programs.isdisjoint(self.deny_programs)
        globs = self.deny_paths.get(_PATH_KINDS.get(subject.tool, ""), ())
        if not globs:
            return False
        path = subject.path
        return path is None or any(glob.matches_clean(path) for glob in globs)  # no path: fail closed

    def allows(self, subject: ToolSubject) -> bool:
        """Whether the allow rules permit the call (as `rules.allowed_by`)."""
        if subject.tool in self.allow_tools:
            return True
        if subject.parse is not None:  # a Bash call: every program must be allowed
            programs = subject.allow_programs
            return programs is not None and programs <= self.allow_programs
        globs = self.allow_paths.get(_PATH_KINDS.get(subject.tool, ""), ())
        path = subject.path
        return path is not None and any(glob.matches_clean(path) for glob in globs)

    def guards_for(self, subject: ToolSubject) -> tuple[GuardRule, ...]:
        """Your guards that may trip on the call, in order: none when no rule behind them matches."""
        if self.guard_rules is not None and not self.guard_rules.could_deny(subject):
            return ()
        return self.guards


_ViewKey = tuple[tuple[DenyRule, ...], tuple[AllowRule, ...], tuple[GuardRule, ...], bool]
_VIEWS: dict[_ViewKey, CompiledRules] = {}
_MAX_VIEWS = 32  # distinct rule sets alive at once; a process that cycles through more rebuilds


def compiled_rules(
    deny: tuple[DenyRule, ...],
    allow: tuple[AllowRule, ...],
    guards: tuple[GuardRule, ...],
    default_guards: bool,
) -> CompiledRules:
    """The view of these rules: built once, then shared by every `Governance` that holds them.

    Example:
        ```python
        from helikon.core.governance.compiled import compiled_rules
        from helikon.core.governance.rules import DenyRule

        view = compiled_rules((DenyRule.tool("Bash"),), (), (), True)
        assert compiled_rules((DenyRule.tool("Bash"),), (), (), True) is view  # equal rules, one view
        assert compiled_rules((), (), (), True) is not view
        ```
    """
    key = (deny, allow, guards, default_guards)
    view = _VIEWS.get(key)
    if view is None:
        if len(_VIEWS) >= _MAX_VIEWS:
            _VIEWS.clear()  # the views in use stay with their Governance objects
        view = _VIEWS[key] = CompiledRules(deny, allow, guards, default_guards)
    return view


# The kind of path rule a tool's calls meet, by tool name.
_PATH_KINDS = MappingProxyType({**dict.fromkeys(EDIT_TOOLS, "edit"), **dict.fromkeys(READ_TOOLS, "read")})


def _globs(rules: tuple[DenyRule, ...] | tuple[AllowRule, ...]) -> dict[str, tuple[PathGlob, ...]]:
    out: dict[str, list[PathGlob]] = {"read": [], "edit": []}
    for rule in rules:
        if rule.glob is not None:
            out[rule.kind].append(rule.glob)
    return {kind: tuple(globs) for kind, globs in out.items() if globs}
