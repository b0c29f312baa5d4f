"""A session's paused run, read from its log: what it waits on, and where it goes on from.

A run that paused for approval left in the log its conversation up to the turn's tool
calls, the results of the calls that ran, an `ApprovalPending` per call that waits, and
`TurnClosed(outcome="paused")` on a durable session. A decision adds an `ApprovalDecided`;
the resumed run then adds each call's `ToolReturned`. So the session is paused while some
`ApprovalPending` has no `ToolReturned` for its call after it — on every backend, durable
or not, and whatever compaction did to the conversation (the events stay in the log).

`read_paused(entries)` is pure: it reads, it writes nothing.

Example:
    ```python
    from helikon.core.approvals import args_digest
    from helikon.core.session import ApprovalPending, SequenceId, SessionEntry, ToolCalled
    from helikon.core.session.paused import read_paused

    call = ToolCalled(call_id="c1", name="pay", args={"amount": 5})
    wait = ApprovalPending(
        request_id="apr_1", call_id="c1", tool="pay", agent_path=("clerk",),
        args={"amount": 5}, args_digest=args_digest({"amount": 5}),
    )
    paused = read_paused([SessionEntry(SequenceId(0), call), SessionEntry(SequenceId(1), wait)])
    assert paused is not None and list(paused.requests) == ["apr_1"]
    ```
"""

from __future__ import annotations

from collections.abc import Sequence

from ..events import TokenUsage
from ..items import ToolResult
from . import (
    ApprovalDecided,
    ApprovalPending,
    AssistantMessageEvent,
    HandoffOccurred,
    SequenceId,
    SessionEntry,
    SubRunPaused,
    ToolCalled,
    ToolReturned,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)


class PausedRun:
    """What a session's paused run waits on, as its log says.

    Attributes:
        requests: The requests still open (no result for their call yet), by request id,
            in the order they were made.
        decided: The decisions recorded on those requests so far, by request id.
        settled: The request ids of earlier pauses, decided and run already.
        sub_runs: The sub-agents (called as tools) that paused with the run, by `via`.
        run_id: The paused turn's run id (a durable run's; "" when the session has no turn markers).
        calls: Every tool call of the paused turn (the calls the pending ones were asked with).
        returned: The results the log has of those calls, by call id.
        turn: The paused turn's number in its agent's run (counted from the log).
        usage: What the run had spent up to the pause.
        end: The seq of the log's last event.
    """

    __slots__ = (
        "calls",
        "decided",
        "end",
        "requests",
        "returned",
        "run_id",
        "settled",
        "sub_runs",
        "turn",
        "usage",
    )

    def __init__(self) -> None:
        self.requests: dict[str, ApprovalPending] = {}
        self.decided: dict[str, ApprovalDecided] = {}
        self.settled: set[str] = set()
        self.sub_runs: dict[tuple[str, ...], SubRunPaused] = {}
        self.run_id = ""
        self.calls: tuple[ToolCalled, ...] = ()
        self.returned: dict[str, ToolReturned] = {}
        self.turn = 0
        self.usage = TokenUsage()
        self.end = SequenceId(-1)

    @property
    def agent_path(self) -> tuple[str, ...]:
        """The agents from the run's own to the one whose turn waits (a handoff target's).

        A request of a sub-agent called as a tool has a longer path: the sub-agents it is
        reached through follow.
        """
        first = next(iter(self.requests.values()))
        return first.agent_path[: len(first.agent_path) - len(first.via)]

    def undecided(self) -> list[ApprovalPending]:
        """The open requests with no decision yet, in order."""
        return [r for rid, r in self.requests.items() if rid not in self.decided]


