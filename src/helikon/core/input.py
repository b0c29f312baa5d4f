"""What a run takes: `AgentInput`, and `RunInput`, everything `Agent.run` accepts.

Example:
    ```python
    from helikon import AgentInput, UserMessage
    from helikon.core.input import to_agent_input

    assert to_agent_input("Hi") == AgentInput.from_user_text("Hi")
    earlier = (UserMessage.from_text("Hello"),)
    assert to_agent_input("Hi").prepend(earlier).conversation[0].text == "Hello"
    ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from ._carrier import carrier
from .exceptions import UserError
from .items import Item, UserMessage


@carrier(kw_only=False)
class AgentInput:
    """The messages that start (or continue) a run.

    Example:
        ```python
        from helikon import AgentInput

        assert AgentInput.from_user_text("Hi").messages[0].text == "Hi"
        ```
    """

    messages: tuple[Item, ...]
    """The new turn (what input guardrails check and a runner records)."""
    history: tuple[Item, ...] = ()
    """Earlier conversation the model sees before `messages` (a runner fills it from the session)."""

    @classmethod
    def from_user_text(cls, text: str) -> AgentInput:
        """One user message."""
        return cls((UserMessage.from_text(text),))

    @classmethod
    def from_items(cls, items: Sequence[Item]) -> AgentInput:
        """Any conversation items (e.g. a prior transcript plus a new user turn)."""
        return cls(tuple(items))

    def prepend(self, history: Sequence[Item]) -> AgentInput:
        """This input with `history` in front of it (kept apart from the new turn)."""
        return AgentInput(self.messages, (*history, *self.history)) if history else self

    @property
    def conversation(self) -> tuple[Item, ...]:
        """History then the new turn: what the model sees."""
        return (*self.history, *self.messages) if self.history else self.messages


RunInput: TypeAlias = "str | AgentInput | Sequence[Item]"
"""What `Agent.run` accepts: text, an `AgentInput`, or conversation items."""


def to_agent_input(input: RunInput) -> AgentInput:
    """Normalize any `RunInput` to an `AgentInput`."""
    if isinstance(input, str):
        return AgentInput.from_user_text(input)
    if isinstance(input, AgentInput):
        return input
    if isinstance(input, Sequence) and not isinstance(input, bytes | bytearray):
        return AgentInput(tuple(input))
    raise UserError(
        f"run(input=...): expected a str, an AgentInput or a sequence of items, got {type(input).__name__}"
    )


__all__ = ["AgentInput", "RunInput", "to_agent_input"]
