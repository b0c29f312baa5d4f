"""Deciding a paused run's requests, and where the run goes on from: the checks that fail closed.

`plan_resume` takes the paused run as the log tells it (`read_paused`), the agent
definitions the caller has now, and the decisions; it checks every decision and returns
the `ApprovalDecided` events to record, or raises an `ApprovalError` and nothing is
recorded. The checks, in order:

1. The session has a paused run (`NothingToResume`).
2. The agent it paused in still exists on the way its `agent_path` names: the run's agent,
   then each handoff target (`ApprovalTargetMissing`).
3. Every decision names an open request (`UnknownApprovalRequest`; one decided and run
   already: `ApprovalAlreadyDecided`), and is an `Approve`, `Deny` or `Edit`.
4. The log's arguments still match their recorded digest, and the decision's digest, when
   it gives one, is that digest (`ApprovalDigestMismatch`).
5. A request has one decision: the same one again is a no-op, another one is refused
   (`ApprovalAlreadyDecided`).
6. A request past `expires_at` with `on_expire="deny"` takes no decision (`ApprovalExpired`);
   it is denied by its expiry.
7. A call to run has its tool, with the argument schema it had when the run paused
   (`ApprovalTargetMissing`, `ApprovalToolChanged`); an `Edit`'s arguments fit that schema
   (`InvalidEditedArgs`).

Pure: it reads what it is given, and writes nothing.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ..approvals import (
    ApprovalAlreadyDecided,
    ApprovalDigestMismatch,
    ApprovalExpired,
    ApprovalTargetMissing,
    ApprovalToolChanged,
    Approve,
    Approver,
    Decision,
    Deny,
    Edit,
    InvalidEditedArgs,
    NothingToResume,
    PendingApproval,
    UnknownApprovalRequest,
    args_digest,
    canonical_json,
    schema_digest,
)
from ..events import ApprovalResolved, TokenUsage
from ..exceptions import InvalidArgs, SessionConflict, UserError
from ..items import AssistantMessage, Item, ToolCall, ToolResult
from ..loop import NeedsApproval, ToolCallOutcome, ToolStatus
from ..run.resume_point import Decided, ResumePoint, SubResume
from . import ApprovalDecided, ApprovalPending, Session, SubRunPaused, ToolReturned
from .paused import PausedRun

if TYPE_CHECKING:
    from ..agent import Agent, LlmAgent
    from ..context import RunConfig, RunContext
    from ..run.sink import EventSink
    from ..tools import Tool

Go: TypeAlias = Callable[["RunContext[Any]", "EventSink"], Awaitable[None]]
"""A run, given its context in its turn and the sink that records it."""

EXPIRED_BY = "helikon:expired"
"""The `by` of the denial a request's expiry records."""


class ResumePlan:
    """What a resume records and runs: the checked decisions, and the agent that goes on.

    Attributes:
        paused: The paused run, as the log told it.
        agent: The agent whose calls wait (the run's, or a handoff target on its path).
        depth: How deep that agent runs (0: the run's own; one more per handoff).
        new: The `ApprovalDecided` events to record (none: every decision was recorded already).
        resolved: The events a resume streams for the decisions it recorded.
    """

    __slots__ = ("agent", "depth", "new", "paused", "resolved")

    def __init__(self, paused: PausedRun, agent: LlmAgent[Any, Any], depth: int) -> None:
        self.paused = paused
        self.agent = agent
        self.depth = depth
        self.new: list[ApprovalDecided] = []
        self.resolved: list[ApprovalResolved] = []

    @property
    def ready(self) -> bool:
        """Whether every open request is decided: the run goes on."""
        decided = {d.request_id for d in self.new} | set(self.paused.decided)
        return all(request_id in decided for request_id in self.paused.requests)

    def still_open(self) -> tuple[PendingApproval, ...]:
        """The requests that still wait for a decision once the new ones are recorded."""
        decided = {d.request_id for d in self.new} | set(self.paused.decided)
        return tuple(r.pending() for rid, r in self.paused.requests.items() if rid not in decided)

    def point(self, messages: Sequence[Item]) -> ResumePoint:
        """Where the run goes on from, given the session's conversation (`snapshot().messages`)."""
        paused = self.paused
        calls = tuple(ToolCall(call_id=c.call_id, name=c.name, args=c.args) for c in paused.calls)
        ids = {call.call_id for call in calls}
        # The turn's results are added back in call order by the resumed step.
        conversation = tuple(m for m in messages if not (isinstance(m, ToolResult) and m.call_id in ids))
        done = {call_id: returned_outcome(returned) for call_id, returned in paused.returned.items()}
        decisions = {d.request_id: d for d in (*paused.decided.values(), *self.new)}
        turn = _Turn(calls, conversation, done, paused.turn, paused.usage)
        return _point(turn, list(paused.requests.values()), decisions, paused.sub_runs)


