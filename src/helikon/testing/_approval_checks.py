"""Conformance checks for runs that pause for approval and resume from the session alone.

A backend must keep what a paused run leaves in its log exactly (the arguments a decision
is bound to by their digest), hold one decision per request, and let another process (or
one started after a crash) resume the run from the session: the calls that ran before the
pause do not run again.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from typing import TYPE_CHECKING, Any

from helikon.core._internal.json_value import JsonValue
from helikon.core.approvals import Approve, Decision, Deny, Edit, args_digest
from helikon.core.exceptions import SessionConflict, UserError
from helikon.core.items import TextPart
from helikon.core.session import ApprovalDecided, ApprovalPending, ToolReturned

from ._conformance_util import close_session, new_id, read_log, require, run_worker, worker_argv
from ._mock_model import MockModel
from ._scripts import text_turn, tool_calls_turn

if TYPE_CHECKING:
    from helikon.core.agent import LlmAgent
    from helikon.core.session import Session

    from ._conformance_backend import ConformanceBackend

RAN: list[str] = []
"""What the clerk's tools did in this process."""

REFUNDS = {"c-7": 7, "c-8": 8, "c-9": 9}


def clerk(*scripts: Any, block: bool = False) -> LlmAgent[None, str]:
    """The agent of these checks: a lookup that runs at once, refunds that need approval.

    `scripts` are its model's turns; `block`: a refund never returns (the process is killed).
    """
    from helikon.core.agent import LlmAgent
    from helikon.core.tools import tool

    @tool(name="lookup")
    def lookup(order: int) -> str:
        """Look an order up."""
        RAN.append(f"lookup {order}")
        return f"order {order}: 12 EUR"

    @tool(name="refund", needs_approval=True)
    async def refund(order: int) -> str:
        """Refund an order."""
        RAN.append(f"refund {order}")
        if block:
            print(json.dumps({"started": order}), flush=True)
            await asyncio.Event().wait()  # until SIGKILL
        return f"refunded {order}"

    return LlmAgent[None, str](
        name="clerk", model=MockModel.with_scripts(list(scripts)), tools=[lookup, refund]
    )


def first_turn() -> Any:
    """The turn that pauses: a lookup and three refunds at once."""
    orders: list[tuple[str, int]] = [("lookup", 1), *(("refund", n) for n in REFUNDS.values())]
    calls: list[tuple[str, JsonValue]] = [(name, {"order": n}) for name, n in orders]
    return tool_calls_turn(calls, call_ids=["c-lookup", *REFUNDS])


def decisions_from(spec: dict[str, Any]) -> dict[str, Decision]:
    """Decisions from JSON: `{request_id: ["approve", digest] | ["deny", reason] | ["edit", args]}`."""
    out: dict[str, Decision] = {}
    for request_id, (kind, value) in spec.items():
        out[request_id] = (
            Approve(value) if kind == "approve" else Deny(value) if kind == "deny" else Edit(value)
        )
    return out


def report(result: Any, model: MockModel | None = None) -> str:
    """What a worker prints of a run: its status, what waits, what ran, its output, what the model saw."""
    pending = [
        {"request_id": p.request_id, "call_id": p.call_id, "args_digest": p.args_digest}
        for p in result.pending
    ]
    seen = [] if model is None or not model.requests else [m.type for m in model.requests[-1].messages]
    final = result.final_output if result.status == "completed" else None
    return json.dumps({"status": result.status, "pending": pending, "ran": RAN, "final": final, "seen": seen})


async def check_approval_events_round_trip_exactly(backend: ConformanceBackend) -> None:
    """A pending request's arguments come back as written: their digest still matches; decisions too."""
    args: Any = {
        "one": 1,
        "one_point_oh": 1.0,
        "big": 2**63 + 7,
        "negative": -12.5e-7,
        "\U0001d4b3 astral key": "\U0001f642 and \u00e9",
        "nested": [{"b": 1, "a": [True, None, "x"]}],
    }
    pending = ApprovalPending(
        request_id="apr_round",
        call_id="c1",
        tool="pay",
        agent_path=("a", "b"),
        args=args,
        args_digest=args_digest(args),
    )
    decided = ApprovalDecided(
        request_id="apr_round",
        decision="edit",
        args_digest=args_digest(args),
        args=args,
        by={"sub": "u_1", "n": 2},
    )
    session = await backend.open(new_id("approval-json"))
    try:
        await session.append([pending, decided])
        [first, second] = [entry.event for entry in await session.events()]
    finally:
        await close_session(session)
    require(
        first == pending and second == decided, f"approval events changed on the way: {first!r} {second!r}"
    )
    require(
        isinstance(first, ApprovalPending) and args_digest(first.args) == pending.args_digest,
        "the stored arguments no longer match their digest",
    )