def read_paused(entries: Sequence[SessionEntry]) -> PausedRun | None:
    """The session's paused run, from its whole log; None when no request waits."""
    open_requests: dict[str, tuple[int, ApprovalPending]] = {}  # request id -> (index, event)
    by_call: dict[str, list[str]] = {}  # the run's call -> the request ids that wait on it
    decided: dict[str, ApprovalDecided] = {}
    settled: set[str] = set()
    sub_runs: dict[tuple[str, ...], SubRunPaused] = {}
    run_id = ""
    for index, entry in enumerate(entries):
        event = entry.event
        if type(event) is ApprovalPending:
            open_requests[event.request_id] = (index, event)
            by_call.setdefault(event.run_call, []).append(event.request_id)
        elif type(event) is ApprovalDecided:
            if event.request_id in open_requests:
                decided[event.request_id] = event
        elif type(event) is SubRunPaused:
            sub_runs[event.via] = event  # the latest: a resumed sub-agent that paused again
            # ... whose calls that have run since are settled: their results are in its conversation
            returned = {m.call_id for m in event.messages if isinstance(m, ToolResult)}
            for request_id, (_, request) in list(open_requests.items()):
                if request.via == event.via and request.call_id in returned:
                    del open_requests[request_id]
                    decided.pop(request_id, None)
                    settled.add(request_id)
        elif type(event) is ToolReturned:
            for request_id in by_call.pop(event.call_id, ()):
                open_requests.pop(request_id, None)
                decided.pop(request_id, None)
                settled.add(request_id)
        elif type(event) is TurnClosed and event.outcome == "paused":
            run_id = event.run_id
    if not open_requests:
        return None
    paused = PausedRun()
    ordered = sorted(open_requests.values(), key=lambda pair: pair[0])
    paused.requests = {event.request_id: event for _, event in ordered}
    paused.decided = decided
    paused.settled = settled
    paused.sub_runs = {via: sub for via, sub in sub_runs.items() if via[0] in by_call}
    paused.run_id = run_id
    paused.end = entries[-1].seq
    _read_turn(paused, entries, ordered[0][0], ordered[0][1].run_call)
    return paused


def _read_turn(paused: PausedRun, entries: Sequence[SessionEntry], before: int, call_id: str) -> None:
    """The paused turn's calls and results, its number, and the run's usage up to it.

    The turn's calls are the tool calls logged together with `call_id` (one model answer).
    Its number counts the model answers before it since the agent took over (the user's
    message, or the handoff to it); the usage adds up the run's answers since the user's
    message (a handoff target's run goes on with the usage of both agents).
    """
    events = [entry.event for entry in entries[:before]]
    at = next(i for i in range(len(events) - 1, -1, -1) if _is_call(events[i], call_id))
    first = last = at
    while first > 0 and type(events[first - 1]) is ToolCalled:
        first -= 1
    while last + 1 < len(events) and type(events[last + 1]) is ToolCalled:
        last += 1
    paused.calls = tuple(e for e in events[first : last + 1] if type(e) is ToolCalled)
    ids = {call.call_id for call in paused.calls}
    paused.returned = {
        e.call_id: e for e in events[last + 1 :] if type(e) is ToolReturned and e.call_id in ids
    }
    answers = 0
    usage = TokenUsage()
    counting = True  # until the handoff to the agent whose turn this is
    for index in range(first - 1, -1, -1):
        event = events[index]
        if type(event) is AssistantMessageEvent:
            if event.usage is not None:
                usage = usage + event.usage
            answers += counting
        elif type(event) is ToolCalled and (index == 0 or type(events[index - 1]) not in _ANSWER):
            answers += counting  # an answer of calls only: it logged no message
        elif type(event) is HandoffOccurred:
            counting = False
        elif type(event) is UserMessageEvent or (type(event) is TurnOpened and event.resumes is None):
            break
    # The turn's own answer logged its message right before its calls, when it had text.
    own_message = first > 0 and type(events[first - 1]) is AssistantMessageEvent
    paused.turn = answers - 1 if own_message else answers
    paused.usage = usage


_ANSWER = (ToolCalled, AssistantMessageEvent)  # what a model answer logs before its calls


def _is_call(event: object, call_id: str) -> bool:
    return type(event) is ToolCalled and event.call_id == call_id


__all__ = ["PausedRun", "read_paused"]
