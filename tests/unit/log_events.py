"""Small session events for projection tests: a user's words, an answer, a tool call and its result."""

from __future__ import annotations

from helikon.core.items import ReasoningPart, TextPart
from helikon.core.session import AssistantMessageEvent, ToolCalled, ToolReturned, UserMessageEvent


def user(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


def said(text: str) -> AssistantMessageEvent:
    return AssistantMessageEvent(content=(TextPart(text=text),))


def call(call_id: str) -> ToolCalled:
    return ToolCalled(call_id=call_id, name="lookup", args={"q": call_id})


def result(call_id: str) -> ToolReturned:
    return ToolReturned(call_id=call_id, content=(TextPart(text=f"result {call_id}"),), name="lookup")


THINKING = AssistantMessageEvent(content=(ReasoningPart(text="thinking", signature="sig"),))
"""Reasoning alone: providers want its tool call right after it."""
