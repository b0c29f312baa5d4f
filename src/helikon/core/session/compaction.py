"""`CompactingSession`: summarize a session's history with a model once it grows past a threshold.

A transparent wrapper over any `Session`. After each append it estimates the projected
conversation's size and, past `threshold` tokens, asks `model` for a summary and appends
a `Compacted` marker. Two modes:

- full history (the default): the conversation projects to the summary
  followed by what came after the marker;
- keep-recent window (`keep_recent_tokens=N`): only an older prefix is summarized; the
  last turns, at most N tokens of them, stay verbatim after the summary. The cut falls
  on a turn boundary (a tool call is never split from its result, nor reasoning from
  its calls), and a later compaction summarizes the previous summary and the part of
  the window it cuts off, so nothing the model saw is silently dropped.

History is never deleted: the marker only changes how the log projects. `summary_role`
renders the summary as a system item (the default; providers hoist it to the top) or as
a positional user message.

Example:
    ```python
    import asyncio

    from helikon import MemorySession
    from helikon.core.session.compaction import CompactingSession
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
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from .._internal.callbacks import raised
from .._internal.json_value import JsonValue
from ..cancel import CancellationToken
from ..conversation_check import call_ids, ensure_provider_valid
from ..exceptions import SessionConflict, UserError
from ..items import (
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
from ..model import Model, ModelRequest, ModelSettings, TokenDelta
from . import (
    AssistantMessageEvent,
    Compacted,
    ConversationSnapshot,
    SequenceId,
    Session,
    SessionEntry,
    SessionEvent,
    SessionMetadata,
    SharedLog,
    ToolCalled,
    ToolReturned,
    UserMessageEvent,
    check_session,
    event_step,
    fold,
)


class _CounterRaised(Exception):
    """The token counter raised (the message names it and what it raised)."""


def _warn(message: str, *, exc_info: bool = False) -> None:
    import logging  # only on the warning paths: `import helikon` does not load logging

    logging.getLogger("helikon.sessions").warning(message, exc_info=exc_info)


DEFAULT_COMPACTION_PROMPT = (
    "Summarize the conversation so far so that it can continue from the summary alone. Keep every fact, "
    "number, decision, open question and tool result that later turns may need; drop pleasantries. "
    "Reply with the summary only."
)

_UNKNOWN = math.inf  # the cheap counter before the first authoritative count

DEFAULT_USER_SUMMARY_PREFIX = "Summary of the conversation so far:\n\n"
"""How a summary rendered as a user message starts: the model must not take it for the user's words."""


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
    if isinstance(item, ToolCall):
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
        keep_recent_tokens: Keep-recent-window mode: keep the latest whole turns, up to this
            many tokens, verbatim after the summary (0 < N < threshold). None (default):
            the full-history summary.
        summary_role: `"system"` (default): the summary projects to a `SystemMessage`, which
            providers hoist to the top-level instructions. `"user"`: a `UserMessage` in
            place, starting with `DEFAULT_USER_SUMMARY_PREFIX`.

    The user's events are always persisted first. A failed or blank summary, or a token
    counter that raises, is logged and compaction skipped; a failure to read or write
    `inner` propagates. Assumes one logical writer per wrapper: concurrent writers should
    share the inner backend, not a wrapper. It declares `durable` and `supports_ids` as
    `inner` does (see `Session`).

    Example:
        ```python
        import asyncio

        from helikon import MemorySession
        from helikon.core.session.compaction import CompactingSession
        from helikon.core.items import TextPart
        from helikon.core.session import Compacted, UserMessageEvent
        from helikon.testing import MockModel, text_turn

        async def main() -> None:
            model = MockModel.with_scripts([text_turn("Old talk about budgets.")])
            session = CompactingSession(
                MemorySession(), model, threshold=60, keep_recent_tokens=30, summary_role="user"
            )
            for text in ["budget " * 20, "rent " * 20, "what now?"]:
                await session.append([UserMessageEvent(content=(TextPart(text=text),))])
            messages = (await session.snapshot()).messages
            assert messages[0].text.endswith("Old talk about budgets.")  # the summary, in place
            assert [m.text for m in messages[1:]] == ["rent " * 20, "what now?"]  # kept verbatim
            marker = (await session.events())[-1].event
            assert isinstance(marker, Compacted) and marker.first_kept_seq == 1

        asyncio.run(main())
        ```
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
        keep_recent_tokens: int | None = None,
        summary_role: Literal["system", "user"] = "system",
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
            raise UserError(
                f"CompactingSession(threshold={threshold!r}): must be a positive number of tokens"
            )
        if keep_recent_tokens is not None and (
            isinstance(keep_recent_tokens, bool)
            or not isinstance(keep_recent_tokens, int)
            or not 0 < keep_recent_tokens < threshold
        ):
            raise UserError(
                f"CompactingSession(keep_recent_tokens={keep_recent_tokens!r}): must be a number of "
                f"tokens between 0 and the threshold ({threshold}), exclusive"
            )
        if summary_role not in ("system", "user"):
            raise UserError(f"CompactingSession(summary_role={summary_role!r}): use 'system' or 'user'")
        if not callable(getattr(inner, "append", None)) or not callable(getattr(inner, "events", None)):
            raise UserError(f"CompactingSession(inner={inner!r}): expected a Session")
        check_session(inner)
        if not callable(getattr(model, "invoke", None)):
            raise UserError(f"CompactingSession(model={model!r}): expected a Model")
        if not isinstance(prompt, str) or not prompt.strip():
            raise UserError("CompactingSession(prompt=...): give a non-empty instruction")
        self.inner = inner
        # A wrapper is what its inner session is (see `Session`).
        self.durable: bool = inner.durable
        self.supports_ids: bool = inner.supports_ids
        self.model = model
        self.threshold = threshold
        self.token_counter: TokenCounter = token_counter or HeuristicTokenCounter()
        self.model_settings = model_settings or ModelSettings()
        self.prompt = prompt
        self.keep_recent_tokens = keep_recent_tokens
        self.summary_role: Literal["system", "user"] = summary_role
        # Starts "unknown" (infinite) so the first append always counts for real: a wrapper
        # over an already-populated durable session compacts its backlog at once.
        self._estimate: float = _UNKNOWN
        self.compactions = 0
        """How many `Compacted` markers this wrapper has appended."""

    @staticmethod
    def builder(inner: Session, model: Model) -> CompactingSessionBuilder:
        """Start building: `.threshold(n)`, the optional setters, `.build()`."""
        return CompactingSessionBuilder(inner, model)

    @property
    def log_key(self) -> tuple[object, str]:
        """The inner session's log, as a runner knows it (`SharedLog`): a wrapper writes that log."""
        inner = self.inner
        return inner.log_key if isinstance(inner, SharedLog) else (inner, "")

    async def append(self, events: Sequence[SessionEvent], **kwargs: Any) -> None:
        """Persist `events` (extra keyword arguments go to the inner `append`), then compact if due."""
        await self.inner.append(events, **kwargs)
        self._estimate += sum(_event_chars(e) for e in events) / 4
        if self._estimate > self.threshold:
            await self._maybe_compact()

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        """The inner session's log."""
        return await self.inner.events(since)

    async def snapshot(self) -> ConversationSnapshot:
        """The projection of the inner session's log."""
        return await self.inner.snapshot()

    async def metadata(self) -> SessionMetadata:
        """The inner session's title, metadata and their version (see `SessionMetadata`)."""
        read = getattr(self.inner, "metadata", None)
        if read is None:
            raise UserError(
                f"{type(self.inner).__name__} keeps no metadata, so its CompactingSession has none"
            )
        return await read()

    async def set_metadata(
        self,
        *,
        title: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        expected_version: int | None = None,
    ) -> None:
        """Set the inner session's title and/or metadata (see `MemorySession.set_metadata`)."""
        write = getattr(self.inner, "set_metadata", None)
        if write is None:
            raise UserError(
                f"{type(self.inner).__name__} keeps no metadata, so its CompactingSession has none"
            )
        await write(title=title, metadata=metadata, expected_version=expected_version)

    async def compact(self) -> Compacted | None:
        """Compact now, whatever the size (a UI's "/compact"); the marker appended, if any."""
        return await self._maybe_compact(force=True)

    async def _maybe_compact(self, *, force: bool = False) -> Compacted | None:
        try:
            return await self._compact(force=force)
        except _CounterRaised as exc:
            # The events are stored: a broken counter skips compaction, like a failed
            # summary. Raising would tell the writer they were not, and a runner would
            # then hold back the rest of the run (its TurnClosed too) behind a retry.
            _warn(f"compaction skipped: {exc}", exc_info=True)
            return None

    def _count(self, items: Sequence[Item]) -> int:
        """`token_counter.count(items)`; what it raises is raised as `_CounterRaised`, naming it."""
        counter = self.token_counter
        try:
            return counter.count(items)
        except Exception as exc:
            raise _CounterRaised(raised(f"the token counter {type(counter).__name__}", exc)) from exc

    async def _compact(self, *, force: bool) -> Compacted | None:
        entries = await self.inner.events()
        steps = [event_step(entry.event) for entry in entries]
        messages = fold(steps).messages
        tokens = self._count(messages)
        self._estimate = tokens
        if tokens <= self.threshold and not force:
            return None
        if _in_flight(messages):
            # A tool call still waits for its result (a durable run logs its calls before
            # they run): a summary now would leave the result behind it, without its call.
            # The append that brings the result compacts instead.
            return None
        # `fold` keeps each event's own item object: anything else in the projection is a summary.
        origin_of = {id(step): index for index, step in enumerate(steps) if step is not None}
        origins = [origin_of.get(id(m)) for m in messages]
        if self.keep_recent_tokens is None:
            # Convergence guards: nothing to collapse, or only the running summary is left.
            if not messages or (len(messages) == 1 and origins[0] is None):
                return None
            cut, first_kept = len(messages), None
        else:
            start = 1 if origins and origins[0] is None else 0
            if len(messages) <= start:
                return None
            cut = self._window_cut(messages, origins, start, self.keep_recent_tokens)
            # The marker's seq when nothing fits the window: every message is summarized.
            first_kept = entries[origins[cut] or 0].seq if cut < len(messages) else len(entries)
        summary = await self._summarize(messages[:cut])
        if summary is None:
            return None
        if self.summary_role == "user":
            summary = DEFAULT_USER_SUMMARY_PREFIX + summary
        marker = Compacted(
            summary=summary,
            original_count=len(entries),
            first_kept_seq=first_kept,
            tokens_before=tokens,
            summary_role=self.summary_role,
        )
        if self.supports_ids:
            # The marker describes exactly the log it read: if another writer appended
            # meanwhile, it would be wrong, so it is written only if the log has not moved
            # (a later append re-evaluates). Its id makes a retried or racing identical
            # compaction a no-op instead of a second marker.
            last = entries[-1].seq if entries else -1
            marker_id = f"helikon-compacted-{len(entries)}-{first_kept}"
            try:
                await self.inner.append([marker], ids=[marker_id], expected_seq=last)
            except SessionConflict:
                return None
        else:  # a Session with only the base append(events)
            await self.inner.append([marker])
        self.compactions += 1
        rendered: Item = (
            UserMessage.from_text(summary) if self.summary_role == "user" else SystemMessage(text=summary)
        )
        self._estimate = self._count([rendered, *messages[cut:]])
        return marker

    def _window_cut(
        self, messages: Sequence[Item], origins: Sequence[int | None], start: int, budget: int
    ) -> int:
        """Where the kept window starts: the earliest turn boundary after `start` whose suffix fits `budget`.

        `len(messages)` when no such boundary exists (everything is summarized).
        """
        count = len(messages)
        # A cut at j is inside a tool pair when a call before j has its result at j or later.
        result_at: dict[str, int] = {}
        for index, item in enumerate(messages):
            if isinstance(item, ToolResult):
                result_at.setdefault(item.call_id, index)
        opened = [0] * (count + 1)  # difference array of the call-to-result spans
        for index, item in enumerate(messages):
            for call_id in call_ids(item):
                end = result_at.get(call_id)
                if end is not None and end > index:
                    opened[index + 1] += 1
                    opened[end + 1] -= 1
        inside = [0] * count
        running = 0
        for index in range(count):
            running += opened[index]
            inside[index] = running
        positional = self.summary_role == "user"
        best = count
        size = 0
        for j in range(count - 1, start, -1):
            size += self._count([messages[j]])
            if size > budget:
                break
            if inside[j] or origins[j] is None:
                continue
            item = messages[j]
            # A user turn, or (only behind a positional user summary: some providers want a
            # user message first) the start of a model turn: its reasoning and text, then its calls.
            if isinstance(item, UserMessage) or (
                positional
                and isinstance(item, AssistantMessage | ToolCall)
                and not isinstance(messages[j - 1], AssistantMessage | ToolCall)
            ):
                best = j
        return best

    async def _summarize(self, messages: Sequence[Item]) -> str | None:
        request = ModelRequest(
            # The summarizing provider refuses what any provider would (e.g. a dangling call).
            messages=[*ensure_provider_valid(messages), UserMessage.from_text(self.prompt)],
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


class CompactingSessionBuilder:
    """Collects a `CompactingSession`'s keywords one by one; `build()` calls the constructor.

    Example:
        ```python
        from helikon import CompactingSession, MemorySession
        from helikon.testing import MockModel

        session = (
            CompactingSession.builder(MemorySession(), MockModel.with_scripts([]))
            .threshold(4096)
            .keep_recent_tokens(1024)
            .build()
        )
        assert session.threshold == 4096 and session.keep_recent_tokens == 1024
        ```
    """

    __slots__ = ("_fields", "_inner", "_model")

    def __init__(self, inner: Session, model: Model) -> None:
        self._inner = inner
        self._model = model
        self._fields: dict[str, Any] = {}

    def _set(self, key: str, value: object) -> CompactingSessionBuilder:
        self._fields[key] = value
        return self

    def threshold(self, tokens: int) -> CompactingSessionBuilder:
        """Compact past this many tokens (required, > 0)."""
        return self._set("threshold", tokens)

    def token_counter(self, counter: TokenCounter) -> CompactingSessionBuilder:
        """How tokens are counted."""
        return self._set("token_counter", counter)

    def model_settings(self, settings: ModelSettings) -> CompactingSessionBuilder:
        """Settings for the summarization call."""
        return self._set("model_settings", settings)

    def prompt(self, prompt: str) -> CompactingSessionBuilder:
        """The instruction that asks for the summary."""
        return self._set("prompt", prompt)

    def keep_recent_tokens(self, tokens: int | None) -> CompactingSessionBuilder:
        """Keep-recent-window mode: the latest turns, up to this many tokens, stay verbatim."""
        return self._set("keep_recent_tokens", tokens)

    def summary_role(self, role: Literal["system", "user"]) -> CompactingSessionBuilder:
        """Render the summary as a system item (default) or a user message in place."""
        return self._set("summary_role", role)

    def build(self) -> CompactingSession:
        """The session (`UserError` for a missing or bad threshold, as the constructor raises)."""
        if "threshold" not in self._fields:
            raise UserError(
                "CompactingSession.builder(inner, model): call .threshold(tokens) before .build()"
            )
        return CompactingSession(self._inner, self._model, **self._fields)


def _in_flight(messages: Sequence[Item]) -> bool:
    """Whether a call of the last turn (after the last user message) has no result yet.

    An older dangling call (a turn that crashed and was never repaired) does not count: it
    will not get a result, and the validator answers it before any model call.
    """
    pending: set[str] = set()
    for item in messages:
        if isinstance(item, UserMessage):
            pending.clear()
        elif isinstance(item, ToolResult):
            pending.discard(item.call_id)
        else:
            pending.update(call_ids(item))
    return bool(pending)


__all__ = [
    "DEFAULT_COMPACTION_PROMPT",
    "DEFAULT_USER_SUMMARY_PREFIX",
    "CompactingSession",
    "CompactingSessionBuilder",
    "HeuristicTokenCounter",
    "TokenCounter",
]