class _Turn:
    """A paused turn: its calls, the conversation before their results, the results in, its number, usage."""

    __slots__ = ("calls", "conversation", "done", "number", "usage")

    def __init__(
        self,
        calls: tuple[ToolCall, ...],
        conversation: tuple[Item, ...],
        done: dict[str, ToolCallOutcome],
        number: int,
        usage: TokenUsage,
    ) -> None:
        self.calls = calls
        self.conversation = conversation
        self.done = done
        self.number = number
        self.usage = usage


def _point(
    turn: _Turn,
    requests: list[ApprovalPending],
    decisions: Mapping[str, ApprovalDecided],
    sub_runs: Mapping[tuple[str, ...], SubRunPaused],
) -> ResumePoint:
    """The resume point of a paused turn whose `requests` (their `via` relative to it) are all decided.

    A request reached through an agent called as a tool makes that call go on with the
    sub-agent's run: its own point, built the same way from what the log kept of it.
    """
    decided: dict[str, Decided] = {}
    nested: dict[str, list[ApprovalPending]] = {}
    for request in requests:
        if request.via:
            nested.setdefault(request.via[0], []).append(request)
            continue
        decision = decisions[request.request_id]
        if decision.decision == "deny":
            decided[request.call_id] = Decided(kind="deny", reason=decision.reason)
        else:
            args = decision.args if decision.decision == "edit" else request.args
            decided[request.call_id] = Decided(kind="run", args=args)
    for call_id, inner in nested.items():
        sub = sub_runs[(call_id,)]
        inner_requests = [dataclasses.replace(r, via=r.via[1:]) for r in inner]
        inner_subs = {via[1:]: s for via, s in sub_runs.items() if via[0] == call_id and len(via) > 1}
        point = _point(_sub_turn(sub, inner_requests[0].run_call), inner_requests, decisions, inner_subs)
        decided[call_id] = Decided(kind="resume", sub=SubResume(agent=sub.agent, point=point))
    state = NeedsApproval(
        calls=turn.calls, pending=tuple(r.pending() for r in requests), turn=turn.number, usage=turn.usage
    )
    return ResumePoint(state=state, conversation=turn.conversation, done=turn.done, decided=decided)


def _sub_turn(sub: SubRunPaused, call_id: str) -> _Turn:
    """The paused turn of a sub-agent's run, from the conversation the log kept of it."""
    messages = sub.messages
    at = next(i for i in range(len(messages) - 1, -1, -1) if _is_call(messages[i], call_id))
    first = last = at
    while first > 0 and isinstance(messages[first - 1], ToolCall):
        first -= 1
    while last + 1 < len(messages) and isinstance(messages[last + 1], ToolCall):
        last += 1
    calls = tuple(m for m in messages[first : last + 1] if isinstance(m, ToolCall))
    ids = {call.call_id for call in calls}
    done: dict[str, ToolCallOutcome] = {}
    for message in messages[last + 1 :]:
        if isinstance(message, ToolResult) and message.call_id in ids:
            status: ToolStatus = "error" if message.is_error else "ok"
            done[message.call_id] = ToolCallOutcome(
                call_id=message.call_id, name=message.name or "", content=message.content, status=status
            )
    conversation = tuple(m for m in messages if not (isinstance(m, ToolResult) and m.call_id in ids))
    answers = 0
    for index in range(first):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            answers += 1
        elif isinstance(message, ToolCall) and not isinstance(
            messages[index - 1], AssistantMessage | ToolCall
        ):
            answers += 1  # an answer of calls only
    own_message = first > 0 and isinstance(messages[first - 1], AssistantMessage)
    return _Turn(calls, conversation, done, answers - 1 if own_message else answers, sub.usage)


