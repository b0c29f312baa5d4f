"""Provider-valid conversations: a pure check and repair run before every model call.

Providers answer HTTP 400 to conversations that break their pairing rules, and a log can
project to one: a crash between a tool call and its result, a compaction or a handoff
filter that cut a pair, results written out of order. `repair_conversation` fixes these in
one O(n) pass and says what it changed; `is_provider_valid` is the cheap check that lets
a valid conversation (the common case) through untouched.

A conversation is *provider-valid* when:

- every tool call (a `ToolCall`, or a `ToolUsePart` in an assistant message) has a unique
  `call_id` and exactly one `ToolResult` after it, before the next user, system or
  assistant item and before any call of a later turn;
- no `ToolResult` lacks its call;
- an assistant message holding only reasoning (or nothing) is directly followed by the
  tool call it reasoned about (providers refuse reasoning without its companion item).

Repairs, in the order of the rules (each a `Repair` with its `kind`):

- `missing_result`: a call with no result gets a synthetic error result saying its
  outcome is unknown (the call may or may not have run: a crash, a cut transcript);
- `moved_result`: a result written after other items, or before its call, is moved to
  right after its call's turn;
- `renamed_call`: a call that reuses the `call_id` of an earlier, answered call (scripted
  models and some providers number calls per response) gets a fresh id, `<id>~<index>`
  (its place in the conversation), and so do the results that follow it: every call keeps
  its own result, and ids stay unique across the conversation as some providers require.
  A call id need only be unique within its turn: `ensure_provider_valid` renames a
  conversation's new turn without looking at the rest again;
- `duplicate_result` / `duplicate_call`: second results for one call, and a call reusing
  the id of a call still waiting for its result, are dropped;
- `orphan_result`: a result whose call is nowhere in the conversation becomes a user
  message quoting it. It is not dropped, because its content may be what the model needs
  (its call was summarized or filtered away), and a user note is valid everywhere;
- `orphan_reasoning` / `empty_message`: a reasoning-only (or empty) assistant message
  with no tool call after it is dropped: it carries nothing a provider would accept.

Nothing else is touched (system messages, roles, content), and repairing a repaired
conversation changes nothing.

Example:
    ```python
    from helikon.core.conversation_check import is_provider_valid, repair_conversation
    from helikon.core.items import ToolCall, UserMessage

    crashed = [UserMessage.from_text("weather?"), ToolCall(call_id="c1", name="weather", args={})]
    assert not is_provider_valid(crashed)
    fixed, repairs = repair_conversation(crashed)
    assert [r.kind for r in repairs] == ["missing_result"]
    assert is_provider_valid(fixed)
    ```
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, Literal, TypeAlias

from ._internal.carrier import carrier
from .exceptions import HelikonError
from .items import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    ImagePart,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UserMessage,
)
from .model import ModelRequest

RepairKind: TypeAlias = Literal[
    "missing_result",
    "moved_result",
    "duplicate_result",
    "duplicate_call",
    "renamed_call",
    "orphan_result",
    "orphan_reasoning",
    "empty_message",
]
"""What a repair did (see the module docstring)."""

UNKNOWN_OUTCOME = (
    "Error: this tool call has no recorded result (the run was interrupted or the result was "
    "lost); its outcome is unknown. Check its effect before relying on it or calling it again."
)
"""The text of the synthetic result given to a call without one."""


@carrier
class Repair:
    """One change `repair_conversation` made.

    Attributes:
        kind: What was done.
        index: The position in the input conversation of the item concerned (for a
            `missing_result`, of its call).
        call_id: The tool call concerned, when there is one.
    """

    kind: RepairKind
    index: int
    call_id: str | None = None


class InvalidConversationError(HelikonError):
    """A conversation is not provider-valid and `strict` forbids repairing it.

    Attributes:
        repairs: What `repair_conversation` would have done.
    """

    def __init__(self, repairs: Sequence[Repair]) -> None:
        self.repairs = tuple(repairs)
        kinds = ", ".join(f"{r.kind}@{r.index}" for r in self.repairs)
        super().__init__(f"the conversation is not provider-valid: {kinds}")


class _Checked:
    """The last conversation checked: as given, in its provider-valid form, and the ids that form uses."""

    __slots__ = ("items", "seen", "valid")

    def __init__(self, items: tuple[Item, ...], valid: tuple[Item, ...], seen: set[str]) -> None:
        self.items = items
        self.valid = valid  # `items` itself when it needed nothing
        self.seen = seen


class ConversationCheck:
    """Checks (and repairs) one conversation as it grows: what a run holds for its model calls.

    A conversation checked before every model call grows by a turn at a time: the check
    remembers the last conversation it found valid (and its valid form), and when the next
    one begins with it (the same items, compared by identity first) looks only at what
    follows, so a long conversation costs its new turn. Its memory is one conversation and
    lives as long as the check: the run's.

    Example:
        ```python
        from helikon.core.conversation_check import ConversationCheck
        from helikon.core.items import AssistantMessage, UserMessage

        check = ConversationCheck()
        first = [UserMessage.from_text("hi"), AssistantMessage.from_text("hello")]
        assert check.ensure_provider_valid(first) is first
        longer = [*first, UserMessage.from_text("and now?")]
        assert check.ensure_provider_valid(longer) is longer  # only the new item was looked at
        ```
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: _Checked | None = None

    def _take_continued(self, items: Sequence[Item]) -> _Checked | None:
        """The last conversation checked, if `items` begins with it; forgotten either way.

        Taken out while in use: a check made meanwhile (from another task) starts from nothing.
        """
        cached, self._last = self._last, None
        if cached is None:
            return None
        known = cached.items
        size = len(known)
        if size and len(items) >= size and tuple(items[:size]) == known:  # identity first, item by item
            return cached
        return None

    def is_provider_valid(self, items: Sequence[Item]) -> bool:
        """Whether `items` is provider-valid (no repair needed); a continuation: its new items only."""
        cached = self._take_continued(items)
        if cached is not None and cached.valid is not cached.items:
            cached = None  # that one needed repairs: so does any continuation of it
        start = 0 if cached is None else len(cached.items)
        seen: set[str] = set() if cached is None else cached.seen
        if _scan(items[start:] if start else items, seen):
            known = tuple(items)
            self._last = _Checked(known, known, seen)
            return True
        return False

    def _continued_valid(self, items: Sequence[Item]) -> Sequence[Item] | None:
        """`items` made provider-valid from the last conversation checked (its new calls given fresh ids).

        The common repair, a model that numbers its calls per response (`call_0` every turn),
        so costs the new turn, not the conversation. None: the caller checks the whole.
        """
        cached = self._take_continued(items)
        if cached is None:
            return None
        size = len(cached.items)
        tail = items[size:]
        seen = cached.seen
        # Only a call that reuses an id of the conversation needs a fresh one (a call repeating
        # an id within the new turn fails the scan: the whole is checked then).
        renamed = _distinct_ids(tail, seen, size)[0] if _reuses_an_id(tail, seen) else tail
        if not _scan(renamed, seen):
            return None
        known = tuple(items)
        if renamed is tail and cached.valid is cached.items:
            self._last = _Checked(known, known, seen)
            return items
        valid = (*cached.valid, *renamed)
        self._last = _Checked(known, valid, seen)
        return valid

    def ensure_provider_valid(self, items: Sequence[Item], *, strict: bool = False) -> Sequence[Item]:
        """`items` itself when provider-valid; else the repaired conversation.

        When `items` begins with the last conversation checked and its new turn needs at most
        fresh call ids, only that turn is looked at (renames are keyed on a call's place, so
        the earlier turns come out as they did before).

        Raises:
            InvalidConversationError: with `strict`, instead of repairing.
        """
        if not strict:
            continued = self._continued_valid(items)
            if continued is not None:
                return continued
        if self.is_provider_valid(items):
            return items
        fixed, repairs = repair_conversation(items)
        if not repairs:
            return items
        if strict:
            raise InvalidConversationError(repairs)
        # A renamed id loses nothing (a model or provider that numbers calls per response does
        # it every turn): only the other repairs are worth a warning.
        lossy = [r for r in repairs if r.kind != "renamed_call"]
        if lossy:
            _warn(lossy)
        seen: set[str] = set()
        if _scan(fixed, seen):  # the next turn of this conversation starts from its valid form
            self._last = _Checked(tuple(items), tuple(fixed), seen)
        return fixed

    def valid_request(self, request: ModelRequest) -> ModelRequest:
        """`request` with its messages made provider-valid (the same object when they already are)."""
        messages = request.messages
        fixed = self.ensure_provider_valid(messages)
        return request if fixed is messages else replace(request, messages=fixed)


