"""The fast paths of one permission decision agree with plain reference versions.

`ToolSubject`'s reading of the parse, the built-in guards' checks and the pipeline's
deny-and-guard step take shortcuts for the usual call. Each is compared here with a
straightforward version (the code before the shortcuts, or the public rules themselves)
on the adversarial shell corpus and on generated commands and calls.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helikon import ApprovalOutcome, PermissionMode, RunContext, ToolEffect
from helikon.core.events import AgentEvent, ApprovalRequested
from helikon.core.governance import _guards
from helikon.core.governance.permissions import authorize
from helikon.core.governance.rules import (
    _STANDARD_DIRS,
    _TRANSPARENT,
    AllowRule,
    DenyRule,
    GuardAction,
    GuardRule,
    ToolSubject,
    allowed_by,
)
from helikon.core.governance.shell import ShellParse, SimpleCommand, parse_command

CORPUS = [
    e["command"]
    for e in json.loads((Path(__file__).parent / "data" / "shell_corpus.json").read_text(encoding="utf-8"))
]

# --- reference versions: one command at a time, no shortcuts ---------------------------------------


def ref_read(parse: ShellParse) -> tuple[frozenset[str], frozenset[str] | None, bool]:
    """(programs, allow_programs, deny_all) as `ToolSubject` must read them."""
    if parse.error:
        return frozenset(), None, True
    names: set[str] = set()
    allow: set[str] | None = set()
    for command in parse.commands:
        names.add(command.program)
        names.update(command.wrappers)
        if allow is None:
            continue
        if command.assignments or not _TRANSPARENT.issuperset(command.wrappers):
            allow = None
            continue
        written = command.argv[0].text
        if "/" in written and written.rsplit("/", 1)[0] not in _STANDARD_DIRS:
            allow = None
        elif not command.inline:
            allow.add(command.program)
    return frozenset(n.casefold() for n in names), (frozenset(allow) if allow else None), False


def ref_bash_checks(parse: ShellParse) -> dict[str, str | None]:
    """Every check on every target, written out again: what `_guards.bash_checks` must match."""
    if parse.error:
        return dict.fromkeys(_guards.CLEAR, f"the command cannot be analysed ({parse.error})")
    targets = [r.target for r in parse.redirects if r.writes]
    removes: list[SimpleCommand] = []
    for command in parse.commands:
        program = command.program.lower()
        if program in _guards._ALL_OPERANDS:
            targets += _guards._operands(command, _guards._ALL_OPERANDS[program])
            if program == "rm":
                removes.append(command)
        else:
            targets.extend(_guards._write_targets(command, program))  # nothing for other programs
    cwds, unknown = _guards._cwds(parse)
    system = _guards._system_target
    system_write = next(
        (w.text for w in targets if any(system(t, cwds, unknown) for t in _guards._pieces(w))), None
    )
    return {
        "rm_root": _guards._rm_root(removes, cwds),
        "system_write": system_write,
        "dotpath_write": _guards._dotpath_write(targets, cwds),
    }


# --- commands: the corpus, generated command lines, arbitrary text ---------------------------------

_PIECES = st.sampled_from(
    ["rm", "RM", "-rf", "-r", "-f", "-R", "--", "--recursive", "--no-preserve-root", "-", "/", "~", "~/a",
     "..", "../..", "../*", "*", "/*", ".", "build", "$HOME", "${HOME}/x", "$X", "a/$X", "/etc/x", "etc",
     ".git/x", ".ENV", "x/.ssh/k", "cd", "pushd", "/tmp", "-P", "mv", "cp", "-t", "tee", "-a", "chmod",
     "touch", "-d", "mkdir", "-m", "755", "dd", "of=/dev/sda", "sed", "-i", "-e", "s/a/b/", "curl", "-o",
     "--output=/etc/p", "ln", "-s", "rsync", "h:/x", "git", "ls", "echo", "timeout", "5", "sudo", "env",
     "A=1", "./git", "/bin/ls", "/usr/local/bin/git", "bin/ls", "bash", "-c", "'rm -rf /'", "'ls; cd /'",
     "eval", "xargs", "find", "-exec", "{}", "+", "\\;", "-delete", ">", ">>", "2>&1", ">&", "&>",
     "out.txt", "/dev/null", "{a,/etc/b}", "&&", ";", "|", "||", "(", ")", "$(pwd)", "`id`", "\n", "nice",
     "shred", "-u", "truncate", "-s", "0", "install", "perl", "-pi"]
)  # fmt: skip
COMMANDS = st.one_of(
    st.lists(_PIECES, max_size=14).map(" ".join),
    st.sampled_from(CORPUS),
    st.text(max_size=40),
)


def check_subject(command: str) -> None:
    subject = ToolSubject("Bash", {"command": command})
    parse = parse_command(command)
    assert (subject.programs, subject.allow_programs, subject.deny_all) == ref_read(parse), command
    assert dict(subject.guard_checks()) == ref_bash_checks(parse), command
    assert dict(_guards.bash_checks(parse, "")) == ref_bash_checks(parse), command


@pytest.mark.parametrize("command", CORPUS, ids=range(len(CORPUS)))
def test_the_subject_and_the_guards_agree_on_the_corpus(command: str) -> None:
    check_subject(command)


@settings(max_examples=400)
@given(COMMANDS)
def test_the_subject_and_the_guards_agree_on_generated_commands(command: str) -> None:
    check_subject(command)


def test_a_subject_with_no_commands_and_a_failed_parse() -> None:
    for command in ("", "X=1", "> f", "'unbalanced", "ls $(("):
        check_subject(command)
    missing = ToolSubject("Bash", {"cmd": "ls"})
    assert (missing.programs, missing.allow_programs, missing.deny_all) == (frozenset(), None, True)


# --- the pipeline: deny rules, then the guards in order, then allow rules and the mode --------------


class Handler:
    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
        self.asked.append(prompt)
        approve = self.answers[(len(self.asked) - 1) % len(self.answers)]
        return ApprovalOutcome.allow() if approve else ApprovalOutcome.deny(f"no to {prompt}")


async def reference_authorize(
    ctx: RunContext[None], tool: str, args: Any, effect: ToolEffect, emit: list[str]
) -> tuple[bool, str, str]:
    """The pipeline from the rules' own answers (no policy): (allowed, step, reason)."""
    subject = ToolSubject(tool, args)
    rule = next((r for r in ctx.deny_rules if r.matches(subject)), None)
    if rule is not None:
        return False, "deny_rule", f"denied by {rule!r}"
    for guard in ctx.guards:
        reason = guard.check(subject)
        if reason is None:
            continue
        if guard.action is GuardAction.DENY:
            return False, "guard", reason
        emit.append(reason)
        handler = ctx.approval_handler
        if handler is None:
            return False, "guard", f"approval required ({reason}) but no approval handler is installed"
        outcome = await handler.decide(tool, reason, args)
        if not outcome.approved:
            return False, "guard", outcome.reason or f"not approved ({reason})"
    if ctx.allow_rules and allowed_by(ctx.allow_rules, subject):
        return True, "allow_rule", ""
    mode = ctx.permission_mode
    if mode is PermissionMode.BYPASS:
        return True, "mode", ""
    if mode is PermissionMode.DONT_ASK:
        return False, "mode", "DONT_ASK mode permits only calls that an allow rule covers"
    if mode is PermissionMode.PLAN and effect is not ToolEffect.READ_ONLY:
        return False, "mode", f"PLAN mode allows only read-only tools; {tool!r} is {effect.value}"
    if mode is PermissionMode.ACCEPT_EDITS and effect is ToolEffect.WRITE:
        return True, "mode", ""
    return True, "default", ""


