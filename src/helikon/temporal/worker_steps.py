"""`WorkerSteps`: the worker's side of a durable run, each step's session writes and the step itself.

A step records what the workflow passed it (`pending`: the model's calls, its answer) with
a `SessionRecorder`, as an in-process durable run records its stream, then does its own
work where the agent, its tools and the session live: the model step reads the
conversation from the session and makes the call as the in-process driver does
(`helikon.core.run.driver.model_step`); a tool step stores the batch's calls and its
`ToolsStarted` marker, runs its call (`tool_step`: hooks, permissions, redaction) and
stores the result. Every write carries ids made from the run, the step and the call, so
an activity that Temporal retries writes nothing twice, and a tool step retried after its
result was stored returns that result instead of running the tool again.

What goes back into Temporal's history is small: a tool's result longer than
`inline_limit` bytes comes back as a digest of what the session stored.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from helikon.core.context import RunConfig, RunContext
from helikon.core.events import AgentError, AgentEvent, ModelFallback, RequestSent, ToolOutputItem
from helikon.core.exceptions import UserError
from helikon.core.governance.settings import Governance
from helikon.core.items import ContentPart, TextPart, ToolResult
from helikon.core.loop import (
    ModelResponse,
    OutputChecked,
    OutputRetry,
    ToolCallOutcome,
    TransitionInput,
    model_request,
)
from helikon.core.run.steps import (
    handoff_step,
    model_step,
    output_check_step,
    output_guard_step,
    run_complete_step,
    run_start_step,
    tool_step,
)
from helikon.core.run.transition_ctx import transition_ctx
from helikon.core.session import (
    ApprovalPending,
    RequestHeader,
    Rewound,
    SequenceId,
    Session,
    SessionEntry,
    SessionEvent,
    ToolCalled,
    ToolReturned,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
)
from helikon.core.session.paused import read_paused
from helikon.core.session.recorder import INTERRUPTED_TOOL_TEXT, SessionRecorder
from helikon.core.session.resume import plan_resume, record_decisions

from .refs import (
    CheckTurn,
    CloseRun,
    DecideAnswer,
    DecideTurn,
    Guarded,
    GuardTurn,
    HandoffTurn,
    ModelTurn,
    Opened,
    Resumed,
    ResumeTurn,
    RunRef,
    RunSpec,
    StepFailed,
    ToolAnswer,
    ToolTurn,
)

if TYPE_CHECKING:
    from helikon.core.agent import LlmAgent

SessionSource = Callable[[str], Session | Awaitable[Session]]
"""How a worker opens a run's session by its id."""

ContextFactory = Callable[[RunRef, Session], RunContext[Any] | Awaitable[RunContext[Any]]]
"""How a worker makes a run's context (its session given), e.g. from `RunRef.ctx_seed`."""

INLINE_LIMIT = 1024
"""A tool result up to this many bytes goes into history as it is; a longer one as its digest."""


class _SessionBusy(Exception):
    """Another run has its turn open on the session: the open step is retried until it closes."""