def is_provider_valid(items: Sequence[Item]) -> bool:
    """Whether `items` is provider-valid (no repair needed). O(n), allocation-light."""
    return ConversationCheck().is_provider_valid(items)


def _reuses_an_id(items: Sequence[Item], seen: AbstractSet[str]) -> bool:
    """Whether a call among `items` has an id of `seen` (so `_distinct_ids` has one to rename)."""
    item: Any
    for item in items:
        kind = item.__class__
        if kind is ToolCall:
            if item.call_id in seen:
                return True
        elif kind is AssistantMessage:
            if any(type(part) is ToolUsePart and part.call_id in seen for part in item.content):
                return True
        elif kind is not ToolResult and kind is not UserMessage and kind is not SystemMessage:
            return True  # a subclass or a foreign object: let `_distinct_ids` look at it
    return False


def _scan(items: Sequence[Item], seen: set[str]) -> bool:
    """Check `items`, after a valid prefix whose call ids are `seen` (extended in place)."""
    pending: set[str] = set()
    answering = False  # a result of the current turn's calls has been seen
    need_call = False  # the previous item was a reasoning-only assistant message
    # Exact-type tests on untyped values: the cheapest checks CPython has (this runs per model call).
    item: Any
    part: Any
    for item in items:
        kind = item.__class__
        if need_call and kind is not ToolCall:
            return False
        need_call = False
        if kind is ToolResult:
            call_id = item.call_id
            if call_id not in pending:
                return False
            pending.discard(call_id)
            answering = True
        elif kind is ToolCall:
            call_id = item.call_id
            if call_id in seen or (pending and answering):
                return False
            seen.add(call_id)
            pending.add(call_id)
            answering = False
        elif pending:
            return False
        elif kind is AssistantMessage:
            only_reasoning = True
            for part in item.content:
                if type(part) is ToolUsePart:
                    call_id = part.call_id
                    if call_id in seen:
                        return False
                    seen.add(call_id)
                    pending.add(call_id)
                    only_reasoning = False
                elif type(part) is not ReasoningPart:
                    only_reasoning = False
            need_call = only_reasoning
            answering = False
        elif kind is not UserMessage and kind is not SystemMessage:
            return False  # a subclass or a foreign object: let the careful pass decide
    return not pending and not need_call


