"""Where a compaction summary may stand in a conversation without parting a tool call from its result.

A `Compacted` marker replaces a span of the conversation with its summary. An edge of that
span must not fall inside a tool turn: between a tool call and its result (before a result
or, at the end of the conversation, before a result still to come) or between reasoning and
the call it travels with. `whole_cut` finds the nearest edge that does not, so `project`
keeps such a turn verbatim instead of leaving an orphan call or result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..conversation_check import call_ids
from ..items import AssistantMessage, Item, ReasoningPart, ToolCall, ToolResult


def _reasoning_only(item: Item) -> bool:
    """An assistant message of reasoning alone (or empty): providers want its tool call right after it."""
    return isinstance(item, AssistantMessage) and all(isinstance(p, ReasoningPart) for p in item.content)


def _in_turn(item: Item) -> bool:
    """Whether `item` belongs to a tool turn: a call, a result, or the reasoning before a call."""
    return isinstance(item, ToolCall | ToolResult) or bool(call_ids(item)) or _reasoning_only(item)


def whole_cut(messages: Sequence[Item], position: int, direction: Literal[1, -1]) -> int:
    """The edge nearest `position` (before `messages[position]`), going `direction`, that splits no tool turn.

    An edge splits one when a call before it has its result after it, or has none yet and the
    edge is the conversation's end (the result may still come), or when reasoning before it
    waits for its call after it. Going back (-1) always finds one (position 0 at worst);
    going forward (+1) may end at `len(messages)` when the conversation ends inside a turn.
    O(1) when a neighbour of the edge is outside any tool turn (the usual case), else the length
    of the run of tool-turn items around it (a summary ends such a run).
    """
    count = len(messages)
    position = min(max(position, 0), count)
    if position == 0 or not _in_turn(messages[position - 1]):
        return position
    if position < count and not _in_turn(messages[position]):
        return position
    start = position - 1  # the run of tool-turn items around the edge: messages[start:end]
    while start and _in_turn(messages[start - 1]):
        start -= 1
    end = position
    while end < count and _in_turn(messages[end]):
        end += 1
    blocked = _blocked_edges(messages, start, end)
    limit = start if direction < 0 else end  # edge `start` never splits; edge `end` only at the end
    while blocked[position - start] and position != limit:
        position += direction
    return position


def _blocked_edges(messages: Sequence[Item], start: int, end: int) -> list[bool]:
    """For each edge start..end of the run `messages[start:end]`, whether it splits a tool turn."""
    at_end = end == len(messages)  # only then may a call without a result still get one
    first_result: dict[str, int] = {}
    for index in range(start, end):
        item = messages[index]
        if isinstance(item, ToolResult):
            first_result.setdefault(item.call_id, index)
    opened = [0] * (end - start + 2)  # a difference array of the blocked spans of edges
    for index in range(start, end):
        item = messages[index]
        for call_id in call_ids(item):
            answer = first_result.get(call_id, -1)
            if answer > index:
                last = answer  # edges index+1..answer lie between the call and its result
            elif at_end:
                last = end  # waits for a result after the end
            else:
                continue  # never answered (a crashed turn): nothing after it to split from
            opened[index + 1 - start] += 1
            opened[last + 1 - start] -= 1
        if _reasoning_only(item) and (index + 1 < end or at_end):
            opened[index + 1 - start] += 1
            opened[index + 2 - start] -= 1
    blocked: list[bool] = []
    running = 0
    for delta in opened[:-1]:
        running += delta
        blocked.append(running > 0)
    return blocked
