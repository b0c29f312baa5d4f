"""helikon's IO-free core: carriers, protocols, the loop state machine and its driver.

Depends on the standard library (and pydantic, imported lazily when something is
serialized or a tool/output schema is built). Never imports a sibling package.

The names `helikon` exports are written here once: imported from the module that defines
them when `import helikon` loads it anyway, or listed in `_LAZY` under a module loaded on
the first access to one of its names. `__all__` is their sorted union (a test keeps it so),
and `helikon/__init__.py` re-exports it.
"""

import importlib
import typing

from ._internal.json_value import JsonObject, JsonValue
from .agent import Agent, Instructions, LlmAgent
from .agent_builder import LlmAgentBuilder
from .approvals import (
    ApprovalAlreadyDecided,
    ApprovalDigestMismatch,
    ApprovalError,
    ApprovalExpired,
    ApprovalTargetMissing,
    ApprovalToolChanged,
    Approve,
    Deny,
    Edit,
    InvalidEditedArgs,
    NothingToResume,
    PendingApproval,
    UnknownApprovalRequest,
)
from .cancel import CancellationToken
from .context import ActionsHandle, RunConfig, RunContext, SessionState, ToolContext, TracerHandle
from .conversation_check import (
    InvalidConversationError,
    Repair,
    ensure_provider_valid,
    is_provider_valid,
    repair_conversation,
)
from .events import (
    AGENT_EVENT_ADAPTER,
    AgentError,
    AgentEvent,
    AgentUpdated,
    ApprovalRequested,
    ApprovalResolved,
    GuardrailTriggered,
    HandoffItem,
    MessageOutput,
    PermissionDenied,
    PersistFailed,
    RepairStarted,
    RequestSent,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunStarted,
    StructuredOutputFailed,
    TokenUsage,
    ToolCallItem,
    ToolOutputItem,
    TurnStarted,
)
from .exceptions import (
    ContextLengthExceeded,
    Denied,
    HelikonError,
    InvalidArgs,
    InvalidStructuredOutput,
    MaxAgentDepthExceeded,
    MaxHandoffsExceeded,
    MaxIterationsExceeded,
    MaxTurnsExceeded,
    MetadataConflict,
    MissingSessionEvents,
    ModelError,
    ModelRetry,
    OtherModelError,
    OutputRetriesExceeded,
    RateLimited,
    Refused,
    RunCancelled,
    RunError,
    RunIsPaused,
    RunTimeout,
    SessionBackendError,
    SessionConflict,
    SessionError,
    SessionUnavailable,
    ToolError,
    ToolSourceError,
    Transport,
    Unavailable,
    UnreadableSessionEvent,
    UsageLimitExceeded,
    UserError,
)
from .governance import (
    ApprovalHandler,
    ApprovalOutcome,
    Guardrail,
    GuardrailInput,
    GuardrailVerdict,
    Hook,
    HookDecision,
    HookEvent,
    HookRegistry,
    PermissionDecision,
    PermissionMode,
    PermissionPolicy,
)
from .governance.guardrails import FunctionGuardrail, input_guardrail, output_guardrail
from .governance.settings import Governance
from .handoff import Handoff, HandoffFilter, HandoffInputData, keep_last_user_message, remove_tool_calls
from .input import AgentInput, RunInput
from .items import (
    ITEM_ADAPTER,
    AssistantMessage,
    AudioPart,
    Base64Source,
    ContentPart,
    ImagePart,
    Item,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolUsePart,
    UrlSource,
    UserMessage,
)
from .model import (
    Finish,
    FinishReason,
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelFallback,
    ModelRequest,
    ModelSettings,
    NamedToolChoice,
    ReasoningDelta,
    ResponseFormat,
    TokenDelta,
    ToolCallDelta,
    ToolChoice,
    ToolDef,
    Usage,
)
from .model_strings import (
    LazyModel,
    model_prefixes,
    register_model_prefix,
    resolve_model,
    unregister_model_prefix,
)
from .observer import RunObserver
from .output import OutputType
from .output_validators import OutputValidatorFunc
from .result import RunResult, RunStream, print_stream
from .runner import Runner
from .tool_sources import ToolSource
from .tools import FunctionTool, PrepareTools, Tool, ToolEffect, ToolOutput, tool
from .toolsets import Toolset
from .usage import UsageLimits