def repair_conversation(items: Sequence[Item]) -> tuple[list[Item], list[Repair]]:
    """`items` made provider-valid, and the repairs that took (empty when it already was).

    Pure and O(n): untouched items are the same objects, in the same order.
    """
    distinct, renames = _distinct_ids(items)
    fixed, repairs = _Repairer(distinct).run()
    if renames:
        repairs = sorted([*renames, *repairs], key=lambda r: r.index)
    return fixed, repairs


def _distinct_ids(
    items: Sequence[Item], prior: AbstractSet[str] = frozenset(), offset: int = 0
) -> tuple[Sequence[Item], list[Repair]]:
    """Give each later call that reuses an answered call's id a fresh one, with its results.

    A result belongs to the latest call with its id before it, so it follows its call's new
    id until that id is called again. The fresh id is keyed on the call's position,
    `<id>~<index>`: renaming a conversation's next turn never renames an earlier one.
    `prior` holds the ids of a provider-valid conversation `items` continues (each call of
    it answered), `offset` its length.
    """
    ids = _DistinctIds(prior)
    out: list[Item] | None = None
    for index, item in enumerate(items):
        new: Item = item
        if isinstance(item, ToolCall):
            fresh = ids.call(item.call_id, index + offset)
            if fresh != item.call_id:
                new = replace(item, call_id=fresh)
        elif isinstance(item, AssistantMessage) and any(isinstance(p, ToolUsePart) for p in item.content):
            parts = [ids.part(p, index + offset) if isinstance(p, ToolUsePart) else p for p in item.content]
            if any(a is not b for a, b in zip(parts, item.content, strict=True)):
                new = replace(item, content=tuple(parts))
        elif isinstance(item, ToolResult):
            fresh = ids.result(item.call_id)
            if fresh is not None:
                new = replace(item, call_id=fresh)
        if new is not item and out is None:
            out = list(items[:index])
        if out is not None:
            out.append(new)
    return (out if out is not None else items), ids.repairs


