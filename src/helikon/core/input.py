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

from collections.abc import Sequence, Sized
from typing import TYPE_CHECKING, Any, TypeAlias

from ._carrier import carrier
from .exceptions import UserError
from .items import AssistantMessage, Item, SystemMessage, ToolCall, ToolResult, UserMessage

if TYPE_CHECKING:
    from .result import RunResult
    from .session import Session


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


History: TypeAlias = "RunResult[Any] | Sequence[Item]"
"""What `history=` takes: a finished run's result (its `all_items`), or conversation items."""

_ITEM_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolCall, ToolResult)


def continue_from(input: AgentInput, history: History, session: Session, owner: str) -> AgentInput:
    """`input` with `history` in front: a run continuing a conversation held by the caller, not a session.

    `owner` names the call in errors. Refused when `session` holds a conversation of its own
    (a durable session, or one with events): the run would see two histories.

    Example:
        ```python
        from helikon import AgentInput, MemorySession, UserMessage
        from helikon.core.input import continue_from

        earlier = [UserMessage.from_text("Hello")]
        resumed = continue_from(AgentInput.from_user_text("Hi"), earlier, MemorySession(), "run")
        assert [item.text for item in resumed.conversation] == ["Hello", "Hi"]
        ```
    """
    if getattr(session, "durable", False) or (isinstance(session, Sized) and len(session) > 0):
        raise UserError(
            f"{owner}(history=...): the context's session ({type(session).__name__}) holds a conversation "
            "too; continue with one of them: history= with a context without that session, or the "
            "session alone (through a runner, which loads it)"
        )
    items: Any = history
    to_input_list = getattr(history, "to_input_list", None)
    if callable(to_input_list):
        items = to_input_list()
    elif isinstance(history, str | bytes | bytearray) or not isinstance(history, Sequence):
        raise UserError(
            f"{owner}(history={history!r:.60}): expected a RunResult or a sequence of items, "
            f"got {type(history).__name__}"
        )
    for index, item in enumerate(items):
        if not isinstance(item, _ITEM_TYPES):
            raise UserError(
                f"{owner}(history=[...]): item {index} is a {type(item).__name__}, not a conversation item "
                "(UserMessage, AssistantMessage, ToolCall, ToolResult, SystemMessage)"
            )
    return input.prepend(items)


__all__ = ["AgentInput", "History", "RunInput", "continue_from", "to_agent_input"]
