"""`AgentEvent`: every event an agent's run streams, and the `AgentError` a failed run carries.

The raw deltas (`TokenDelta`, `ReasoningDelta`, `ToolCallDelta`) are the very objects the
model streamed: the loop passes them through without copying. The semantic items
(`MessageOutput`, `ToolCallItem`, `ToolOutputItem`) follow once a turn settles.

Example:
    ```python
    from helikon.core.events import AGENT_EVENT_ADAPTER, RunStarted

    event = RunStarted(agent="budget-assistant")
    assert AGENT_EVENT_ADAPTER.validate_json(AGENT_EVENT_ADAPTER.dump_json(event)) == event
    ```
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from ._internal.adapter import LazyAdapter
from ._internal.carrier import carrier
from ._internal.json_value import JsonObject, JsonValue
from .approvals import PendingApproval
from .items import AssistantMessage, Item, SystemMessage, ToolCall, ToolResult, UserMessage
from .model import ModelFallback, ModelSettings, ReasoningDelta, TokenDelta, ToolCallDelta, ToolDef

# --- carriers used by events -----------------------------------------------------------------


@carrier
class TokenUsage:
    """Token counts summed over a run's model calls.

    Example:
        ```python
        from helikon.core.events import TokenUsage

        total = TokenUsage(input_tokens=10, output_tokens=2) + TokenUsage(input_tokens=5)
        assert total.input_tokens == 15 and total.total_tokens == 17
        ```
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    """How many model calls the counts cover."""

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            requests=self.requests + other.requests,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


AgentErrorKind: TypeAlias = Literal[
    "max_turns_exceeded",
    "max_agent_depth_exceeded",
    "max_iterations_exceeded",
    "max_handoffs_exceeded",
    "invalid_structured_output",
    "output_retries_exceeded",
    "cancelled",
    "timeout",
    "model_error",
    "tool_denied",
    "tool_error",
    "guardrail_tripwire",
    "usage_limit_exceeded",
    "session_error",
    "session_paused",
    "other",
]


@carrier
class AgentError:
    """Why a run failed: a serializable carrier, raised as a `RunError` by `collect()`."""

    kind: AgentErrorKind
    message: str
    limit: int | None = None
    """The limit that was exceeded (turns, depth, iterations, handoffs, a `UsageLimits` cap)."""
    cause: str | None = None
    """A finer reason: the `ModelError.kind`, the tool's name, the guardrail kind, the
    `UsageLimits` field."""
    schema_errors: tuple[str, ...] = ()
    """For `invalid_structured_output`: what the validator reported; for
    `output_retries_exceeded`: the output validator's last reason."""
    final_text: str | None = None
    """For `invalid_structured_output` and `output_retries_exceeded`: the offending text."""
    used: int | None = None
    """For `usage_limit_exceeded`: the figure that went over `limit`."""

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


GuardrailKind: TypeAlias = Literal["input_policy", "output_policy", "other"]

# --- the events ------------------------------------------------------------------------------


@carrier
class RunStarted:
    """A run of `agent` began."""

    type: Literal["run_started"] = "run_started"
    agent: str


@carrier
class TurnStarted:
    """Model turn `turn` (zero-based) began."""

    type: Literal["turn_started"] = "turn_started"
    turn: int


@carrier
class MessageOutput:
    """The settled assistant message of a turn."""

    type: Literal["message_output"] = "message_output"
    item: AssistantMessage


@carrier
class ToolCallItem:
    """A settled tool call of a turn."""

    type: Literal["tool_call_item"] = "tool_call_item"
    item: ToolCall


@carrier
class ToolOutputItem:
    """A tool's result: `item` is what the model reads, `metadata` what a UI shows.

    `metadata` is the tool's `ToolOutput.metadata` (a path, a line range, bytes, a
    truncated flag; secrets redacted as in the content), None when the tool gave none
    or the call ended before it returned. The model never sees it.
    """

    type: Literal["tool_output_item"] = "tool_output_item"
    item: ToolResult
    metadata: JsonObject | None = None


@carrier
class HandoffItem:
    """Control passed from one agent to another."""

    type: Literal["handoff_item"] = "handoff_item"
    from_agent: str
    to_agent: str


@carrier
class AgentUpdated:
    """The active agent is now `agent`."""

    type: Literal["agent_updated"] = "agent_updated"
    agent: str


@carrier
class GuardrailTriggered:
    """A guardrail tripped; the run halts.

    `stage` says what was stopped: the run's new `input`, or the final `output`.
    """

    type: Literal["guardrail_triggered"] = "guardrail_triggered"
    kind: GuardrailKind
    info: JsonValue = None
    stage: Literal["input", "output"] = "input"


@carrier
class ApprovalRequested:
    """A tool call waits for approval."""

    type: Literal["approval_requested"] = "approval_requested"
    call_id: str
    tool: str
    args: JsonValue
    prompt: str = ""


@carrier
class PermissionDenied:
    """The permission pipeline refused a tool call."""

    type: Literal["permission_denied"] = "permission_denied"
    tool: str
    reason: str
    call_id: str | None = None


@carrier
class RepairStarted:
    """The final output was sent back to the model; retry `attempt` begins.

    Sent back for schema errors (after `StructuredOutputFailed`) or by an output
    validator's `ModelRetry`. `item` is the message the model is sent, a part of the
    conversation (a session records it); `reason` is why.
    """

    type: Literal["repair_started"] = "repair_started"
    attempt: int
    reason: str = ""
    item: UserMessage | None = None


