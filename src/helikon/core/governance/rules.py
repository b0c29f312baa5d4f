"""Deny, allow and guard rules: the fast, synchronous matchers of the permission pipeline.

Each rule answers for one tool call. The call is read once into a `ToolSubject` (the
Bash command parsed, the path normalized) and every rule reuses it. Passing `(tool,
args)` to a rule directly also works: the call is read for that rule alone.

A Bash command that cannot be analysed (see `helikon.core.governance.shell`) fails closed: it
matches every deny rule, no allow rule, and trips every default guard.

```python
from helikon.core.governance.rules import AllowRule, DenyRule, GuardRule, ToolSubject

call = ToolSubject.of("Bash", {"command": "git status && sudo rm -rf /"})
assert DenyRule.bash_command("rm").matches(call)
assert not AllowRule.bash_command("git").matches(call)
reasons = [r for g in GuardRule.destructive_defaults() if (r := g.check(call))]
assert reasons and "recursive remove" in reasons[0]
```
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Literal

from .._internal.carrier import carrier
from .._internal.json_value import JsonValue
from ..exceptions import UserError
from ._guards import CLEAR, bash_checks, path_checks
from .path_glob import PathGlob, clean_path
from .shell import ShellParse, parse_command

__all__ = [
    "BASH_TOOLS",
    "EDIT_TOOLS",
    "READ_TOOLS",
    "AllowRule",
    "DenyRule",
    "GuardAction",
    "GuardRule",
    "ToolSubject",
    "allowed_by",
]

BASH_TOOLS = frozenset({"Bash"})
"""Tools whose `command` argument is a shell command line."""
READ_TOOLS = frozenset({"Read"})
"""Tools whose path argument `read` rules match."""
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
"""Tools whose path argument `edit` rules and the write guards match."""
_PATH_KEYS = ("path", "file_path", "notebook_path")
# Wrappers that change neither who runs the program nor which program runs.
_TRANSPARENT = frozenset({"timeout", "nice", "nohup", "stdbuf", "time", "command", "builtin", "exec",
                          "find", "xargs", "setsid", "unbuffer"})  # fmt: skip
_STANDARD_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/opt/homebrew/bin"})


class ToolSubject:
    """One tool call, read once for every rule: the parsed command, the normalized path.

    ```python
    from helikon.core.governance.rules import ToolSubject

    call = ToolSubject.of("Bash", {"command": "cd src && timeout 5 pytest -q"})
    assert call.programs == frozenset({"cd", "pytest", "timeout"})
    assert ToolSubject.of("Write", {"path": "./a/../.env"}).path == ".env"
    ```

    `read` reads a Bash command into its `ShellParse`; the permission pipeline passes the
    `ParseCache.read` of the run's governance so that a repeated command is read once.
    """

    __slots__ = ("_guard_cache", "allow_programs", "args", "command", "deny_all", "edits", "parse", "path",
                 "path_known", "programs", "raw_path", "tool")  # fmt: skip

    tool: str
    args: JsonValue
    parse: ShellParse | None
    command: str | None
    deny_all: bool
    programs: frozenset[str]
    path: str | None
    raw_path: str | None
    path_known: bool
    edits: bool
    allow_programs: frozenset[str] | None
    """The programs an allow rule must cover, or `None` when no program rule may allow it."""
    _guard_cache: Mapping[str, str | None] | None

    def __init__(
        self, tool: str, args: JsonValue = None, *, read: Callable[[str], ShellParse] | None = None
    ) -> None:
        if not isinstance(tool, str):
            raise UserError(f"the tool name must be a str, got {type(tool).__name__}")
        self.tool = tool
        self.args = args
        self.edits = tool in EDIT_TOOLS
        self.command = None
        self.parse = None
        self.deny_all = False
        self.programs = frozenset()
        self.allow_programs = None
        self.path = None
        self.raw_path = None
        self.path_known = True
        self._guard_cache = None
        if tool in BASH_TOOLS:
            self._read_command(args, read or parse_command)
        elif tool in READ_TOOLS or tool in EDIT_TOOLS:
            self._read_path(args)

    def _read_command(self, args: JsonValue, read: Callable[[str], ShellParse]) -> None:
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str):
            self.command = command
            self.parse = read(command)
        else:
            self.parse = ShellParse(error="the command argument is missing or not a string")
        if self.parse.error:
            self.deny_all = True  # a command that cannot be analysed fails closed
            return
        self.programs = frozenset(
            name.casefold() for simple in self.parse.commands for name in (simple.program, *simple.wrappers)
        )
        self.allow_programs = _allow_programs(self.parse)

    @classmethod
    def of(cls, tool: str | ToolSubject, args: JsonValue = None) -> ToolSubject:
        """The subject for a call; a `ToolSubject` passes through unchanged."""
        return tool if isinstance(tool, ToolSubject) else cls(tool, args)

    def _read_path(self, args: JsonValue) -> None:
        if isinstance(args, dict):
            for key in _PATH_KEYS:
                if key in args:
                    value = args[key]
                    if isinstance(value, str) and value and "\0" not in value:
                        self.raw_path = value
                        self.path = clean_path(value)
                        return
                    break
        self.path_known = False  # a malformed call: path rules fail closed

    def guard(self, name: str) -> str | None:
        """The detail of a built-in guard's match (computed once per subject), or `None`."""
        return self.guard_checks().get(name)

    def guard_checks(self) -> Mapping[str, str | None]:
        """Every built-in guard's detail by name (computed once per subject).

        `_guards.CLEAR` itself when none trips, so a caller can skip them with one test.
        """
        if self._guard_cache is None:
            self._guard_cache = self._checks()
        return self._guard_cache

    def _checks(self) -> Mapping[str, str | None]:
        # All the built-in guards at once: they share the write targets and the
        # directories a `cd` may move to.
        if self.parse is not None:
            if self.command is None:
                return CLEAR  # no command string: the deny and allow rules fail closed instead
            return bash_checks(self.parse, self.command)
        if self.edits and self.raw_path is not None:
            return path_checks(self.raw_path)
        return CLEAR  # not a write

    def __repr__(self) -> str:
        return f"ToolSubject({self.tool!r}, {self.args!r})"