def _is_call(message: Item, call_id: str) -> bool:
    return isinstance(message, ToolCall) and message.call_id == call_id


def returned_outcome(returned: ToolReturned) -> ToolCallOutcome:
    """The outcome of a call of a stopped turn that returned before it stopped."""
    return ToolCallOutcome(
        call_id=returned.call_id,
        name=returned.name or "",
        content=returned.content,
        status="error" if returned.is_error else "ok",
        metadata=returned.metadata,
    )


def plan_resume(
    paused: PausedRun | None,
    root: Agent[Any, Any],
    decisions: Mapping[str, Decision],
    *,
    deny_rest: bool = False,
    by: Approver = None,
    now: float | None = None,
) -> ResumePlan:
    """Check `decisions` against the paused run and the agents; what to record and run.

    `deny_rest` denies every open request left without a decision. `now` (POSIX time) is
    when expiry is judged (default: now).

    Raises:
        ApprovalError: A check failed (the subclass says which); nothing is to be recorded.
        UserError: A decision is not an `Approve`, `Deny` or `Edit`, or `by` is not JSON.
    """
    if paused is None:
        raise NothingToResume(
            "the session has no paused run: nothing waits for a decision (never paused, or resumed already)"
        )
    _check_by(by)
    agent, depth = agent_on_path(root, paused.agent_path)
    for request in paused.requests.values():  # a sub-agent's request goes on with its run: the log has it
        for depth_in in range(1, len(request.via) + 1):
            if request.via[:depth_in] not in paused.sub_runs:
                raise ApprovalTargetMissing(
                    f"request {request.request_id!r}: the log holds no paused run of the sub-agent it "
                    f"is reached through ({' -> '.join(request.agent_path)})",
                    request.request_id,
                )
    plan = ResumePlan(paused, agent, depth)
    when = time.time() if now is None else now
    for request_id, decision in decisions.items():
        request = _open_request(paused, request_id)
        if not isinstance(decision, Approve | Deny | Edit):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"decisions[{request_id!r}] is {decision!r}: give Approve(), Deny(reason) or Edit(args)"
            )
        recorded = _checked(plan, request, decision, by, when)
        if recorded is not None:
            plan.new.append(recorded)
    for request in paused.undecided():
        if request.request_id in decisions:
            continue
        pending = request.pending()
        if pending.on_expire == "deny" and pending.expired(when):
            reason = f"the approval expired at {pending.expires_at:%Y-%m-%d %H:%M:%S} UTC"
            plan.new.append(_denial(request, reason, EXPIRED_BY))
        elif deny_rest:
            plan.new.append(_denial(request, "denied with the rest of the run's requests", by))
    for decided in plan.new:
        request = paused.requests[decided.request_id]
        plan.resolved.append(
            ApprovalResolved(
                request_id=decided.request_id,
                call_id=request.call_id,
                tool=request.tool,
                decision=decided.decision,
                reason=decided.reason,
                by=decided.by,
            )
        )
    return plan


def _check_by(by: Approver) -> None:
    if by is not None and not isinstance(by, str | dict):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"resume(by={by!r}): give who decided as a string or a small mapping")
    try:
        canonical_json(by)
    except UserError:
        raise UserError(
            f"resume(by={by!r}): who decided must be JSON (strings, numbers, lists, mappings)"
        ) from None