@carrier
class StructuredOutputFailed:
    """The structured output failed validation (before a repair, or for good)."""

    type: Literal["structured_output_failed"] = "structured_output_failed"
    schema_errors: tuple[str, ...]
    final_text: str


@carrier
class RequestSent:
    """A model call was made: what it was sent besides the conversation, and its usage.

    Not an event of the stream: the run hands it to its recorder (`RunObserver.request_sent`)
    after the call and before the events of its answer, for `SessionRecorder` to log a
    `RequestHeader` when something changed. `system` is the rendered instructions,
    `injected` the system messages hooks added to this call; `usage` is None when the call
    failed.
    """

    type: Literal["request_sent"] = "request_sent"
    provider: str
    model: str
    system: tuple[SystemMessage, ...] = ()
    injected: tuple[str, ...] = ()
    tools: tuple[ToolDef, ...] = ()
    settings: ModelSettings = ModelSettings()
    usage: TokenUsage | None = None


@carrier
class PersistFailed:
    """The runner could not store some of the run's events in its session.

    Streamed right before the terminal event, once the runner's retries are spent (or
    another writer took the session over). The run itself is unaffected: it is reported
    as it ended, unless the runner is strict about persistence (then it fails with kind
    `session_error`). `RunResult.persisted` is False when the stream held one.

    Attributes:
        unsaved: The `type` of each event not stored, in order.
        error: What the session said to the last attempt.
        held: Whether the runner still holds them: it writes them before its next run on
            the session (so that run does not take them for lost), if it can by then.
    """

    type: Literal["persist_failed"] = "persist_failed"
    unsaved: tuple[str, ...]
    error: str
    held: bool = False


@carrier
class RunCompleted:
    """Terminal: the run succeeded."""

    type: Literal["run_completed"] = "run_completed"
    usage: TokenUsage
    output: str | None = None
    """The final output's text when an output validator changed it (JSON for an `output_type`);
    None: the last `MessageOutput`'s text is the output."""


@carrier
class RunFailed:
    """Terminal: the run failed."""

    type: Literal["run_failed"] = "run_failed"
    error: AgentError
    usage: TokenUsage = TokenUsage()


@carrier
class ApprovalResolved:
    """A decision on a paused run's request was recorded (streamed by a resume, before the calls run).

    `decision` is `approve`, `deny` or `edit`; `by` who decided (as given to `resume`);
    `reason` a denial's reason.
    """

    type: Literal["approval_resolved"] = "approval_resolved"
    request_id: str
    call_id: str
    tool: str
    decision: Literal["approve", "deny", "edit"]
    reason: str = ""
    by: JsonValue = None


@carrier
class SubRun:
    """A paused sub-agent's run, called as a tool: what a resume needs to go on with it.

    `via` is the calls it is reached through, from the paused run's own call down; `agent`
    the sub-agent's name; `messages` its conversation up to the pause (its turn's calls and
    the results that came back); `usage` what it had spent.
    """

    via: tuple[str, ...]
    agent: str
    messages: tuple[Item, ...]
    usage: TokenUsage = TokenUsage()


@carrier
class RunPaused:
    """Terminal: the run waits for decisions on `pending` (see `helikon.core.approvals`).

    The calls of the turn that did not need approval have run (their results came before
    this); the pending ones have not. `agent.resume(session, decisions=...)` continues the
    run, in this process or any other.
    """

    type: Literal["run_paused"] = "run_paused"
    pending: tuple[PendingApproval, ...]
    usage: TokenUsage = TokenUsage()
    sub_runs: tuple[SubRun, ...] = ()
    """The sub-agents (called as tools) that paused with it: a session records them to resume them."""


AgentEvent: TypeAlias = (
    RunStarted
    | TurnStarted
    | TokenDelta
    | ReasoningDelta
    | ToolCallDelta
    | ModelFallback
    | MessageOutput
    | ToolCallItem
    | ToolOutputItem
    | HandoffItem
    | AgentUpdated
    | GuardrailTriggered
    | ApprovalRequested
    | PermissionDenied
    | RepairStarted
    | StructuredOutputFailed
    | PersistFailed
    | ApprovalResolved
    | RunCompleted
    | RunFailed
    | RunPaused
)
"""One event of an agent's run."""

TERMINAL_EVENTS = (RunCompleted, RunFailed, RunPaused)
"""The event classes that end a stream."""


def _agent_event_type() -> object:
    from typing import Annotated

    from pydantic import Field

    return Annotated[AgentEvent, Field(discriminator="type")]


AGENT_EVENT_ADAPTER: LazyAdapter[AgentEvent] = LazyAdapter(_agent_event_type)
"""JSON (de)serialization of any `AgentEvent`."""

__all__ = [
    "AGENT_EVENT_ADAPTER",
    "TERMINAL_EVENTS",
    "AgentError",
    "AgentErrorKind",
    "AgentEvent",
    "AgentUpdated",
    "ApprovalRequested",
    "ApprovalResolved",
    "GuardrailKind",
    "GuardrailTriggered",
    "HandoffItem",
    "MessageOutput",
    "PermissionDenied",
    "PersistFailed",
    "RepairStarted",
    "RequestSent",
    "RunCompleted",
    "RunFailed",
    "RunPaused",
    "RunStarted",
    "StructuredOutputFailed",
    "SubRun",
    "TokenUsage",
    "ToolCallItem",
    "ToolOutputItem",
    "TurnStarted",
]