_programs = st.sampled_from(["rm", "git", "ls", "curl", "apt", "sudo", "env", "find", "bash", "echo"])
_globs = st.sampled_from([".env", "src/**", "dist/**", "*.lock", "pyproject.toml", "*.md", "/etc/**"])


@st.composite
def deny_rules(draw: st.DrawFn) -> DenyRule:
    form = draw(st.sampled_from(["tool", "bash_command", "read", "edit"]))
    if form == "tool":
        return DenyRule.tool(draw(st.sampled_from(["Bash", "Write", "Read", "Lookup", "Other"])))
    if form == "bash_command":
        return DenyRule.bash_command(draw(_programs))
    return getattr(DenyRule, form)(draw(_globs))


@st.composite
def allow_rules(draw: st.DrawFn) -> AllowRule:
    form = draw(st.sampled_from(["tool", "bash_command", "read", "edit"]))
    if form == "tool":
        return AllowRule.tool(draw(st.sampled_from(["Bash", "Write", "Read", "Lookup"])))
    if form == "bash_command":
        return AllowRule.bash_command(draw(_programs))
    return getattr(AllowRule, form)(draw(_globs))


@st.composite
def guard_rules(draw: st.DrawFn) -> GuardRule:
    if draw(st.integers(0, 9)) == 0:  # a built-in guard listed again: the guards cannot be filtered
        return draw(st.sampled_from(GuardRule.destructive_defaults()))
    action = draw(st.sampled_from([GuardRule.ask, GuardRule.deny]))
    rule = draw(deny_rules())
    return action(rule, f"guarded {rule!r}")


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, Any, ToolEffect]:
    tool = draw(st.sampled_from(["Bash", "Write", "Edit", "Read", "Lookup", "Other"]))
    if tool == "Bash":
        args: Any = draw(st.one_of(COMMANDS.map(lambda c: {"command": c}), st.just({}), st.just(None)))
    elif tool in ("Write", "Edit", "Read"):
        paths = ["src/a.py", ".env", "dist/x", "/etc/passwd", "uv.lock", "a.md", "", "."]
        path = draw(st.sampled_from(paths))
        args = {"path": path} if path else draw(st.sampled_from([{}, {"path": 3}, None]))
    else:
        args = {"x": 1}
    return tool, args, draw(st.sampled_from(list(ToolEffect)))