def _allow_programs(parse: ShellParse) -> frozenset[str] | None:
    """The programs an allow rule must cover, or None when no program rule may allow the command.

    Not one run with a `NAME=value` prefix, through a wrapper that changes who runs it or
    which program runs (`sudo`, `env`), or by a path outside the standard bin directories
    (`./git` is not the `git` an allow rule means). A `bash -c` or `eval` needs no rule of
    its own: the commands of its script do.
    """
    allow: set[str] = set()
    for simple in parse.commands:
        if simple.assignments or not _TRANSPARENT.issuperset(simple.wrappers):
            return None
        written = simple.argv[0].text
        if "/" in written and written.rsplit("/", 1)[0] not in _STANDARD_DIRS:
            return None
        if not simple.inline:
            allow.add(simple.program)
    return frozenset(allow) or None


_RuleKind = Literal["tool", "bash_command", "read", "edit"]


def _validated(kind: _RuleKind, value: str, owner: str) -> PathGlob | None:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{owner}.{kind}() needs a non-empty str, got {value!r}")
    if kind == "bash_command" and (value != value.strip() or any(c.isspace() or c == "/" for c in value)):
        raise UserError(f"{owner}.bash_command() takes a program name such as 'rm', not {value!r}")
    if kind in ("read", "edit"):
        return PathGlob.compile(value)
    return None


def _path_tools(kind: str) -> frozenset[str]:
    return READ_TOOLS if kind == "read" else EDIT_TOOLS


