"""Where a tool result goes in a projected conversation: after its turn's calls, in the order they were made.

A durable run appends each tool result the moment its call returns, so the log holds a
parallel batch's results in the order the calls *finished*. The conversation shows them in
the order the model *asked* for them, the order a run that never stopped keeps: a result
goes before the results already placed whose calls come later in its turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..items import AssistantMessage, Item, ToolCall, ToolResult, ToolUsePart


def result_position(messages: Sequence[Item], call_id: str) -> int:
    """The index at which the result of `call_id` goes, given the conversation so far.

    The end, unless results at the end of `messages` answer calls of the same turn made
    after `call_id`'s: then just before the first of them. O(size of the last turn).
    """
    end = len(messages)
    if not end or type(messages[-1]) is not ToolResult:
        return end  # the first result of its turn (or no turn at all): nothing to pass
    first = end  # the results at the end: messages[first:end]
    while first and type(messages[first - 1]) is ToolResult:
        first -= 1
    order = _turn_calls(messages, first)
    rank = order.get(call_id)
    if rank is None:
        return end  # not a call of this turn (a repair pass decides what it is)
    position = end
    while position > first:
        before = messages[position - 1]
        placed = order.get(before.call_id) if isinstance(before, ToolResult) else None
        if placed is None or placed <= rank:  # a second result of one call goes after the first
            break
        position -= 1
    return position


def _turn_calls(messages: Sequence[Item], end: int) -> dict[str, int]:
    """The call ids of the turn whose calls end at `end`, each with its rank in the turn."""
    start = end
    while start and type(messages[start - 1]) is ToolCall:
        start -= 1
    ids: list[str] = []
    if start:
        before = messages[start - 1]
        if isinstance(before, AssistantMessage):  # calls carried as parts of the answer
            ids = [part.call_id for part in before.content if isinstance(part, ToolUsePart)]
    ids += [item.call_id for item in messages[start:end] if isinstance(item, ToolCall)]
    order: dict[str, int] = {}
    for rank, call_id in enumerate(ids):
        order.setdefault(call_id, rank)
    return order


__all__ = ["result_position"]
