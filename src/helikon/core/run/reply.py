"""`Reply`: one model call's answer, folded from the deltas the model streams."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import TokenUsage
from ..items import AssistantMessage, ContentPart, Item, ReasoningPart, TextPart, ToolCall
from ..model import Finish, ModelFallback, ReasoningDelta, TokenDelta, ToolCallDelta, Usage
from .tool_args import parse_args

if TYPE_CHECKING:
    from ..agent import LlmAgent


_ONE_REQUEST = TokenUsage(requests=1)  # where every call's usage starts (carriers are frozen)


class Reply:
    """One model call's answer, as its deltas build it."""

    __slots__ = ("calls", "finish", "reasoning", "signature", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.signature: str | None = None
        self.calls: dict[str, list[str]] = {}  # call_id -> [name, args fragments...]
        self.usage = _ONE_REQUEST
        self.finish: Any = "stop"

    def add(self, event: Any) -> bool:
        """Fold `event` in; whether it streams (deltas and fallbacks do; the usage and the finish do not)."""
        cls = event.__class__
        if cls is TokenDelta:
            self.text.append(event.text)
            return True
        if cls is ToolCallDelta:
            entry = self.calls.get(event.call_id)
            if entry is None:
                self.calls[event.call_id] = [event.name, event.args_delta]
            else:
                if event.name and not entry[0]:
                    entry[0] = event.name
                entry.append(event.args_delta)
            return True
        if cls is ReasoningDelta:
            self.reasoning.append(event.text)
            if event.signature:
                self.signature = event.signature
            return True
        if cls is Usage:
            self.usage = self.usage + TokenUsage(
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                cached_input_tokens=event.cached_input_tokens,
                reasoning_tokens=event.reasoning_tokens,
            )
        elif cls is Finish:
            self.finish = event.reason
        elif cls is ModelFallback:
            return True  # the switch to another model is the run's event too
        return False

    def items(self, agent: LlmAgent[Any, Any]) -> tuple[Item, ...]:
        """The answer's items: one assistant message (reasoning, then text), then the tool calls."""
        items: list[Item] = []
        if self.text or self.reasoning:
            parts: list[ContentPart] = []
            if self.reasoning:
                reasoning = "".join(self.reasoning)
                parts.append(
                    ReasoningPart(text=reasoning, signature=self.signature, provider=agent.model.provider)
                )
            if self.text:
                parts.append(TextPart(text="".join(self.text)))
            items.append(AssistantMessage(content=tuple(parts), agent=agent.name))
        for call_id, entry in self.calls.items():
            items.append(ToolCall(call_id=call_id, name=entry[0], args=parse_args("".join(entry[1:]))))
        return tuple(items)
