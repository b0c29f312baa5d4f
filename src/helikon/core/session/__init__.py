"""Sessions: the append-only event log (`SessionEvent`), the `Session` protocol and `project`.

The log is the source of truth; the conversation a model sees is a projection of it. The
events are in `_events` (one carrier per variant, and the adapter that stores them), the
protocol and what it reads in `_protocol`, the projection in `_projection`; the stored
form is `codec`, the backends and the rest of the family are the other modules here.

Example:
    ```python
    from helikon.core.session import ToolCalled, UserMessageEvent, project
    from helikon.core.items import TextPart

    log = [UserMessageEvent(content=(TextPart(text="hi"),))]
    assert project(log).messages[0].text == "hi"
    ```
"""

from ._events import (
    SESSION_EVENT_ADAPTER,
    ApprovalDecided,
    ApprovalPending,
    AssistantMessageEvent,
    Compacted,
    CustomEvent,
    Forked,
    HandoffOccurred,
    KnownSessionEvent,
    RequestHeader,
    Rewound,
    SessionEvent,
    SubRunPaused,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UnknownEvent,
    UserMessageEvent,
)
from ._projection import ConversationSnapshot, Projection, Step, active_path, event_step, fold, project
from ._protocol import (
    SequenceId,
    Session,
    SessionEntry,
    SessionInfo,
    SessionMetadata,
    SessionRecord,
    SharedLog,
    check_session,
)

__all__ = [
    "ApprovalDecided",
    "ApprovalPending",
    "AssistantMessageEvent",
    "Compacted",
    "ConversationSnapshot",
    "CustomEvent",
    "Forked",
    "HandoffOccurred",
    "KnownSessionEvent",
    "Projection",
    "RequestHeader",
    "Rewound",
    "SESSION_EVENT_ADAPTER",
    "SequenceId",
    "Session",
    "SessionEntry",
    "SessionEvent",
    "SessionInfo",
    "SessionMetadata",
    "SessionRecord",
    "SharedLog",
    "SubRunPaused",
    "Step",
    "ToolCalled",
    "ToolReturned",
    "ToolsStarted",
    "TurnClosed",
    "TurnOpened",
    "UnknownEvent",
    "UserMessageEvent",
    "active_path",
    "check_session",
    "event_step",
    "fold",
    "project",
]
