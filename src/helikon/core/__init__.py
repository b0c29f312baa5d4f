"""helikon's IO-free core: carriers, protocols, the loop state machine and its driver.

Depends on the standard library (and pydantic, imported lazily when something is
serialized or a tool/output schema is built). Never imports a sibling package.
"""

from typing import TYPE_CHECKING, Any

from ._function_tool import FunctionTool, tool
from ._json import JsonObject, JsonValue
from .agent import Agent, AgentInput, Instructions, LlmAgent, RunInput
from .cancel import CancellationToken
from .context import ActionsHandle, RunConfig, RunContext, SessionState, ToolContext, TracerHandle
from .events import (
    AGENT_EVENT_ADAPTER,
    AgentError,
    AgentEvent,
    AgentUpdated,
    ApprovalRequested,
    GuardrailTriggered,
    HandoffItem,
    MessageOutput,
    PermissionDenied,
    PersistFailed,
    RepairStarted,
    RequestSent,
    RunCompleted,
    RunFailed,
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
    ModelError,
    OtherModelError,
    RateLimited,
    Refused,
    RunCancelled,
    RunError,
    RunTimeout,
    SessionBackendError,
    SessionConflict,
    SessionError,
    SessionUnavailable,
    ToolError,
    Transport,
    Unavailable,
    UnreadableSessionEvent,
    UserError,
)
from .governance import (
    ApprovalHandler,
    ApprovalOutcome,
    Governance,
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
from .handoff import Handoff
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
from .output import OutputType
from .result import RunResult, RunStream
from .runner import Runner
from .session import (
    SESSION_EVENT_ADAPTER,
    AssistantMessageEvent,
    Compacted,
    ConversationSnapshot,
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
    SessionRecord,
    ToolCalled,
    ToolReturned,
    UnknownEvent,
    UserMessageEvent,
    project,
)
from .session.branches import Branch, Lineage
from .session.compaction import CompactingSession, HeuristicTokenCounter, TokenCounter
from .session.memory import MemorySession, MemoryStore
from .session.recorder import SessionRecorder
from .session.request_log import rebuild_request, rebuild_requests
from .tools import Tool, ToolEffect, ToolOutput

# Loaded on first access: the shell matcher and the secret patterns cost ~10 ms to import,
# which a run pays only when a tool call reaches the permission pipeline.
LAZY_EXPORTS = {
    "AllowRule": "helikon.core.governance.rules",
    "DenyRule": "helikon.core.governance.rules",
    "GuardAction": "helikon.core.governance.rules",
    "GuardRule": "helikon.core.governance.rules",
    "ToolSubject": "helikon.core.governance.rules",
    "PermissionVerdict": "helikon.core.governance.permissions",
    "Redactor": "helikon.core.governance.redaction",
    "InvalidConversationError": "helikon.core.conversation_check",
    "Repair": "helikon.core.conversation_check",
    "ensure_provider_valid": "helikon.core.conversation_check",
    "is_provider_valid": "helikon.core.conversation_check",
    "repair_conversation": "helikon.core.conversation_check",
    "GraphAgent": "helikon.core.workflows",
    "GraphBuilder": "helikon.core.workflows",
    "GraphBuildError": "helikon.core.workflows",
    "LoopAgent": "helikon.core.workflows",
    "ParallelAgent": "helikon.core.workflows",
    "SequentialAgent": "helikon.core.workflows",
    "use_tracer_provider": "helikon.core._tracing",
    # Importing a module of core/workflows/ runs that package's __init__ (every workflow,
    # and with them the tracing module and opentelemetry's API: ~20 ms).
    "AgentAsTool": "helikon.core.workflows.agent_tool",
    "SwarmAgent": "helikon.core.workflows.swarm",
    "SwarmBuildError": "helikon.core.workflows.swarm",
}

if TYPE_CHECKING:
    from helikon.core._tracing import use_tracer_provider
    from helikon.core.conversation_check import (
        InvalidConversationError,
        Repair,
        ensure_provider_valid,
        is_provider_valid,
        repair_conversation,
    )
    from helikon.core.governance.permissions import PermissionVerdict
    from helikon.core.governance.redaction import Redactor
    from helikon.core.governance.rules import AllowRule, DenyRule, GuardAction, GuardRule, ToolSubject
    from helikon.core.workflows import (
        GraphAgent,
        GraphBuilder,
        GraphBuildError,
        LoopAgent,
        ParallelAgent,
        SequentialAgent,
    )
    from helikon.core.workflows.agent_tool import AgentAsTool
    from helikon.core.workflows.swarm import SwarmAgent, SwarmBuildError


def __getattr__(name: str) -> Any:
    module = LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "InvalidConversationError",
    "Repair",
    "ensure_provider_valid",
    "is_provider_valid",
    "repair_conversation",
    "AgentAsTool",
    "SwarmAgent",
    "SwarmBuildError",
    "Handoff",
    "AllowRule",
    "DenyRule",
    "GuardAction",
    "GuardRule",
    "PermissionVerdict",
    "Redactor",
    "ToolSubject",
    # agents and runs
    "Agent",
    "AgentInput",
    "Instructions",
    "LlmAgent",
    "GraphAgent",
    "GraphBuilder",
    "GraphBuildError",
    "LoopAgent",
    "ParallelAgent",
    "SequentialAgent",
    "RunInput",
    "RunResult",
    "RunStream",
    "Runner",
    "OutputType",
    # context
    "ActionsHandle",
    "CancellationToken",
    "RunConfig",
    "RunContext",
    "SessionState",
    "ToolContext",
    "TracerHandle",
    "use_tracer_provider",
    # tools
    "FunctionTool",
    "Tool",
    "ToolEffect",
    "ToolOutput",
    "tool",
    # conversation items
    "ITEM_ADAPTER",
    "AssistantMessage",
    "AudioPart",
    "Base64Source",
    "ContentPart",
    "ImagePart",
    "Item",
    "ReasoningPart",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "ToolUsePart",
    "UrlSource",
    "UserMessage",
    # model boundary
    "Finish",
    "FinishReason",
    "Model",
    "ModelCapabilities",
    "ModelEvent",
    "ModelRequest",
    "ModelSettings",
    "NamedToolChoice",
    "ReasoningDelta",
    "ResponseFormat",
    "TokenDelta",
    "ToolCallDelta",
    "ToolChoice",
    "ToolDef",
    "Usage",
    # agent events
    "AGENT_EVENT_ADAPTER",
    "AgentError",
    "AgentEvent",
    "AgentUpdated",
    "ApprovalRequested",
    "GuardrailTriggered",
    "HandoffItem",
    "MessageOutput",
    "PermissionDenied",
    "PersistFailed",
    "RepairStarted",
    "RequestSent",
    "RunCompleted",
    "RunFailed",
    "RunStarted",
    "StructuredOutputFailed",
    "TokenUsage",
    "ToolCallItem",
    "ToolOutputItem",
    "TurnStarted",
    # sessions
    "SESSION_EVENT_ADAPTER",
    "AssistantMessageEvent",
    "CompactingSession",
    "Compacted",
    "ConversationSnapshot",
    "HandoffOccurred",
    "HeuristicTokenCounter",
    "KnownSessionEvent",
    "MemorySession",
    "MemoryStore",
    "Branch",
    "Lineage",
    "Rewound",
    "Forked",
    "RequestHeader",
    "SequenceId",
    "Session",
    "SessionEntry",
    "SessionInfo",
    "SessionRecord",
    "SessionEvent",
    "SessionRecorder",
    "TokenCounter",
    "ToolCalled",
    "ToolReturned",
    "UnknownEvent",
    "UserMessageEvent",
    "project",
    "rebuild_request",
    "rebuild_requests",
    # governance
    "ApprovalHandler",
    "ApprovalOutcome",
    "Governance",
    "Guardrail",
    "GuardrailInput",
    "GuardrailVerdict",
    "Hook",
    "HookDecision",
    "HookEvent",
    "HookRegistry",
    "PermissionDecision",
    "PermissionMode",
    "PermissionPolicy",
    # errors
    "ContextLengthExceeded",
    "Denied",
    "HelikonError",
    "InvalidArgs",
    "InvalidStructuredOutput",
    "MaxAgentDepthExceeded",
    "MaxHandoffsExceeded",
    "MaxIterationsExceeded",
    "MaxTurnsExceeded",
    "ModelError",
    "OtherModelError",
    "RateLimited",
    "Refused",
    "RunCancelled",
    "RunError",
    "RunTimeout",
    "SessionBackendError",
    "SessionConflict",
    "SessionError",
    "SessionUnavailable",
    "ToolError",
    "Transport",
    "Unavailable",
    "UnreadableSessionEvent",
    "UserError",
    # json
    "JsonObject",
    "JsonValue",
]

from . import _moved  # noqa: E402  (last: the old flat paths, helikon.core.codec and the like, still import)

_moved.install()