def agent_on_path(root: Agent[Any, Any], path: tuple[str, ...]) -> tuple[LlmAgent[Any, Any], int]:
    """The agent at the end of `path`: `root`, then the handoff target named at each step."""
    if not path or root.name != path[0]:
        raise ApprovalTargetMissing(
            f"the run paused in agent {path[0] if path else '?'!r}, not {root.name!r}: resume it with the "
            "agent it was run with"
        )
    agent: Any = root
    for name in path[1:]:
        handoffs: Sequence[Any] = getattr(agent, "handoffs", ())
        target = next((h.agent for h in handoffs if h.target == name), None)
        if target is None:
            raise ApprovalTargetMissing(
                f"the run paused in {name!r}, which {agent.name!r} hands off to no longer "
                f"(agent path {' -> '.join(path)})"
            )
        agent = target
    if not hasattr(agent, "tools_by_name"):
        raise ApprovalTargetMissing(f"the run paused in {agent.name!r}, which is not an LlmAgent now")
    return agent, len(path) - 1


def _open_request(paused: PausedRun, request_id: str) -> ApprovalPending:
    request = paused.requests.get(request_id)
    if request is not None:
        return request
    if request_id in paused.settled:
        raise ApprovalAlreadyDecided(
            f"request {request_id!r} was decided and its call has run: it takes no other decision", request_id
        )
    waiting = ", ".join(paused.requests) or "none"
    raise UnknownApprovalRequest(
        f"the paused run has no request {request_id!r} (it waits on: {waiting})", request_id
    )


def _checked(
    plan: ResumePlan, request: ApprovalPending, decision: Decision, by: Approver, when: float
) -> ApprovalDecided | None:
    """The `ApprovalDecided` to record for `decision`; None when it is recorded already."""
    request_id = request.request_id
    if args_digest(request.args) != request.args_digest:
        raise ApprovalDigestMismatch(
            f"request {request_id!r}: the log's arguments no longer match the digest recorded with them; "
            "the log was altered, so nothing runs",
            request_id,
        )
    if decision.digest is not None and decision.digest != request.args_digest:
        raise ApprovalDigestMismatch(
            f"request {request_id!r}: the decision is for arguments with digest {decision.digest}, "
            f"but the call waits with {request.args_digest}",
            request_id,
        )
    pending = request.pending()
    if isinstance(decision, Edit):
        args = decision.args
        recorded = ApprovalDecided(
            request_id=request_id,
            decision="edit",
            args_digest=_edited_digest(request, args),
            args=args,
            by=by,
        )
    elif isinstance(decision, Deny):
        recorded = _denial(request, decision.reason, by)
    else:
        recorded = ApprovalDecided(
            request_id=request_id, decision="approve", args_digest=request.args_digest, by=by
        )
    earlier = plan.paused.decided.get(request_id)
    if earlier is not None:
        if _same(earlier, recorded):
            return None  # a retry of the very decision: recorded already
        raise ApprovalAlreadyDecided(
            f"request {request_id!r} was decided already ({earlier.decision}, by {earlier.by!r}); "
            f"this {recorded.decision} is refused",
            request_id,
        )
    if pending.on_expire == "deny" and pending.expired(when):
        raise ApprovalExpired(
            f"request {request_id!r} expired at {pending.expires_at:%Y-%m-%d %H:%M:%S} UTC and is denied; "
            "resume without a decision for it",
            request_id,
        )
    if recorded.decision != "deny":
        _check_tool(_agent_of(plan, request), request, recorded)
    return recorded


