"""`Toolset`: filtered, prefixed and renamed groups of tools, in `LlmAgent(tools=[...])` beside tools."""

from __future__ import annotations

from typing import Any

import pytest
from tool_audit import ToolAudit

from helikon import (
    DenyRule,
    Governance,
    LlmAgent,
    ModelRetry,
    RunContext,
    RunError,
    ToolContext,
    ToolEffect,
    Toolset,
    UserError,
    tool,
)
from helikon.core.items import ToolResult
from helikon.core.toolsets import RenamedTool
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool(effect=ToolEffect.READ_ONLY)
def list_issues(ctx: ToolContext[None], repo: str) -> str:
    """List a repository's open issues."""
    return f"{ctx.tool_name}: 3 open in {repo}"


@tool
def delete_repo(repo: str) -> str:
    """Delete a repository."""
    return "gone"


@tool
def search(query: str) -> str:
    """Search."""
    return "found"


github = Toolset([list_issues, delete_repo])


def answers(model: MockModel) -> list[str]:
    return [m.text for m in model.requests[-1].messages if isinstance(m, ToolResult)]


def test_combinators_chain_and_leave_the_original_as_it_was() -> None:
    safe = github.filtered(lambda t: t.effect is ToolEffect.READ_ONLY).prefixed("gh_")
    assert [t.name for t in safe] == ["gh_list_issues"]
    assert [t.name for t in github] == ["list_issues", "delete_repo"]
    renamed = github.prefixed("gh_").renamed({"gh_delete_repo": "nuke"})
    assert [t.name for t in renamed] == ["gh_list_issues", "nuke"]
    [first, _] = renamed
    assert first.description == list_issues.description and first.schema == list_issues.schema
    assert first.effect is ToolEffect.READ_ONLY and len(renamed) == 2


async def test_an_agent_takes_toolsets_beside_tools_and_a_renamed_tool_runs_the_original() -> None:
    model = MockModel.with_scripts([tool_call_turn("gh_list_issues", {"repo": "helikon"}), text_turn("3.")])
    agent = LlmAgent(name="a", model=model, tools=[search, github.prefixed("gh_")])
    assert (await agent.run("Issues?")).final_output == "3."
    assert [t.name for t in model.requests[0].tools] == ["search", "gh_list_issues", "gh_delete_repo"]
    assert answers(model) == ["gh_list_issues: 3 open in helikon"]


async def test_hooks_see_the_offered_name_and_deny_rules_still_match_the_tools_own() -> None:
    audit = ToolAudit()
    model = MockModel.with_scripts([tool_call_turn("nuke", {"repo": "x"}), text_turn("Refused.")])
    agent = LlmAgent(name="a", model=model, tools=[github.renamed({"delete_repo": "nuke"})], hooks=[audit])
    ctx = RunContext.ephemeral(None).with_governance(Governance(deny_rules=[DenyRule.tool("delete_repo")]))
    await agent.run("Delete it", context=ctx)
    assert audit.tools == ["nuke"]
    [answer] = answers(model)
    assert answer.startswith("Error: permission denied: denied by")


async def test_a_renamed_tool_keeps_its_options() -> None:
    @tool(max_retries=0)
    def picky() -> str:
        """Picky."""
        raise ModelRetry("no")

    model = MockModel.with_scripts([tool_call_turn("p", {}), text_turn("unreachable")])
    agent = LlmAgent(name="a", model=model, tools=[Toolset([picky]).renamed({"picky": "p"})])
    with pytest.raises(RunError, match="tool 'p' asked the model to retry past its max_retries \\(0\\)"):
        await agent.run("Go")


def test_renaming_twice_wraps_the_tool_once() -> None:
    [twice] = Toolset([search]).prefixed("a_").prefixed("b_")
    assert twice.name == "b_a_search"
    assert isinstance(twice, RenamedTool)
    assert twice.wrapped is search and twice.own_name == "search"


def test_a_rename_onto_another_tools_name_is_refused() -> None:
    with pytest.raises(UserError, match="two tools are named 'delete_repo'"):
        github.renamed({"list_issues": "delete_repo"})


def test_an_agent_refuses_a_toolset_clashing_with_its_tools() -> None:
    with pytest.raises(UserError, match="two tools are named 'list_issues'"):
        LlmAgent(name="a", model=MockModel(), tools=[list_issues, github])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Toolset("search"), "Toolset('search'): give a list of tools"),  # pyright: ignore[reportArgumentType]
        (lambda: Toolset([search, 3]), "item 1 (3) is not a Tool or a Toolset"),  # pyright: ignore[reportArgumentType]
        (lambda: github.prefixed(""), "Toolset.prefixed(''): a prefix is letters"),
        (lambda: github.prefixed("gh."), "Toolset.prefixed('gh.'): a prefix is letters"),
        (
            lambda: github.renamed({"nope": "x"}),
            "no tool named 'nope' here (tools: delete_repo, list_issues)",
        ),
        (lambda: github.renamed({"list_issues": "a b"}), "'list_issues' -> 'a b': a tool name must be"),
        (lambda: github.renamed(["x"]), "give a dict of current name -> new name"),  # pyright: ignore[reportArgumentType]
        (lambda: github.filtered(3), "give a function of a Tool returning a bool"),  # pyright: ignore[reportArgumentType]
        (lambda: github.prefixed("x" * 60), "a tool name must be 1-64"),
    ],
)
def test_bad_input_is_a_user_error_saying_what_to_fix(build: Any, message: str) -> None:
    with pytest.raises(UserError) as info:
        build()
    assert message in str(info.value)
