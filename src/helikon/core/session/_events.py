"""The session log's events: a carrier per variant, their unions, and the adapter that stores them."""

from __future__ import annotations

import json
from dataclasses import field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

from .._internal.adapter import LazyAdapter
from .._internal.carrier import carrier
from .._internal.json_value import JsonObject, JsonValue
from ..events import TokenUsage
from ..exceptions import UserError
from ..items import ContentParts, Item
from ..model import ToolDef

if TYPE_CHECKING:
    from ..approvals import PendingApproval


def _now() -> datetime:
    return datetime.now(UTC)


@carrier
class UserMessageEvent:
    """The user said something."""

    type: Literal["user_message"] = "user_message"
    content: ContentParts
    ts: datetime = field(default_factory=_now)


@carrier
class AssistantMessageEvent:
    """An agent answered; `usage` is the token count of the model call that produced it, if known."""

    type: Literal["assistant_message"] = "assistant_message"
    content: ContentParts
    agent: str | None = None
    ts: datetime = field(default_factory=_now)
    usage: TokenUsage | None = None


@carrier
class ToolCalled:
    """The model called a tool."""

    type: Literal["tool_called"] = "tool_called"
    call_id: str
    name: str
    args: JsonValue
    ts: datetime = field(default_factory=_now)


@carrier
class ToolReturned:
    """A tool answered (or was interrupted, with `is_error`).

    `metadata` is the tool's `ToolOutput.metadata` (what a UI shows of the result), if it
    gave any; it is not conversation: `project` leaves it out of the `ToolResult`.
    """

    type: Literal["tool_returned"] = "tool_returned"
    call_id: str
    content: ContentParts
    is_error: bool = False
    name: str | None = None
    ts: datetime = field(default_factory=_now)
    metadata: JsonObject | None = None


@carrier
class HandoffOccurred:
    """Control passed between agents. Audit only: projects to nothing."""

    type: Literal["handoff_occurred"] = "handoff_occurred"
    from_agent: str
    to_agent: str
    ts: datetime = field(default_factory=_now)


@carrier
class Compacted:
    """The `original_count` events before this one are summarized by `summary`.

    With `first_kept_seq` (keep-recent-window compaction) the summary stands only for the
    events before that seq: the messages of the events from `first_kept_seq` up to this
    marker stay, verbatim, after it. `tokens_before` is the size of the conversation it
    compacted; `summary_role` renders the summary as a system item (the default) or as a
    positional user message. Markers written without these fields read as full-history markers.
    Neither edge of the span a summary stands for ever parts a tool call from its result:
    `project` keeps the tool turn it falls inside verbatim (see `project`).
    """

    type: Literal["compacted"] = "compacted"
    summary: str
    original_count: int
    ts: datetime = field(default_factory=_now)
    first_kept_seq: int | None = None
    tokens_before: int | None = None
    summary_role: Literal["system", "user"] = "system"


