"""A GitHub triage agent: a prefixed toolset, role-gated, retrying and timed-out tools, on a real session.

The scripted model works from what it is offered, like a real one: it calls the first
offered tool it has not called yet (correcting a call it was sent back for), then answers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from helikon import (
    LlmAgent,
    ModelRequest,
    ModelRetry,
    RunContext,
    ToolCalled,
    ToolEffect,
    ToolReturned,
    Toolset,
    tool,
)
from helikon.core.items import ToolCall, ToolResult
from helikon.runtime import AsyncioRunner
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
from helikon.testing import FunctionModel, Script, text_turn, tool_call_turn


class IssueQuery(BaseModel):
    repo: str
    label: str = "bug"


@tool(effect=ToolEffect.READ_ONLY)
def list_issues(query: IssueQuery) -> list[str]:
    """List a repository's open issues with a label."""
    return [f"{query.repo}#1 ({query.label})"]


@tool(max_retries=1)
def label_issue(repo: str, number: int, label: str) -> str:
    """Label an issue."""
    if label not in ("bug", "feature"):
        raise ModelRetry("labels are 'bug' or 'feature'")
    return f"labelled {repo}#{number} {label}"


@tool(timeout=0.05)
async def fetch_ci_logs(repo: str) -> str:
    """Fetch the CI logs (slow)."""
    await asyncio.sleep(60)
    return "logs"


@tool(enabled=lambda ctx: ctx.user_ctx["role"] == "maintainer")
def close_issue(repo: str, number: int) -> str:
    """Close an issue."""
    return f"closed {repo}#{number}"


ARGS: dict[str, Any] = {
    "gh_list_issues": {"repo": "helikon"},
    "gh_label_issue": {"repo": "helikon", "number": 1, "label": "crash"},
    "gh_fetch_ci_logs": {"repo": "helikon"},
    "gh_close_issue": {"repo": "helikon", "number": 1},
}


def triager(request: ModelRequest) -> Script:
    answered = [m for m in request.messages if isinstance(m, ToolResult)]
    calls = {m.call_id: m for m in request.messages if isinstance(m, ToolCall)}
    if answered and answered[-1].text.startswith("Error: labels are"):
        return tool_call_turn("gh_label_issue", {**ARGS["gh_label_issue"], "label": "bug"})
    called = {calls[r.call_id].name for r in answered}
    for offered in request.tools:
        if offered.name not in called:
            return tool_call_turn(offered.name, ARGS[offered.name])
    return text_turn(" | ".join(r.text for r in answered))


def build() -> LlmAgent[dict[str, str]]:
    github = Toolset([list_issues, label_issue, fetch_ci_logs, close_issue]).prefixed("gh_")
    return LlmAgent(name="triage", model=FunctionModel(triager), tools=[github])


async def test_a_maintainer_and_a_reader_get_the_tools_their_role_allows(tmp_path: Path) -> None:
    agent = build()
    async with await SqliteDatabase.open(tmp_path / "s.db") as db:
        session = await SqliteSession.open(db, "maintainer")
        ctx = RunContext.ephemeral({"role": "maintainer"}).with_session(session)
        result = await AsyncioRunner[dict[str, str]]().run(agent, "Triage the bugs", ctx)
        assert result.final_output == (
            "[\"helikon#1 (bug)\"] | Error: labels are 'bug' or 'feature' | labelled helikon#1 bug | "
            "Error: the tool 'gh_fetch_ci_logs' timed out after 0.05s. Try again, or go on without it. | "
            "closed helikon#1"
        )
        stored = [e for _, e in await session.events()]
        assert [e.name for e in stored if isinstance(e, ToolCalled)] == [
            "gh_list_issues",
            "gh_label_issue",
            "gh_label_issue",
            "gh_fetch_ci_logs",
            "gh_close_issue",
        ]
        assert sum(1 for e in stored if isinstance(e, ToolReturned)) == 5

        reader = await SqliteSession.open(db, "reader")
        ctx = RunContext.ephemeral({"role": "reader"}).with_session(reader)
        result = await AsyncioRunner[dict[str, str]]().run(agent, "Triage the bugs", ctx)
        assert "closed" not in result.final_output
        called = [e.name for _, e in await reader.events() if isinstance(e, ToolCalled)]
        assert "gh_close_issue" not in called and json.dumps(called).count("gh_") == 4