_LAZY = {
    # core/workflows/ brings every workflow, the tracing module and opentelemetry's API (~20 ms);
    # any module under it runs that package's __init__.
    ".workflows": "GraphAgent GraphBuildError GraphBuilder LoopAgent ParallelAgent SequentialAgent",
    ".workflows.agent_tool": "AgentAsTool",
    ".workflows.swarm": "SwarmAgent SwarmBuildError SwarmBuilder",
    # The shell matcher and the secret patterns (~10 ms): a run needs them only when a tool call
    # reaches the permission pipeline.
    ".governance.rules": "AllowRule DenyRule GuardAction GuardRule ToolSubject",
    ".governance.permissions": "PermissionVerdict",
    ".governance.redaction": "Redactor",
    # The tracing module brings opentelemetry's API; a run loads it on its first step.
    ".run.tracing": "use_tracer_provider",
    # The session log: its events, the `Session` protocol and the projection (~2.5 ms), which
    # building an agent and the loop itself never use: loaded with the first session made.
    ".session": (
        "SESSION_EVENT_ADAPTER ApprovalDecided ApprovalPending AssistantMessageEvent Compacted "
        "ConversationSnapshot CustomEvent "
        "Forked HandoffOccurred KnownSessionEvent RequestHeader Rewound SequenceId Session "
        "SessionEntry SessionEvent SessionInfo SessionMetadata SessionRecord ToolCalled "
        "ToolReturned UnknownEvent UserMessageEvent project"
    ),
    # The session backends and what works on a stored log (uuid, base64, the envelope and the
    # codec, ~5 ms): loaded by the first session made (an ephemeral context's, on its first
    # read), or by the runner that records one.
    ".session.branches": "Branch Lineage",
    ".session.compaction": "CompactingSession CompactingSessionBuilder HeuristicTokenCounter TokenCounter",
    ".session.memory": "MemorySession MemoryStore",
    ".session.recorder": "SessionRecorder",
    ".session.request_log": "rebuild_request rebuild_requests",
}
"""Module -> the names exported from it, for the modules loaded on the first access to one of them."""

_HOME = {name: module for module, names in _LAZY.items() for name in names.split()}

__all__ = [
    "AGENT_EVENT_ADAPTER",
    "ActionsHandle",
    "Agent",
    "AgentAsTool",
    "AgentError",
    "AgentEvent",
    "AgentInput",
    "AgentUpdated",
    "AllowRule",
    "ApprovalAlreadyDecided",
    "ApprovalDecided",
    "ApprovalDigestMismatch",
    "ApprovalError",
    "ApprovalExpired",
    "ApprovalHandler",
    "ApprovalOutcome",
    "ApprovalPending",
    "ApprovalRequested",
    "ApprovalResolved",
    "ApprovalTargetMissing",
    "ApprovalToolChanged",
    "Approve",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AudioPart",
    "Base64Source",
    "Branch",
    "CancellationToken",
    "Compacted",
    "CompactingSession",
    "CompactingSessionBuilder",
    "ContentPart",
    "ContextLengthExceeded",
    "ConversationSnapshot",
    "CustomEvent",
    "Denied",
    "Deny",
    "DenyRule",
    "Edit",
    "Finish",
    "FinishReason",
    "Forked",
    "FunctionGuardrail",
    "FunctionTool",
    "Governance",
    "GraphAgent",
    "GraphBuildError",
    "GraphBuilder",
    "GuardAction",
    "GuardRule",
    "Guardrail",
    "GuardrailInput",
    "GuardrailTriggered",
    "GuardrailVerdict",
    "Handoff",
    "HandoffFilter",
    "HandoffInputData",
    "HandoffItem",
    "HandoffOccurred",
    "HelikonError",
    "HeuristicTokenCounter",
    "Hook",
    "HookDecision",
    "HookEvent",
    "HookRegistry",
    "ITEM_ADAPTER",
    "ImagePart",
    "Instructions",
    "InvalidArgs",
    "InvalidConversationError",
    "InvalidEditedArgs",
    "InvalidStructuredOutput",
    "Item",
    "JsonObject",
    "JsonValue",
    "KnownSessionEvent",
    "LazyModel",
    "Lineage",
    "LlmAgent",
    "LlmAgentBuilder",
    "LoopAgent",
    "MaxAgentDepthExceeded",
    "MaxHandoffsExceeded",
    "MaxIterationsExceeded",
    "MaxTurnsExceeded",
    "MemorySession",
    "MemoryStore",
    "MessageOutput",
    "MetadataConflict",
    "MissingSessionEvents",
    "Model",
    "ModelCapabilities",
    "ModelError",
    "ModelEvent",
    "ModelFallback",
    "ModelRequest",
    "ModelRetry",
    "ModelSettings",
    "NamedToolChoice",
    "NothingToResume",
    "OtherModelError",
    "OutputRetriesExceeded",
    "OutputType",
    "OutputValidatorFunc",
    "ParallelAgent",
    "PendingApproval",
    "PermissionDecision",
    "PermissionDenied",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionVerdict",
    "PersistFailed",
    "PrepareTools",
    "RateLimited",
    "ReasoningDelta",
    "ReasoningPart",
    "Redactor",
    "Refused",
    "Repair",
    "RepairStarted",
    "RequestHeader",
    "RequestSent",
    "ResponseFormat",
    "Rewound",
    "RunCancelled",
    "RunCompleted",
    "RunConfig",
    "RunContext",
    "RunError",
    "RunFailed",
    "RunInput",
    "RunIsPaused",
    "RunObserver",
    "RunPaused",
    "RunResult",
    "RunStarted",
    "RunStream",
    "RunTimeout",
    "Runner",
    "SESSION_EVENT_ADAPTER",
    "SequenceId",
    "SequentialAgent",
    "Session",
    "SessionBackendError",
    "SessionConflict",
    "SessionEntry",
    "SessionError",
    "SessionEvent",
    "SessionInfo",
    "SessionMetadata",
    "SessionRecord",
    "SessionRecorder",
    "SessionState",
    "SessionUnavailable",
    "StructuredOutputFailed",
    "SwarmAgent",
    "SwarmBuildError",
    "SwarmBuilder",
    "SystemMessage",
    "TextPart",
    "TokenCounter",
    "TokenDelta",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallItem",
    "ToolCalled",
    "ToolChoice",
    "ToolContext",
    "ToolDef",
    "ToolEffect",
    "ToolError",
    "ToolOutput",
    "ToolOutputItem",
    "ToolResult",
    "ToolReturned",
    "ToolSource",
    "ToolSourceError",
    "ToolSubject",
    "ToolUsePart",
    "Toolset",
    "TracerHandle",
    "Transport",
    "TurnStarted",
    "Unavailable",
    "UnknownApprovalRequest",
    "UnknownEvent",
    "UnreadableSessionEvent",
    "UrlSource",
    "Usage",
    "UsageLimitExceeded",
    "UsageLimits",
    "UserError",
    "UserMessage",
    "UserMessageEvent",
    "ensure_provider_valid",
    "input_guardrail",
    "is_provider_valid",
    "keep_last_user_message",
    "model_prefixes",
    "output_guardrail",
    "print_stream",
    "project",
    "rebuild_request",
    "rebuild_requests",
    "register_model_prefix",
    "remove_tool_calls",
    "repair_conversation",
    "resolve_model",
    "tool",
    "unregister_model_prefix",
    "use_tracer_provider",
]