async def check_one_decision_per_request(backend: ConformanceBackend) -> None:
    """A decision retried with its id is stored once; another decision for the request is never stored."""
    session = await backend.open(new_id("approval-once"))
    try:
        if not getattr(session, "supports_ids", False):
            return
        first = ApprovalDecided(request_id="apr_once", decision="approve", args_digest="sha256:1", by="ada")
        await session.append([first], ids=["decision:apr_once"])
        await session.append([first], ids=["decision:apr_once"])  # a retry
        other = ApprovalDecided(request_id="apr_once", decision="deny", args_digest="sha256:1", reason="no")
        try:
            await session.append([other], ids=["decision:apr_once"])
        except (UserError, SessionConflict):
            pass
        else:
            raise AssertionError("a second, other decision was stored under the first one's id")
        decided = [e.event for e in await session.events()]
    finally:
        await close_session(session)
    require(decided == [first], f"one decision per request: {decided}")


async def check_a_run_pauses_and_resumes_on_the_backend(backend: ConformanceBackend) -> None:
    """Pause, decide in parts, resume: the calls that ran before the pause never run again."""
    from helikon.core.context import RunContext
    from helikon.runtime import AsyncioRunner

    RAN.clear()
    session = await backend.open(new_id("approval-inproc"))
    try:
        agent = clerk(first_turn(), text_turn("All done."))
        ctx = RunContext.ephemeral(None).with_session(session)
        runner = AsyncioRunner[None]()
        paused = await runner.run(agent, "refund 7, 8 and 9", ctx)
        require(paused.status == "paused" and RAN == ["lookup 1"], f"the run paused after the lookup: {RAN}")
        seven, eight, nine = paused.pending
        partly = await runner.resume(agent, ctx, {seven.request_id: Approve(seven.args_digest)}, by="ada")
        require(
            partly.status == "paused" and len(partly.pending) == 2, "a partial decision keeps the run paused"
        )
        done = await runner.resume(
            agent, ctx, {eight.request_id: Deny("no"), nine.request_id: Edit({"order": 90})}, by="bob"
        )
        require(done.final_output == "All done.", f"the resumed run finished: {done.final_output!r}")
        require(RAN == ["lookup 1", "refund 7", "refund 90"], f"only the decided calls ran, once: {RAN}")
    finally:
        await close_session(session)


async def check_sub_agent_and_handoff_requests_resume(backend: ConformanceBackend) -> None:
    """A sub-agent called as a tool and a handoff target pause; each goes on where it stopped."""
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunContext
    from helikon.core.workflows.agent_tool import AgentAsTool
    from helikon.runtime import AsyncioRunner

    from ._scripts import handoff_turn, tool_call_turn

    RAN.clear()
    billing = clerk(first_turn(), text_turn("billing done"))  # named "clerk": the sub-agent
    calls: list[tuple[str, JsonValue]] = [("clerk", {"input": "refund"}), ("lookup", {"order": 2})]
    desk_model = MockModel.with_scripts(
        [tool_calls_turn(calls, call_ids=["c-clerk", "c-lookup"]), text_turn("ok")]
    )
    desk = LlmAgent[None, str](
        name="desk", model=desk_model, tools=[AgentAsTool(billing), *billing.tools[:1]]
    )
    runner = AsyncioRunner[None]()
    session = await backend.open(new_id("approval-nested"))
    try:
        ctx = RunContext.ephemeral(None).with_session(session)
        paused = await runner.run(desk, "refund", ctx)
        require(
            [p.agent_path for p in paused.pending] == [("desk", "clerk")] * 3,
            f"the sub-agent's requests name the way to it: {paused.pending}",
        )
        done = await runner.resume(desk, ctx, {p.request_id: Approve() for p in paused.pending})
        require(done.final_output == "ok", f"the caller finished: {done.final_output!r}")
        require(
            sorted(RAN) == ["lookup 1", "lookup 2", "refund 7", "refund 8", "refund 9"],
            f"every call ran once, the sub-agent's lookup not again: {RAN}",
        )
    finally:
        await close_session(session)
    RAN.clear()
    target = clerk(tool_call_turn("refund", {"order": 5}), text_turn("refunded 5"))
    triage = LlmAgent[None, str](
        name="triage", model=MockModel.with_scripts([handoff_turn(target)]), handoffs=[target]
    )
    session = await backend.open(new_id("approval-handoff"))
    try:
        ctx = RunContext.ephemeral(None).with_session(session)
        paused = await runner.run(triage, "refund 5", ctx)
        [request] = paused.pending
        require(request.agent_path == ("triage", "clerk"), f"the target's request: {request.agent_path}")
        done = await runner.resume(triage, ctx, {request.request_id: Approve()})
        require(done.final_output == "refunded 5" and RAN == ["refund 5"], f"the target went on: {RAN}")
    finally:
        await close_session(session)


