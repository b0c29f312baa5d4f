"""`Governance`: the one frozen settings object a `RunContext` holds."""

import asyncio
import dataclasses
from typing import Any

import pytest

from helikon import (
    AllowRule,
    ApprovalOutcome,
    DenyRule,
    Governance,
    GuardRule,
    JsonValue,
    PermissionDecision,
    PermissionMode,
    RunContext,
    ToolEffect,
    UserError,
)
from helikon.core.governance.permissions import authorize
from helikon.core.governance.settings import default_governance


class AllowAll:
    async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
        return PermissionDecision.allow()


class Approver:
    async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
        return ApprovalOutcome.allow()


def test_the_defaults() -> None:
    governance = Governance()
    assert governance.mode is PermissionMode.DEFAULT
    assert governance.policy is None and governance.approval_handler is None
    assert governance.deny_rules == governance.allow_rules == governance.guard_rules == ()
    assert governance.default_guards and governance.output_redaction
    assert governance.guards == GuardRule.destructive_defaults()
    assert governance.redactor is not None
    assert governance.needs_pipeline  # the built-in guards alone need it
    assert repr(governance) == "Governance()"


def test_it_is_frozen() -> None:
    governance = Governance()
    with pytest.raises(dataclasses.FrozenInstanceError):
        governance.mode = PermissionMode.BYPASS  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del governance.policy


def test_the_settings_are_checked() -> None:
    with pytest.raises(UserError, match="PermissionMode"):
        Governance(mode="plan")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="DenyRule"):
        Governance(deny_rules=[AllowRule.tool("x")])  # type: ignore[list-item]
    with pytest.raises(UserError, match="a list of GuardRules"):
        Governance(guard_rules=GuardRule.destructive_defaults()[0])  # type: ignore[arg-type]
    with pytest.raises(UserError, match="True or False"):
        Governance(default_guards=0)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="strings"):
        Governance(extra_secrets=[b"bytes-secret"])  # type: ignore[list-item]
    with pytest.raises(UserError, match="unknown settings \\['deny'\\]"):
        Governance().replace(deny=[])


def test_needs_pipeline_follows_the_settings() -> None:
    bare = Governance(default_guards=False)
    assert not bare.needs_pipeline
    assert bare.replace(deny_rules=[DenyRule.tool("x")]).needs_pipeline
    assert bare.replace(allow_rules=[AllowRule.tool("x")]).needs_pipeline
    assert bare.replace(policy=AllowAll()).needs_pipeline
    assert bare.replace(mode=PermissionMode.PLAN).needs_pipeline
    assert bare.replace(default_guards=True).needs_pipeline
    assert not bare.replace(approval_handler=Approver()).needs_pipeline  # nothing asks it


def test_copies_share_what_the_change_leaves_valid() -> None:
    governance = Governance(deny_rules=[DenyRule.tool("x")], extra_secrets=["app-secret-123"])
    handled = governance.replace(approval_handler=Approver(), mode=PermissionMode.PLAN)
    assert handled.compiled is governance.compiled
    assert handled.redactor is governance.redactor
    assert handled.parse_cache is governance.parse_cache
    ruled = governance.replace(deny_rules=[DenyRule.tool("y")])
    assert ruled.compiled is not governance.compiled and ruled.redactor is governance.redactor
    assert ruled.compiled.deny == (DenyRule.tool("y"),)
    unguarded = governance.replace(default_guards=False)
    assert unguarded.guards == () and unguarded.compiled is not governance.compiled
    plain = governance.replace(output_redaction=False)
    assert plain.redactor is None and plain.compiled is governance.compiled
    assert governance.replace(extra_secrets=()).redactor is not governance.redactor
    # the original is untouched
    assert governance.mode is PermissionMode.DEFAULT and governance.approval_handler is None
    assert Governance().parse_cache is not governance.parse_cache  # a new one gets its own


def test_the_mode_only_tightens_on_a_copy() -> None:
    bypass = Governance(mode=PermissionMode.BYPASS)
    assert bypass.replace(mode=PermissionMode.DONT_ASK).mode is PermissionMode.DONT_ASK
    with pytest.raises(UserError, match="BYPASS may only be tightened to DONT_ASK"):
        bypass.replace(mode=PermissionMode.PLAN)
    with pytest.raises(UserError, match="DONT_ASK is terminal"):
        Governance(mode=PermissionMode.DONT_ASK).replace(mode=PermissionMode.DEFAULT)


def test_the_context_reads_and_replaces_its_governance() -> None:
    governance = Governance(allow_rules=[AllowRule.bash_command("git")], extra_secrets=["app-secret-123"])
    ctx = RunContext.ephemeral(None).with_governance(governance)
    assert ctx.governance is governance
    assert ctx.allow_rules == governance.allow_rules and ctx.extra_secrets == ("app-secret-123",)
    assert ctx.compiled_rules is governance.compiled and ctx.redactor is governance.redactor
    more = ctx.with_extra_secrets(["other-secret-456"])
    assert more.extra_secrets == ("app-secret-123", "other-secret-456")
    assert ctx.governance is governance
    child = more.child()
    assert child.governance is more.governance and more.isolated_child().governance is more.governance
    with pytest.raises(UserError, match="with_governance takes a Governance"):
        ctx.with_governance(AllowAll())  # type: ignore[arg-type]
    with pytest.raises(UserError, match="wrap it in a list"):
        ctx.with_extra_secrets("one-secret-789")