@carrier(kw_only=False)
class DenyRule:
    """Refuse a call; evaluated first, so it holds even in `BYPASS` mode.

    ```python
    from helikon.core.governance.rules import DenyRule

    rule = DenyRule.bash_command("rm")
    assert rule.matches("Bash", {"command": "echo ok && sudo /bin/rm -rf ."})
    assert rule.matches("Bash", {"command": "'unbalanced"})  # fails closed
    assert DenyRule.read(".env").matches("Read", {"path": "app/.env"})
    assert not DenyRule.tool("Bash").matches("Read", {"path": "x"})
    ```
    """

    kind: _RuleKind
    value: str
    glob: PathGlob | None = None
    key: str = ""  # the program name casefolded, for `bash_command`

    @classmethod
    def tool(cls, name: str) -> DenyRule:
        """Deny every call of the tool named `name`."""
        return cls("tool", name, _validated("tool", name, "DenyRule"))

    @classmethod
    def bash_command(cls, program: str) -> DenyRule:
        """Deny a Bash call when any sub-command (or a wrapper such as `sudo`) runs `program`."""
        return cls(
            "bash_command", program, _validated("bash_command", program, "DenyRule"), program.casefold()
        )

    @classmethod
    def read(cls, glob: str) -> DenyRule:
        """Deny `Read` of a path matching the gitignore-style `glob`."""
        return cls("read", glob, _validated("read", glob, "DenyRule"))

    @classmethod
    def edit(cls, glob: str) -> DenyRule:
        """Deny `Edit`/`Write` of a path matching the gitignore-style `glob`."""
        return cls("edit", glob, _validated("edit", glob, "DenyRule"))

    def matches(self, tool: str | ToolSubject, args: JsonValue = None) -> bool:
        """Whether this rule denies the call (a `ToolSubject`, or a tool name and its args)."""
        subject = tool if isinstance(tool, ToolSubject) else ToolSubject(tool, args)
        kind = self.kind
        if kind == "bash_command":
            # Non-Bash subjects have no programs and never deny all.
            return subject.deny_all or self.key in subject.programs
        if kind == "tool":
            return subject.tool == self.value
        if subject.tool not in _path_tools(kind):
            return False
        if subject.path is None:
            return True  # a malformed path argument fails closed
        assert self.glob is not None
        return self.glob.matches_clean(subject.path)

    def __repr__(self) -> str:
        return f"DenyRule.{self.kind}({self.value!r})"


@carrier(kw_only=False)
class AllowRule:
    """Pre-approve a call; evaluated after deny and guard rules, before the mode.

    A Bash allow needs *every* sub-command to run `program` (use `allowed_by` to let
    several rules cover one compound command); a command that cannot be analysed is
    never allowed, and neither is one run through `sudo`, `env`, a `NAME=value` prefix
    or a path outside the standard bin directories.

    ```python
    from helikon.core.governance.rules import AllowRule

    git = AllowRule.bash_command("git")
    assert git.matches("Bash", {"command": "git status && git diff | git apply"})
    assert not git.matches("Bash", {"command": "git status; rm -rf build"})
    assert not git.matches("Bash", {"command": "sudo git status"})
    assert AllowRule.edit("src/**").matches("Write", {"path": "src/app.py"})
    ```
    """

    kind: _RuleKind
    value: str
    glob: PathGlob | None = None

    @classmethod
    def tool(cls, name: str) -> AllowRule:
        """Allow every call of the tool named `name`."""
        return cls("tool", name, _validated("tool", name, "AllowRule"))

    @classmethod
    def bash_command(cls, program: str) -> AllowRule:
        """Allow a Bash call when every sub-command runs `program`."""
        return cls("bash_command", program, _validated("bash_command", program, "AllowRule"))

    @classmethod
    def read(cls, glob: str) -> AllowRule:
        """Allow `Read` of a path matching the gitignore-style `glob`."""
        return cls("read", glob, _validated("read", glob, "AllowRule"))

    @classmethod
    def edit(cls, glob: str) -> AllowRule:
        """Allow `Edit`/`Write` of a path matching the gitignore-style `glob`."""
        return cls("edit", glob, _validated("edit", glob, "AllowRule"))

    def matches(self, tool: str | ToolSubject, args: JsonValue = None) -> bool:
        """Whether this rule alone allows the call."""
        subject = tool if isinstance(tool, ToolSubject) else ToolSubject(tool, args)
        kind = self.kind
        if kind == "tool":
            return subject.tool == self.value
        if kind == "bash_command":
            programs = subject.allow_programs
            return programs is not None and len(programs) == 1 and self.value in programs
        if subject.tool not in _path_tools(kind) or subject.path is None:
            return False
        assert self.glob is not None
        return self.glob.matches_clean(subject.path)

    def __repr__(self) -> str:
        return f"AllowRule.{self.kind}({self.value!r})"