class _DistinctIds:
    """Which calls `_distinct_ids` renames, one call or result at a time."""

    __slots__ = ("answered", "current", "prior", "repairs", "used")

    def __init__(self, prior: AbstractSet[str]) -> None:
        self.prior = prior  # ids used (and answered) before the items at hand
        self.used: set[str] = set()  # ids called among the items at hand
        self.answered: set[str] = set()  # ids whose latest call has a result
        self.current: dict[str, str] = {}  # original id -> the id its latest call was given
        self.repairs: list[Repair] = []

    def call(self, call_id: str, index: int) -> str:
        if call_id in self.used:
            reused = call_id in self.answered
        else:
            self.used.add(call_id)
            reused = call_id in self.prior
        if not reused:  # a first use, or a duplicate of a call still pending: the repair pass decides
            self.current.pop(call_id, None)
            return call_id
        self.answered.discard(call_id)
        fresh = f"{call_id}~{index}"
        self.current[call_id] = fresh
        self.repairs.append(Repair(kind="renamed_call", index=index, call_id=call_id))
        return fresh

    def part(self, part: ToolUsePart, index: int) -> ToolUsePart:
        fresh = self.call(part.call_id, index)
        return part if fresh == part.call_id else replace(part, call_id=fresh)

    def result(self, call_id: str) -> str | None:
        """The id the result's call was given, if it was renamed."""
        self.answered.add(call_id)
        return self.current.get(call_id)


def ensure_provider_valid(items: Sequence[Item], *, strict: bool = False) -> Sequence[Item]:
    """`items` itself when provider-valid; else the repaired conversation (see `ConversationCheck`).

    Raises:
        InvalidConversationError: with `strict`, instead of repairing.
    """
    return ConversationCheck().ensure_provider_valid(items, strict=strict)


def valid_request(request: ModelRequest) -> ModelRequest:
    """`request` with its messages made provider-valid (the same object when they already are)."""
    return ConversationCheck().valid_request(request)


def _warn(repairs: Sequence[Repair]) -> None:
    import logging  # only when something was repaired: `import helikon` does not load logging

    logging.getLogger("helikon.sessions").warning(
        "repaired a conversation a provider would refuse: %s",
        ", ".join(f"{r.kind}@{r.index}" + (f" ({r.call_id})" if r.call_id else "") for r in repairs),
    )


def call_ids(item: Item) -> list[str]:
    """The ids of the tool calls `item` makes: a `ToolCall`'s, or an answer's `ToolUsePart`s'."""
    if isinstance(item, ToolCall):
        return [item.call_id]
    if isinstance(item, AssistantMessage):
        return [p.call_id for p in item.content if isinstance(p, ToolUsePart)]
    return []


def _only_reasoning(message: AssistantMessage) -> bool:
    return all(isinstance(p, ReasoningPart) for p in message.content)


def _note(result: ToolResult) -> UserMessage:
    """A result whose call is gone, as a user message the model can still read."""
    who = f"tool {result.name!r}" if result.name else "a tool"
    status = " It reported an error." if result.is_error else ""
    head = (
        f"[Output of {who} (call {result.call_id}); the call itself is no longer in the "
        f"conversation.{status}]"
    )
    kept: list[ContentPart] = [p for p in result.content if isinstance(p, TextPart | ImagePart | AudioPart)]
    return UserMessage(content=(TextPart(text=head), *kept))


