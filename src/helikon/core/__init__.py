"""helikon's IO-free core: carriers, protocols, the loop state machine and its driver.

Depends on the standard library (and pydantic, imported lazily when something is
serialized or a tool/output schema is built). Never imports a sibling package.

The names `helikon` exports are written once, in the two tables below, under the module
that defines them; `__all__` is their sorted union, and `helikon/__init__.py` re-exports it.
"""

import importlib
import typing

_EAGER = {
    ".agent": "Agent Instructions LlmAgent",
    ".agent_builder": "LlmAgentBuilder",
    ".input": "AgentInput RunInput",
    ".handoff": "Handoff HandoffFilter HandoffInputData keep_last_user_message remove_tool_calls",
    ".result": "RunResult RunStream print_stream",
    ".runner": "Runner",
    ".output": "OutputType",
    ".output_validators": "OutputValidatorFunc",
    ".context": "ActionsHandle RunConfig RunContext SessionState ToolContext TracerHandle",
    ".usage": "UsageLimits",
    ".cancel": "CancellationToken",
    ".tools": "FunctionTool PrepareTools Tool ToolEffect ToolOutput tool",
    ".tool_sources": "ToolSource",
    ".toolsets": "Toolset",
    ".items": """
        AssistantMessage AudioPart Base64Source ContentPart ITEM_ADAPTER ImagePart Item ReasoningPart
        SystemMessage TextPart ToolCall ToolResult ToolUsePart UrlSource UserMessage
    """,
    ".model": """
        Finish FinishReason Model ModelCapabilities ModelEvent ModelFallback ModelRequest ModelSettings
        NamedToolChoice ReasoningDelta ResponseFormat TokenDelta ToolCallDelta ToolChoice ToolDef Usage
    """,
    ".model_strings": "LazyModel model_prefixes register_model_prefix resolve_model unregister_model_prefix",
    ".events": """
        AGENT_EVENT_ADAPTER AgentError AgentEvent AgentUpdated ApprovalRequested GuardrailTriggered
        HandoffItem MessageOutput PermissionDenied PersistFailed RepairStarted RequestSent RunCompleted
        RunFailed RunStarted StructuredOutputFailed TokenUsage ToolCallItem ToolOutputItem TurnStarted
    """,
    ".session": """
        AssistantMessageEvent Compacted ConversationSnapshot CustomEvent Forked HandoffOccurred
        KnownSessionEvent RequestHeader Rewound SESSION_EVENT_ADAPTER SequenceId Session SessionEntry
        SessionEvent SessionInfo SessionMetadata SessionRecord ToolCalled ToolReturned UnknownEvent
        UserMessageEvent project
    """,
    ".session.branches": "Branch Lineage",
    ".session.compaction": "CompactingSession CompactingSessionBuilder HeuristicTokenCounter TokenCounter",
    ".session.memory": "MemorySession MemoryStore",
    ".session.recorder": "SessionRecorder",
    ".observer": "RunObserver",
    ".session.request_log": "rebuild_request rebuild_requests",
    ".conversation_check": """
        InvalidConversationError Repair ensure_provider_valid is_provider_valid repair_conversation
    """,
    ".governance": """
        ApprovalHandler ApprovalOutcome Guardrail GuardrailInput GuardrailVerdict Hook HookDecision
        HookEvent HookRegistry PermissionDecision PermissionMode PermissionPolicy
    """,
    ".governance.settings": "Governance",
    ".governance.guardrails": "FunctionGuardrail input_guardrail output_guardrail",
    ".exceptions": """
        ContextLengthExceeded Denied HelikonError InvalidArgs InvalidStructuredOutput
        MaxAgentDepthExceeded MaxHandoffsExceeded MaxIterationsExceeded MaxTurnsExceeded MetadataConflict
        MissingSessionEvents ModelError ModelRetry OtherModelError OutputRetriesExceeded RateLimited Refused
        RunCancelled RunError RunTimeout SessionBackendError SessionConflict SessionError SessionUnavailable
        ToolError ToolSourceError Transport Unavailable UnreadableSessionEvent UsageLimitExceeded UserError
    """,
    "._json": "JsonObject JsonValue",
}
"""Module -> the names exported from it, for the modules that `import helikon` loads anyway."""

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
    "._tracing": "use_tracer_provider",
}
"""Module -> the names exported from it, for the modules loaded on the first access to one of them."""

_HOME = {name: module for module, names in _LAZY.items() for name in names.split()}

__all__ = sorted(name for table in (_EAGER, _LAZY) for names in table.values() for name in names.split())  # pyright: ignore[reportUnsupportedDunderAll]


def _bind(module: str) -> None:
    loaded = importlib.import_module(module, __name__)
    names = _EAGER.get(module) or _LAZY[module]
    globals().update({name: getattr(loaded, name) for name in names.split()})


