"""A hook that records the tool name each `pre_tool_use` names, for the dynamic-tool tests."""

from __future__ import annotations

from typing import Any

from helikon import HookDecision, HookEvent, RunContext


class ToolAudit:
    """Allows every call; `tools` holds the name each one was made by, in order."""

    def __init__(self) -> None:
        self.tools: list[str | None] = []

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == "pre_tool_use":
            self.tools.append(event.tool)
        return HookDecision.allow()
