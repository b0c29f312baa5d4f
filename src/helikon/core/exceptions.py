"""The exceptions helikon raises, all under one root.

The tree below is every one of them; those defined outside this module name their module (or
its base names it for them). A test keeps the tree complete (tests/unit/test_exception_tree.py).

```
HelikonError
├── UserError                  misuse: a bad argument, a missing extra, a bad config (also a ValueError)
│   ├── GraphBuildError        a graph that cannot run, e.g. a cycle (`core.workflows.graph`)
│   ├── SwarmBuildError        a swarm that cannot work, e.g. no members (`core.workflows.swarm`)
│   ├── DatasetError           an eval dataset line that is no case; names line and field (`evals`)
│   └── SidecarError           an agents.toml that cannot be used; each problem with its line (`cli.sidecar`)
├── ModelError                 a model call failed (raised by `Model.invoke`)
│   ├── Unavailable            the provider is down or overloaded (5xx, 529)
│   ├── RateLimited            429; `retry_after_ms` carries the provider's hint
│   ├── ContextLengthExceeded  the request does not fit the context window
│   ├── Refused                the provider refused the request (safety)
│   ├── Transport              the connection failed or dropped
│   └── OtherModelError        anything else (`ModelError.Other`)
├── ToolError                  a tool failed; the model sees it as an error result
│   ├── InvalidArgs            the arguments did not match the schema, or passed the depth/size limits
│   ├── Denied                 the tool refused; the model reads why (`fail_on_tool_denied` fails the run)
│   ├── ForkdError             a forkd controller call or egress proxy probe failed (`tools.execution.forkd`)
│   └── LuaScriptError         a sidecar's Lua tool failed or hit a cap (`cli.lua_sandbox`)
├── ToolSourceError            a tool source (`LlmAgent(tool_sources=...)`) cannot give the agent its tools
│   └── DuplicateName          two tools offered to one agent share a name
├── ModelRetry                 raised by a tool or an output validator: the model tries again, told why
├── SessionError               a session backend failed
│   ├── SessionUnavailable     the backend cannot be reached (`SessionError.Unavailable`)
│   ├── SessionBackendError    the backend reported an error (`SessionError.Backend`)
│   ├── SessionConflict        `append(..., expected_seq=n)` found the log past `n`; nothing written
│   ├── MetadataConflict       `set_metadata(..., expected_version=n)` found another version; nothing written
│   ├── MissingSessionEvents   the stored log has a hole: events were deleted behind helikon's back
│   └── UnreadableSessionEvent a stored event is from a newer format, or of an unknown, non-ignorable type
├── RunError                   a run ended in `RunFailed`; `.error` is the `AgentError` carrier
│   ├── MaxTurnsExceeded          kind `max_turns_exceeded`
│   ├── MaxAgentDepthExceeded     kind `max_agent_depth_exceeded`
│   ├── MaxIterationsExceeded     kind `max_iterations_exceeded` (`LoopAgent`)
│   ├── MaxHandoffsExceeded       kind `max_handoffs_exceeded` (`SwarmAgent`)
│   ├── InvalidStructuredOutput   kind `invalid_structured_output`; `.schema_errors`, `.final_text`
│   ├── OutputRetriesExceeded     kind `output_retries_exceeded`; `.reason`, `.validator`, `.final_text`
│   ├── UsageLimitExceeded        kind `usage_limit_exceeded` (`RunConfig.usage_limits`); `.limit_name`,
│   │                             `.limit`, `.used`
│   ├── RunIsPaused               kind `session_paused`: the session's last run waits for approval
│   ├── RunCancelled              kind `cancelled`
│   └── RunTimeout                kind `timeout`
│                                 (any other kind, e.g. `session_error`, `tool_denied`: a plain RunError)
├── ApprovalError              a decision or resume that cannot apply; nothing ran (`core.approvals`)
│   ├── NothingToResume        the session has no paused run
│   ├── UnknownApprovalRequest a decision names a request the paused run does not wait on
│   ├── ApprovalDigestMismatch the decision's digest is not the pending arguments' digest
│   ├── ApprovalAlreadyDecided the request was decided already, otherwise
│   ├── ApprovalExpired        the request expired (`on_expire="deny"`)
│   ├── ApprovalTargetMissing  the agent or tool the request names is no longer defined
│   ├── ApprovalToolChanged    the tool's argument schema changed since the pause
│   └── InvalidEditedArgs      `Edit(args)` does not fit the tool's schema
├── InvalidConversationError   a conversation is not provider-valid and `strict` forbids repair
│                              (`core.conversation_check`)
├── McpError                   an MCP connection or server failed; `kind` names the step (`mcp.errors`)
│   ├── Connect                the initialize handshake (or the transport under it) failed
│   ├── Spawn                  the stdio server's process could not be started
│   ├── Service                a request on a live connection failed
│   ├── Bind                   the HTTP server could not listen on the address asked for
│   ├── Serve                  a running server stopped abnormally
│   └── OtherMcpError          anything else (`McpError.Other`)
├── OsSandboxError             the OS sandbox cannot run a command, its launcher is gone
│   │                          (`tools.execution.os_sandbox`)
│   └── OsSandboxUnsupported   the platform or kernel cannot enforce what was asked
├── AuthRejection              an agent server's auth layer refused a request, with its status (`server`)
└── ServerError                a throwaway test server could not start or stop (`testing.servers`)
```

Inside an event stream a failure is a `RunFailed` event, never an exception raised
mid-iteration; `RunStream.collect()` turns it into the matching `RunError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal, TypeAlias

from ._internal.format_version import FORMAT_VERSION

if TYPE_CHECKING:
    from .events import AgentError


class HelikonError(Exception):
    """Root of every exception helikon raises."""


class UserError(HelikonError, ValueError):
    """Developer misuse: the message says which argument is wrong and what to do."""


# --- model errors ----------------------------------------------------------------------------

ModelErrorKind: TypeAlias = Literal[
    "unavailable", "rate_limited", "context_length_exceeded", "refused", "transport", "other"
]


class ModelError(HelikonError):
    """A model call failed. Raise one of the variants from an adapter.

    Attributes:
        status_code: The provider's HTTP status, when there was one.
    """

    kind: ClassVar[ModelErrorKind] = "other"
    retryable: ClassVar[bool] = False
    """Whether `RetryingModel` may retry it."""

    Unavailable: ClassVar[type[Unavailable]]
    RateLimited: ClassVar[type[RateLimited]]
    ContextLengthExceeded: ClassVar[type[ContextLengthExceeded]]
    Refused: ClassVar[type[Refused]]
    Transport: ClassVar[type[Transport]]
    Other: ClassVar[type[OtherModelError]]

    def __init__(self, message: str = "", *, status_code: int | None = None) -> None:
        super().__init__(message or self.kind.replace("_", " "))
        self.message = message
        self.status_code = status_code


class Unavailable(ModelError):
    """The provider is temporarily unavailable (5xx, overloaded)."""

    kind = "unavailable"
    retryable = True


class RateLimited(ModelError):
    """The provider rate-limited the call; `retry_after_ms` is its hint, if any."""

    kind = "rate_limited"
    retryable = True

    def __init__(
        self, message: str = "", *, retry_after_ms: int | None = None, status_code: int | None = 429
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after_ms = retry_after_ms


class ContextLengthExceeded(ModelError):
    """The request does not fit the model's context window."""

    kind = "context_length_exceeded"