@carrier
class RequestHeader:
    """The part of the model requests from here on that is not conversation (see `request_log`).

    A runner writes one before a model call only when it differs from the last one in the
    log: `provider`, `model`, `settings` (the `ModelSettings` fields that are set, as JSON),
    the rendered `system` prompt, the `tools` offered, and the system messages hooks
    `injected` for that call. Projects to nothing: it is not conversation.
    """

    type: Literal["request_header"] = "request_header"
    provider: str
    model: str
    settings: dict[str, JsonValue] = field(default_factory=lambda: {})
    system: tuple[str, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    injected: tuple[str, ...] = ()
    ts: datetime = field(default_factory=_now)


@carrier
class Rewound:
    """The session's head moved back to `to_seq` (-1: before the first event); nothing is deleted.

    The events after `to_seq` up to this marker leave the conversation (`project`) but stay
    in the log (`events()`): a branch abandoned, to which a later `Rewound` can switch back
    by naming its last event. Appended by `rewind` (see `helikon.core.session.branches`).
    """

    type: Literal["rewound"] = "rewound"
    to_seq: int
    ts: datetime = field(default_factory=_now)


@carrier
class Forked:
    """This session was forked from `from_session` at its `at_seq` (see `helikon.core.session.branches`).

    `fork` copies the parent's events 0..`at_seq` (same seqs, same ids) and appends this
    marker after them; a fork of a fork so keeps its whole ancestry in its log. Projects to
    nothing.
    """

    type: Literal["forked"] = "forked"
    from_session: str
    at_seq: int
    ts: datetime = field(default_factory=_now)


@carrier
class TurnOpened:
    """A run began writing this session as it goes (a durable run, see `helikon.core.session.crash_repair`).

    Its `TurnClosed` (same `run_id`) follows when the run ends; a turn still open when the
    session is next used was cut short by a crash. Projects to nothing.
    """

    type: Literal["turn_opened"] = "turn_opened"
    run_id: str
    agent: str | None = None
    ts: datetime = field(default_factory=_now)
    resumes: str | None = None
    """The run id of the paused turn this one continues (`agent.resume`), if it does."""


@carrier
class TurnClosed:
    """The run `run_id` ended, and how. Projects to nothing.

    `interrupted`: closed by crash repair; `paused`: waiting on the decisions its
    `ApprovalPending` events ask for (see `helikon.core.approvals`).
    """

    type: Literal["turn_closed"] = "turn_closed"
    run_id: str
    outcome: Literal["completed", "failed", "cancelled", "refused", "interrupted", "paused"] = "completed"
    ts: datetime = field(default_factory=_now)


@carrier
class ToolsStarted:
    """The tool calls `call_ids` (logged before it) are about to run.

    Written by a durable run: a call without a result before this marker never started;
    after it, its outcome is unknown until its result is logged. Projects to nothing.
    """

    type: Literal["tools_started"] = "tools_started"
    call_ids: tuple[str, ...]
    ts: datetime = field(default_factory=_now)


@carrier
class ApprovalPending:
    """A tool call waits for a person's decision: the run paused (see `helikon.core.approvals`).

    The fields are those of the `PendingApproval` the run reported (`pending()` gives it
    back). The call stays without a result until a decision resumes the run; its
    `ApprovalDecided` and then its `ToolReturned` follow. Projects to nothing.
    """

    type: Literal["approval_pending"] = "approval_pending"
    request_id: str
    call_id: str
    tool: str
    agent_path: tuple[str, ...]
    args: JsonValue
    args_digest: str
    prompt: str = ""
    expires_at: datetime | None = None
    on_expire: Literal["deny", "keep"] = "deny"
    tool_digest: str = ""
    ts: datetime = field(default_factory=_now)
    via: tuple[str, ...] = ()

    @property
    def run_call(self) -> str:
        """The call of the paused run's own turn that waits on this request (see `PendingApproval.via`)."""
        return self.via[0] if self.via else self.call_id

    @staticmethod
    def of(pending: PendingApproval) -> ApprovalPending:
        """The log's record of `pending`."""
        return ApprovalPending(
            request_id=pending.request_id,
            call_id=pending.call_id,
            tool=pending.tool,
            agent_path=pending.agent_path,
            args=pending.args,
            args_digest=pending.args_digest,
            prompt=pending.prompt,
            expires_at=pending.expires_at,
            on_expire=pending.on_expire,
            tool_digest=pending.tool_digest,
            via=pending.via,
        )

    def pending(self) -> PendingApproval:
        """The `PendingApproval` this records."""
        from ..approvals import PendingApproval

        return PendingApproval(
            request_id=self.request_id,
            call_id=self.call_id,
            tool=self.tool,
            agent_path=self.agent_path,
            args=self.args,
            args_digest=self.args_digest,
            prompt=self.prompt,
            expires=None if self.expires_at is None else self.expires_at.timestamp(),
            on_expire=self.on_expire,
            tool_digest=self.tool_digest,
            via=self.via,
        )


@carrier
class SubRunPaused:
    """A sub-agent called as a tool paused inside the run's call `via[0]`: its conversation so far.

    The fields are those of the `SubRun` the run reported: `via` (the calls it is reached
    through), `agent`, `messages` (its conversation up to the pause), `usage`. A resume
    goes on with that conversation instead of starting the sub-agent afresh. Projects to
    nothing.
    """

    type: Literal["sub_run_paused"] = "sub_run_paused"
    via: tuple[str, ...]
    agent: str
    messages: tuple[Item, ...]
    usage: TokenUsage = field(default_factory=TokenUsage)
    ts: datetime = field(default_factory=_now)


@carrier
class ApprovalDecided:
    """A person (`by`) decided a pending request: the audit trail of an approval. Projects to nothing.

    `decision` is `approve`, `deny` or `edit`; `args` the arguments the call runs with
    after an edit (None otherwise) and `args_digest` their digest (the pending call's
    for an approval or a denial); `reason` the denial's reason. A request denied by its
    expiry has `by == "helikon:expired"`.
    """

    type: Literal["approval_decided"] = "approval_decided"
    request_id: str
    decision: Literal["approve", "deny", "edit"]
    args_digest: str
    args: JsonValue = None
    reason: str = ""
    by: JsonValue = None
    ts: datetime = field(default_factory=_now)


@carrier
class CustomEvent:
    """A fact of the application's own (an order placed, a UI note), kept in the session's log.

    `kind` names it (your vocabulary: `"order_placed"`), `data` is any JSON value. Stamped
    like every event; stored as `{"type": "custom", "ignorable": true, "kind": ..., "data":
    ..., "ts": ...}` (see docs/session-format.md). It projects to nothing: the model never
    sees it, and compaction, branches and crash repair pass over it. Append it yourself
    (`await session.append([CustomEvent(...)])`) and read it back from `events()`.

    Raises:
        UserError: `kind` is not a non-empty string, or `data` is not JSON.

    Example:
        ```python
        from helikon.core.session import CustomEvent, project

        fact = CustomEvent(kind="order_placed", data={"order": 17, "total": 9.5})
        assert fact.type == "custom" and project([fact]).messages == ()
        ```
    """

    type: Literal["custom"] = "custom"
    kind: str
    data: JsonValue = None
    ts: datetime = field(default_factory=_now)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"CustomEvent kind must be a non-empty string naming the fact, not {self.kind!r}")
        try:
            json.dumps(self.data, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"CustomEvent data must be a JSON value (dict, list, str, int, float, bool or None): {exc}"
            ) from None


