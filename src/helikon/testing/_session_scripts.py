"""Scripts from a recorded session: its model's answers, to replay with `MockModel`.

A conversation a session recorded (in production, say) holds each model answer: its text
and the tool calls it made. `scripts_from_session` turns them back into scripts, one per
model call, in order, so a `MockModel` answers a re-run exactly as the model did: a bug
seen live becomes a deterministic test.

Example:
    ```python
    import asyncio

    from helikon import LlmAgent, MemorySession, tool
    from helikon.testing import MockModel, text_turn, tool_call_turn

    @tool
    def weather(city: str) -> str:
        \"\"\"The weather.\"\"\"
        return "sunny"

    async def main() -> None:
        session = MemorySession()
        live = MockModel.with_scripts([tool_call_turn("weather", {"city": "Oslo"}), text_turn("Sunny.")])
        await LlmAgent(name="w", model=live, tools=[weather]).run("Oslo?", session=session)
        replay = await MockModel.from_session(session)
        again = await LlmAgent(name="w", model=replay, tools=[weather]).run("Oslo?")
        assert again.final_output == "Sunny."

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from helikon.core.items import AssistantMessage, Item, ReasoningPart, TextPart, ToolCall
from helikon.core.model import Finish, ReasoningDelta, TokenDelta, ToolCallDelta

from ._scripts import Script, ScriptStep

if TYPE_CHECKING:
    from helikon.core.session import Session


async def scripts_from_session(session: Session, *, upto_seq: int | None = None) -> list[Script]:
    """The model's answers the session recorded (up to `upto_seq`, included), one script per model call."""
    from helikon.core.session import SequenceId, project  # here: `import helikon.testing` does without it

    entries = await session.events()
    if upto_seq is not None:
        entries = [e for e in entries if e.seq <= SequenceId(upto_seq)]
    return scripts_of(project([e.event for e in entries]).messages)


def scripts_of(items: Sequence[Item]) -> list[Script]:
    """One script per model answer in a conversation: its reasoning and text, then its tool calls."""
    scripts: list[Script] = []
    message: AssistantMessage | None = None
    calls: list[ToolCall] = []
    for item in [*items, None]:
        if isinstance(item, AssistantMessage) and not calls:
            message = item if message is None else AssistantMessage(content=(*message.content, *item.content))
            continue
        if isinstance(item, ToolCall):
            calls.append(item)
            continue
        if message is not None or calls:
            scripts.append(_answer(message, calls))
        message, calls = (item, []) if isinstance(item, AssistantMessage) else (None, [])
    return scripts


def _answer(message: AssistantMessage | None, calls: Sequence[ToolCall]) -> Script:
    steps: list[ScriptStep] = []
    for part in () if message is None else message.content:
        if isinstance(part, ReasoningPart):
            steps.append(ReasoningDelta(text=part.text, signature=part.signature))
        elif isinstance(part, TextPart):
            steps.append(TokenDelta(text=part.text))
    for call in calls:
        args = call.args if isinstance(call.args, str) else json.dumps(call.args)
        steps.append(ToolCallDelta(call_id=call.call_id, name=call.name, args_delta=args))
    steps.append(Finish(reason="tool_calls" if calls else "stop"))
    return steps


__all__ = ["scripts_from_session", "scripts_of"]