def __getattr__(name: str) -> typing.Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(module, __name__)
    for lazy_name in _LAZY[module].split():
        globals()[lazy_name] = getattr(loaded, lazy_name)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# What type checkers read of the lazy names (a test keeps these imports identical to `_LAZY`).
if typing.TYPE_CHECKING:
    from .governance.permissions import PermissionVerdict
    from .governance.redaction import Redactor
    from .governance.rules import AllowRule, DenyRule, GuardAction, GuardRule, ToolSubject
    from .run.tracing import use_tracer_provider
    from .session import (
        SESSION_EVENT_ADAPTER,
        ApprovalDecided,
        ApprovalPending,
        AssistantMessageEvent,
        Compacted,
        ConversationSnapshot,
        CustomEvent,
        Forked,
        HandoffOccurred,
        KnownSessionEvent,
        RequestHeader,
        Rewound,
        SequenceId,
        Session,
        SessionEntry,
        SessionEvent,
        SessionInfo,
        SessionMetadata,
        SessionRecord,
        ToolCalled,
        ToolReturned,
        UnknownEvent,
        UserMessageEvent,
        project,
    )
    from .session.branches import Branch, Lineage
    from .session.compaction import (
        CompactingSession,
        CompactingSessionBuilder,
        HeuristicTokenCounter,
        TokenCounter,
    )
    from .session.memory import MemorySession, MemoryStore
    from .session.recorder import SessionRecorder
    from .session.request_log import rebuild_request, rebuild_requests
    from .workflows import (
        GraphAgent,
        GraphBuilder,
        GraphBuildError,
        LoopAgent,
        ParallelAgent,
        SequentialAgent,
    )
    from .workflows.agent_tool import AgentAsTool
    from .workflows.swarm import SwarmAgent, SwarmBuilder, SwarmBuildError

from ._internal import moved  # noqa: E402  (last: the old flat paths still import)

moved.install(moved.MOVED)
del moved
