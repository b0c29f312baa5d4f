"""helikon's MCP client against the real `@modelcontextprotocol/server-filesystem` over stdio.

Its write tools are annotated `destructiveHint: true`, so their calls go to the approval
handler under the default permission mode, unless an allow rule covers them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp_peers import peer

from approvers import REFUSAL, Approver
from helikon import AllowRule, LlmAgent, PermissionMode, RunContext, ToolEffect, ToolError
from helikon.core.items import ToolResult
from helikon.mcp import McpServerHandle
from helikon.testing import MockModel, text_turn, tool_call_turn


@pytest.fixture
async def fs(tmp_path: Path) -> AsyncIterator[McpServerHandle]:
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    async with McpServerHandle.stdio(peer("mcp-server-filesystem"), [str(tmp_path)]).tool_prefix(
        "fs_"
    ) as handle:
        yield handle


def resolved(path: Path) -> str:
    return str(path.resolve())


async def write_with(fs: McpServerHandle, ctx: RunContext[None], target: Path) -> ToolResult:
    model = MockModel.with_scripts(
        [tool_call_turn("fs_write_file", {"path": str(target), "content": "hello"}), text_turn("done")]
    )
    agent = LlmAgent(name="writer", model=model, tool_sources=[fs])
    assert (await agent.run("write it", context=ctx)).final_output == "done"
    [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResult)]
    return result


async def test_effects_and_destructive_tools_come_from_the_annotations(fs: McpServerHandle) -> None:
    tools = {t.name: t for t in fs.tools()}
    assert tools["fs_read_text_file"].effect is ToolEffect.READ_ONLY
    assert tools["fs_write_file"].effect is ToolEffect.SIDE_EFFECT  # never WRITE
    destructive = sorted(n for n, t in tools.items() if getattr(t, "approval_prompt", None))
    assert destructive == [
        "fs_edit_file",
        "fs_move_file",
        "fs_write_file",
    ]  # create_directory: destructiveHint false
    assert "destructive" in tools["fs_write_file"].approval_prompt  # type: ignore[attr-defined]


async def test_reading_through_the_server(fs: McpServerHandle, tmp_path: Path) -> None:
    out = await fs.call_tool("read_text_file", {"path": str(tmp_path / "notes.txt")})
    assert out.value == {"content": "first line\nsecond line\n"}  # its structuredContent, as it is
    allowed = await fs.call_tool("list_allowed_directories", {})
    assert resolved(tmp_path) in str(allowed.value)
    with pytest.raises(ToolError, match=r"Access denied|outside"):
        await fs.call_tool("read_text_file", {"path": "/etc/passwd"})
    with pytest.raises(ToolError, match="does-not-exist"):
        await fs.call_tool("does-not-exist", {})


async def test_a_destructive_call_without_an_approval_handler_pauses_for_a_person(
    fs: McpServerHandle, tmp_path: Path
) -> None:
    target = tmp_path / "out.txt"
    model = MockModel.with_scripts(
        [tool_call_turn("fs_write_file", {"path": str(target), "content": "hello"}), text_turn("done")]
    )
    agent = LlmAgent(name="writer", model=model, tool_sources=[fs])
    result = await agent.run("write it", context=RunContext.ephemeral(None))
    assert result.status == "paused" and len(model.requests) == 1
    [pending] = result.pending
    assert pending.tool == "fs_write_file" and "destructive" in pending.prompt
    assert not target.exists()


async def test_a_destructive_call_goes_to_the_approval_handler(fs: McpServerHandle, tmp_path: Path) -> None:
    refuse = Approver(approve=False)
    result = await write_with(
        fs, RunContext.ephemeral(None).with_approval_handler(refuse), tmp_path / "no.txt"
    )
    assert result.is_error and REFUSAL in result.text and not (tmp_path / "no.txt").exists()
    assert [tool for tool, _ in refuse.asked] == ["fs_write_file"]
    approve = Approver(approve=True)
    ctx = (
        RunContext.ephemeral(None)
        .with_approval_handler(approve)
        .with_permission_mode(PermissionMode.ACCEPT_EDITS)
    )
    result = await write_with(fs, ctx, tmp_path / "yes.txt")
    assert not result.is_error and (tmp_path / "yes.txt").read_text() == "hello"
    assert len(approve.asked) == 1  # ACCEPT_EDITS does not wave an MCP tool through


async def test_an_allow_rule_pre_approves_a_destructive_tool(fs: McpServerHandle, tmp_path: Path) -> None:
    never = Approver(approve=False)
    ctx = (
        RunContext.ephemeral(None)
        .with_approval_handler(never)
        .with_allow_rules([AllowRule.tool("fs_write_file")])
    )
    result = await write_with(fs, ctx, tmp_path / "ruled.txt")
    assert not result.is_error and (tmp_path / "ruled.txt").read_text() == "hello"
    assert never.asked == []


async def test_plan_mode_allows_only_the_read_only_tools(fs: McpServerHandle, tmp_path: Path) -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("fs_read_text_file", {"path": str(tmp_path / "notes.txt")}, call_id="r"),
            tool_call_turn("fs_create_directory", {"path": str(tmp_path / "d")}, call_id="w"),
            text_turn("planned"),
        ]
    )
    agent = LlmAgent(name="planner", model=model, tool_sources=[fs])
    await agent.run("plan", context=RunContext.ephemeral(None).with_permission_mode(PermissionMode.PLAN))
    results = {m.call_id: m for m in model.requests[-1].messages if isinstance(m, ToolResult)}
    assert not results["r"].is_error and "first line" in results["r"].text
    assert results["w"].is_error and "PLAN" in results["w"].text and not (tmp_path / "d").exists()


async def test_lazy_mode_over_the_filesystem_tools(tmp_path: Path) -> None:
    async with McpServerHandle.stdio(peer("mcp-server-filesystem"), [str(tmp_path)]).lazy() as fs:
        tools = {t.name: t for t in fs.tools()}
        assert "search_tools" in tools
        from helikon import ToolContext

        ctx = ToolContext(
            RunContext.ephemeral(None), call_id="c", tool_name="search_tools", max_agent_depth=4
        )
        found = (await tools["search_tools"].invoke(ctx, {"query": "DIRECTORY"})).value
        assert isinstance(found, dict)
        names = [t["name"] for t in found["tools"]]  # type: ignore[index, union-attr]
        assert "create_directory" in names and "list_directory" in names
        assert found["total_matches"] == len(names) and "truncated" not in found
        [create] = [t for t in found["tools"] if t["name"] == "create_directory"]  # type: ignore[index, union-attr]
        assert create["input_schema"]["required"] == ["path"]  # type: ignore[index, call-overload]
