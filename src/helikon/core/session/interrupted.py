"""A run whose process died mid-turn, read from its session's log: where it goes on from.

A durable run writes its events as they settle between `TurnOpened` and `TurnClosed`; a
process that dies leaves its turn open. `agent.resume(session)` goes on with that run
instead of repairing it (what a plain next run does, see `crash_repair`): the log tells
where the loop stood.

- Before a model call (the run's input, or a tool turn whose results are all in): the
  model is called again with the same conversation.
- In a tool turn: a call with a result keeps it; a call that started (a `ToolsStarted`
  covers it) and never returned is **not run again**: the model reads crash repair's
  "outcome unknown" result for it, as a plain next run would show it; a call that never
  started runs now, through every check (or as a person decided, for a resumed pause).

The run's events are read from the first turn of its run on: a resumed run's turns name
the turn they continue (`TurnOpened.resumes`). `read_interrupted` is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..events import TokenUsage
from ..items import Item, ToolCall, ToolResult, UserMessage
from ..loop import CallingModel, ExecutingTools
from ..run.resume_point import Decided, ResumePoint
from . import (
    ApprovalDecided,
    ApprovalPending,
    AssistantMessageEvent,
    HandoffOccurred,
    SequenceId,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnOpened,
    UserMessageEvent,
)
from .crash_repair import OUTCOME_UNKNOWN_TEXT
from .resume import agent_on_path, returned_outcome

if TYPE_CHECKING:
    from ..agent import Agent, LlmAgent


class InterruptedRun:
    """Where a run whose process died stood, as its log says.

    Attributes:
        run_id: The open turn's run id.
        agent_path: The run's agent, then each handoff target it passed control to.
        calls: The calls of the tool turn it stopped in (empty: it stopped before a model call).
        returned: The results the log has of those calls, by call id.
        started: Those of the calls that had started (a `ToolsStarted` covers them).
        decided: The decisions a person recorded on those calls (a resumed pause), by call id.
        turn: The number of the turn it stopped in, in its agent's run.
        usage: What the run had spent.
        input: The run's own input, when it stopped before its first model answer (else empty).
        end: The seq of the log's last event.
    """

    __slots__ = (
        "agent_path",
        "calls",
        "decided",
        "end",
        "input",
        "returned",
        "run_id",
        "started",
        "turn",
        "usage",
    )

    def __init__(self, run_id: str, agent_path: tuple[str, ...], end: SequenceId) -> None:
        self.run_id = run_id
        self.agent_path = agent_path
        self.calls: tuple[ToolCalled, ...] = ()
        self.returned: dict[str, ToolReturned] = {}
        self.started: set[str] = set()
        self.decided: dict[str, ApprovalDecided] = {}
        self.turn = 0
        self.usage = TokenUsage()
        self.input: tuple[Item, ...] = ()
        self.end = end


def continue_point(run: InterruptedRun, root: Agent[Any, Any], conversation: Sequence[Item]) -> ContinuePlan:
    """Where `run` goes on, with `root` (the agent it was started with) and the session's conversation.

    Raises:
        ApprovalTargetMissing: The agent it stopped in is not on `root`'s handoffs now.
    """
    agent, depth = agent_on_path(root, run.agent_path)
    calls = tuple(ToolCall(call_id=c.call_id, name=c.name, args=c.args) for c in run.calls)
    ids = {call.call_id for call in calls}
    kept = tuple(m for m in conversation if not (isinstance(m, ToolResult) and m.call_id in ids))
    if not calls:
        state = CallingModel(turn=run.turn, usage=run.usage)
        return ContinuePlan(
            agent,
            depth,
            ResumePoint(state=state, conversation=kept, done={}, decided={}, checks_input=run.input),
        )
    done = {call_id: returned_outcome(returned) for call_id, returned in run.returned.items()}
    decided: dict[str, Decided] = {}
    for call in calls:
        call_id = call.call_id
        decision = run.decided.get(call_id)
        if call_id in done:
            continue
        if call_id in run.started:
            decided[call_id] = Decided(kind="unknown", reason=OUTCOME_UNKNOWN_TEXT)
        elif decision is None:
            decided[call_id] = Decided(kind="call")
        elif decision.decision == "deny":
            decided[call_id] = Decided(kind="deny", reason=decision.reason)
        else:
            decided[call_id] = Decided(
                kind="run", args=decision.args if decision.decision == "edit" else call.args
            )
    state = ExecutingTools(calls=calls, turn=run.turn, usage=run.usage)
    return ContinuePlan(agent, depth, ResumePoint(state=state, conversation=kept, done=done, decided=decided))


class ContinuePlan:
    """How an interrupted run goes on: the agent it stopped in, how deep, and from where."""

    __slots__ = ("agent", "depth", "point")

    def __init__(self, agent: LlmAgent[Any, Any], depth: int, point: ResumePoint) -> None:
        self.agent = agent
        self.depth = depth
        self.point = point


def read_interrupted(entries: Sequence[SessionEntry], opened: SessionEntry) -> InterruptedRun | None:
    """The run of the open turn `opened` (its `TurnOpened` entry in `entries`); None when it had answered.

    A run whose last logged answer was text had finished but for its closing marker:
    there is nothing to go on with (a plain next run closes its turn).
    """
    events = _run_events(entries, opened)
    first = events[0]
    root = first.agent if isinstance(first, TurnOpened) and first.agent else ""
    path = (root, *(e.to_agent for e in events if isinstance(e, HandoffOccurred)))
    turn_opened = opened.event
    run = InterruptedRun(
        turn_opened.run_id if isinstance(turn_opened, TurnOpened) else "", path, entries[-1].seq
    )
    answers = [i for i, e in enumerate(events) if isinstance(e, AssistantMessageEvent | ToolCalled)]
    run.usage = sum(
        (e.usage for e in events if isinstance(e, AssistantMessageEvent) and e.usage), TokenUsage()
    )
    if not answers:  # before its first answer: its input is checked again, as it would have been
        run.input = tuple(UserMessage(content=e.content) for e in events if isinstance(e, UserMessageEvent))
        return run
    last = answers[-1]
    if isinstance(events[last], AssistantMessageEvent):
        return None
    first_call = last
    while first_call > 0 and isinstance(events[first_call - 1], ToolCalled):
        first_call -= 1
    calls = tuple(e for e in events[first_call : last + 1] if isinstance(e, ToolCalled))
    ids = {call.call_id for call in calls}
    after = events[last + 1 :]
    returned = {e.call_id: e for e in after if isinstance(e, ToolReturned) and e.call_id in ids}
    run.turn = _answers_before(events, first_call)
    if len(returned) == len(calls):  # every result is in: the model is next, one turn on
        handed_off = any(isinstance(e, HandoffOccurred) for e in after)
        run.turn = 0 if handed_off else run.turn + 1  # a handoff target starts at its first turn
        return run
    run.calls, run.returned = calls, returned
    run.started = _started(after, ids)
    run.decided = _decisions(after, ids)
    return run


def _run_events(entries: Sequence[SessionEntry], opened: SessionEntry) -> list[SessionEvent]:
    """The run's events: from the first turn of its run (following `resumes` back) to the end."""
    start = next(i for i, entry in enumerate(entries) if entry.seq == opened.seq)
    event = opened.event
    while isinstance(event, TurnOpened) and event.resumes:
        earlier = next((i for i in range(start - 1, -1, -1) if _opens(entries[i].event, event.resumes)), None)
        if earlier is None:
            break
        start = earlier
        event = entries[start].event
    return [entry.event for entry in entries[start:]]


