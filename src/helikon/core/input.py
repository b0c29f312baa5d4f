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

import inspect
from collections.abc import Sequence, Sized
from typing import TYPE_CHECKING, Any, TypeAlias

from ._internal.carrier import carrier
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


AGENT_CALL = "agent.run({input}, context=ctx)"
"""The right call an agent's `run` shows in the error for arguments in the wrong place."""

RUNNER_CALL = "runner.run(agent, {input}, context=ctx)"
"""The same for a runner's `run` / `run_streamed`."""


def to_agent_input(input: RunInput, *misplaced: object, call: str = AGENT_CALL) -> AgentInput:
    """Normalize any `RunInput` to an `AgentInput`.

    `misplaced` are the positional arguments a `run` took after its input, and `call` the
    right call, as the error shows it: the context-first order `agent.run(ctx, input)`
    gets an error that says how helikon spells it.

    Example:
        ```python
        import pytest

        from helikon import RunContext, UserError
        from helikon.core.input import to_agent_input

        ctx = RunContext.ephemeral(None)
        with pytest.raises(UserError) as info:
            to_agent_input(ctx, "Hi")  # agent.run(ctx, "Hi"), the context first
        assert "write agent.run('Hi', context=ctx)" in str(info.value)
        ```
    """
    if misplaced:
        raise wrong_call(input, misplaced, call)
    if isinstance(input, str):
        return AgentInput.from_user_text(input)
    if isinstance(input, AgentInput):
        return input
    if isinstance(input, Sequence) and not isinstance(input, bytes | bytearray):
        return AgentInput(tuple(input))
    raise wrong_call(input, (), call)


def wrong_call(input: object, misplaced: tuple[object, ...], call: str) -> UserError:
    """The error for a `run` given its arguments in the wrong place, showing `call` filled in."""
    from .context import RunContext, ToolContext  # on the error path only (context never imports input)

    contexts = (RunContext, ToolContext)
    name = call.split("(", 1)[0]
    if isinstance(input, contexts):
        given = misplaced[0] if misplaced else None
        shown = repr(given) if isinstance(given, str) and len(given) <= 40 else "input"
        kind = "RunContext" if isinstance(input, RunContext) else "ToolContext"
        return UserError(
            f"{name}() got the {kind} as its input: helikon takes the input first and "
            f"the context by keyword (not run(ctx, input)); write "
            f"{call.format(input=shown)}"
        )
    if any(isinstance(arg, contexts) for arg in misplaced):
        shown = repr(input) if isinstance(input, str) and len(input) <= 40 else "input"
        return UserError(f"{name}(input, ctx): pass the context by keyword; write {call.format(input=shown)}")
    if misplaced:
        return UserError(
            f"{name}() takes one positional argument, the input, and {len(misplaced)} more were given "
            f"({', '.join(type(arg).__name__ for arg in misplaced)}); pass the others by keyword "
            f"(context=, config=, ...): {call.format(input='input')}"
        )
    return UserError(
        f"run(input=...): expected a str, an AgentInput or a sequence of items, got {type(input).__name__}"
    )


def check_run_signature(where: str, agent: object) -> None:
    """A `UserError` when `agent.run` cannot be called as helikon calls every agent.

    That is `agent.run(input, context=ctx, config=config)`; an agent written context
    first, `def run(self, ctx, input)`, is told so when it is composed, not at its first run.

    Example:
        ```python
        import pytest

        from helikon import UserError
        from helikon.core.input import check_run_signature

        class ContextFirst:
            name, description = "custom", ""

            def run(self, ctx: object, input: object) -> None: ...

        with pytest.raises(UserError) as info:
            check_run_signature("SequentialAgent('p').then", ContextFirst())
        assert "write def run(self, input, *, context=None, config=None)" in str(info.value)
        ```
    """
    run: object = getattr(agent, "run", None)
    if not callable(run):
        return
    try:
        signature = inspect.signature(run)
    except (TypeError, ValueError):  # not introspectable (a builtin): trust it
        return
    params = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    missing = [name for name in ("context", "config") if name not in params]
    if missing:
        raise UserError(
            f"{where}: {type(agent).__name__}.run{signature} takes no "
            f"{' or '.join(f'{m}=' for m in missing)} keyword; helikon calls "
            "agent.run(input, context=ctx, config=config), so write "
            "def run(self, input, *, context=None, config=None) (the input first, the rest by keyword)"
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