def _agent_of(plan: ResumePlan, request: ApprovalPending) -> LlmAgent[Any, Any]:
    """The agent whose tool `request` is for: the paused turn's, or a sub-agent it calls as a tool.

    Each sub-agent on the way must still be there, as an agent tool of the one before it.
    """
    agent: Any = plan.agent
    names = request.agent_path[len(request.agent_path) - len(request.via) :]
    for name in names:
        tools: dict[str, Any] = getattr(agent, "tools_by_name", {})
        inner = next(
            (t.agent for t in tools.values() if getattr(getattr(t, "agent", None), "name", None) == name),
            None,
        )
        if inner is None or not hasattr(inner, "tools_by_name"):
            raise ApprovalTargetMissing(
                f"request {request.request_id!r}: agent {agent.name!r} no longer calls {name!r} as a tool "
                f"(agent path {' -> '.join(request.agent_path)})",
                request.request_id,
            )
        agent = inner
    return agent


def _edited_digest(request: ApprovalPending, args: object) -> str:
    try:
        return args_digest(args)  # pyright: ignore[reportArgumentType]
    except UserError as exc:
        raise InvalidEditedArgs(f"request {request.request_id!r}: {exc}", request.request_id) from None


def _check_tool(agent: LlmAgent[Any, Any], request: ApprovalPending, decided: ApprovalDecided) -> None:
    """The call's tool exists with the schema it had; an edit's arguments fit it."""
    request_id = request.request_id
    tool: Tool[Any] | None = agent.tools_by_name.get(request.tool)
    if tool is None:
        if agent.tool_sources:
            return  # its tools come at run time: a call of a tool gone gets an error result, it runs nothing
        raise ApprovalTargetMissing(
            f"request {request_id!r}: agent {agent.name!r} has no tool {request.tool!r} now", request_id
        )
    if request.tool_digest and schema_digest(request.tool, tool.schema) != request.tool_digest:
        raise ApprovalToolChanged(
            f"request {request_id!r}: the schema of {request.tool!r} changed since the run paused; the "
            "approval was given for another tool, so nothing runs",
            request_id,
        )
    if decided.decision != "edit":
        return
    validate = getattr(tool, "validate_args", None)
    args = decided.args
    try:
        if callable(validate):
            validate(args)
        elif not isinstance(args, dict):
            raise InvalidArgs([f"the arguments must be an object, not {type(args).__name__}"])
    except InvalidArgs as exc:
        raise InvalidEditedArgs(
            f"request {request_id!r}: the edited arguments do not fit {request.tool!r}: {exc}", request_id
        ) from None


def _denial(request: ApprovalPending, reason: str, by: Approver) -> ApprovalDecided:
    return ApprovalDecided(
        request_id=request.request_id, decision="deny", args_digest=request.args_digest, reason=reason, by=by
    )


def _same(a: ApprovalDecided, b: ApprovalDecided) -> bool:
    return (a.decision, a.args_digest, a.reason, a.by) == (b.decision, b.args_digest, b.reason, b.by)


def resumed_run(
    agent: LlmAgent[Any, Any],
    depth: int,
    resolved: Sequence[ApprovalResolved],
    point: ResumePoint,
    config: RunConfig,
) -> Go:
    """The resumed run: the decisions recorded streamed (`resolved`), then `agent` goes on from `point`."""

    async def go(ctx: RunContext[Any], recording: EventSink) -> None:
        from ..run.driver import resume  # here: a session runner loads the driver with its first resume

        for event in resolved:
            await recording.put(event)
        for _ in range(depth):  # a handoff target runs as deep as it did
            ctx = ctx.child()
        await resume(agent, ctx, point, config, recording)

    return go


async def record_decisions(session: Session, decided: list[ApprovalDecided], end: int) -> bool:
    """Append the decisions where the log ends at `end`; False when another writer came first.

    Each decision's id names its request, so a retried write stores it once, and a second,
    other decision for the request can never be stored beside it.
    """
    if not session.supports_ids:
        await session.append(decided)
        return True
    try:
        await session.append(decided, ids=[f"decision:{d.request_id}" for d in decided], expected_seq=end)
    except SessionConflict:
        return False
    return True


__all__ = [
    "EXPIRED_BY",
    "Go",
    "ResumePlan",
    "agent_on_path",
    "plan_resume",
    "record_decisions",
    "resumed_run",
    "returned_outcome",
]