async def check_decisions_fail_closed(backend: ConformanceBackend) -> None:
    """Every decision that cannot apply is refused with its error, and the log is left as it was.

    Expiry both ways: past it, a request that denies on expiry takes no decision (and a
    resume denies it), one kept open still takes one.
    """
    import time

    from helikon.core.agent import LlmAgent
    from helikon.core.approvals import (
        ApprovalAlreadyDecided,
        ApprovalDigestMismatch,
        ApprovalExpired,
        ApprovalTargetMissing,
        ApprovalToolChanged,
        InvalidEditedArgs,
        UnknownApprovalRequest,
    )
    from helikon.core.context import RunConfig, RunContext
    from helikon.core.tools import tool
    from helikon.runtime import AsyncioRunner

    RAN.clear()
    runner = AsyncioRunner[None]()
    session = await backend.open(new_id("approval-closed"))
    try:
        ctx = RunContext.ephemeral(None).with_session(session)
        agent = clerk(first_turn(), text_turn("All done."))
        seven = (await runner.run(agent, "refund", ctx)).pending[0]
        before = await session.events()

        @tool(name="refund", needs_approval=True)
        def refund(order: int, reason: str) -> str:
            """Refund an order, saying why."""
            return "refunded"

        lookup = agent.tools_by_name["lookup"]
        approve: dict[str, Decision] = {seven.request_id: Approve()}

        def as_clerk(*tools: Any) -> LlmAgent[None, str]:
            return LlmAgent[None, str](name="clerk", model=agent.model, tools=list(tools))

        cases: list[tuple[Any, dict[str, Decision], type[Exception]]] = [
            (agent, {"apr_unknown": Approve()}, UnknownApprovalRequest),
            (agent, {seven.request_id: Approve(args_digest({"order": 70}))}, ApprovalDigestMismatch),
            (agent, {seven.request_id: Edit({"order": "seven"})}, InvalidEditedArgs),
            (
                LlmAgent[None, str](name="other", model=agent.model, tools=list(agent.tools)),
                {},
                ApprovalTargetMissing,
            ),
            (as_clerk(lookup), approve, ApprovalTargetMissing),
            (as_clerk(lookup, refund), approve, ApprovalToolChanged),
        ]
        for who, decisions, error in cases:
            try:
                await runner.resume(who, ctx, decisions)
            except error:
                pass
            else:
                raise AssertionError(f"{decisions} with {who.name!r} was not refused with {error.__name__}")
            require(await session.events() == before, f"a refused resume ({error.__name__}) wrote to the log")
        await runner.resume(agent, ctx, {seven.request_id: Approve()})
        try:
            await runner.resume(agent, ctx, {seven.request_id: Deny("changed my mind")})
        except ApprovalAlreadyDecided:
            pass
        else:
            raise AssertionError("a second, other decision for a request was taken")
        require(len(await session.events()) == len(before) + 1, "only the first decision is in the log")
        require(RAN == ["lookup 1"], f"nothing ran while the run waited: {RAN}")
    finally:
        await close_session(session)
    session = await backend.open(new_id("approval-expired"))
    try:
        ctx = RunContext.ephemeral(None).with_session(session)
        agent = clerk(first_turn(), text_turn("All done."))
        short = RunConfig(approval_expires_after=0.01)
        pending = (await runner.run(agent, "refund", ctx, short)).pending
        deadline = max(p.expires or 0.0 for p in pending)
        await asyncio.sleep(max(deadline - time.time(), 0) + 0.01)  # past it, however slow the machine
        try:
            await runner.resume(agent, ctx, {pending[0].request_id: Approve()})
        except ApprovalExpired:
            pass
        else:
            raise AssertionError("a decision after expiry was taken")
        done = await runner.resume(agent, ctx, {})  # expired: denied, the run goes on
        require(
            done.final_output == "All done." and time.time() > (pending[0].expires or 0), "expired: denied"
        )
    finally:
        await close_session(session)
    session = await backend.open(new_id("approval-kept"))
    try:
        ctx = RunContext.ephemeral(None).with_session(session)
        agent = clerk(first_turn(), text_turn("All done."))
        kept = RunConfig(approval_expires_after=0.01, on_approval_expired="keep")
        pending = (await runner.run(agent, "refund", ctx, kept)).pending
        deadline = max(p.expires or 0.0 for p in pending)
        await asyncio.sleep(max(deadline - time.time(), 0) + 0.01)
        done = await runner.resume(agent, ctx, {p.request_id: Approve() for p in pending})
        require(done.final_output == "All done.", "a kept request takes its decision after its expiry")
    finally:
        await close_session(session)