class Refused(ModelError):
    """The provider refused the request."""

    kind = "refused"


class Transport(ModelError):
    """The connection to the provider failed or dropped."""

    kind = "transport"
    retryable = True


class OtherModelError(ModelError):
    """Any other model failure (`ModelError.Other`)."""


ModelError.Unavailable = Unavailable
ModelError.RateLimited = RateLimited
ModelError.ContextLengthExceeded = ContextLengthExceeded
ModelError.Refused = Refused
ModelError.Transport = Transport
ModelError.Other = OtherModelError

# --- tool errors -----------------------------------------------------------------------------


class ToolError(HelikonError):
    """A tool failed. Raise it (or any exception) from a tool: the model sees the message."""

    InvalidArgs: ClassVar[type[InvalidArgs]]
    Denied: ClassVar[type[Denied]]


class InvalidArgs(ToolError):
    """The arguments did not match the tool's schema; fed back to the model once."""

    def __init__(self, schema_errors: list[str] | tuple[str, ...]) -> None:
        self.schema_errors = tuple(schema_errors)
        super().__init__("invalid arguments: " + "; ".join(self.schema_errors))


class Denied(ToolError):
    """The tool refused to run (a safety boundary, e.g. a path outside the sandbox).

    Not recoverable: the same call cannot succeed. The model reads the reason as an error
    result and the run streams `PermissionDenied`; `RunConfig(fail_on_tool_denied=True)`
    fails the run (`tool_denied`) instead.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"denied: {reason}")


ToolError.InvalidArgs = InvalidArgs
ToolError.Denied = Denied


class ToolSourceError(HelikonError):
    """A tool source (`LlmAgent(tool_sources=...)`) cannot give the agent its tools."""

    DuplicateName: ClassVar[type[DuplicateName]]


class DuplicateName(ToolSourceError):
    """Two tools offered to one agent share a name; `first` and `second` say where each came from.

    Rename one: an MCP handle's `tool_prefix("fs_")`, or a `Toolset(...).prefixed(...)`.
    """

    def __init__(self, name: str, first: str, second: str) -> None:
        self.name = name
        self.first = first
        self.second = second
        super().__init__(
            f"two tools are named {name!r}: one from {first}, one from {second}; "
            "give one source a prefix (e.g. McpServerHandle.stdio(...).tool_prefix('fs_'))"
        )


ToolSourceError.DuplicateName = DuplicateName


class ModelRetry(HelikonError):
    """Send the model back with a reason: raise it from a tool or an output validator.

    From a tool, the model reads `message` as the call's error result and may call again
    (up to the tool's `max_retries`). From an output validator, the model is asked again for
    its final answer with `message` as the reason (up to the agent's `output_retries`).
    Past the bound the run fails.

    Example:
        ```python
        from helikon import ModelRetry, tool

        @tool
        def lookup(order_id: str) -> str:
            \"\"\"Find an order.\"\"\"
            if not order_id.startswith("A-"):
                raise ModelRetry("order ids look like 'A-1234'; ask the user for theirs")
            return "shipped"
        ```
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str) or not message.strip():
            raise UserError("ModelRetry(message): say why the model should try again")
        self.message = message
        super().__init__(message)


# --- session errors --------------------------------------------------------------------------


class SessionError(HelikonError):
    """A session backend failed."""

    Unavailable: ClassVar[type[SessionUnavailable]]
    Backend: ClassVar[type[SessionBackendError]]

    @staticmethod
    def backend(exc: BaseException) -> SessionBackendError:
        """Wrap a backend's own exception (`raise SessionError.backend(e) from e`)."""
        return SessionBackendError(f"{type(exc).__name__}: {exc}")


class SessionUnavailable(SessionError):
    """The session backend cannot be reached."""


class SessionBackendError(SessionError):
    """The session backend reported an error."""


class SessionConflict(SessionError):
    """`append(events, expected_seq=n)` found the log no longer ending at `n`: nothing was written.

    Another writer appended first. Read the new events (`events(since=expected_seq)`),
    decide again, and retry with `expected_seq=actual_seq`.

    Attributes:
        session_id: The session, when the backend knows it.
        expected_seq: The last sequence number the writer had seen (-1: an empty log).
        actual_seq: The log's actual last sequence number (-1: empty).
    """

    def __init__(self, *, expected_seq: int, actual_seq: int, session_id: str | None = None) -> None:
        where = f"session {session_id!r}" if session_id is not None else "the session"
        super().__init__(
            f"{where} ends at seq {actual_seq}, not at expected_seq={expected_seq}: another writer "
            f"appended first and nothing was written; read events(since={expected_seq}) and retry "
            f"with expected_seq={actual_seq}"
        )
        self.session_id = session_id
        self.expected_seq = expected_seq
        self.actual_seq = actual_seq


class MetadataConflict(SessionError):
    """`set_metadata(..., expected_version=n)` found the metadata at another version: nothing was written.

    Another writer changed the title or metadata since you read them. Read them again
    (`await session.metadata()`), apply your change to what you read, and retry with its
    `version`.

    Attributes:
        session_id: The session.
        expected_version: The version the writer had read.
        actual_version: The version stored now.
    """

    def __init__(self, *, expected_version: int, actual_version: int, session_id: str | None = None) -> None:
        where = f"session {session_id!r}" if session_id is not None else "the session"
        super().__init__(
            f"{where} has metadata version {actual_version}, not expected_version={expected_version}: "
            "another writer changed its title or metadata and nothing was written; read "
            f"`await session.metadata()` again and retry with expected_version={actual_version}"
        )
        self.session_id = session_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class MissingSessionEvents(SessionError):
    """The stored log skips sequence numbers: events were deleted from the store outside helikon.

    A session's log is append-only and its seqs are contiguous; reading on past a hole
    would silently hand a run a different conversation, so reads that fold the log
    (`events()`, `snapshot()`) refuse instead. `records()` still lists every stored row, for
    an export or an audit.

    Attributes:
        session_id: The session.
        seq: The first missing sequence number.
        next_seq: The sequence number stored after the hole (None: the log ends in it).
    """

    def __init__(self, *, seq: int, next_seq: int | None, session_id: str | None = None) -> None:
        where = f"session {session_id!r}" if session_id is not None else "the session"
        after = f" (the next stored event is seq {next_seq})" if next_seq is not None else ""
        super().__init__(
            f"{where} has no event at seq {seq}{after}: it was deleted from the store outside "
            "helikon. The log is append-only, and reading past the hole would silently change the "
            "conversation; restore the missing events from a backup (session.records() lists "
            "the rows still stored)"
        )
        self.session_id = session_id
        self.seq = seq
        self.next_seq = next_seq


class UnreadableSessionEvent(SessionError):
    """A stored event this version of helikon must not skip and cannot read.

    Either its format version is newer than `helikon.core.session.codec.FORMAT_VERSION`, or it is
    a format-2 (or later) event of a type this version does not know that its writer did
    not mark `"ignorable": true`. Upgrade paigasus-helikon to read the session.

    Attributes:
        session_id: The session, when known.
        seq: The event's sequence number.
        version: The event's stored format version.
        kind: The event's `type` tag (`None` if it has none).
    """

    def __init__(self, *, seq: int, version: int, kind: str | None, session_id: str | None = None) -> None:
        where = f"session {session_id!r}" if session_id is not None else "the session"
        if version > FORMAT_VERSION:
            why = f"is stored in format version {version}, newer than the {FORMAT_VERSION} this helikon reads"
        else:
            why = (
                f"has type {kind!r}, which this helikon does not know and its writer did not mark "
                '"ignorable": true'
            )
        super().__init__(
            f"event {seq} of {where} {why}: upgrade paigasus-helikon (pip install -U paigasus-helikon) "
            "to read this session"
        )
        self.session_id = session_id
        self.seq = seq
        self.version = version
        self.kind = kind


SessionError.Unavailable = SessionUnavailable
SessionError.Backend = SessionBackendError

# --- run errors ------------------------------------------------------------------------------


class RunError(HelikonError):
    """A run ended in `RunFailed`. `error` is the serializable `AgentError` it carried."""

    def __init__(self, error: AgentError) -> None:
        super().__init__(error.message)
        self.error = error

    @property
    def kind(self) -> str:
        """The `AgentError.kind`, e.g. `max_turns_exceeded`."""
        return self.error.kind

    @staticmethod
    def from_agent_error(error: AgentError) -> RunError:
        """The `RunError` subclass that matches `error.kind`."""
        cls = _RUN_ERRORS.get(error.kind, RunError)
        return cls(error)


class MaxTurnsExceeded(RunError):
    """The run used `RunConfig.max_turns` model turns without finishing."""


class MaxAgentDepthExceeded(RunError):
    """Nested agents went deeper than `RunConfig.max_agent_depth`."""


class MaxIterationsExceeded(RunError):
    """A `LoopAgent` ran `max_iterations` passes without a sub-agent escalating."""


class MaxHandoffsExceeded(RunError):
    """A `SwarmAgent` handed off more than its `max_handoffs` budget allows."""


class InvalidStructuredOutput(RunError):
    """The model's final text did not validate against `output_type`, even after the repair turn."""

    @property
    def schema_errors(self) -> tuple[str, ...]:
        """What the validator reported."""
        return self.error.schema_errors

    @property
    def final_text(self) -> str:
        """The offending text."""
        return self.error.final_text or ""


class OutputRetriesExceeded(RunError):
    """An output validator still rejected the output (`ModelRetry`) after the agent's `output_retries`."""

    @property
    def reason(self) -> str:
        """The validator's last reason."""
        return self.error.schema_errors[-1] if self.error.schema_errors else ""

    @property
    def validator(self) -> str:
        """The validator's name."""
        return self.error.cause or ""

    @property
    def final_text(self) -> str:
        """The rejected output's text."""
        return self.error.final_text or ""


class UsageLimitExceeded(RunError):
    """The run passed a cap of `RunConfig.usage_limits` (see `helikon.core.usage`).

    The message names the cap and the figure, e.g. `UsageLimits.request_limit=3 exceeded:
    'writer' would make model request 4 (...)`.
    """

    @property
    def limit_name(self) -> str:
        """The `UsageLimits` field that was passed, e.g. `request_limit`."""
        return self.error.cause or ""

    @property
    def limit(self) -> int:
        """The cap's value."""
        return self.error.limit if self.error.limit is not None else 0

    @property
    def used(self) -> int:
        """The figure that went over it: the request or tool-call count it would reach, the tokens used."""
        return self.error.used if self.error.used is not None else 0


class RunIsPaused(RunError):
    """The session's last run is paused for approval: resume it (`agent.resume`) before a new run.

    A new run would leave the paused calls without a result; `resume(session, decisions=...,
    deny_rest=True)` settles what is left when the answer is no.
    """


class RunCancelled(RunError):
    """The run's `CancellationToken` was cancelled."""


class RunTimeout(RunError):
    """The run exceeded `RunConfig.timeout`."""


_RUN_ERRORS: dict[str, type[RunError]] = {
    "max_turns_exceeded": MaxTurnsExceeded,
    "max_agent_depth_exceeded": MaxAgentDepthExceeded,
    "max_iterations_exceeded": MaxIterationsExceeded,
    "max_handoffs_exceeded": MaxHandoffsExceeded,
    "invalid_structured_output": InvalidStructuredOutput,
    "output_retries_exceeded": OutputRetriesExceeded,
    "usage_limit_exceeded": UsageLimitExceeded,
    "cancelled": RunCancelled,
    "timeout": RunTimeout,
    "session_paused": RunIsPaused,
}

__all__ = [
    "ContextLengthExceeded",
    "Denied",
    "DuplicateName",
    "HelikonError",
    "InvalidArgs",
    "InvalidStructuredOutput",
    "MaxAgentDepthExceeded",
    "MaxHandoffsExceeded",
    "MaxIterationsExceeded",
    "MaxTurnsExceeded",
    "MetadataConflict",
    "MissingSessionEvents",
    "ModelError",
    "ModelErrorKind",
    "ModelRetry",
    "OtherModelError",
    "OutputRetriesExceeded",
    "RateLimited",
    "Refused",
    "RunCancelled",
    "RunIsPaused",
    "RunError",
    "RunTimeout",
    "SessionBackendError",
    "SessionConflict",
    "SessionError",
    "SessionUnavailable",
    "ToolError",
    "ToolSourceError",
    "Transport",
    "Unavailable",
    "UnreadableSessionEvent",
    "UsageLimitExceeded",
    "UserError",
]