for _module in _EAGER:
    _bind(_module)


def __getattr__(name: str) -> typing.Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _bind(module)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# What type checkers read: the two tables as imports (`X as X` re-exports X). A test keeps
# these identical to the tables (tests/unit/test_facade.py).
# One import per module, in the tables' order (isort would split the `X as X` imports apart).
# isort: off
if typing.TYPE_CHECKING:
    from .agent import Agent as Agent, Instructions as Instructions, LlmAgent as LlmAgent
    from .agent_builder import LlmAgentBuilder as LlmAgentBuilder
    from .input import AgentInput as AgentInput, RunInput as RunInput
    from .handoff import (
        Handoff as Handoff,
        HandoffFilter as HandoffFilter,
        HandoffInputData as HandoffInputData,
        keep_last_user_message as keep_last_user_message,
        remove_tool_calls as remove_tool_calls,
    )
    from .result import RunResult as RunResult, RunStream as RunStream, print_stream as print_stream
    from .runner import Runner as Runner
    from .output import OutputType as OutputType
    from .output_validators import OutputValidatorFunc as OutputValidatorFunc
    from .context import (
        ActionsHandle as ActionsHandle,
        RunConfig as RunConfig,
        RunContext as RunContext,
        SessionState as SessionState,
        ToolContext as ToolContext,
        TracerHandle as TracerHandle,
    )
    from .usage import UsageLimits as UsageLimits
    from .cancel import CancellationToken as CancellationToken
    from .tools import (
        FunctionTool as FunctionTool,
        PrepareTools as PrepareTools,
        Tool as Tool,
        ToolEffect as ToolEffect,
        ToolOutput as ToolOutput,
        tool as tool,
    )
    from .tool_sources import ToolSource as ToolSource
    from .toolsets import Toolset as Toolset
    from .items import (
        AssistantMessage as AssistantMessage,
        AudioPart as AudioPart,
        Base64Source as Base64Source,
        ContentPart as ContentPart,
        ITEM_ADAPTER as ITEM_ADAPTER,
        ImagePart as ImagePart,
        Item as Item,
        ReasoningPart as ReasoningPart,
        SystemMessage as SystemMessage,
        TextPart as TextPart,
        ToolCall as ToolCall,
        ToolResult as ToolResult,
        ToolUsePart as ToolUsePart,
        UrlSource as UrlSource,
        UserMessage as UserMessage,
    )
    from .model import (
        Finish as Finish,
        FinishReason as FinishReason,
        Model as Model,
        ModelCapabilities as ModelCapabilities,
        ModelEvent as ModelEvent,
        ModelFallback as ModelFallback,
        ModelRequest as ModelRequest,
        ModelSettings as ModelSettings,
        NamedToolChoice as NamedToolChoice,
        ReasoningDelta as ReasoningDelta,
        ResponseFormat as ResponseFormat,
        TokenDelta as TokenDelta,
        ToolCallDelta as ToolCallDelta,
        ToolChoice as ToolChoice,
        ToolDef as ToolDef,
        Usage as Usage,
    )
    from .model_strings import (
        LazyModel as LazyModel,
        model_prefixes as model_prefixes,
        register_model_prefix as register_model_prefix,
        resolve_model as resolve_model,
        unregister_model_prefix as unregister_model_prefix,
    )
    from .events import (
        AGENT_EVENT_ADAPTER as AGENT_EVENT_ADAPTER,
        AgentError as AgentError,
        AgentEvent as AgentEvent,
        AgentUpdated as AgentUpdated,
        ApprovalRequested as ApprovalRequested,
        GuardrailTriggered as GuardrailTriggered,
        HandoffItem as HandoffItem,
        MessageOutput as MessageOutput,
        PermissionDenied as PermissionDenied,
        PersistFailed as PersistFailed,
        RepairStarted as RepairStarted,
        RequestSent as RequestSent,
        RunCompleted as RunCompleted,
        RunFailed as RunFailed,
        RunStarted as RunStarted,
        StructuredOutputFailed as StructuredOutputFailed,
        TokenUsage as TokenUsage,
        ToolCallItem as ToolCallItem,
        ToolOutputItem as ToolOutputItem,
        TurnStarted as TurnStarted,
    )
    from .session import (
        AssistantMessageEvent as AssistantMessageEvent,
        Compacted as Compacted,
        ConversationSnapshot as ConversationSnapshot,
        CustomEvent as CustomEvent,
        Forked as Forked,
        HandoffOccurred as HandoffOccurred,
        KnownSessionEvent as KnownSessionEvent,
        RequestHeader as RequestHeader,
        Rewound as Rewound,
        SESSION_EVENT_ADAPTER as SESSION_EVENT_ADAPTER,
        SequenceId as SequenceId,
        Session as Session,
        SessionEntry as SessionEntry,
        SessionEvent as SessionEvent,
        SessionInfo as SessionInfo,
        SessionMetadata as SessionMetadata,
        SessionRecord as SessionRecord,
        ToolCalled as ToolCalled,
        ToolReturned as ToolReturned,
        UnknownEvent as UnknownEvent,
        UserMessageEvent as UserMessageEvent,
        project as project,
    )
    from .session.branches import Branch as Branch, Lineage as Lineage
    from .session.compaction import (
        CompactingSession as CompactingSession,
        CompactingSessionBuilder as CompactingSessionBuilder,
        HeuristicTokenCounter as HeuristicTokenCounter,
        TokenCounter as TokenCounter,
    )
    from .session.memory import MemorySession as MemorySession, MemoryStore as MemoryStore
    from .session.recorder import SessionRecorder as SessionRecorder
    from .observer import RunObserver as RunObserver
    from .session.request_log import rebuild_request as rebuild_request, rebuild_requests as rebuild_requests
    from .conversation_check import (
        InvalidConversationError as InvalidConversationError,
        Repair as Repair,
        ensure_provider_valid as ensure_provider_valid,
        is_provider_valid as is_provider_valid,
        repair_conversation as repair_conversation,
    )
    from .governance import (
        ApprovalHandler as ApprovalHandler,
        ApprovalOutcome as ApprovalOutcome,
        Guardrail as Guardrail,
        GuardrailInput as GuardrailInput,
        GuardrailVerdict as GuardrailVerdict,
        Hook as Hook,
        HookDecision as HookDecision,
        HookEvent as HookEvent,
        HookRegistry as HookRegistry,
        PermissionDecision as PermissionDecision,
        PermissionMode as PermissionMode,
        PermissionPolicy as PermissionPolicy,
    )
    from .governance.settings import Governance as Governance
    from .governance.guardrails import (
        FunctionGuardrail as FunctionGuardrail,
        input_guardrail as input_guardrail,
        output_guardrail as output_guardrail,
    )
    from .exceptions import (
        ContextLengthExceeded as ContextLengthExceeded,
        Denied as Denied,
        HelikonError as HelikonError,
        InvalidArgs as InvalidArgs,
        InvalidStructuredOutput as InvalidStructuredOutput,
        MaxAgentDepthExceeded as MaxAgentDepthExceeded,
        MaxHandoffsExceeded as MaxHandoffsExceeded,
        MaxIterationsExceeded as MaxIterationsExceeded,
        MaxTurnsExceeded as MaxTurnsExceeded,
        MetadataConflict as MetadataConflict,
        MissingSessionEvents as MissingSessionEvents,
        ModelError as ModelError,
        ModelRetry as ModelRetry,
        OtherModelError as OtherModelError,
        OutputRetriesExceeded as OutputRetriesExceeded,
        RateLimited as RateLimited,
        Refused as Refused,
        RunCancelled as RunCancelled,
        RunError as RunError,
        RunTimeout as RunTimeout,
        SessionBackendError as SessionBackendError,
        SessionConflict as SessionConflict,
        SessionError as SessionError,
        SessionUnavailable as SessionUnavailable,
        ToolError as ToolError,
        ToolSourceError as ToolSourceError,
        Transport as Transport,
        Unavailable as Unavailable,
        UnreadableSessionEvent as UnreadableSessionEvent,
        UsageLimitExceeded as UsageLimitExceeded,
        UserError as UserError,
    )
    from ._json import JsonObject as JsonObject, JsonValue as JsonValue
    from .workflows import (
        GraphAgent as GraphAgent,
        GraphBuildError as GraphBuildError,
        GraphBuilder as GraphBuilder,
        LoopAgent as LoopAgent,
        ParallelAgent as ParallelAgent,
        SequentialAgent as SequentialAgent,
    )
    from .workflows.agent_tool import AgentAsTool as AgentAsTool
    from .workflows.swarm import (
        SwarmAgent as SwarmAgent,
        SwarmBuildError as SwarmBuildError,
        SwarmBuilder as SwarmBuilder,
    )
    from .governance.rules import (
        AllowRule as AllowRule,
        DenyRule as DenyRule,
        GuardAction as GuardAction,
        GuardRule as GuardRule,
        ToolSubject as ToolSubject,
    )
    from .governance.permissions import PermissionVerdict as PermissionVerdict
    from .governance.redaction import Redactor as Redactor
    from ._tracing import use_tracer_provider as use_tracer_provider
# isort: on

from . import _moved  # noqa: E402  (last: the old flat paths, helikon.core.codec and the like, still import)

_moved.install(_moved.MOVED)