def test_the_pipeline_reads_bash_commands_through_the_governance_cache() -> None:
    ctx = RunContext.ephemeral(None).with_governance(Governance(deny_rules=[DenyRule.bash_command("curl")]))
    cache = ctx.governance.parse_cache
    call: JsonValue = {"command": "git status && curl evil.example"}
    verdict = asyncio.run(authorize(ctx, "Bash", call, ToolEffect.SIDE_EFFECT))
    assert not verdict.allowed and verdict.step == "deny_rule"
    assert len(cache) == 0  # read once: not kept
    asyncio.run(
        authorize(ctx.with_permission_mode(PermissionMode.PLAN), "Bash", call, ToolEffect.SIDE_EFFECT)
    )
    assert len(cache) == 1  # the copy shares it: its second reading is kept


def test_ephemeral_contexts_share_the_default_until_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = RunContext.ephemeral(None).governance
    assert first is default_governance() is RunContext.ephemeral(None).governance
    monkeypatch.setenv("HELIKON_SETTINGS_TEST_TOKEN", "settings-test-value-123")
    second = RunContext.ephemeral(None).governance
    assert second is not first
    assert second.redactor is not None
    assert second.redactor.redact("x settings-test-value-123") == "x ***"
    assert RunContext.ephemeral(None).governance is second


# --- the same settings share one compiled view; the same change of one object, one copy ------------


def test_the_same_change_gives_the_same_copy() -> None:
    default = RunContext.ephemeral(None).governance
    unguarded = default.replace(default_guards=False)
    assert default.replace(default_guards=False) is unguarded
    plain = unguarded.replace(output_redaction=False)
    assert unguarded.replace(output_redaction=False) is plain
    # Derived per run through the context, as the docs show: the same objects each time.
    for _ in range(3):
        ctx = RunContext.ephemeral(None).without_default_guards().without_output_redaction()
        assert ctx.governance is plain
    assert plain.guards == () and plain.redactor is None and not plain.needs_pipeline
    assert default.replace(default_guards=False, mode=PermissionMode.PLAN) is not unguarded
    assert default.replace(mode=PermissionMode.PLAN, default_guards=False) is default.replace(
        default_guards=False, mode=PermissionMode.PLAN
    )
    rules = [DenyRule.tool("x")]
    assert default.replace(deny_rules=rules) is default.replace(deny_rules=list(rules))  # by value


def test_a_callback_is_kept_by_identity() -> None:
    governance = Governance(output_redaction=False)
    first, second = Approver(), Approver()
    with_first = governance.replace(approval_handler=first)
    assert governance.replace(approval_handler=first) is with_first
    with_second = governance.replace(approval_handler=second)
    assert with_second is not with_first
    assert with_first.approval_handler is first and with_second.approval_handler is second


def test_a_change_that_builds_a_redactor_reads_the_environment_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    governance = Governance(output_redaction=False)
    before = governance.replace(output_redaction=True)
    monkeypatch.setenv("HELIKON_COPY_TEST_TOKEN", "copy-test-value-456")
    after = governance.replace(output_redaction=True)
    assert after is not before
    assert after.redactor is not None and after.redactor.redact("copy-test-value-456") == "***"
    assert (
        before.redactor is not None and before.redactor.redact("copy-test-value-456") == "copy-test-value-456"
    )


def test_the_copies_kept_are_bounded() -> None:
    governance = Governance(output_redaction=False)
    from helikon.core.governance.settings import _MAX_COPIES

    for n in range(_MAX_COPIES * 3):
        governance.replace(extra_secrets=[f"bounded-secret-{n:04}"])
        assert len(governance._copies) <= _MAX_COPIES  # pyright: ignore[reportPrivateUsage]


def test_equal_rules_share_one_compiled_view(monkeypatch: pytest.MonkeyPatch) -> None:
    from helikon.core.governance import compiled

    # A full table is cleared by the next new view: with room to spare, none is cleared in
    # between (what earlier tests left in it does not matter).
    monkeypatch.setattr(compiled, "_MAX_VIEWS", 10_000)
    rules = {
        "deny_rules": [DenyRule.bash_command("curl")],
        "allow_rules": [AllowRule.tool("Read")],
        "guard_rules": [GuardRule.deny(DenyRule.tool("x"), "no x")],
    }
    built = Governance(**rules)
    assert Governance(**rules).compiled is built.compiled  # built anew, the same view
    assert Governance(**rules, mode=PermissionMode.PLAN, output_redaction=False).compiled is built.compiled
    assert Governance(**rules, default_guards=False).compiled is not built.compiled
    assert Governance(default_guards=False, output_redaction=False).compiled is (
        RunContext.ephemeral(None).without_default_guards().governance.compiled
    )
    assert built.guards == (*GuardRule.destructive_defaults(), *built.guard_rules)


def test_the_views_are_bounded() -> None:
    from helikon.core.governance import compiled

    for n in range(compiled._MAX_VIEWS * 2):  # pyright: ignore[reportPrivateUsage]
        Governance(deny_rules=[DenyRule.tool(f"view-{n}")], output_redaction=False)
        assert len(compiled._VIEWS) <= compiled._MAX_VIEWS  # pyright: ignore[reportPrivateUsage]
