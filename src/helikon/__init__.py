"""helikon: the Python SDK for building agentic AI systems.

The names most users need, re-exported from `helikon.core`. Runners live in
`helikon.runtime`, test doubles in `helikon.testing`, the strict-schema normalizer in
`helikon.schema`.

Example:
    ```python
    from helikon import LlmAgent, RunContext, tool
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="hello", model=MockModel.with_scripts([text_turn("Hello!")]))
    assert agent.run_sync("Hi", context=RunContext.ephemeral(None)).final_output == "Hello!"
    ```
"""

__version__ = "0.1.0"


from typing import TYPE_CHECKING, Any

from .core._function_tool import FunctionTool, tool
from .core._json import JsonObject, JsonValue
from .core.agent import Agent, AgentInput, Instructions, LlmAgent, RunInput
from .core.cancel import CancellationToken
from .core.context import ActionsHandle, RunConfig, RunContext, SessionState, ToolContext, TracerHandle
from .core.events import (
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
from .core.exceptions import (
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
from .core.governance import (
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
from .core.handoff import Handoff
from .core.items import (
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
from .core.model import (
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
from .core.output import OutputType
from .core.result import RunResult, RunStream
from .core.runner import Runner
from .core.session import (
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
from .core.session.branches import Branch, Lineage
from .core.session.compaction import CompactingSession, HeuristicTokenCounter, TokenCounter
from .core.session.memory import MemorySession, MemoryStore
from .core.session.recorder import SessionRecorder
from .core.session.request_log import rebuild_request, rebuild_requests
from .core.tools import Tool, ToolEffect, ToolOutput

# Loaded on first access, as in `helikon.core` (see its LAZY_EXPORTS).
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
    from . import core

    if name not in core.LAZY_EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(core, name)
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
    "__version__",
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