@settings(max_examples=500)
@given(
    st.lists(deny_rules(), max_size=4),
    st.lists(allow_rules(), max_size=4),
    st.lists(guard_rules(), max_size=4),
    st.booleans(),
    st.sampled_from(list(PermissionMode)),
    st.one_of(st.none(), st.lists(st.booleans(), min_size=1, max_size=3)),
    calls(),
)
def test_the_pipeline_agrees_with_the_rules(
    deny: list[DenyRule],
    allow: list[AllowRule],
    guards: list[GuardRule],
    defaults: bool,
    mode: PermissionMode,
    answers: list[bool] | None,
    call: tuple[str, Any, ToolEffect],
) -> None:
    ctx = (
        RunContext.ephemeral(None)
        .with_deny_rules(deny)
        .with_allow_rules(allow)
        .with_guard_rules(guards)
        .with_permission_mode(mode)
    )
    if not defaults:
        ctx = ctx.without_default_guards()
    tool, args, effect = call
    expected_prompts: list[str] = []
    if answers is not None:
        ctx = ctx.with_approval_handler(Handler(answers))
    expected = asyncio.run(reference_authorize(ctx, tool, args, effect, expected_prompts))
    if answers is not None:
        ctx = ctx.with_approval_handler(Handler(answers))  # a fresh count of answers
    events: list[AgentEvent] = []
    verdict = asyncio.run(authorize(ctx, tool, args, effect, call_id="c", emit=events.append))
    assert (verdict.allowed, verdict.step, verdict.reason) == expected
    assert verdict.args is args
    prompts = [e.prompt for e in events if isinstance(e, ApprovalRequested)]
    assert prompts == expected_prompts


def test_the_reference_checks_are_exercised() -> None:
    # The generated commands reach every built-in guard, so the comparisons above are not vacuous.
    tripped: Mapping[str, str | None] = ref_bash_checks(parse_command("rm -rf / > /etc/x; tee .git/y"))
    assert all(tripped.values())