def allowed_by(rules: Iterable[AllowRule], tool: str | ToolSubject, args: JsonValue = None) -> bool:
    """Whether `rules` together allow the call: one rule matches, or the Bash rules cover every sub-command.

    ```python
    from helikon.core.governance.rules import AllowRule, allowed_by

    rules = [AllowRule.bash_command("git"), AllowRule.bash_command("ls")]
    assert allowed_by(rules, "Bash", {"command": "ls && git status"})
    assert not allowed_by(rules, "Bash", {"command": "ls && rm x"})
    ```
    """
    subject = ToolSubject.of(tool, args)
    covered: set[str] = set()
    for rule in rules:
        if rule.matches(subject):
            return True
        if rule.kind == "bash_command":
            covered.add(rule.value)
    programs = subject.allow_programs
    return programs is not None and programs <= covered


class GuardAction(StrEnum):
    """What a tripped guard does: `DENY` outright, or `ASK` the approval handler (deny without one)."""

    DENY = "deny"
    ASK = "ask"


_BUILTIN_REASONS = MappingProxyType(
    {
        "rm_root": "recursive remove of / or the home directory",
        "system_write": "write to a protected system path (/, /etc, /usr, /bin, /sbin, /sys, /boot, /dev)",
        "dotpath_write": "write to a protected .git, .ssh or .env path",
    }
)


@carrier(kw_only=False)
class GuardRule:
    """A safety rule evaluated before the mode (even `BYPASS`) that denies or asks.

    `GuardRule.destructive_defaults()` is the built-in set; `GuardRule.ask(rule, reason)`
    and `GuardRule.deny(rule, reason)` guard with any `DenyRule`.

    ```python
    from helikon.core.governance.rules import DenyRule, GuardAction, GuardRule

    guard = GuardRule.ask(DenyRule.bash_command("git"), "git changes the repository")
    assert guard.check("Bash", {"command": "git push"}) == "git changes the repository"
    assert guard.check("Bash", {"command": "ls"}) is None
    assert all(g.action is GuardAction.ASK for g in GuardRule.destructive_defaults())
    ```
    """

    action: GuardAction
    matcher: str
    reason: str
    rule: DenyRule | None = None

    @classmethod
    def ask(cls, rule: DenyRule, reason: str) -> GuardRule:
        """Ask before any call `rule` matches."""
        return cls._custom(GuardAction.ASK, rule, reason)

    @classmethod
    def deny(cls, rule: DenyRule, reason: str) -> GuardRule:
        """Deny any call `rule` matches, with `reason`."""
        return cls._custom(GuardAction.DENY, rule, reason)

    @classmethod
    def _custom(cls, action: GuardAction, rule: DenyRule, reason: str) -> GuardRule:
        if not isinstance(rule, DenyRule):
            raise UserError(f"GuardRule.{action.value}() takes a DenyRule, got {type(rule).__name__}")
        if not isinstance(reason, str) or not reason:
            raise UserError(f"GuardRule.{action.value}() needs a non-empty reason")
        return cls(action, "rule", reason, rule)

    @staticmethod
    def destructive_defaults() -> tuple[GuardRule, ...]:
        """The built-in guards: `rm -r` of `/` or `~`, system-path writes, the .git/.ssh/.env breaker."""
        return _DEFAULTS

    def check(self, tool: str | ToolSubject, args: JsonValue = None) -> str | None:
        """The reason when the guard trips on the call, else `None`."""
        subject = tool if isinstance(tool, ToolSubject) else ToolSubject(tool, args)
        if self.rule is not None:
            return self.reason if self.rule.matches(subject) else None
        detail = subject.guard(self.matcher)
        return None if detail is None else f"{self.reason}: {detail}"

    def __repr__(self) -> str:
        if self.rule is not None:
            return f"GuardRule.{self.action.value}({self.rule!r}, {self.reason!r})"
        return f"GuardRule({self.action.name}, {self.matcher!r})"


_DEFAULTS = tuple(GuardRule(GuardAction.ASK, name, reason) for name, reason in _BUILTIN_REASONS.items())