def _opens(event: SessionEvent, run_id: str) -> bool:
    return isinstance(event, TurnOpened) and event.run_id == run_id


def _answers_before(events: Sequence[SessionEvent], first_call: int) -> int:
    """How many model answers the agent whose turn this is gave before the one at `first_call`."""
    answers = 0
    for index in range(first_call - 1, -1, -1):
        event = events[index]
        if isinstance(event, HandoffOccurred):
            break  # the answers before it were another agent's
        if isinstance(event, AssistantMessageEvent):
            answers += 1
        elif isinstance(event, ToolCalled) and (index == 0 or not isinstance(events[index - 1], _ANSWER)):
            answers += 1  # an answer of calls only: it logged no message
    own_message = first_call > 0 and isinstance(events[first_call - 1], AssistantMessageEvent)
    return answers - 1 if own_message else answers


_ANSWER = (ToolCalled, AssistantMessageEvent)  # what a model answer logs before its calls


def _started(events: Sequence[SessionEvent], ids: set[str]) -> set[str]:
    """The calls a `ToolsStarted` covers, but for one that waited for approval after it (it never ran)."""
    started: set[str] = set()
    for event in events:
        if isinstance(event, ToolsStarted):
            started.update(c for c in event.call_ids if c in ids)
        elif isinstance(event, ApprovalPending):
            started.discard(event.run_call)
    return started


def _decisions(events: Sequence[SessionEvent], ids: set[str]) -> dict[str, ApprovalDecided]:
    """The decisions recorded on the turn's calls (of a pause resumed in the turn that died)."""
    requests = {e.request_id: e.call_id for e in events if isinstance(e, ApprovalPending) and not e.via}
    return {
        requests[e.request_id]: e
        for e in events
        if isinstance(e, ApprovalDecided) and requests.get(e.request_id) in ids
    }


__all__ = ["ContinuePlan", "InterruptedRun", "continue_point", "read_interrupted"]
