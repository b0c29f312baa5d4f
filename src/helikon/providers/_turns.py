"""Folding helikon's conversation into alternating user/assistant turns of content blocks.

Anthropic Messages and Bedrock Converse share the shape: system text hoisted out, one
message per run of same-role items, tool calls as blocks of the assistant turn and tool
results as blocks of the next user turn. Each adapter supplies its own block builders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from helikon.core.items import (
    AssistantMessage,
    ContentPart,
    Item,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)

Block = dict[str, Any]


def fold_turns(
    items: Sequence[Item],
    *,
    user_block: Callable[[ContentPart], Block | None],
    assistant_block: Callable[[ContentPart], Block | None],
    tool_use: Callable[[str, str, Any], Block],
    tool_result: Callable[[ToolResult], Block],
) -> tuple[list[str], list[Block]]:
    """System texts (hoisted, in order) and the alternating `{"role", "content": [blocks]}` messages."""
    system: list[str] = []
    messages: list[Block] = []

    def append(role: str, blocks: list[Block]) -> None:
        if not blocks:
            return
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for item in items:
        if isinstance(item, SystemMessage):
            system.append(item.text)
        elif isinstance(item, UserMessage):
            append("user", [b for p in item.content if (b := user_block(p)) is not None])
        elif isinstance(item, AssistantMessage):
            append("assistant", [b for p in item.content if (b := assistant_block(p)) is not None])
        elif isinstance(item, ToolCall):
            append("assistant", [tool_use(item.call_id, item.name, item.args)])
        else:
            append("user", [tool_result(item)])
    return system, messages