@carrier
class UnknownEvent:
    """An event whose `type` this version of helikon does not know (written by a newer one).

    It is kept verbatim, so it round-trips unchanged through `events()` and `append`;
    `project` skips it. `data` is the whole stored JSON object, `type` key included.

    `version` is the stored format version it was read in (see `helikon.core.session.codec`) and
    is written back with it. Format 1 keeps every unknown event; from format 2 on, a reader
    keeps one only when its writer marked it `"ignorable": true` in `data`, and refuses the
    session otherwise (`UnreadableSessionEvent`). A stored payload that is no event at all
    (not UTF-8, not JSON) is kept in every format, as type `"undecodable"` holding it verbatim.

    Example:
        ```python
        from helikon.core.session import UnknownEvent

        note = UnknownEvent(type="ui_note", data={"type": "ui_note", "ignorable": True}, version=2)
        assert note.ignorable
        ```
    """

    type: str
    data: dict[str, JsonValue]
    version: int = 1

    @property
    def ignorable(self) -> bool:
        """Whether its writer marked it `"ignorable": true`: a reader that does not know it may skip it."""
        return self.data.get("ignorable") is True

    @property
    def ts(self) -> datetime | None:
        """The event's timestamp, if it carries a readable one."""
        value = self.data.get("ts")
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                return None
        return None


KnownSessionEvent: TypeAlias = (
    UserMessageEvent
    | AssistantMessageEvent
    | ToolCalled
    | ToolReturned
    | HandoffOccurred
    | Compacted
    | RequestHeader
    | Rewound
    | Forked
    | TurnOpened
    | TurnClosed
    | ToolsStarted
    | ApprovalPending
    | ApprovalDecided
    | SubRunPaused
    | CustomEvent
)
"""The six base event variants, helikon's markers (`RequestHeader`, `Rewound`, `Forked`,
`TurnOpened`, `TurnClosed`, `ToolsStarted`), a paused run's approvals (`ApprovalPending`,
`ApprovalDecided`, `SubRunPaused`) and an application's own facts (`CustomEvent`)."""

SessionEvent: TypeAlias = KnownSessionEvent | UnknownEvent
"""One entry of a session's log. Every known variant carries `ts` (UTC), stamped at construction."""


def _session_event_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[KnownSessionEvent, Field(discriminator="type")]


SESSION_EVENT_ADAPTER: LazyAdapter[KnownSessionEvent] = LazyAdapter(_session_event_type)
"""JSON (de)serialization of the known `SessionEvent` variants (see `helikon.core.session.codec` for all)."""


__all__ = [
    "ApprovalDecided",
    "ApprovalPending",
    "AssistantMessageEvent",
    "Compacted",
    "CustomEvent",
    "Forked",
    "HandoffOccurred",
    "KnownSessionEvent",
    "RequestHeader",
    "Rewound",
    "SESSION_EVENT_ADAPTER",
    "SessionEvent",
    "SubRunPaused",
    "ToolCalled",
    "ToolReturned",
    "ToolsStarted",
    "TurnClosed",
    "TurnOpened",
    "UnknownEvent",
    "UserMessageEvent",
]