async def check_a_paused_run_survives_compaction(backend: ConformanceBackend) -> None:
    """A run paused on a compacting session resumes after the log was compacted."""
    from helikon.core.context import RunContext
    from helikon.core.session.compaction import CompactingSession
    from helikon.runtime import AsyncioRunner

    RAN.clear()
    inner = await backend.open(new_id("approval-compacted"))
    try:
        summarizer = MockModel.with_scripts([text_turn("they talked")] * 4)
        session = CompactingSession(inner, summarizer, threshold=120, keep_recent_tokens=40)
        ctx = RunContext.ephemeral(None).with_session(session)
        agent = clerk(text_turn("a" * 300), first_turn(), text_turn("All done."))
        runner = AsyncioRunner[None]()
        await runner.run(agent, "first " * 60, ctx)
        paused = await runner.run(agent, "refund", ctx)
        await session.compact()
        require(any(e.event.type == "compacted" for e in await inner.events()), "the log was compacted")
        done = await runner.resume(agent, ctx, {p.request_id: Approve() for p in paused.pending})
        require(
            done.final_output == "All done.",
            f"the paused run went on after compaction: {done.final_output!r}",
        )
        require(sorted(RAN) == ["lookup 1", "refund 7", "refund 8", "refund 9"], f"each call ran once: {RAN}")
    finally:
        await close_session(inner)


async def check_a_paused_run_resumes_in_another_process(backend: ConformanceBackend) -> None:
    """Pause in one process; decide in parts from two others: each resumes from the session alone."""
    require(backend.opener is not None, "backend.opener is not None")
    sid = new_id("approval-procs")
    paused = json.loads(await run_worker(worker_argv(backend, sid, {"action": "pause_for_approval"})))
    require(
        paused["status"] == "paused" and paused["ran"] == ["lookup 1"], f"the first process paused: {paused}"
    )
    seven, eight, nine = paused["pending"]
    first = {seven["request_id"]: ["approve", seven["args_digest"]]}
    partly = json.loads(
        await run_worker(worker_argv(backend, sid, {"action": "resume_approvals", "decisions": first}))
    )
    require(
        partly["status"] == "paused" and partly["ran"] == [], f"a partial decision runs nothing: {partly}"
    )
    rest = {eight["request_id"]: ["deny", "not this one"], nine["request_id"]: ["edit", {"order": 90}]}
    done = json.loads(
        await run_worker(worker_argv(backend, sid, {"action": "resume_approvals", "decisions": rest}))
    )
    require(done["final"] == "All done.", f"the third process finished the run: {done}")
    require(
        done["ran"] == ["refund 7", "refund 90"], f"only the decided calls ran, the lookup not again: {done}"
    )
    tail = ["tool_call"] * 4 + ["tool_result"] * 4
    require(done["seen"][-8:] == tail, f"the model saw the whole turn: {done['seen']}")
    _, events = await read_log(backend, sid)
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    require(
        [(d.decision, d.by) for d in decided] == [("approve", "proc"), ("deny", "proc"), ("edit", "proc")],
        f"each decision is in the log, with who decided: {decided}",
    )


async def check_a_killed_resume_is_repaired(backend: ConformanceBackend) -> None:
    """A resumed call killed mid-run: the next run repairs it as 'outcome unknown', never runs it again."""
    require(backend.opener is not None, "backend.opener is not None")
    from helikon.core.context import RunContext
    from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT
    from helikon.runtime import AsyncioRunner

    sid = new_id("approval-killed")
    paused = json.loads(await run_worker(worker_argv(backend, sid, {"action": "pause_for_approval"})))
    decisions = {p["request_id"]: ["approve", p["args_digest"]] for p in paused["pending"]}
    argv = worker_argv(backend, sid, {"action": "resume_until_killed", "decisions": decisions})
    await _kill_once_started(argv, "the resumed run died before its refund started")
    RAN.clear()
    session = await backend.open(sid)
    try:
        agent = clerk(text_turn("Checked first."))
        result = await AsyncioRunner[None]().run(
            agent, "did it go through?", RunContext.ephemeral(None).with_session(session)
        )
    finally:
        await close_session(session)
    require(result.final_output == "Checked first." and RAN == [], f"the next run ran no refund: {RAN}")
    _, events = await read_log(backend, sid)
    unknown = [
        e.call_id
        for e in events
        if isinstance(e, ToolReturned)
        and any(isinstance(p, TextPart) and OUTCOME_UNKNOWN_TEXT in p.text for p in e.content)
    ]
    require(unknown and set(unknown) <= set(REFUNDS), f"the killed refunds read 'outcome unknown': {unknown}")


