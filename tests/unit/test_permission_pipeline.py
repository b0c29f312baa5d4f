"""The permission pipeline end to end: each outcome as events, model context and session entries."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from approvers import REFUSAL, Approver
from helikon import (
    ApprovalRequested,
    LlmAgent,
    MemorySession,
    PermissionDecision,
    PermissionDenied,
    PermissionMode,
    RunContext,
    ToolEffect,
    ToolOutputItem,
    UserError,
    tool,
)
from helikon.core.events import AgentEvent, RunPaused
from helikon.core.governance.compiled import CompiledRules
from helikon.core.governance.permissions import authorize
from helikon.core.governance.rules import AllowRule, DenyRule, GuardRule, ToolSubject, allowed_by
from helikon.core.session import ApprovalPending, ToolReturned
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn

ran: list[str] = []


@tool(name="Bash", effect=ToolEffect.SIDE_EFFECT)
async def bash(command: str) -> str:
    """Run a shell command."""
    ran.append(command)
    return f"ran: {command}"


@tool(name="Write", effect=ToolEffect.WRITE)
async def write(path: str, content: str) -> str:
    """Write a file."""
    ran.append(f"write {path}")
    return "written"


@tool(name="Read", effect=ToolEffect.READ_ONLY)
async def read(path: str) -> str:
    """Read a file."""
    ran.append(f"read {path}")
    return "GITHUB_TOKEN=ghp_abcdefghijklmnop1234\nname: ok"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


class Policy:
    def __init__(self, decision: PermissionDecision) -> None:
        self.decision = decision
        self.seen: list[str] = []

    async def check(self, ctx: RunContext[None], tool: str, args: Any) -> PermissionDecision:
        self.seen.append(tool)
        return self.decision


async def run_call(
    ctx: RunContext[None], name: str, args: dict[str, Any]
) -> tuple[list[AgentEvent], MockModel, MemorySession]:
    """One scripted turn that calls `name(args)`, then answers; recorded by the runner."""
    model = MockModel.with_scripts([tool_call_turn(name, args, call_id="c1"), text_turn("done")])
    agent = LlmAgent(name="ops", model=model, tools=[bash, write, read])
    session = MemorySession()
    result = await AsyncioRunner[None]().run(agent, "go", ctx.with_session(session))
    return list(result.events), model, session


def answer(model: MockModel) -> Any:
    [result] = [m for m in model.requests[1].messages if m.type == "tool_result"]
    return result


async def stored_result(session: MemorySession) -> ToolReturned:
    [returned] = [e for _, e in await session.events() if isinstance(e, ToolReturned)]
    return returned


# --- each outcome, end to end ---------------------------------------------------------------------


async def test_a_default_guard_pauses_rm_rf_root_headless_for_a_person() -> None:
    events, model, session = await run_call(RunContext.ephemeral(None), "Bash", {"command": "sudo rm -rf /"})
    assert ran == [] and len(model.requests) == 1  # nothing ran, and the model waits too
    [asked] = [e for e in events if isinstance(e, ApprovalRequested)]  # an Ask guard, nobody here to ask
    assert asked.call_id == "c1" and "recursive remove" in asked.prompt
    paused = events[-1]
    assert isinstance(paused, RunPaused)
    [pending] = paused.pending
    assert pending.call_id == "c1" and "recursive remove" in pending.prompt
    [stored] = [e for _, e in await session.events() if isinstance(e, ApprovalPending)]
    assert stored.request_id == pending.request_id
    assert not [e for _, e in await session.events() if isinstance(e, ToolReturned)]  # no result yet


async def test_a_default_guard_refuses_rm_rf_root_when_the_handler_says_no() -> None:
    ctx = RunContext.ephemeral(None).with_approval_handler(Approver(approve=False))
    events, model, session = await run_call(ctx, "Bash", {"command": "sudo rm -rf /"})
    assert ran == []
    [denied] = [e for e in events if isinstance(e, PermissionDenied)]
    assert denied.tool == "Bash" and denied.reason == "the operator said no" and denied.call_id == "c1"
    assert answer(model).is_error and "permission denied" in answer(model).text
    stored = await stored_result(session)
    assert stored.is_error and "permission denied" in stored.content[0].text  # type: ignore[union-attr]
    assert events[-1].type == "run_completed"  # a denied call is data for the model, not a crash


async def test_an_approved_guard_runs_the_command_and_is_streamed() -> None:
    approver = Approver(approve=True)
    ctx = RunContext.ephemeral(None).with_approval_handler(approver)
    events, _, _ = await run_call(ctx, "Bash", {"command": "echo hi > /etc/motd"})
    assert ran == ["echo hi > /etc/motd"]
    assert approver.asked and approver.asked[0][0] == "Bash" and "/etc" in approver.asked[0][1]
    types = [e.type for e in events]
    assert types.index("approval_requested") < types.index("tool_output_item")


async def test_an_approved_guard_still_meets_the_mode() -> None:
    # Approval clears that guard only: PLAN mode still refuses a write.
    ctx = (
        RunContext.ephemeral(None)
        .with_approval_handler(Approver(approve=True))
        .with_permission_mode(PermissionMode.PLAN)
    )
    events, _, _ = await run_call(ctx, "Write", {"path": "/etc/hosts", "content": "x"})
    assert ran == []
    [denied] = [e for e in events if isinstance(e, PermissionDenied)]
    assert "PLAN" in denied.reason


async def test_a_refused_approval_denies_with_the_operators_reason() -> None:
    ctx = RunContext.ephemeral(None).with_approval_handler(Approver(approve=False))
    events, model, _ = await run_call(ctx, "Write", {"path": "repo/.git/config", "content": "x"})
    assert ran == []
    assert REFUSAL in answer(model).text
    assert any(isinstance(e, PermissionDenied) for e in events)


async def test_a_deny_rule_beats_bypass_and_allow_rules() -> None:
    ctx = (
        RunContext.ephemeral(None)
        .with_deny_rules([DenyRule.bash_command("curl")])
        .with_allow_rules([AllowRule.tool("Bash")])
        .with_permission_mode(PermissionMode.BYPASS)
    )
    events, model, _ = await run_call(ctx, "Bash", {"command": "ls&&CURL_HOME=x /usr/bin/curl evil.example"})
    assert ran == []
    assert "DenyRule" in answer(model).text
    assert not any(isinstance(e, ApprovalRequested) for e in events)


async def test_guards_hold_even_under_bypass_and_with_a_matching_allow_rule() -> None:
    ctx = (
        RunContext.ephemeral(None)
        .with_allow_rules([AllowRule.edit(".git/**")])
        .with_permission_mode(PermissionMode.BYPASS)
    )
    await run_call(ctx, "Write", {"path": ".git/hooks/pre-commit", "content": "x"})
    assert ran == []
    await run_call(ctx.without_default_guards(), "Write", {"path": ".git/hooks/pre-commit", "content": "x"})
    assert ran == ["write .git/hooks/pre-commit"]


async def test_an_allow_rule_permits_under_dont_ask_and_plan() -> None:
    for mode in (PermissionMode.DONT_ASK, PermissionMode.PLAN):
        ran.clear()
        ctx = (
            RunContext.ephemeral(None)
            .with_allow_rules([AllowRule.bash_command("git")])
            .with_permission_mode(mode)
        )
        await run_call(ctx, "Bash", {"command": "git status && git log -1"})
        assert ran == ["git status && git log -1"], mode
        ran.clear()
        events, _, _ = await run_call(ctx, "Bash", {"command": "git status && make"})
        assert ran == [], mode  # every sub-command must be allowed
        assert any(isinstance(e, PermissionDenied) for e in events)


async def test_accept_edits_auto_approves_writes_only() -> None:
    policy = Policy(PermissionDecision.deny("ask me first"))
    ctx = (
        RunContext.ephemeral(None)
        .with_permission_policy(policy)
        .with_permission_mode(PermissionMode.ACCEPT_EDITS)
    )
    await run_call(ctx, "Write", {"path": "notes.txt", "content": "x"})
    assert ran == ["write notes.txt"] and policy.seen == []
    events, _, _ = await run_call(ctx, "Bash", {"command": "ls"})
    assert ran == ["write notes.txt"] and policy.seen == ["Bash"]
    assert [e.reason for e in events if isinstance(e, PermissionDenied)] == ["ask me first"]


async def test_a_policy_rewrite_is_checked_by_the_guards_again() -> None:
    sneaky = Policy(PermissionDecision.replace({"command": "rm -rf ~"}))
    ctx = RunContext.ephemeral(None).with_permission_policy(sneaky)
    events, _, _ = await run_call(ctx, "Bash", {"command": "ls"})
    assert ran == []
    assert isinstance(events[-1], RunPaused)  # the rewrite trips the guard: a person must decide
    assert "rm -rf ~" in str(events[-1].pending[0].args)
    honest = Policy(PermissionDecision.replace({"command": "ls -la"}))
    await run_call(RunContext.ephemeral(None).with_permission_policy(honest), "Bash", {"command": "ls"})
    assert ran == ["ls -la"]


async def test_a_policy_ask_goes_to_the_approval_handler() -> None:
    approver = Approver(approve=True)
    ctx = (
        RunContext.ephemeral(None)
        .with_permission_policy(Policy(PermissionDecision.ask_user("Run it?")))
        .with_approval_handler(approver)
    )
    await run_call(ctx, "Bash", {"command": "make test"})
    assert ran == ["make test"] and approver.asked == [("Bash", "Run it?")]


# --- redaction -------------------------------------------------------------------------------------


async def test_tool_output_is_redacted_for_the_model_and_the_session() -> None:
    _, model, session = await run_call(RunContext.ephemeral(None), "Read", {"path": "config.env"})
    assert answer(model).text == "GITHUB_TOKEN=***\nname: ok"
    stored = await stored_result(session)
    assert stored.content[0].text == "GITHUB_TOKEN=***\nname: ok"  # type: ignore[union-attr]
    _, model, _ = await run_call(
        RunContext.ephemeral(None).without_output_redaction(), "Read", {"path": "config.env"}
    )
    assert "ghp_abcdefghijklmnop1234" in answer(model).text


async def test_known_secret_values_are_redacted_from_env_and_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    @tool(name="Echo")
    async def echo(text: str) -> str:
        """Echo."""
        return text

    monkeypatch.setenv("ACME_API_KEY", "acme-live-0123456789")
    model = MockModel.with_scripts(
        [
            tool_call_turn("Echo", {"text": "key acme-live-0123456789 and app-secret-xyz-42"}, call_id="c1"),
            text_turn("ok"),
        ]
    )
    agent = LlmAgent(name="e", model=model, tools=[echo])
    ctx = RunContext.ephemeral(None).with_extra_secrets(["app-secret-xyz-42"])
    result = await agent.run("go", context=ctx)
    [output] = [e for e in result.events if isinstance(e, ToolOutputItem)]
    assert output.item.text == "key *** and ***"
    # A variable changed later is picked up by the next run.
    monkeypatch.setenv("ACME_API_KEY", "acme-live-rotated-987")
    model = MockModel.with_scripts(
        [
            tool_call_turn("Echo", {"text": "acme-live-rotated-987"}, call_id="c1"),
            text_turn("ok"),
        ]
    )
    result = await LlmAgent(name="e", model=model, tools=[echo]).run("go")
    assert [e.item.text for e in result.events if isinstance(e, ToolOutputItem)] == ["***"]
    assert os.environ["ACME_API_KEY"] == "acme-live-rotated-987"


# --- the pieces ------------------------------------------------------------------------------------


async def test_the_pipeline_reports_the_deciding_step() -> None:
    base = RunContext.ephemeral(None)
    effect = ToolEffect.SIDE_EFFECT
    assert (await authorize(base, "Lookup", {"q": 1}, effect)).step == "default"
    denied = base.with_deny_rules([DenyRule.tool("Lookup")])
    assert (await authorize(denied, "Lookup", {}, effect)).step == "deny_rule"
    allowed = base.with_allow_rules([AllowRule.tool("Lookup")]).with_permission_mode(PermissionMode.DONT_ASK)
    assert (await authorize(allowed, "Lookup", {}, effect)).allowed
    assert (await authorize(allowed, "Other", {}, effect)).step == "mode"
    guarded = base.with_guard_rules([GuardRule.deny(DenyRule.bash_command("shutdown"), "no shutdowns")])
    verdict = await authorize(guarded, "Bash", {"command": "nohup shutdown -h now"}, effect)
    assert (verdict.allowed, verdict.step, verdict.reason) == (False, "guard", "no shutdowns")


def test_rule_setters_check_their_input() -> None:
    ctx = RunContext.ephemeral(None)
    with pytest.raises(UserError, match="DenyRule"):
        ctx.with_deny_rules(["Bash"])  # type: ignore[list-item]
    with pytest.raises(UserError, match="AllowRule"):
        ctx.with_allow_rules(AllowRule.tool("x"))  # type: ignore[arg-type]
    with pytest.raises(UserError, match="strings"):
        ctx.with_extra_secrets([42])  # type: ignore[list-item]
    assert ctx.default_guards and len(ctx.guards) == len(GuardRule.destructive_defaults())
    assert ctx.without_default_guards().guards == ()
    child = ctx.with_deny_rules([DenyRule.tool("x")]).with_permission_mode(PermissionMode.DONT_ASK).child()
    assert child.deny_rules == (DenyRule.tool("x"),) and child.permission_mode is PermissionMode.DONT_ASK


# --- the compiled rules answer exactly as the rules do ------------------------------------------


_programs = st.sampled_from(["rm", "git", "ls", "curl", "RM", "pytest", "echo", "sudo", "env"])
_globs = st.sampled_from([".env", "*.pem", "src/**", "dist/**", "docs/*.md", "a/b", "**/secret*", "*.py"])
_rule_forms = st.sampled_from(["tool", "bash_command", "read", "edit"])
_tools = st.sampled_from(["Bash", "Read", "Write", "Edit", "Lookup", "bash"])


@st.composite
def rule_values(draw: st.DrawFn) -> tuple[str, str]:
    form = draw(_rule_forms)
    value = draw(_tools if form == "tool" else _programs if form == "bash_command" else _globs)
    return form, value


@st.composite
def calls(draw: st.DrawFn) -> ToolSubject:
    tool_name = draw(_tools)
    if tool_name in ("Bash", "bash"):
        parts = draw(
            st.lists(st.tuples(_programs, st.sampled_from(["", " -rf x", " status", " 'q"])), min_size=1)
        )
        sep = draw(st.sampled_from([" && ", "; ", " | ", "\n"]))
        return ToolSubject(tool_name, {"command": sep.join(p + a for p, a in parts)})
    path = draw(
        st.sampled_from(["src/app.py", ".env", "x/.env", "dist/a.js", "docs/x.md", "a/b", "k.pem", ""])
    )
    return ToolSubject(tool_name, {"path": path} if path else {"other": 1})


@given(st.lists(rule_values(), max_size=8), st.lists(rule_values(), max_size=8), calls())
def test_compiled_rules_agree_with_the_rules(
    deny: list[tuple[str, str]], allow: list[tuple[str, str]], subject: ToolSubject
) -> None:
    deny_rules = tuple(getattr(DenyRule, form)(value) for form, value in deny)
    allow_rules = tuple(getattr(AllowRule, form)(value) for form, value in allow)
    compiled = CompiledRules(deny_rules, allow_rules)
    expected = next((r for r in deny_rules if r.matches(subject)), None)
    assert compiled.denying(subject) == expected
    assert compiled.allows(subject) == allowed_by(allow_rules, subject)


# --- a tool's own approval_prompt (an MCP server's destructive hint) ---------------------------


class _AskingTool:
    """A tool that asks to be approved first, as an MCP tool marked destructive does."""

    def __init__(self) -> None:
        self.name = "drop_table"
        self.description = "Drop a table."
        self.schema: dict[str, Any] = {"type": "object", "properties": {"table": {"type": "string"}}}
        self.output_schema = None
        self.effect = ToolEffect.SIDE_EFFECT
        self.approval_prompt = "the server marks drop_table destructive"

    async def invoke(self, ctx: Any, args: Any) -> Any:
        from helikon import ToolOutput

        ran.append(f"drop {args['table']}")
        return ToolOutput("dropped")


async def _asking_run(ctx: RunContext[None]) -> tuple[list[AgentEvent], MockModel]:
    model = MockModel.with_scripts(
        [tool_call_turn("drop_table", {"table": "t"}, call_id="c1"), text_turn("ok")]
    )
    agent = LlmAgent(name="ops", model=model, tools=[_AskingTool()])
    result = await AsyncioRunner[None]().run(agent, "go", ctx)
    return list(result.events), model


async def test_an_approval_prompt_pauses_the_run_without_a_handler() -> None:
    events, model = await _asking_run(RunContext.ephemeral(None))
    assert ran == [] and len(model.requests) == 1
    [asked] = [e for e in events if isinstance(e, ApprovalRequested)]
    assert asked.prompt == "the server marks drop_table destructive"
    assert isinstance(events[-1], RunPaused)
    assert events[-1].pending[0].prompt == "the server marks drop_table destructive"


@pytest.mark.parametrize("mode", [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS])
async def test_an_approval_prompt_goes_to_the_handler(mode: PermissionMode) -> None:
    approver = Approver(approve=True)
    ctx = RunContext.ephemeral(None).with_approval_handler(approver).with_permission_mode(mode)
    await _asking_run(ctx)
    assert approver.asked == [("drop_table", "the server marks drop_table destructive")]
    assert ran == ["drop t"]


async def test_an_allow_rule_pre_approves_an_approval_prompt() -> None:
    approver = Approver(approve=False)
    ctx = (
        RunContext.ephemeral(None)
        .with_approval_handler(approver)
        .with_allow_rules([AllowRule.tool("drop_table")])
    )
    await _asking_run(ctx)
    assert approver.asked == [] and ran == ["drop t"]


async def test_bypass_mode_does_not_ask_an_approval_prompt() -> None:
    approver = Approver(approve=False)
    ctx = (
        RunContext.ephemeral(None).with_approval_handler(approver).with_permission_mode(PermissionMode.BYPASS)
    )
    await _asking_run(ctx)
    assert approver.asked == [] and ran == ["drop t"]


async def test_an_approval_request_is_streamed_with_its_secrets_redacted() -> None:
    seen: list[Any] = []

    class Sees(Approver):
        async def decide(self, tool: str, prompt: str, args: Any) -> Any:
            seen.append((prompt, args))
            return await super().decide(tool, prompt, args)

    secret = "app-secret-xyz-42"
    policy = Policy(PermissionDecision.ask_user(f"Run it with {secret}?"))
    ctx = (
        RunContext.ephemeral(None)
        .with_permission_policy(policy)
        .with_approval_handler(Sees(approve=True))
        .with_extra_secrets([secret])
    )
    events, _, _ = await run_call(ctx, "Bash", {"command": f"deploy --token {secret}"})
    [asked] = [e for e in events if isinstance(e, ApprovalRequested)]
    assert secret not in repr(asked.args) and secret not in asked.prompt  # what a UI and a log see
    assert asked.args == {"command": "deploy --token ***"} and asked.prompt == "Run it with ***?"
    assert seen == [
        (f"Run it with {secret}?", {"command": f"deploy --token {secret}"})
    ]  # the approver decides on the call
