"""`CompactingSession`: summarize a session's history with a model once it grows past a threshold.

A transparent wrapper over any `Session`. After each append it estimates the projected
conversation's size and, past `threshold` tokens, asks `model` for a summary and appends
a `Compacted` marker: from then on the conversation projects to one `SystemMessage`
holding the summary, followed by what came after it (a full-history running summary).

Example:
    ```python
    import asyncio

    from helikon import MemorySession
    from helikon.core.compaction import CompactingSession
    from helikon.core.items import TextPart
    from helikon.core.session import UserMessageEvent
    from helikon.testing import MockModel, text_turn

    async def main() -> None:
        model = MockModel.with_scripts([text_turn("The user talked about budgets.")])
        session = CompactingSession(MemorySession(), model, threshold=10)
        await session.append([UserMessageEvent(content=(TextPart(text="budget " * 40),))])
        snapshot = await session.snapshot()
        assert snapshot.messages[0].text == "The user talked about budgets."

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .cancel import CancellationToken
from .exceptions import UserError
from .items import (
    AssistantMessage,
    ContentPart,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UserMessage,
)
from .model import Model, ModelRequest, ModelSettings, TokenDelta
from .session import (
    AssistantMessageEvent,
    Compacted,
    ConversationSnapshot,
    SequenceId,
    Session,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
    project,
)


def _warn(message: str, *, exc_info: bool = False) -> None:
    import logging  # only on the warning paths: `import helikon` does not load logging

    logging.getLogger("helikon.sessions").warning(message, exc_info=exc_info)


DEFAULT_COMPACTION_PROMPT = (
    "Summarize the conversation so far so that it can continue from the summary alone. Keep every fact, "
    "number, decision, open question and tool result that later turns may need; drop pleasantries. "
    "Reply with the summary only."
)

_UNKNOWN = math.inf  # the cheap counter before the first authoritative count


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a conversation costs; swap in a model-specific tokenizer."""

    def count(self, items: Sequence[Item]) -> int:
        """Tokens in `items`."""
        ...


class HeuristicTokenCounter:
    """`ceil(chars / 4)`: deterministic, dependency-free.

    Counts the characters (code points) of text and reasoning parts (recursing into tool
    results), system text, tool-call names and compact-JSON arguments, and nested
    tool-use parts' names and arguments. Images and audio count zero.
    """

    def count(self, items: Sequence[Item]) -> int:
        """Tokens in `items`."""
        return math.ceil(sum(_item_chars(item) for item in items) / 4)


def _compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _parts_chars(parts: Sequence[ContentPart]) -> int:
    total = 0
    for part in parts:
        if isinstance(part, TextPart | ReasoningPart):
            total += len(part.text)
        elif isinstance(part, ToolUsePart):
            total += len(part.name) + len(_compact_json(part.args))
    return total


def _item_chars(item: Item) -> int:
    if isinstance(item, SystemMessage):
        return len(item.text)
    if isinstance(item, UserMessage | AssistantMessage | ToolResult):
        return _parts_chars(item.content)
    if isinstance(item, ToolCall):  # pyright: ignore[reportUnnecessaryIsInstance]
        return len(item.name) + len(_compact_json(item.args))
    return 0


def _event_chars(event: SessionEvent) -> int:
    """The cheap estimate: the same characters, straight from the events."""
    if isinstance(event, UserMessageEvent | AssistantMessageEvent | ToolReturned):
        return _parts_chars(event.content)
    if isinstance(event, ToolCalled):
        return len(event.name) + len(_compact_json(event.args))
    if isinstance(event, Compacted):
        return len(event.summary)
    return 0


class CompactingSession:
    """A `Session` that compacts its history once it exceeds `threshold` tokens.

    Args:
        inner: The session that stores everything (any backend).
        model: The model that writes summaries.
        threshold: Compact when the projected conversation exceeds this many tokens (> 0).
            Keep it well below the summarizing model's context window.
        token_counter: How tokens are counted (default `HeuristicTokenCounter`).
        model_settings: Settings for the summarization call.
        prompt: The instruction appended to the history to ask for the summary.

    The user's events are always persisted first. A failed or blank summary is logged and
    skipped; a failure to read or write `inner` propagates. Assumes one logical writer per
    wrapper: concurrent writers should share the inner backend, not a wrapper.
    """

    def __init__(
        self,
        inner: Session,
        model: Model,
        *,
        threshold: int,
        token_counter: TokenCounter | None = None,
        model_settings: ModelSettings | None = None,
        prompt: str = DEFAULT_COMPACTION_PROMPT,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"CompactingSession(threshold={threshold!r}): must be a positive number of tokens"
            )
        if not callable(getattr(inner, "append", None)) or not callable(getattr(inner, "events", None)):
            raise UserError(f"CompactingSession(inner={inner!r}): expected a Session")
        if not callable(getattr(model, "invoke", None)):
            raise UserError(f"CompactingSession(model={model!r}): expected a Model")
        if not isinstance(prompt, str) or not prompt.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("CompactingSession(prompt=...): give a non-empty instruction")
        self.inner = inner
        self.model = model
        self.threshold = threshold
        self.token_counter: TokenCounter = token_counter or HeuristicTokenCounter()
        self.model_settings = model_settings or ModelSettings()
        self.prompt = prompt
        # Starts "unknown" (infinite) so the first append always counts for real: a wrapper
        # over an already-populated durable session compacts its backlog at once.
        self._estimate: float = _UNKNOWN
        self.compactions = 0
        """How many `Compacted` markers this wrapper has appended."""

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Persist `events`, then compact if the conversation has grown past the threshold."""
        await self.inner.append(events)
        self._estimate += sum(_event_chars(e) for e in events) / 4
        if self._estimate > self.threshold:
            await self._maybe_compact()

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The inner session's log."""
        return await self.inner.events(since)

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the inner session's log."""
        return await self.inner.snapshot()

    async def _maybe_compact(self) -> None:
        log = [entry.event for entry in await self.inner.events()]
        messages = project(log).messages
        tokens = self.token_counter.count(messages)
        self._estimate = tokens
        if tokens <= self.threshold:
            return
        # Convergence guards: nothing to collapse, or only the running summary is left.
        if not messages or (len(messages) == 1 and isinstance(messages[0], SystemMessage)):
            return
        summary = await self._summarize(messages)
        if summary is None:
            return
        await self.inner.append([Compacted(summary=summary, original_count=len(log))])
        self.compactions += 1
        self._estimate = self.token_counter.count([SystemMessage(text=summary)])

    async def _summarize(self, messages: Sequence[Item]) -> str | None:
        request = ModelRequest(
            messages=[*messages, UserMessage.from_text(self.prompt)],
            tools=(),
            model_settings=self.model_settings,
        )
        try:
            stream = self.model.invoke(request, CancellationToken())
            chunks = [event.text async for event in stream if isinstance(event, TokenDelta)]
        except Exception:
            _warn("compaction skipped: the summarization call failed", exc_info=True)
            return None
        summary = "".join(chunks)
        if not summary.strip():
            _warn("compaction skipped: the model returned a blank summary")
            return None
        return summary


__all__ = ["DEFAULT_COMPACTION_PROMPT", "CompactingSession", "HeuristicTokenCounter", "TokenCounter"]
