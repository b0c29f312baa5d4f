"""`Governance`: a run's permission settings in one frozen object, compiled once.

The mode, the deny, allow and guard rules, the policy, the approval handler, the built-in
guards and secret redaction: what `RunContext.with_deny_rules(...)` and its siblings set.
Building one compiles what every tool call needs, once: the rules grouped for matching
(one view per distinct set of rules, `compiled.compiled_rules`), the redactor (it scans
the environment's secret-named variables, at construction), and a bounded cache of shell
parses. A `RunContext` holds one; its `with_*` methods replace it with a copy
(`Governance.replace`), copies share what the change leaves valid, and the same change of
the same object gives the same copy, so a context derived per run costs a lookup.

Example:
    ```python
    from helikon import DenyRule, Governance, PermissionMode, RunContext

    governance = Governance(deny_rules=[DenyRule.bash_command("curl")], mode=PermissionMode.PLAN)
    ctx = RunContext.ephemeral(None).with_governance(governance)
    assert ctx.governance is governance and ctx.permission_mode is PermissionMode.PLAN

    stricter = governance.replace(mode=PermissionMode.DONT_ASK)
    assert stricter.compiled is governance.compiled  # same rules: compiled once
    assert governance.mode is PermissionMode.PLAN  # the original is unchanged
    assert governance.replace(mode=PermissionMode.DONT_ASK) is stricter  # the same change, the same copy
    ```
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..exceptions import UserError
from . import ApprovalHandler, PermissionMode, PermissionPolicy

if TYPE_CHECKING:
    from .compiled import CompiledRules
    from .redaction import Redactor
    from .rules import AllowRule, DenyRule, GuardRule
    from .shell import ParseCache

__all__ = ["Governance", "default_governance"]

Ctx = TypeVar("Ctx")
T = TypeVar("T")

_RULES = frozenset({"deny_rules", "allow_rules", "guard_rules", "default_guards"})
_REDACTION = frozenset({"output_redaction", "extra_secrets"})


class Governance(Generic[Ctx]):
    """How a run's tool calls are authorized and their output scrubbed; frozen.

    Attributes:
        mode: The `PermissionMode` for calls no rule decides (`DEFAULT`).
        policy: The `PermissionPolicy` asked after the mode, if any.
        approval_handler: Resolves the guards' and the policy's questions; without one
            they resolve to deny.
        deny_rules: Rules that refuse a call before anything else is consulted.
        allow_rules: Rules that permit a call (after the deny rules and guards) in every mode.
        guard_rules: Your guards, evaluated after the built-in ones.
        default_guards: Whether `GuardRule.destructive_defaults()` apply (True).
        output_redaction: Whether tool output is scrubbed of secrets (True).
        extra_secrets: Secret values redacted besides the environment's.
        guards: Every guard the pipeline evaluates: the built-in ones (unless off), then yours.
        compiled: The deny, allow and guard rules grouped for matching.
        redactor: The redactor applied to tool output, or None when redaction is off.
        parse_cache: The shell parses of recent Bash commands, shared by this object's copies.
        needs_pipeline: Whether a tool call must pass the permission pipeline at all.

    Example:
        ```python
        from helikon import AllowRule, Governance, PermissionMode

        governance = Governance(allow_rules=[AllowRule.bash_command("git")])
        assert governance.needs_pipeline  # the built-in guards alone need it
        bypass = Governance(default_guards=False, mode=PermissionMode.BYPASS)
        assert bypass.guards == () and bypass.needs_pipeline
        assert not Governance(default_guards=False).needs_pipeline
        ```
    """

    __slots__ = (
        "_copies",
        "allow_rules",
        "approval_handler",
        "compiled",
        "default_guards",
        "deny_rules",
        "extra_secrets",
        "guard_rules",
        "guards",
        "mode",
        "needs_pipeline",
        "output_redaction",
        "parse_cache",
        "policy",
        "redactor",
    )

    mode: PermissionMode
    policy: PermissionPolicy[Ctx] | None
    approval_handler: ApprovalHandler | None
    deny_rules: tuple[DenyRule, ...]
    allow_rules: tuple[AllowRule, ...]
    guard_rules: tuple[GuardRule, ...]
    default_guards: bool
    output_redaction: bool
    extra_secrets: tuple[str, ...]
    guards: tuple[GuardRule, ...]
    compiled: CompiledRules
    redactor: Redactor | None
    parse_cache: ParseCache
    needs_pipeline: bool
    _copies: dict[tuple[tuple[str, type, object], ...], Governance[Ctx]]

    def __init__(
        self,
        *,
        mode: PermissionMode = PermissionMode.DEFAULT,
        policy: PermissionPolicy[Ctx] | None = None,
        approval_handler: ApprovalHandler | None = None,
        deny_rules: Iterable[DenyRule] = (),
        allow_rules: Iterable[AllowRule] = (),
        guard_rules: Iterable[GuardRule] = (),
        default_guards: bool = True,
        output_redaction: bool = True,
        extra_secrets: Iterable[str] = (),
    ) -> None:
        # The shell reader, the guards and the secret patterns load with the first
        # Governance, not with `import helikon` (about 10 ms).
        from .shell import ParseCache

        settings = {
            "mode": mode,
            "policy": policy,
            "approval_handler": approval_handler,
            "deny_rules": deny_rules,
            "allow_rules": allow_rules,
            "guard_rules": guard_rules,
            "default_guards": default_guards,
            "output_redaction": output_redaction,
            "extra_secrets": extra_secrets,
        }
        for name, value in settings.items():
            _set(self, name, _checked(name, value))
        _set(self, "parse_cache", ParseCache())
        _set(self, "_copies", {})
        self._compile_rules()
        self._build_redactor()

    def replace(self, **changes: Any) -> Governance[Ctx]:
        """A copy with some settings changed; it shares what they leave valid.

        Rules are compiled again only when the rules or the built-in guards change, the
        redactor built again only when redaction changes; the parse cache is shared. The
        mode only tightens: `BYPASS` may become `DONT_ASK` only, and `DONT_ASK` is final.

        The same change of the same object gives the same copy (a context derived per run
        pays a lookup), except one that builds a redactor, which reads the environment of
        the moment. At most 16 copies are kept per object (their keys are the settings your
        code passes); past that, it starts afresh.
        """
        key = _copy_key(changes)
        try:
            copy = self._copies.get(key)
        except TypeError:  # rules given as a list: looked up as the tuple they are checked into
            key, copy = None, None
        if copy is not None:
            return copy  # made from these very settings, which were checked then
        checked = self._checked_changes(changes)
        if key is None:
            key = _copy_key(checked)
            copy = self._copies.get(key)
            if copy is not None:
                return copy
        copy = self._copy_with(checked)
        built_a_redactor = copy.output_redaction and not checked.keys().isdisjoint(_REDACTION)
        if not built_a_redactor:  # one reads the environment of the moment, so it is built each time
            if len(self._copies) >= _MAX_COPIES:
                self._copies.clear()
            self._copies[key] = copy
        return copy

    def _checked_changes(self, changes: dict[str, Any]) -> dict[str, object]:
        if not changes.keys() <= _DEFAULTS.keys():
            unknown = sorted(changes.keys() - _DEFAULTS.keys())
            raise UserError(f"Governance.replace(): unknown settings {unknown} (settings: {list(_DEFAULTS)})")
        if "mode" in changes:
            _check_tightening(self.mode, changes["mode"])
        return {name: _checked(name, value) for name, value in changes.items()}

    def _copy_with(self, checked: dict[str, object]) -> Governance[Ctx]:
        new: Governance[Ctx] = object.__new__(Governance)  # pyright: ignore[reportUnknownVariableType]
        for name in Governance.__slots__:
            _set(new, name, getattr(self, name))
        _set(new, "_copies", {})
        for name, value in checked.items():
            _set(new, name, value)
        if not checked.keys().isdisjoint(_RULES):
            new._compile_rules()
        if not checked.keys().isdisjoint(_REDACTION):
            new._build_redactor()
        _set(new, "needs_pipeline", new._needs_pipeline())
        return new

    def _compile_rules(self) -> None:
        from .compiled import compiled_rules

        compiled = compiled_rules(self.deny_rules, self.allow_rules, self.guard_rules, self.default_guards)
        _set(self, "compiled", compiled)
        _set(self, "guards", compiled.all_guards)
        _set(self, "needs_pipeline", self._needs_pipeline())

    def _build_redactor(self) -> None:
        from .redaction import Redactor

        redactor = Redactor.from_environ(extra=self.extra_secrets) if self.output_redaction else None
        _set(self, "redactor", redactor)

    def _needs_pipeline(self) -> bool:
        return bool(
            self.guards
            or self.deny_rules
            or self.allow_rules
            or self.policy is not None
            or self.mode is not PermissionMode.DEFAULT
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to {name!r} of a Governance: use replace()")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete {name!r} of a Governance")

    def __repr__(self) -> str:
        changed = [
            f"{name}={getattr(self, name)!r}"
            for name, default in _DEFAULTS.items()
            if getattr(self, name) != default
        ]
        return f"Governance({', '.join(changed)})"


# The settings of `Governance()`, for its repr.
_DEFAULTS: dict[str, object] = {
    "mode": PermissionMode.DEFAULT,
    "policy": None,
    "approval_handler": None,
    "deny_rules": (),
    "allow_rules": (),
    "guard_rules": (),
    "default_guards": True,
    "output_redaction": True,
    "extra_secrets": (),
}


def _set(governance: Governance[Any], name: str, value: object) -> None:
    object.__setattr__(governance, name, value)


def _check_tightening(current: PermissionMode, mode: object) -> None:
    if not isinstance(mode, PermissionMode):
        return  # `_checked` names the mistake
    if current is PermissionMode.DONT_ASK and mode is not PermissionMode.DONT_ASK:
        raise UserError(f"permission mode {mode.name}: DONT_ASK is terminal and cannot be loosened")
    if current is PermissionMode.BYPASS and mode not in (PermissionMode.BYPASS, PermissionMode.DONT_ASK):
        raise UserError(f"permission mode {mode.name}: BYPASS may only be tightened to DONT_ASK")


def _checked(name: str, value: object) -> object:
    """`value` as the setting `name` holds it; a clear error for a wrong kind of value."""
    if name == "mode":
        if not isinstance(value, PermissionMode):
            raise UserError(f"Governance(mode={value!r}): give a PermissionMode, e.g. PermissionMode.PLAN")
        return value
    if name in ("default_guards", "output_redaction"):
        if not isinstance(value, bool):
            raise UserError(f"Governance({name}={value!r}): give True or False")
        return value
    if name == "extra_secrets":
        return _items(value, str, name, "'my-app-secret-1'")
    if name in ("policy", "approval_handler"):
        return value  # protocols, checked when called
    from .rules import AllowRule, DenyRule, GuardRule

    if name == "deny_rules":
        return _items(value, DenyRule, name, "DenyRule.tool('Bash')")
    if name == "allow_rules":
        return _items(value, AllowRule, name, "AllowRule.tool('Read')")
    return _items(value, GuardRule, name, "GuardRule.ask(DenyRule.bash_command('pip'), 'installs')")


# How many copies `Governance.replace` keeps per object (see there).
_MAX_COPIES = 16


def _copy_key(changes: dict[str, object]) -> tuple[tuple[str, type, object], ...]:
    """The key of a change among an object's copies (it may hold a list, which no dict takes).

    A value counts with its type, so `1` is never taken for the `True` it equals (and a
    copy is only found for values that were checked); a policy or approval handler counts
    by identity: it is your object, maybe with state, and a copy holds the very one you
    passed (keeping it alive, so its `id` names it while the copy is kept).
    """
    key: list[tuple[str, type, object]] = []
    for name, value in changes.items():
        key.append((name, type(value), id(value) if name in _CALLBACKS else value))
    key.sort()
    return tuple(key)


_CALLBACKS = frozenset({"policy", "approval_handler"})


def _items(items: object, cls: type[T], name: str, example: str) -> tuple[T, ...]:
    kind = "strings" if cls is str else f"{cls.__name__}s"
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise UserError(f"{name} takes a list of {kind}, not {items!r}")
    values: list[T] = []
    for value in cast("Iterable[object]", items):
        if not isinstance(value, cls):
            raise UserError(f"{name} takes {kind} (e.g. {example}), not {value!r}")
        values.append(value)
    return tuple(values)


# The environment the shared default was built from: how many variables, and the values
# of the secret-named ones. A new variable, a removed one or a changed secret rebuilds it.
_Fingerprint = tuple[int, tuple[str | None, ...]]
_default: tuple[_Fingerprint, tuple[str, ...], Governance[Any]] | None = None


def default_governance() -> Governance[Any]:
    """The settings of a context nobody configured: one object, shared until the environment changes.

    `RunContext.ephemeral()` starts every run from it. Building a Governance scans the
    environment for secrets (tens of microseconds, about a whole run's overhead), so the
    default is built once and rebuilt when the environment no longer matches: a variable
    added or removed, or a secret-named one changed, is redacted from the next run on.
    The one change it misses: a secret-named variable added while another variable is
    removed between two runs (the count unchanged) is picked up at the next rebuild.

    Example:
        ```python
        from helikon.core.governance.settings import default_governance

        assert default_governance() is default_governance()
        assert default_governance().redactor is not None
        ```
    """
    global _default
    environ = os.environ
    if _default is not None:
        fingerprint, names, governance = _default
        if fingerprint == (len(environ), tuple(map(environ.get, names))):
            return governance
    from .redaction import is_secret_name

    names = tuple(name for name in environ if is_secret_name(name))
    governance: Governance[Any] = Governance()
    _default = ((len(environ), tuple(map(environ.get, names))), names, governance)
    return governance