class _Repairer:
    """One pass over the conversation; see `repair_conversation`."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.items = items
        self.out: list[Item] = []
        self.repairs: list[Repair] = []
        # Where each call_id is first called, and the first result written for it.
        self.call_at: dict[str, int] = {}
        self.result_of: dict[str, tuple[int, ToolResult]] = {}
        for index, item in enumerate(items):
            for call_id in call_ids(item):
                self.call_at.setdefault(call_id, index)
        for index, item in enumerate(items):
            if isinstance(item, ToolResult) and item.call_id in self.call_at:
                self.result_of.setdefault(item.call_id, (index, item))
        self.pending: dict[str, tuple[int, str | None]] = {}  # call_id -> (call index, name), in order
        self.seen: set[str] = set()  # calls emitted
        self.placed: dict[str, ToolResult] = {}  # call_id -> the result emitted for it
        self.early: list[tuple[int, ToolResult]] = []  # results met before their call
        self.answering = False
        self.held: tuple[int, AssistantMessage] | None = None  # reasoning waiting for its call

    def run(self) -> tuple[list[Item], list[Repair]]:
        for index, item in enumerate(self.items):
            if isinstance(item, ToolResult):
                self.result(index, item)
            elif isinstance(item, ToolCall):
                self.call(index, item)
            elif isinstance(item, AssistantMessage):
                self.assistant(index, item)
            else:
                self.close()
                self.out.append(item)
        self.close()
        for index, result in self.early:
            if self.placed.get(result.call_id) is not result:
                self.repairs.append(Repair(kind="duplicate_result", index=index, call_id=result.call_id))
        self.repairs.sort(key=lambda r: r.index)
        return self.out, self.repairs

    def result(self, index: int, result: ToolResult) -> None:
        call_id = result.call_id
        if call_id in self.pending:
            del self.pending[call_id]
            self.placed[call_id] = result
            self.out.append(result)
            self.answering = True
        elif call_id in self.placed:
            if self.placed[call_id] is not result:  # else: already moved up to its call
                self.repairs.append(Repair(kind="duplicate_result", index=index, call_id=call_id))
        elif call_id not in self.call_at:
            self.close()
            self.out.append(_note(result))
            self.repairs.append(Repair(kind="orphan_result", index=index, call_id=call_id))
        elif self.result_of[call_id][1] is result:
            self.early.append((index, result))  # its call comes later: placed when that turn closes
        else:
            self.repairs.append(Repair(kind="duplicate_result", index=index, call_id=call_id))

    def call(self, index: int, call: ToolCall) -> None:
        if call.call_id in self.seen:
            self.repairs.append(Repair(kind="duplicate_call", index=index, call_id=call.call_id))
            return
        if self.pending and self.answering:
            self.close()  # a new turn's calls: the previous turn must be answered first
        if self.held is not None:
            self.out.append(self.held[1])
            self.held = None
        self.out.append(call)
        self.seen.add(call.call_id)
        self.pending[call.call_id] = (index, call.name)
        self.answering = False

    def assistant(self, index: int, message: AssistantMessage) -> None:
        self.close()
        if any(isinstance(p, ToolUsePart) for p in message.content):
            parts: list[ContentPart] = []
            for part in message.content:
                if isinstance(part, ToolUsePart):
                    if part.call_id in self.seen:
                        self.repairs.append(Repair(kind="duplicate_call", index=index, call_id=part.call_id))
                        continue
                    self.seen.add(part.call_id)
                    self.pending[part.call_id] = (index, part.name)
                parts.append(part)
            if len(parts) != len(message.content):
                message = replace(message, content=tuple(parts))
        if _only_reasoning(message):
            self.held = (index, message)
        else:
            self.out.append(message)
        self.answering = False

    def close(self) -> None:
        """End the current turn: answer every pending call, drop reasoning left alone."""
        for call_id, (call_index, name) in self.pending.items():
            found = self.result_of.get(call_id)
            if found is not None:
                result = found[1]
                self.repairs.append(Repair(kind="moved_result", index=found[0], call_id=call_id))
            else:
                result = ToolResult(
                    call_id=call_id, content=(TextPart(text=UNKNOWN_OUTCOME),), is_error=True, name=name
                )
                self.repairs.append(Repair(kind="missing_result", index=call_index, call_id=call_id))
            self.placed[call_id] = result
            self.out.append(result)
        self.pending.clear()
        self.answering = False
        if self.held is not None:
            index, message = self.held
            kind: RepairKind = "orphan_reasoning" if message.content else "empty_message"
            self.repairs.append(Repair(kind=kind, index=index))
            self.held = None


__all__ = [
    "UNKNOWN_OUTCOME",
    "ConversationCheck",
    "InvalidConversationError",
    "Repair",
    "RepairKind",
    "ensure_provider_valid",
    "is_provider_valid",
    "repair_conversation",
    "valid_request",
]