async def worker_action(session: Session, spec: dict[str, Any]) -> str:
    """A conformance worker's approval action on `session`; its report.

    `pause_for_approval`, `resume_approvals`, or `resume_until_killed` (a resume whose
    refunds never return).
    """
    if spec["action"] == "pause_for_approval":
        return await run_pause(session)
    return await run_resume(session, spec, block=spec["action"] == "resume_until_killed")


async def check_a_killed_run_goes_on_with_resume(backend: ConformanceBackend) -> None:
    """A durable run killed while its tool runs goes on with `resume`: the call is not run again."""
    require(backend.opener is not None, "backend.opener is not None")
    from helikon.core.agent import LlmAgent
    from helikon.core.context import RunContext
    from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT
    from helikon.core.tools import tool
    from helikon.runtime import AsyncioRunner

    sid = new_id("killed-resume")
    await _kill_once_started(
        worker_argv(backend, sid, {"action": "run_until_killed"}), "the run died before its tool"
    )
    paid: list[int] = []

    @tool
    async def pay(invoice: int) -> str:
        """Pay an invoice."""
        paid.append(invoice)
        return "paid"

    model = MockModel.with_scripts([text_turn("It may have gone through: checking first.")])
    agent = LlmAgent[None, str](name="payer", model=model, tools=[pay])
    session = await backend.open(sid)
    try:
        kinds = [
            e.type
            async for e in AsyncioRunner[None]().resume_streamed(
                agent, RunContext.ephemeral(None).with_session(session)
            )
        ]
    finally:
        await close_session(session)
    require(kinds[0] == "tool_output_item" and kinds[-1] == "run_completed", f"the run went on: {kinds}")
    require(paid == [], f"the call that had started is not run again: {paid}")
    sent = [m for m in model.requests[0].messages if m.type == "tool_result"]
    require(
        len(sent) == 1 and OUTCOME_UNKNOWN_TEXT in getattr(sent[0], "text", ""),
        f"the model reads that the call's outcome is unknown: {sent}",
    )
    _, events = await read_log(backend, sid)
    closed = [getattr(e, "outcome", None) for e in events if e.type == "turn_closed"]
    require(
        closed == ["interrupted", "completed"],
        f"the killed turn is closed, the going-on one completed: {closed}",
    )


async def _kill_once_started(argv: list[str], failure: str) -> None:
    """Run a worker until it prints its first line (its tool started), then SIGKILL it."""
    process = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        async with asyncio.timeout(120):
            line = await process.stdout.readline() if process.stdout is not None else b""
        require(line, failure)
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()


async def run_pause(session: Session) -> str:
    """The worker's `pause_for_approval`: a run that pauses; its report."""
    from helikon.core.context import RunContext
    from helikon.runtime import AsyncioRunner

    agent = clerk(first_turn())
    result = await AsyncioRunner[None]().run(
        agent, "refund 7, 8 and 9", RunContext.ephemeral(None).with_session(session)
    )
    return report(result)


async def run_resume(session: Session, spec: dict[str, Any], *, block: bool = False) -> str:
    """The worker's `resume_approvals` (and `resume_until_killed`, `block`): a resume; its report."""
    from helikon.core.context import RunContext
    from helikon.runtime import AsyncioRunner

    agent = clerk(text_turn("All done."), block=block)
    ctx = RunContext.ephemeral(None).with_session(session)
    result = await AsyncioRunner[None]().resume(agent, ctx, decisions_from(spec["decisions"]), by="proc")
    return report(result, agent.model)  # type: ignore[arg-type]


__all__ = [
    "check_a_killed_resume_is_repaired",
    "check_a_killed_run_goes_on_with_resume",
    "check_a_paused_run_resumes_in_another_process",
    "check_a_run_pauses_and_resumes_on_the_backend",
    "check_a_paused_run_survives_compaction",
    "check_approval_events_round_trip_exactly",
    "check_decisions_fail_closed",
    "check_sub_agent_and_handoff_requests_resume",
    "check_one_decision_per_request",
]