class WorkerSteps:
    """The step functions a worker serves: `open_run`, `call_model`, `invoke_tool`, `close_run`.

    Args:
        agents: The agents by name (what a `RunRef.agent` names).
        sessions: Opens a session by id (a store the client reads too).
        contexts: Makes a run's context; default: a plain context on the session.
        config: The runs' `RunConfig` (limits, `parallel_tool_call_limit`).
        inline_limit: See `INLINE_LIMIT`.
        posture: The governance every step runs under, whatever context the factory made
            (permission mode, rules, policy, approval handler, guards, redaction, secrets).
    """

    __slots__ = ("_headers", "agents", "config", "contexts", "inline_limit", "posture", "sessions")

    def __init__(
        self,
        agents: Mapping[str, LlmAgent[Any, Any]],
        sessions: SessionSource,
        *,
        contexts: ContextFactory | None = None,
        config: RunConfig | None = None,
        inline_limit: int = INLINE_LIMIT,
        posture: Governance[Any] | None = None,
    ) -> None:
        self.agents = dict(agents)
        self.posture = posture
        self._headers = _Headers()
        self.sessions = sessions
        self.contexts = contexts
        self.config = config or RunConfig()
        self.inline_limit = inline_limit

    # --- the steps ---------------------------------------------------------------------------

    async def open_run(self, spec: RunSpec) -> Opened:
        """Open the run's turn and record its input, once the session has no other open turn.

        The run's context is made first: a ctx seed its factory refuses fails the run here,
        before anything is written (a `UserError`, never retried). Then, the turn open, the
        `on_run_start` hooks and the input guardrails decide whether the run goes on.
        """
        run = spec.run
        agent = self.agent(run)  # a run of an agent this worker does not serve fails before it writes
        session = await self.session(run)
        try:
            ctx, config = await self.run_parts(run, session)
        except Exception as exc:
            raise UserError(
                f"the worker's context factory failed on the run's ctx seed {run.ctx_seed!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        entries = await session.events()
        opened = _open_turn(entries)
        if opened is not None and opened != run.run_id:
            raise _SessionBusy(f"run {opened} has its turn open on session {run.session_id}; waiting for it")
        recorder = SessionRecorder(spec.input, turn=TurnOpened(run_id=run.run_id, agent=run.agent))
        end = int(entries[-1].seq) if entries else -1
        events = recorder.take()
        ids = _ids(run, 0, len(events))
        if opened != run.run_id:  # (a retried open whose first attempt went through has it)
            await session.append(events, ids=ids, expected_seq=end)
        checked = await run_start_step(agent, ctx, config, spec.input)
        if isinstance(checked, AgentError):
            return Opened(failed=StepFailed(error=checked))
        return Opened(refused=checked)

    async def check_output(self, turn: CheckTurn) -> OutputChecked | OutputRetry | StepFailed:
        """The agent's output validators on the final output."""
        agent, session = self.agent(turn.run), await self.session(turn.run)
        ctx, config = await self.run_parts(turn.run, session)
        checked = await output_check_step(agent, ctx, config, turn.state)
        return StepFailed(error=checked) if isinstance(checked, AgentError) else checked

    async def guard_output(self, turn: GuardTurn) -> Guarded:
        """The agent's output guardrails on the final answer."""
        agent, session = self.agent(turn.run), await self.session(turn.run)
        ctx, config = await self.run_parts(turn.run, session)
        verdict = await output_guard_step(agent, ctx, config, turn.state)
        return (
            Guarded(failed=StepFailed(error=verdict))
            if isinstance(verdict, AgentError)
            else Guarded(events=verdict)
        )

    async def hand_off(self, turn: HandoffTurn) -> TransitionInput | StepFailed:
        """Whether the transfer goes ahead (its arguments, the `on_handoff` hooks and callback)."""
        agent, session = self.agent(turn.run), await self.session(turn.run)
        ctx, config = await self.run_parts(turn.run, session)
        decided = await handoff_step(agent, ctx, config, turn.state)
        return StepFailed(error=decided) if isinstance(decided, AgentError) else decided

    async def call_model(self, turn: ModelTurn) -> ModelResponse | Any:
        """Record `turn.pending`, then make the turn's model call from the session's conversation."""
        run = turn.run
        agent, session = self.agent(run), await self.session(run)
        recorder = SessionRecorder(
            last_header=await self._headers.latest(run.session_id, session), usage=turn.usage
        )
        for event in turn.pending:
            recorder.observe(event)
        recorded = recorder.take()
        if recorded:
            await session.append(recorded, ids=_ids(run, turn.step, len(recorded)))
        ctx, config = await self.run_parts(run, session)
        conversation = (await session.snapshot()).messages
        tctx = transition_ctx(agent, config, (), ctx.agent_depth)
        request = model_request(tctx, conversation, structured=turn.structured)
        sent = _Sent()
        streamed = _Kept()
        settled = await model_step(agent, ctx.with_observer(sent), config, request, turn.turn, streamed)
        for event in streamed.events:
            recorder.observe(event)
        if sent.request is not None:
            recorder.request_sent(sent.request)
        after = recorder.take()
        if after:
            await session.append(after, ids=_ids(run, turn.step, len(after), "m"))
        if isinstance(settled, AgentError):
            return StepFailed(error=settled)
        return settled

    async def invoke_tool(self, turn: ToolTurn, attempt: int = 1) -> ToolAnswer:
        """Store the batch's calls and marker, run `turn.call`, store its result (once, across retries)."""
        run, call = turn.run, turn.call
        agent, session = self.agent(run), await self.session(run)
        result_id = f"{run.run_id}:{turn.step}:r:{call.call_id}"
        if attempt > 1:
            stored = _stored_result(await session.events(), turn.batch, call.call_id)
            if stored is not None:
                return ToolAnswer(outcome=self._digest(_outcome_of(stored, call.name), result_id))
        recorder = SessionRecorder(usage=turn.usage)
        for event in turn.pending:
            recorder.observe(event)
        opening: list[SessionEvent] = [*recorder.take(), ToolsStarted(call_ids=turn.batch)]
        await session.append(opening, ids=_ids(run, turn.step, len(opening)))
        ctx, config = await self.run_parts(run, session)
        outcome = await tool_step(agent, ctx, config, call, _discard, turn.decided)
        if isinstance(outcome, AgentError):
            return ToolAnswer(failed=StepFailed(error=outcome))
        if not outcome.pending:  # a call waiting for a person has no result yet
            recorder.returned(ToolOutputItem(item=outcome.to_result(), metadata=outcome.metadata))
            await session.append(recorder.take(), ids=[result_id])
        return ToolAnswer(outcome=self._digest(outcome, result_id))

    async def decide(self, turn: DecideTurn) -> DecideAnswer:
        """Check `turn.request`'s decisions against the paused run, as in process; record them.

        Raises the `ApprovalError` of a decision that fails its checks, before anything is
        recorded (`helikon.core.session.resume.plan_resume`).
        """
        run, request = turn.run, turn.request
        agent, session = self.agent(run), await self.session(run)
        entries = await session.events()
        plan = plan_resume(
            read_paused(entries), agent, request.decisions, deny_rest=request.deny_rest, by=request.by
        )
        end = int(entries[-1].seq) if entries else -1
        if plan.new and not await record_decisions(session, plan.new, end):
            raise _SessionBusy(
                f"another writer appended to session {run.session_id} meanwhile; deciding again"
            )
        return DecideAnswer(resolved=tuple(plan.resolved), ready=plan.ready, still_open=plan.still_open())

    async def resume_run(self, turn: ResumeTurn) -> Resumed:
        """Open the turn that goes on with the paused run (every request decided); where it goes on from."""
        run = turn.run
        agent, session = self.agent(run), await self.session(run)
        entries = await session.events()
        plan = plan_resume(read_paused(entries), agent, {})
        if not plan.ready:
            still = ", ".join(p.request_id for p in plan.still_open())
            raise UserError(f"the paused run still waits for decisions on {still}")
        point = plan.point((await session.snapshot()).messages)
        if _turn_state(entries, turn.run_id) == "absent":
            opened = TurnOpened(run_id=turn.run_id, agent=plan.agent.name, resumes=plan.paused.run_id or None)
            await session.append([opened], ids=[f"{turn.run_id}:open:0"], expected_seq=int(entries[-1].seq))
        done = {
            call_id: self._digest(outcome, f"{call_id} (before the pause)")
            for call_id, outcome in point.done.items()
        }
        light = replace(point, conversation=(), done=done)
        return Resumed(point=light, agent=plan.agent.name, depth=plan.depth)

    async def close_run(self, close: CloseRun) -> None:
        """Record `close.pending`, answer the calls left without a result, close the turn.

        As the in-process recorder's `drain` does: a call stored earlier whose result never
        came (a failed or cancelled batch), then one `pending` holds, gets an error result
        saying it was interrupted. The close is one write: a retried close finds it stored.
        """
        run = close.run
        session = await self.session(run)
        entries = await session.events()
        if _turn_state(entries, run.run_id) != "open":
            return  # never opened (cancelled first), or closed by an earlier attempt
        recorder = SessionRecorder(usage=close.usage)
        for event in close.pending:
            recorder.observe(event)
        if recorder.refused:  # an input guardrail refused it: out of the conversation (the log keeps it)
            opened = next(
                e.seq for e in entries if type(e.event) is TurnOpened and e.event.run_id == run.run_id
            )
            events: list[SessionEvent] = [
                Rewound(to_seq=int(opened) - 1),
                TurnClosed(run_id=run.run_id, outcome="refused"),
            ]
        else:
            recorded = recorder.take()
            text = (TextPart(text=INTERRUPTED_TOOL_TEXT),)
            logged = [*(entry.event for entry in entries), *recorded]  # a pause's requests answer their calls
            unanswered = [
                ToolReturned(call_id=call_id, content=text, is_error=True, name=name)
                for call_id, name in _unanswered(logged, run.run_id).items()
                if not any(type(e) is ToolCalled and e.call_id == call_id for e in recorded)
            ]
            closed = TurnClosed(run_id=run.run_id, outcome=close.outcome)  # pyright: ignore[reportArgumentType]
            events = [*recorded, *unanswered, *recorder.drain(), closed]
        await session.append(events, ids=_ids(run, close.step, len(events)))
        if close.started:
            ctx, config = await self.run_parts(run, session)
            await run_complete_step(self.agent(run), ctx, config)

    # --- what the steps share ----------------------------------------------------------------

    def agent(self, run: RunRef) -> LlmAgent[Any, Any]:
        """The agent `run` names; a `UserError` if this worker does not serve it."""
        agent = self.agents.get(run.agent)
        if agent is None:
            known = ", ".join(sorted(self.agents)) or "none"
            raise UserError(f"this worker serves no agent named {run.agent!r} (it serves: {known})")
        return agent

    async def session(self, run: RunRef) -> Session:
        """The session `run` is recorded in."""
        opened = self.sessions(run.session_id)
        return opened if isinstance(opened, Session) else await opened  # pyright: ignore[reportUnnecessaryIsInstance]

    async def run_parts(self, run: RunRef, session: Session) -> tuple[RunContext[Any], RunConfig]:
        """The run's context (on `session`, under the worker's posture) and config."""
        config = self.config
        if run.max_turns is not None:
            config = replace(config, max_turns=run.max_turns)
        if self.contexts is None:
            ctx: RunContext[Any] = RunContext.ephemeral(None)
        else:
            made = self.contexts(run, session)
            ctx = made if isinstance(made, RunContext) else await made
        ctx = ctx.with_session(session)
        return (ctx if self.posture is None else ctx.with_governance(self.posture)), config

    def _digest(self, outcome: ToolCallOutcome, stored_as: str) -> ToolCallOutcome:
        """`outcome` as history keeps it: a long result as its digest, no metadata (the session has both)."""
        size = _size(outcome.content)
        if size <= self.inline_limit:
            return outcome if outcome.metadata is None else replace(outcome, metadata=None)
        digest = hashlib.sha256(_encoded(outcome.content)).hexdigest()
        note = f"[{size} bytes stored in the session as {stored_as}, sha256 {digest}]"
        head = "" if outcome.status == "ok" else ToolResult(call_id="", content=outcome.content).text[:512]
        content: tuple[ContentPart, ...] = (TextPart(text=f"{head} {note}".strip()),)
        return replace(outcome, content=content, metadata=None)


class _Headers:
    """The latest `RequestHeader` of the sessions this worker's model steps ran on.

    A model step compares its request with the session's latest header (a new one is logged
    only when it differs): read from where the last step on the session stopped reading, not
    the whole log each turn. Kept for the most recently used sessions only.
    """

    __slots__ = ("_known",)

    _MAX = 256

    def __init__(self) -> None:
        self._known: OrderedDict[str, tuple[SequenceId, RequestHeader | None]] = OrderedDict()

    async def latest(self, session_id: str, session: Session) -> RequestHeader | None:
        """The latest header in `session`'s log (None: it has none)."""
        known = self._known.pop(session_id, None)
        entries = await session.events(None if known is None else known[0])
        header = known[1] if known is not None else None
        header = _last_header(entries) or header
        if entries:
            self._known[session_id] = (entries[-1].seq, header)
        elif known is not None:
            self._known[session_id] = known
        while len(self._known) > self._MAX:
            self._known.popitem(last=False)
        return header


class _Sent:
    """The model step's observer: keeps what the call was sent (its request record)."""

    __slots__ = ("request",)

    def __init__(self) -> None:
        self.request: RequestSent | None = None

    def request_sent(self, sent: RequestSent) -> None:
        self.request = sent

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        return None

    async def tool_returned(self, output: ToolOutputItem) -> None:
        return None


class _Kept:
    """The model step's sink: the deltas are dropped, what the session records is kept."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def put(self, event: AgentEvent) -> None:
        if type(event) is ModelFallback:
            self.events.append(event)


def _discard(event: AgentEvent) -> None:
    return None


def _ids(run: RunRef, step: int, count: int, part: str = "") -> list[str]:
    """The ids of `count` events a step writes: the run, the step, their place."""
    return [f"{run.run_id}:{step}:{part}{n}" for n in range(count)]


def _open_turn(entries: Sequence[SessionEntry]) -> str | None:
    """The run id of the session's open turn, if its last turn is open."""
    for entry in reversed(entries):
        event = entry.event
        if isinstance(event, TurnClosed):
            return None
        if isinstance(event, TurnOpened):
            return event.run_id
    return None


def _turn_state(entries: Sequence[SessionEntry], run_id: str) -> str:
    """Whether run `run_id`'s turn is `"open"`, `"closed"`, or `"absent"` from the log."""
    state = "absent"
    for entry in entries:
        event = entry.event
        if isinstance(event, TurnOpened | TurnClosed) and event.run_id == run_id:
            state = "open" if isinstance(event, TurnOpened) else "closed"
    return state


def _unanswered(events: Sequence[SessionEvent], run_id: str) -> dict[str, str]:
    """The calls run `run_id` logged without a result (nor a pending approval), in the order logged."""
    calls: dict[str, str] = {}
    ours = False
    for event in events:
        if isinstance(event, TurnOpened):
            ours = event.run_id == run_id
        elif not ours:
            continue
        elif isinstance(event, ToolCalled):
            calls[event.call_id] = event.name
        elif isinstance(event, ToolReturned):
            calls.pop(event.call_id, None)
        elif isinstance(event, ApprovalPending):
            calls.pop(event.run_call, None)
    return calls


def _last_header(entries: Sequence[SessionEntry]) -> RequestHeader | None:
    for entry in reversed(entries):
        if type(entry.event) is RequestHeader:
            return entry.event
    return None


def _stored_result(
    entries: Sequence[SessionEntry], batch: tuple[str, ...], call_id: str
) -> ToolReturned | None:
    """The result of `call_id` stored after its batch's last `ToolsStarted` marker, if any."""
    for entry in reversed(entries):
        event = entry.event
        if type(event) is ToolReturned and event.call_id == call_id:
            return event
        if type(event) is ToolsStarted and event.call_ids == batch:
            return None
    return None


def _outcome_of(stored: ToolReturned, name: str) -> ToolCallOutcome:
    status = "error" if stored.is_error else "ok"
    return ToolCallOutcome(
        call_id=stored.call_id, name=stored.name or name, content=stored.content, status=status
    )


def _encoded(content: tuple[ContentPart, ...]) -> bytes:
    from helikon.core.items import ITEM_ADAPTER

    return ITEM_ADAPTER.dump_json(ToolResult(call_id="", content=content))


def _size(content: tuple[ContentPart, ...]) -> int:
    if all(isinstance(part, TextPart) for part in content):
        return sum(len(part.text.encode()) for part in content if isinstance(part, TextPart))
    return len(_encoded(content))


__all__ = ["INLINE_LIMIT", "ContextFactory", "SessionSource", "WorkerSteps"]
