"""A call whose arguments no rule reads is decided once per compiled view, then answered from it.

`authorize` keeps the pipeline's answer for such a call (`CompiledRules.verdicts`) when it
was settled without asking anyone. These tests hold that answer to a fresh run of the
whole pipeline over a table of settings and calls, and show that what must run each time
(a matching rule or guard, an approval, the policy, the arguments of Bash, Read and the
edit tools) still does.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from approvers import Approver
from helikon import (
    AllowRule,
    DenyRule,
    Governance,
    GuardRule,
    JsonValue,
    PermissionDecision,
    PermissionMode,
    RunContext,
    ToolEffect,
)
from helikon.core.events import AgentEvent, ApprovalRequested
from helikon.core.governance.permissions import PermissionVerdict, _Approvals, _decide, authorize
from helikon.core.governance.rules import ToolSubject


class Policy:
    """Answers every call with one decision and counts the calls it saw."""

    def __init__(self, decision: PermissionDecision) -> None:
        self.decision = decision
        self.seen = 0

    async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
        self.seen += 1
        return self.decision


RULES: dict[str, dict[str, Any]] = {
    "none": {},
    "deny lookup": {"deny_rules": [DenyRule.tool("lookup")]},
    "allow lookup": {"allow_rules": [AllowRule.tool("lookup")]},
    "deny and allow lookup": {
        "deny_rules": [DenyRule.tool("lookup")],
        "allow_rules": [AllowRule.tool("lookup")],
    },
    "guard denies lookup": {"guard_rules": [GuardRule.deny(DenyRule.tool("lookup"), "no lookups")]},
    "guard asks lookup": {"guard_rules": [GuardRule.ask(DenyRule.tool("lookup"), "lookups cost money")]},
    "rules for other kinds": {
        "deny_rules": [DenyRule.bash_command("lookup"), DenyRule.read("*"), DenyRule.edit("*")],
        "allow_rules": [AllowRule.bash_command("lookup"), AllowRule.read("*")],
        "guard_rules": [GuardRule.deny(DenyRule.bash_command("curl"), "no network")],
    },
}
CALLBACKS: dict[str, dict[str, Any]] = {
    "headless": {},
    "approver": {"approval_handler": Approver(True)},
    "refuser": {"approval_handler": Approver(False)},
    "allowing policy": {"policy": Policy(PermissionDecision.allow())},
    "asking policy": {
        "policy": Policy(PermissionDecision.ask_user("sure?")),
        "approval_handler": Approver(True),
    },
}
TOOLS = ["lookup", "other"]
ASKS = [None, "the server marks it destructive"]


def governances() -> list[tuple[str, Governance[Any]]]:
    out: list[tuple[str, Governance[Any]]] = []
    for (rules, settings), (callbacks, handlers), mode, guards in itertools.product(
        RULES.items(), CALLBACKS.items(), PermissionMode, (True, False)
    ):
        governance: Governance[Any] = Governance(
            mode=mode, default_guards=guards, output_redaction=False, **settings, **handlers
        )
        out.append((f"{rules}, {callbacks}, {mode.name}, guards {guards}", governance))
    return out


def fresh(ctx: RunContext[Any], tool: str, args: Any, effect: ToolEffect, ask: str | None) -> Any:
    """The whole pipeline, as `authorize` runs it when nothing is kept: (verdict, events)."""
    events: list[AgentEvent] = []
    approvals = _Approvals(
        ctx.governance.approval_handler, tool, "c1", events.append, ctx.governance.redactor
    )
    subject = ToolSubject(tool, args, read=ctx.governance.parse_cache.read)
    return _decide(ctx, subject, effect, ask, approvals), events


def shape(verdict: PermissionVerdict) -> tuple[bool, str, str]:
    return verdict.allowed, verdict.reason, verdict.step


async def test_the_kept_answer_is_the_whole_pipelines_answer() -> None:
    kept = asked = 0
    for label, governance in governances():
        ctx = RunContext.ephemeral(None).with_governance(governance)
        governance.compiled.verdicts.clear()
        for tool, effect, ask in itertools.product(TOOLS, ToolEffect, ASKS):
            args = {"q": f"{label} {tool}"}
            decision, expected_events = fresh(ctx, tool, args, effect, ask)
            expected = await decision
            for attempt in range(3):  # the first fills the view; the others may be answered from it
                events: list[AgentEvent] = []
                call: JsonValue = {"q": f"{label} {tool} {attempt}"}  # new each time: passed through
                verdict = await authorize(ctx, tool, call, effect, call_id="c1", emit=events.append, ask=ask)
                where = (label, tool, effect, ask, attempt)
                assert shape(verdict) == shape(expected), where
                assert verdict.args is call, where
                assert [type(e) for e in events] == [type(e) for e in expected_events], where
            if expected_events:
                asked += 1
            elif expected.step != "policy":
                kept += 1
        # A kept answer is only ever one given without a question or the policy.
        for (tool, *_), (_, _, step) in governance.compiled.verdicts.items():
            assert tool in TOOLS and step in ("deny_rule", "guard", "allow_rule", "mode", "default")
    assert kept > 100 and asked > 100  # both kinds are in the table


async def test_a_rule_for_the_tool_is_never_skipped() -> None:
    ctx = RunContext.ephemeral(None)
    assert (await authorize(ctx, "lookup", {}, ToolEffect.READ_ONLY)).allowed
    assert ctx.governance.compiled.verdicts  # the default's answer is kept ...
    denied = ctx.with_deny_rules([DenyRule.tool("lookup")])
    verdict = await authorize(denied, "lookup", {}, ToolEffect.READ_ONLY)
    assert (verdict.allowed, verdict.step) == (False, "deny_rule")  # ... and never answers for other rules
    guarded = ctx.with_guard_rules([GuardRule.deny(DenyRule.tool("lookup"), "no lookups")])
    assert shape(await authorize(guarded, "lookup", {}, ToolEffect.READ_ONLY)) == (
        False,
        "no lookups",
        "guard",
    )
    planned = ctx.with_permission_mode(PermissionMode.PLAN)
    assert not (await authorize(planned, "lookup", {}, ToolEffect.SIDE_EFFECT)).allowed
    assert (await authorize(planned, "lookup", {}, ToolEffect.READ_ONLY)).allowed


async def test_an_asking_guard_asks_every_call() -> None:
    approver = Approver(True)
    ctx = (
        RunContext.ephemeral(None)
        .with_guard_rules([GuardRule.ask(DenyRule.tool("lookup"), "lookups cost money")])
        .with_approval_handler(approver)
    )
    for n in range(3):
        events: list[AgentEvent] = []
        verdict = await authorize(ctx, "lookup", {"n": n}, ToolEffect.READ_ONLY, emit=events.append)
        assert verdict.allowed and [type(e) for e in events] == [ApprovalRequested]
    assert len(approver.asked) == 3
    assert not any(key[0] == "lookup" for key in ctx.governance.compiled.verdicts)


@pytest.mark.parametrize(
    "decision",
    [PermissionDecision.allow(), PermissionDecision.deny("no"), PermissionDecision.replace({"n": 0})],
)
async def test_the_policy_is_asked_every_call(decision: PermissionDecision) -> None:
    policy = Policy(decision)
    ctx = RunContext.ephemeral(None).with_permission_policy(policy)
    for n in range(3):
        verdict = await authorize(ctx, "lookup", {"n": n}, ToolEffect.READ_ONLY)
        assert verdict.step == "policy"
    assert policy.seen == 3


async def test_a_tools_own_question_is_asked_every_call() -> None:
    approver = Approver(False)
    ctx = RunContext.ephemeral(None).with_approval_handler(approver)
    for _ in range(3):
        verdict = await authorize(ctx, "drop_table", {}, ToolEffect.SIDE_EFFECT, ask="destructive")
        assert (verdict.allowed, verdict.step) == (False, "approval")
    assert len(approver.asked) == 3
    # Covered by an allow rule, the question is not put, and that answer is kept.
    allowed = ctx.with_allow_rules([AllowRule.tool("drop_table")])
    for _ in range(2):
        assert (await authorize(allowed, "drop_table", {}, ToolEffect.SIDE_EFFECT, ask="destructive")).allowed
    assert len(approver.asked) == 3


@pytest.mark.parametrize(
    ("tool", "safe", "dangerous"),
    [
        ("Bash", {"command": "ls"}, {"command": "sudo rm -rf /"}),
        ("Write", {"path": "src/a.py"}, {"path": ".git/config"}),
        ("Read", {"path": "README.md"}, {"path": "app/.env"}),
    ],
)
async def test_the_arguments_of_bash_read_and_edit_calls_are_read_every_call(
    tool: str, safe: dict[str, JsonValue], dangerous: dict[str, JsonValue]
) -> None:
    ctx = RunContext.ephemeral(None).with_deny_rules([DenyRule.read(".env")])
    effect = ToolEffect.READ_ONLY if tool == "Read" else ToolEffect.WRITE
    assert (await authorize(ctx, tool, safe, effect)).allowed
    assert not (await authorize(ctx, tool, dangerous, effect)).allowed
    assert not any(key[0] == tool for key in ctx.governance.compiled.verdicts)


async def test_the_kept_answers_are_bounded() -> None:
    ctx = RunContext.ephemeral(None).with_governance(Governance(deny_rules=[DenyRule.tool("bounded-test")]))
    compiled = ctx.governance.compiled
    for n in range(compiled.MAX_VERDICTS * 2 + 1):
        await authorize(ctx, f"tool{n}", {}, ToolEffect.READ_ONLY)
        assert len(compiled.verdicts) <= compiled.MAX_VERDICTS
